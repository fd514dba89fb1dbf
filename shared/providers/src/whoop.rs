//! WHOOP API v2 (https://api.prod.whoop.com/developer), catalog slug `whoop_v2`: OAuth 2 with
//! the client in the body (scope `offline` for a refresh token), collections paged by
//! `nextToken` (at most 25 a page), webhooks signed with base64 HMAC-SHA256. Facts:
//! `../shared/PROVIDERS.md` section 3.
