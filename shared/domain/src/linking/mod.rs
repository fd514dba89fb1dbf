//! Linking users to providers: link tokens, password linking with MFA, OAuth linking, demo
//! connections, connections and what a refresh records on them, the team's OAuth apps, and the
//! providers' push subscriptions (receiving pushes is the pipeline's).
//!
//! The rules live here; what a provider does is behind the `Providers` port.

pub mod backfill;
pub mod connections;
pub mod demo;
pub mod oauth;
pub mod password;
pub mod refresh;
pub mod revokes;
pub mod subscriptions;
pub mod team_apps;
pub mod tokens;
pub mod widget;

use sha2::{Digest, Sha256};
use wearlab_models::{LinkErrorType, LinkResult, LinkState, ProviderAvailability, ProviderMfaRequest};

use crate::common::error::DomainError;
use crate::common::provider_catalog::{DEMO_PROVIDERS, ProviderInfo, catalog};
use crate::ports::StoreError;
use crate::ports::providers::Providers;

/// 256 random bits as 64 hex characters (two v4 UUIDs hashed, as API keys are made).
pub(crate) fn random_hex() -> String {
    let mut h = Sha256::new();
    h.update(uuid::Uuid::new_v4().as_bytes());
    h.update(uuid::Uuid::new_v4().as_bytes());
    hex::encode(h.finalize())
}

pub(crate) fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// A provider slug of the path: known, or 404.
pub fn known_provider(slug: &str) -> Result<&'static ProviderInfo, DomainError> {
    catalog().get(slug).ok_or_else(|| DomainError::NotFound(format!("Provider {slug} is not supported.")))
}

/// Why `provider` cannot be linked for real on this deployment, with the demo alternative;
/// `None` when it can (live, or simulated where the deployment allows it).
pub fn not_linkable(providers: &dyn Providers, provider: &str) -> Option<String> {
    if providers.availability(provider) != ProviderAvailability::DemoOnly {
        return None;
    }
    let why = if providers.resources(provider).is_some() {
        "no OAuth application is configured for it on this deployment"
    } else {
        "Wearlab does not connect to this provider's own API yet"
    };
    Some(format!(
        "{provider} cannot be linked on this deployment: {why}, and the deployment does not link \
         simulated providers (their data would be synthetic). A demo connection with synthetic data \
         is available through POST /v2/link/connect/demo for: {}.",
        DEMO_PROVIDERS.join(", ")
    ))
}

/// A link to `provider` may go ahead: refused (400) when it is demo only here.
pub fn linkable(providers: &dyn Providers, provider: &str) -> Result<(), DomainError> {
    match not_linkable(providers, provider) {
        Some(why) => Err(DomainError::Rejected(why)),
        None => Ok(()),
    }
}

/// An outcome of a link step, before it is said as a Link result.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkOutcome {
    Connected { external_user_id: String },
    PendingMfa(ProviderMfaRequest),
    Failed { error_type: LinkErrorType, error: String },
}

impl LinkOutcome {
    pub fn failed(error_type: LinkErrorType, error: impl Into<String>) -> Self {
        Self::Failed { error_type, error: error.into() }
    }

    /// The Link result, with the deprecated fields filled.
    pub fn result(self, provider: &str, redirect_url: Option<String>) -> LinkResult {
        let mut r = LinkResult {
            state: LinkState::Error,
            redirect_url,
            error_type: None,
            error: None,
            provider_mfa: None,
            provider: provider.to_owned(),
            connected: false,
            provider_id: None,
        };
        match self {
            Self::Connected { external_user_id } => {
                r.state = LinkState::Success;
                r.connected = true;
                r.provider_id = Some(external_user_id);
            }
            Self::PendingMfa(mfa) => {
                r.state = LinkState::PendingProviderMfa;
                r.provider_mfa = Some(mfa);
            }
            Self::Failed { error_type, error } => {
                r.error_type = Some(error_type);
                r.error = Some(error);
            }
        }
        r
    }
}

/// Where the browser goes when a link ends: the token's `redirect_url` with the outcome as
/// query parameters `state`, `provider`, and on errors `error_type` and `error`. The OAuth
/// callback and the hosted link page say an outcome the same way.
pub fn redirect_with_result(redirect_url: &str, result: &LinkResult) -> String {
    let mut params = vec![("state", result.state.as_str().to_owned())];
    if !result.provider.is_empty() {
        params.push(("provider", result.provider.clone()));
    }
    if let Some(t) = &result.error_type {
        params.push(("error_type", t.as_str().to_owned()));
    }
    if let Some(e) = &result.error {
        params.push(("error", e.clone()));
    }
    let pairs: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    with_query(redirect_url, &pairs)
}

/// A redirect or return URL given by a team: an absolute URL (`https://...`, or an app scheme
/// such as `myapp://done`), at most 2048 characters, no spaces or control characters.
pub fn valid_redirect_url(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else { return false };
    let scheme_ok = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !matches!(scheme.to_ascii_lowercase().as_str(), "javascript" | "data" | "vbscript" | "file");
    s.len() <= 2048
        && scheme_ok
        && !rest.is_empty()
        && !rest.starts_with('/')
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `url` with query parameters appended (before any `#fragment`).
pub fn with_query(url: &str, params: &[(&str, &str)]) -> String {
    let (base, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let mut out = base.to_owned();
    let mut sep = if base.contains('?') { '&' } else { '?' };
    for (k, v) in params {
        out.push(sep);
        out.push_str(&encode(k));
        out.push('=');
        out.push_str(&encode(v));
        sep = '&';
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// Percent-encoding of a query component (RFC 3986 unreserved characters kept).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A stored secret that does not open is a storage fault, not the client's.
pub(crate) fn corrupt(what: &str) -> DomainError {
    DomainError::Store(StoreError::Corrupt(what.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_urls() {
        assert!(valid_redirect_url("https://example.com/done"));
        assert!(valid_redirect_url("myapp://linked"));
        assert!(!valid_redirect_url("javascript://alert(1)"));
        assert!(!valid_redirect_url("/relative"));
        assert!(!valid_redirect_url("https://"));
        assert!(!valid_redirect_url("https:///x"));
        assert!(!valid_redirect_url("https://a b"));
        assert!(!valid_redirect_url(&format!("https://x/{}", "a".repeat(2048))));
    }

    #[test]
    fn query_is_appended_before_the_fragment() {
        assert_eq!(with_query("https://x/y", &[("state", "success")]), "https://x/y?state=success");
        assert_eq!(with_query("https://x/y?a=1#f", &[("e", "a b&c")]), "https://x/y?a=1&e=a%20b%26c#f");
    }
}
