//! Rules shared by the hosted pages end users open in a browser (the link widget and the user
//! portal): the CSRF token every form carries. (The pages themselves, and the hash of their
//! stylesheet for the Content-Security-Policy, are in `wearlab_web::pages`.)
//!
//! A CSRF token is `<expiry>.<mac>`, the MAC (HMAC-SHA256 with the deployment's signing key)
//! covering the page kind, a hash of the opaque link the page was opened with and the expiry.
//! A form posted from another site cannot carry a valid one: that site can neither read our
//! page nor compute the MAC, and a token minted for one link is refused for another.

use chrono::Duration;
use sha2::{Digest, Sha256};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::signing;

/// Name of the hidden form field that carries the CSRF token.
pub const CSRF_FIELD: &str = "csrf";
/// How long a rendered form can be submitted (a user may take a while to find a password).
pub const CSRF_LIFETIME: Duration = Duration::hours(2);

/// Which kind of page a token was minted for, so a token of one never opens the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    LinkWidget,
    Portal,
}

impl PageKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::LinkWidget => "link-widget",
            Self::Portal => "portal",
        }
    }
}

fn csrf_message(kind: PageKind, subject: &str, expires: i64) -> String {
    // The subject (a link token) is hashed so the MAC input never holds the bearer secret itself.
    format!("csrf|{}|{}|{expires}", kind.as_str(), hex::encode(Sha256::digest(subject.as_bytes())))
}

/// A fresh CSRF token for forms of a `kind` page opened with `subject` (the raw link token or
/// portal link).
pub async fn csrf_token(deps: &Deps, kind: PageKind, subject: &str) -> Result<String, DomainError> {
    let key = signing::key(deps).await?;
    let expires = (deps.now() + CSRF_LIFETIME).timestamp();
    Ok(format!("{expires}.{}", signing::sign(&key, &csrf_message(kind, subject, expires))))
}

/// Whether `presented` is a live CSRF token of a `kind` page for `subject`.
pub async fn csrf_valid(
    deps: &Deps,
    kind: PageKind,
    subject: &str,
    presented: Option<&str>,
) -> Result<bool, DomainError> {
    let Some((expires, mac)) = presented.and_then(|p| p.split_once('.')) else { return Ok(false) };
    let Ok(expires) = expires.parse::<i64>() else { return Ok(false) };
    if expires <= deps.now().timestamp() || subject.is_empty() {
        return Ok(false);
    }
    let key = signing::key(deps).await?;
    Ok(signing::verify(&key, &csrf_message(kind, subject, expires), mac))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_differ_by_kind_and_subject() {
        let a = csrf_message(PageKind::LinkWidget, "lt_1", 5);
        assert_ne!(a, csrf_message(PageKind::Portal, "lt_1", 5));
        assert_ne!(a, csrf_message(PageKind::LinkWidget, "lt_2", 5));
        assert!(!a.contains("lt_1"), "the subject is hashed");
    }
}
