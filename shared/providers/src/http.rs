//! The HTTP client every adapter shares, and one mapping from a provider's HTTP answer to
//! `ProviderError`. Messages name the provider and the status, never a token or a body that
//! could hold personal data.

use std::sync::LazyLock;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use wearlab_domain::ports::providers::{ProviderError, RequestGate};

/// A provider call that takes longer is failed (and retried later by the pipeline).
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Retry-After when a provider answers 429 without saying when.
pub const DEFAULT_RETRY_AFTER_SECS: u64 = 60;

/// The client adapters use: redirects not followed (an API answer is final), a deadline. One
/// for the process, built at its first use: building a client loads the TLS roots, which every
/// Lambda init would otherwise pay once per adapter, whether a provider is called or not.
static CLIENT: LazyLock<reqwest::Client> = LazyLock::new(|| {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("Wearlab/1")
        .build()
        .expect("the HTTP client builds")
});

/// A handle on the process's provider HTTP client ([`client`]); it dereferences to the
/// `reqwest::Client`, building it on first use.
#[derive(Debug, Clone, Copy, Default)]
pub struct SharedClient;

impl std::ops::Deref for SharedClient {
    type Target = reqwest::Client;

    fn deref(&self) -> &reqwest::Client {
        &CLIENT
    }
}

/// The handle adapters keep; nothing is built until a provider is called.
pub fn client() -> SharedClient {
    SharedClient
}

/// An answer read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as `T` (a 2xx answer the provider documents), else `Api`.
    pub fn json<T: serde::de::DeserializeOwned>(&self, provider: &str) -> Result<T, ProviderError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| ProviderError::Api(format!("{provider} answered an unreadable body: {e}")))
    }
}

/// Sends and reads the answer; transport failures and timeouts are `Api`.
pub async fn send(provider: &str, request: reqwest::RequestBuilder) -> Result<Answer, ProviderError> {
    let res = request.send().await.map_err(|e| {
        let kind = if e.is_timeout() { "timed out" } else { "could not be reached" };
        ProviderError::Api(format!("{provider} {kind}"))
    })?;
    let status = res.status();
    let headers = res.headers().clone();
    let body = res
        .bytes()
        .await
        .map_err(|_| ProviderError::Api(format!("{provider} broke off its answer")))?
        .to_vec();
    Ok(Answer { status, headers, body })
}

/// [`send`], once `gate` admitted the request (a fetch's data call counts against the
/// provider's published limits before it leaves); a refusal is the gate's `RateLimited`.
pub async fn send_admitted(
    gate: &dyn RequestGate,
    provider: &str,
    request: reqwest::RequestBuilder,
) -> Result<Answer, ProviderError> {
    gate.admit().await?;
    send(provider, request).await
}

/// A data call's answer: 2xx passes; 401 is `AccessTokenRefused` (refresh and retry once), 403
/// a refusal of the credentials (scope not granted, membership ended), 429 `RateLimited` with
/// the provider's reset, anything else `Api`.
pub fn check(provider: &str, answer: Answer) -> Result<Answer, ProviderError> {
    let status = answer.status;
    if status.is_success() {
        return Ok(answer);
    }
    Err(match status {
        StatusCode::UNAUTHORIZED => ProviderError::AccessTokenRefused,
        StatusCode::FORBIDDEN => ProviderError::CredentialError(format!("{provider} answered 403")),
        StatusCode::TOO_MANY_REQUESTS => ProviderError::RateLimited {
            retry_after_secs: retry_after(&answer.headers, chrono::Utc::now().timestamp()),
        },
        s => ProviderError::Api(format!("{provider} answered {}", s.as_u16())),
    })
}

/// Seconds to wait after a 429: `Retry-After` (seconds), else `X-RateLimit-Reset` (or Polar's
/// `RateLimit-Reset`) read as an epoch time when it is one (Oura) or as seconds from now when it
/// is small (WHOOP), else
/// [`DEFAULT_RETRY_AFTER_SECS`]. At least 1.
pub fn retry_after(headers: &HeaderMap, now_epoch: i64) -> u64 {
    let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<i64>().ok();
    let secs = if let Some(s) = number("retry-after") {
        s
    } else if let Some(reset) = number("x-ratelimit-reset").or_else(|| number("ratelimit-reset")) {
        if reset > 1_000_000_000 { reset - now_epoch } else { reset }
    } else {
        DEFAULT_RETRY_AFTER_SECS as i64
    };
    secs.max(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn retry_after_reads_seconds_then_reset_epoch_or_delta() {
        assert_eq!(retry_after(&headers(&[("retry-after", "17")]), 0), 17);
        assert_eq!(retry_after(&headers(&[("x-ratelimit-reset", "1700000030")]), 1_700_000_000), 30);
        assert_eq!(retry_after(&headers(&[("x-ratelimit-reset", "42")]), 1_700_000_000), 42);
        assert_eq!(retry_after(&headers(&[("ratelimit-reset", "300")]), 1_700_000_000), 300);
        assert_eq!(retry_after(&headers(&[]), 0), DEFAULT_RETRY_AFTER_SECS);
        assert_eq!(retry_after(&headers(&[("retry-after", "0")]), 0), 1);
    }
}
