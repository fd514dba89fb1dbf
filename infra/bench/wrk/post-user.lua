-- wrk: POST /v2/user, each request with a client_user_id no other request uses:
-- run nonce (first script argument) - wrk thread - per-thread counter - random.
-- The API key and content-type come from wrk's -H options.

local threads = 0

function setup(thread)
   threads = threads + 1
   thread:set("tid", threads)
end

function init(args)
   nonce = args[1] or tostring(os.time())
   counter = 0
   math.randomseed(os.time() * 1000 + tid)
end

function request()
   counter = counter + 1
   local body = string.format('{"client_user_id":"bench-%s-%d-%d-%d"}', nonce, tid, counter, math.random(0, 999999))
   return wrk.format("POST", "/v2/user", nil, body)
end
