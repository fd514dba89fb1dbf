//! Link tokens: made for one user of a team, valid 60 minutes, consumed by the first
//! successful connection. Only the token's SHA-256 is stored; the pending MFA step of a
//! password link lives on the token, sealed.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::{LinkErrorType, LinkTokenAnswer, LinkTokenBody, ProviderMfaRequest, ValidationIssue};

use super::{random_hex, sha256_hex, valid_redirect_url, with_query};
use crate::Deps;
use crate::common::crypto::Sealed;
use crate::common::error::{DomainError, issue};
use crate::common::ids::{TeamId, UserId};
use crate::common::language::Language;
use crate::common::limits::{self, MAX_FILTER_ON_PROVIDERS as MAX_FILTER};
use crate::common::provider_catalog::catalog;
use crate::keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key};
use crate::users;

/// How long a link token can be used.
pub const TOKEN_TTL_MINUTES: i64 = 60;
/// How long a token's record is kept after it expired, to tell `token_expired` and
/// `token_consumed` from `invalid_token`.
const KEEP_AFTER_EXPIRY_HOURS: i64 = 24;
const TOKEN_PREFIX: &str = "lt_";
/// The header that carries a link token.
pub const LINK_TOKEN_HEADER: &str = "x-service-link-token";

/// Where a token is in its life.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TokenState {
    #[default]
    Active,
    /// A password login waits for the one-time code; `session` is the provider's, sealed.
    Mfa {
        provider: String,
        session: Sealed,
        /// Wrong codes so far; the step is dropped after `password::MAX_MFA_ATTEMPTS`.
        #[serde(default)]
        attempts: u32,
        /// How the provider sent the code and the redacted destination, so the hosted link
        /// page can ask for the code again (a reload, a wrong code) with the same hint.
        #[serde(default)]
        request: Option<ProviderMfaRequest>,
    },
    Consumed {
        provider: String,
        at: DateTime<Utc>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkTokenRecord {
    pub team_id: TeamId,
    pub user_id: UserId,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub filter_on_providers: Option<Vec<String>>,
    #[serde(default)]
    pub redirect_url: Option<String>,
    /// The language the team chose for the hosted pages of this token (records made before
    /// the field have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    #[serde(default)]
    pub state: TokenState,
}

impl LinkTokenRecord {
    /// Whether the token may link `provider`.
    pub fn allows(&self, provider: &str) -> bool {
        self.provider.as_deref().is_none_or(|p| p == provider)
            && self.filter_on_providers.as_ref().is_none_or(|f| f.iter().any(|p| p == provider))
    }

    pub(crate) fn to_item(&self, key: Key, version: u64) -> Item {
        let keep = self.expires_at + Duration::hours(KEEP_AFTER_EXPIRY_HOURS);
        let mut item = Item::new(key, to_body(self)).with_expiry(Some(keep.timestamp()));
        item.version = version;
        item
    }
}

/// A token that may be used now, with what is needed to change it atomically.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidToken {
    pub key: Key,
    pub version: u64,
    pub record: LinkTokenRecord,
}

impl ValidToken {
    /// The language the team chose for this token's pages, if it chose one (a page then
    /// speaks it whatever the browser asks: `Language::negotiate`'s explicit choice).
    pub fn language(&self) -> Option<Language> {
        self.record.language
    }

    /// The write that consumes the token, if nobody changed it since it was read.
    pub(crate) fn consume_op(&self, provider: &str, at: DateTime<Utc>) -> crate::ports::WriteOp {
        let mut r = self.record.clone();
        r.state = TokenState::Consumed { provider: provider.to_owned(), at };
        crate::ports::WriteOp::Put {
            item: r.to_item(self.key.clone(), self.version + 1),
            condition: Condition::VersionIs(self.version),
        }
    }
}

/// Why a token cannot be used; said as a Link result error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRefusal {
    pub error_type: LinkErrorType,
    pub error: String,
    /// The token's redirect URL when the token itself is genuine.
    pub redirect_url: Option<String>,
}

impl TokenRefusal {
    /// The refusal as the Link result of `slug` (back to the token's redirect URL if genuine).
    pub fn result(self, slug: &str) -> wearlab_models::LinkResult {
        super::LinkOutcome::failed(self.error_type, self.error).result(slug, self.redirect_url)
    }

    fn new(error_type: LinkErrorType, error: &str, redirect_url: Option<String>) -> Self {
        Self { error_type, error: error.to_owned(), redirect_url }
    }

    fn invalid() -> Self {
        Self::new(
            LinkErrorType::InvalidToken,
            "The link token is missing, malformed or unknown; create one with POST /v2/link/token.",
            None,
        )
    }
}

/// A parsed POST /v2/link/token request.
#[derive(Debug, Clone, PartialEq)]
pub struct NewLinkToken {
    pub user_id: UserId,
    pub provider: Option<String>,
    pub redirect_url: Option<String>,
    pub filter_on_providers: Option<Vec<String>>,
    pub language: Option<Language>,
}

impl NewLinkToken {
    /// Checks every field and reports every offending one.
    pub fn parse(body: LinkTokenBody) -> Result<Self, DomainError> {
        let mut issues: Vec<ValidationIssue> = Vec::new();
        let user_id = UserId::parse(&body.user_id);
        if user_id.is_none() {
            issues.push(issue(&["user_id"], "Input should be a valid UUID", "uuid_parsing"));
        }
        if let Some(p) = &body.provider
            && catalog().get(p).is_none()
        {
            issues.push(issue(&["provider"], "unknown provider slug", "enum"));
        }
        if let Some(u) = &body.redirect_url
            && !valid_redirect_url(u)
        {
            issues.push(issue(
                &["redirect_url"],
                "redirect_url must be an absolute URL (https://... or an app scheme), at most 2048 characters",
                "url_parsing",
            ));
        }
        if let Some(f) = &body.filter_on_providers {
            let set = limits::check_set(&["filter_on_providers"], f, MAX_FILTER);
            let checked: &[String] = if set.is_ok() { f } else { &[] };
            if let Err(found) = set {
                issues.extend(found);
            }
            for (i, p) in checked.iter().enumerate() {
                if catalog().get(p).is_none() {
                    issues.push(ValidationIssue {
                        loc: vec!["filter_on_providers".into(), i.into()],
                        msg: "unknown provider slug".into(),
                        kind: "enum".into(),
                    });
                }
            }
        }
        let language = match body.language.as_deref().map(Language::parse).transpose() {
            Ok(l) => l,
            Err(DomainError::Validation(found)) => {
                issues.extend(found);
                None
            }
            Err(e) => return Err(e),
        };
        match user_id {
            Some(user_id) if issues.is_empty() => Ok(Self {
                user_id,
                provider: body.provider,
                redirect_url: body.redirect_url,
                filter_on_providers: body.filter_on_providers,
                language,
            }),
            _ => Err(DomainError::Validation(issues)),
        }
    }
}

/// Makes a token for an active user of the team. `base_url` is the API's public address, for
/// `link_web_url`.
pub async fn create(
    deps: &Deps,
    team: TeamId,
    new: NewLinkToken,
    base_url: &str,
) -> Result<LinkTokenAnswer, DomainError> {
    // A token that opens the page on a provider it cannot link would be a dead end.
    if let Some(provider) = &new.provider {
        super::linkable(deps.providers.as_ref(), provider)?;
    }
    users::load_active(deps, team, new.user_id).await?;
    let now = deps.now();
    let token = format!("{TOKEN_PREFIX}{}", random_hex());
    let record = LinkTokenRecord {
        team_id: team,
        user_id: new.user_id,
        provider: new.provider,
        filter_on_providers: new.filter_on_providers,
        redirect_url: new.redirect_url,
        language: new.language,
        created_at: now,
        expires_at: now + Duration::minutes(TOKEN_TTL_MINUTES),
        state: TokenState::Active,
    };
    let key = keys::linking::link_token(&sha256_hex(&token));
    deps.table.put(record.to_item(key, 1), Condition::NotExists).await?;
    tracing::info!(team_id = %team, user_id = %new.user_id, "link token created");
    let link_web_url =
        with_query(&format!("{}/v2/link/web", base_url.trim_end_matches('/')), &[("token", &token)]);
    Ok(LinkTokenAnswer { link_token: token, link_web_url })
}

fn well_formed(token: &str) -> bool {
    token.len() == TOKEN_PREFIX.len() + 64
        && token.starts_with(TOKEN_PREFIX)
        && token[TOKEN_PREFIX.len()..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Reads a token without judging it (the OAuth callback, which knows the token by its key).
pub(crate) async fn load_by_key(deps: &Deps, key: &Key) -> Result<Option<ValidToken>, DomainError> {
    Ok(match deps.table.get(key).await? {
        Some(item) => Some(ValidToken { key: key.clone(), version: item.version, record: item.decode()? }),
        None => None,
    })
}

/// The token as presented with a request of `team` to link `provider`: usable, or why not.
pub async fn check(
    deps: &Deps,
    team: Option<TeamId>,
    raw: Option<&str>,
    provider: &str,
) -> Result<Result<ValidToken, TokenRefusal>, DomainError> {
    let Some(raw) = raw.map(str::trim).filter(|t| well_formed(t)) else {
        return Ok(Err(TokenRefusal::invalid()));
    };
    let key = keys::linking::link_token(&sha256_hex(raw));
    let Some(token) = load_by_key(deps, &key).await? else { return Ok(Err(TokenRefusal::invalid())) };
    judge(deps, team, token, Some(provider)).await
}

/// The token as the hosted link page sees it (no API key, no provider yet).
pub async fn peek(deps: &Deps, raw: Option<&str>) -> Result<Result<ValidToken, TokenRefusal>, DomainError> {
    let Some(raw) = raw.map(str::trim).filter(|t| well_formed(t)) else {
        return Ok(Err(TokenRefusal::invalid()));
    };
    let key = keys::linking::link_token(&sha256_hex(raw));
    let Some(token) = load_by_key(deps, &key).await? else { return Ok(Err(TokenRefusal::invalid())) };
    judge(deps, None, token, None).await
}

/// The rules every use of a token passes, in this order: the team's own token, not consumed,
/// not expired, its user still active, made for this provider.
pub(crate) async fn judge(
    deps: &Deps,
    team: Option<TeamId>,
    token: ValidToken,
    provider: Option<&str>,
) -> Result<Result<ValidToken, TokenRefusal>, DomainError> {
    let r = &token.record;
    if team.is_some_and(|t| t != r.team_id) {
        return Ok(Err(TokenRefusal::invalid()));
    }
    let redirect = r.redirect_url.clone();
    if let TokenState::Consumed { .. } = r.state {
        return Ok(Err(TokenRefusal::new(
            LinkErrorType::TokenConsumed,
            "The link token was already used for a connection; create a new one.",
            redirect,
        )));
    }
    if deps.now() >= r.expires_at {
        return Ok(Err(TokenRefusal::new(
            LinkErrorType::TokenExpired,
            "The link token expired (tokens are valid 60 minutes); create a new one.",
            redirect,
        )));
    }
    match users::load_active(deps, r.team_id, r.user_id).await {
        Ok(_) => {}
        Err(DomainError::NotFound(_)) => return Ok(Err(TokenRefusal::invalid())),
        Err(e) => return Err(e),
    }
    if provider.is_some_and(|p| !r.allows(p)) {
        return Ok(Err(TokenRefusal::new(
            LinkErrorType::TokenNotValidated,
            "The link token was not made for this provider (see its provider and filter_on_providers).",
            redirect,
        )));
    }
    Ok(Ok(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_shape() {
        let t = format!("{TOKEN_PREFIX}{}", random_hex());
        assert!(well_formed(&t));
        assert!(!well_formed("lt_abc"));
        assert!(!well_formed(&t.replace("lt_", "sk_")));
        assert!(!well_formed(&format!("{t}0")));
    }

    /// Tokens stored before the `language` field still load, with no language.
    #[test]
    fn records_without_a_language_load() {
        let old = serde_json::json!({
            "team_id": TeamId::new_random(),
            "user_id": UserId::new_random(),
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-01T01:00:00Z",
        });
        let r: LinkTokenRecord = serde_json::from_value(old).expect("an old record");
        assert_eq!(r.language, None);
        assert_eq!(r.state, TokenState::Active);
    }

    #[test]
    fn provider_restrictions() {
        let now = Utc::now();
        let mut r = LinkTokenRecord {
            team_id: TeamId::new_random(),
            user_id: UserId::new_random(),
            provider: None,
            filter_on_providers: None,
            redirect_url: None,
            language: None,
            created_at: now,
            expires_at: now,
            state: TokenState::Active,
        };
        assert!(r.allows("oura"));
        r.filter_on_providers = Some(vec!["oura".into(), "fitbit".into()]);
        assert!(r.allows("fitbit") && !r.allows("garmin"));
        r.provider = Some("oura".into());
        assert!(r.allows("oura") && !r.allows("fitbit"));
    }
}
