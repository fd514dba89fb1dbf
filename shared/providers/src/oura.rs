//! Oura API v2 (https://api.ouraring.com): OAuth 2 with the client in the body and single-use
//! refresh tokens, `/v2/usercollection/*` pages by `next_token`, webhook subscriptions with a
//! GET handshake and HMAC-SHA256 signatures. Facts: `../shared/PROVIDERS.md` section 2.
