//! Withings's wire protocol: every answer is HTTP 200 with `{status, body}`, `status` a code
//! of the Withings API reference's status table (tag `response_status`); listings page by
//! `more`/`offset`; the token answer carries the user id; signed calls carry an HMAC-SHA256
//! signature.

use serde::Deserialize;
use serde_json::Value;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::signing::hmac_sha256;
use wearlab_domain::ports::providers::ProviderError;

use super::SLUG;
use crate::http;
use crate::oauth::TokenAnswer;

/// What a body `status` other than 0 means (Withings answers HTTP 200 either way), by the
/// families of the Withings API reference's status table (tag `response_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// "Authentication failed": 100-102, 200.
    AuthenticationFailed(i64),
    /// "Invalid params": 201-213 and the table's other invalid-params rows (216-218, 503, ...).
    InvalidParams(i64),
    /// "Unauthorized": 214, 277, 2553, 2555.
    Unauthorized(i64),
    /// 401 ("Authentication failed" in the table): the access token is invalid or expired.
    InvalidToken,
    /// 522.
    Timeout,
    /// 601.
    TooManyRequests,
    /// "An error occurred", 524 "Bad state", 2554 "Not implemented", and codes the table does
    /// not list.
    Other(i64),
}

impl Status {
    pub fn from_code(code: i64) -> Self {
        match code {
            0 => Self::Ok,
            401 => Self::InvalidToken,
            100..=102 | 200 => Self::AuthenticationFailed(code),
            214 | 277 | 2553 | 2555 => Self::Unauthorized(code),
            201..=213
            | 216..=218
            | 220..=221
            | 223
            | 225
            | 227..=230
            | 234..=236
            | 238
            | 240..=252
            | 254
            | 260..=267
            | 271..=272
            | 275..=276
            | 283..=288
            | 290
            | 293..=295
            | 297
            | 300..=304
            | 321
            | 323..=353
            | 380..=382
            | 400
            | 501..=511
            | 523
            | 532
            | 3017..=3019 => Self::InvalidParams(code),
            522 => Self::Timeout,
            601 => Self::TooManyRequests,
            other => Self::Other(other),
        }
    }

    /// The error of a data call (Bearer token) answered with this status.
    pub(super) fn data_error(self) -> ProviderError {
        match self {
            Self::InvalidToken => ProviderError::AccessTokenRefused,
            Self::AuthenticationFailed(c) | Self::Unauthorized(c) => {
                ProviderError::CredentialError(format!("{SLUG} answered status {c}"))
            }
            Self::TooManyRequests => {
                ProviderError::RateLimited { retry_after_secs: http::DEFAULT_RETRY_AFTER_SECS }
            }
            Self::Timeout => ProviderError::Api(format!("{SLUG} timed out (status 522)")),
            Self::InvalidParams(c) | Self::Other(c) => {
                ProviderError::Api(format!("{SLUG} answered status {c}"))
            }
            Self::Ok => ProviderError::Api(format!("{SLUG} answered status 0 without a body")),
        }
    }

    /// The error of a token call: a refusal of the code or refresh token (or of the client)
    /// is `refusal`; a rate limit or a failure of Withings is as for data calls.
    pub(super) fn token_error(self, refusal: fn(String) -> ProviderError) -> ProviderError {
        match self {
            Self::AuthenticationFailed(c) | Self::Unauthorized(c) | Self::InvalidParams(c) => {
                refusal(format!("{SLUG}'s token endpoint answered status {c}"))
            }
            Self::InvalidToken => refusal(format!("{SLUG}'s token endpoint answered status 401")),
            other => other.data_error(),
        }
    }
}

/// Every answer: `{status, body}`.
#[derive(Debug, Deserialize)]
pub(super) struct Envelope {
    pub(super) status: i64,
    #[serde(default)]
    pub(super) body: Value,
}

/// Withings writes `more` as a boolean on some services and 0/1 on others.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum More {
    Flag(bool),
    Count(i64),
}

#[derive(Debug, Deserialize)]
pub(super) struct Paging {
    #[serde(default)]
    more: Option<More>,
    #[serde(default)]
    offset: Option<i64>,
}

impl Paging {
    /// The offset of the next page, when there is one.
    pub(super) fn next(&self) -> Option<i64> {
        let more = match self.more {
            Some(More::Flag(b)) => b,
            Some(More::Count(n)) => n != 0,
            None => false,
        };
        if more { self.offset } else { None }
    }
}

/// A user id, which Withings writes as a number or a string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum UserId {
    Text(String),
    Number(i64),
}

impl std::fmt::Display for UserId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Text(s) => f.write_str(s),
            Self::Number(n) => write!(f, "{n}"),
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct TokenBody {
    pub(super) userid: UserId,
    #[serde(flatten)]
    pub(super) token: TokenAnswer,
}

#[derive(Debug, Deserialize)]
pub(super) struct Nonce {
    pub(super) nonce: String,
}

/// The request signature of Withings's signed calls: hex HMAC-SHA256 with the client secret
/// over the values joined by commas (`action,client_id[,timestamp][,nonce]`).
pub fn signature(client_secret: &Secret, values: &[&str]) -> String {
    hex::encode(hmac_sha256(client_secret.expose().as_bytes(), values.join(",").as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_id_is_read_as_a_number_or_as_text() {
        let body = |userid: &str| {
            serde_json::from_str::<TokenBody>(&format!(r#"{{"userid": {userid}, "access_token": "a"}}"#))
                .map(|b| b.userid.to_string())
                .unwrap()
        };
        assert_eq!(body("363"), "363");
        assert_eq!(body(r#""363""#), "363");
    }

    #[test]
    fn every_status_family_is_typed() {
        assert_eq!(Status::from_code(0), Status::Ok);
        for c in [100, 101, 102, 200] {
            assert_eq!(Status::from_code(c), Status::AuthenticationFailed(c));
        }
        for c in 201..=213 {
            assert_eq!(Status::from_code(c), Status::InvalidParams(c));
        }
        for c in [216, 218, 238, 254, 300, 353, 400, 503, 511, 523, 532, 3017, 3019] {
            assert_eq!(Status::from_code(c), Status::InvalidParams(c));
        }
        for c in [214, 277, 2553, 2555] {
            assert_eq!(Status::from_code(c), Status::Unauthorized(c));
        }
        assert_eq!(Status::from_code(401), Status::InvalidToken);
        assert_eq!(Status::from_code(522), Status::Timeout);
        assert_eq!(Status::from_code(601), Status::TooManyRequests);
        // "An error occurred", "Bad state", "Not implemented", and an unlisted code.
        for c in [215, 219, 305, 524, 602, 2554, 10000, 99] {
            assert_eq!(Status::from_code(c), Status::Other(c));
        }
    }
}
