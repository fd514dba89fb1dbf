//! Withings Public Health Data API (https://wbsapi.withings.net): OAuth 2 through
//! `/v2/oauth2` (`action=requesttoken`), every call a form POST with `action`, errors as
//! HTTP 200 with a non-zero `status` in the body, pages by `more`/`offset`, per-user
//! notification subscriptions. Facts: `../shared/PROVIDERS.md` section 4.
