//! Password linking: username and password go to the provider (never stored, never logged);
//! the provider may ask for a one-time code, whose pending session lives on the link token,
//! sealed; the first success consumes the token.

use wearlab_models::{AuthType, LinkErrorType, LinkResult, PasswordLinkBody, ProviderMfaRequest, Region};

use super::connections::{self, Committed, NewConnection};
use super::tokens::{self, TokenState, ValidToken};
use super::{LinkOutcome, corrupt, known_provider};
use crate::Deps;
use crate::common::crypto::Secret;
use crate::common::error::{DomainError, issue};
use crate::common::ids::TeamId;
use crate::common::provider_catalog::ProviderInfo;
use crate::ports::providers::{LoginOutcome, PasswordLogin, ProviderAccount, ProviderError};
use crate::ports::{Condition, StoreError, WriteOp};

const MAX_USERNAME: usize = 256;
const MAX_PASSWORD: usize = 1024;
const MAX_MFA_CODE: usize = 32;
/// Wrong one-time codes a pending step takes before it is dropped.
pub const MAX_MFA_ATTEMPTS: u32 = 5;

/// A provider of the path that links by password: 404 when unknown, 422 when of another kind.
pub fn password_provider(slug: &str) -> Result<&'static ProviderInfo, DomainError> {
    let p = known_provider(slug)?;
    if !p.is(&AuthType::Password) {
        return Err(DomainError::invalid(&["provider"], format!("{slug} does not link by password"), "enum"));
    }
    Ok(p)
}

/// A checked password link request.
pub struct PasswordAttempt {
    pub provider: &'static ProviderInfo,
    username: Secret,
    password: Secret,
    region: Option<Region>,
}

impl PasswordAttempt {
    pub fn parse(provider: &str, body: PasswordLinkBody) -> Result<Self, DomainError> {
        let provider = password_provider(provider)?;
        let mut issues = Vec::new();
        if body.username.trim().is_empty() || body.username.chars().count() > MAX_USERNAME {
            issues.push(issue(
                &["username"],
                format!("username must be 1-{MAX_USERNAME} characters"),
                "value_error",
            ));
        }
        if body.password.is_empty() || body.password.chars().count() > MAX_PASSWORD {
            issues.push(issue(
                &["password"],
                format!("password must be 1-{MAX_PASSWORD} characters"),
                "value_error",
            ));
        }
        if let Some(Region::Other(_)) = &body.region {
            issues.push(issue(
                &["region"],
                format!("Input should be one of: {}", Region::KNOWN.join(", ")),
                "enum",
            ));
        }
        if !issues.is_empty() {
            return Err(DomainError::Validation(issues));
        }
        Ok(Self {
            provider,
            username: Secret::new(body.username.trim()),
            password: Secret::new(body.password),
            region: body.region,
        })
    }
}

fn mfa_context(token: &ValidToken) -> String {
    format!("{}|{}|mfa", token.key.pk, token.key.sk)
}

/// POST /v2/link/provider/password/{provider}.
pub async fn link(
    deps: &Deps,
    team: TeamId,
    raw_token: Option<&str>,
    attempt: PasswordAttempt,
) -> Result<LinkResult, DomainError> {
    let slug = attempt.provider.slug.as_str();
    super::linkable(deps.providers.as_ref(), slug)?;
    let token = match tokens::check(deps, Some(team), raw_token, slug).await? {
        Ok(t) => t,
        Err(refusal) => return Ok(refusal.result(slug)),
    };
    let redirect = token.record.redirect_url.clone();
    let say = |o: LinkOutcome| o.result(slug, redirect.clone());
    // Region: one of the documented values (checked on parse), and served by the provider.
    let region = match (&attempt.region, &attempt.provider.regions) {
        (Some(r), Some(served)) if !served.iter().any(|s| s == r.as_str()) => {
            return Ok(say(LinkOutcome::failed(
                LinkErrorType::UnsupportedRegion,
                format!("{slug} does not serve region {r}; it serves: {}", served.join(", ")),
            )));
        }
        (r, Some(_)) => r.as_ref().map(|r| r.as_str().to_owned()),
        (_, None) => None,
    };
    let login = PasswordLogin { username: attempt.username, password: attempt.password, region };
    let outcome = match deps.providers.password_login(slug, login).await {
        Ok(LoginOutcome::Connected(account)) => finish(deps, team, token, attempt.provider, account).await?,
        Ok(LoginOutcome::MfaRequired { method, hint, session }) => {
            let mut record = token.record.clone();
            let request = ProviderMfaRequest { method, hint };
            record.state = TokenState::Mfa {
                provider: slug.to_owned(),
                session: deps.data_key.seal(session.expose().as_bytes(), &mfa_context(&token)),
                attempts: 0,
                request: Some(request.clone()),
            };
            let item = record.to_item(token.key.clone(), token.version + 1);
            match deps.table.put(item, Condition::VersionIs(token.version)).await {
                Ok(()) => {
                    tracing::info!(team_id = %team, user_id = %token.record.user_id, provider = slug, "provider asked for MFA");
                    LinkOutcome::PendingMfa(request)
                }
                Err(StoreError::ConditionFailed { .. }) => concurrent_use(),
                Err(e) => return Err(e.into()),
            }
        }
        Err(e) => provider_refusal(team, &token, slug, e),
    };
    Ok(say(outcome))
}

/// POST /v2/link/provider/password/{provider}/complete_mfa.
pub async fn complete_mfa(
    deps: &Deps,
    team: TeamId,
    raw_token: Option<&str>,
    provider: &str,
    mfa_code: &str,
) -> Result<LinkResult, DomainError> {
    let info = password_provider(provider)?;
    let code = mfa_code.trim();
    if code.is_empty() || code.chars().count() > MAX_MFA_CODE {
        return Err(DomainError::invalid(
            &["mfa_code"],
            format!("mfa_code must be 1-{MAX_MFA_CODE} characters"),
            "value_error",
        ));
    }
    let slug = info.slug.as_str();
    let token = match tokens::check(deps, Some(team), raw_token, slug).await? {
        Ok(t) => t,
        Err(refusal) => return Ok(refusal.result(slug)),
    };
    let redirect = token.record.redirect_url.clone();
    let say = |o: LinkOutcome| o.result(slug, redirect.clone());
    let (sealed, attempts, request) = match &token.record.state {
        TokenState::Mfa { provider: p, session, attempts, request } if p == slug => {
            (session.clone(), *attempts, request.clone())
        }
        _ => {
            return Ok(say(LinkOutcome::failed(
                LinkErrorType::TokenNotValidated,
                "No multi-factor step is pending on this link token for this provider; \
                 start with POST /v2/link/provider/password/{provider}.",
            )));
        }
    };
    let session = deps
        .data_key
        .open(&sealed, &mfa_context(&token))
        .map_err(|_| corrupt("an MFA session does not open with the data key"))?;
    let session = Secret::new(String::from_utf8(session).map_err(|_| corrupt("an MFA session is not text"))?);
    let outcome = match deps.providers.complete_mfa(slug, &session, code).await {
        Ok(account) => finish(deps, team, token, info, account).await?,
        Err(ProviderError::IncorrectMfaCode) => {
            let attempts = attempts + 1;
            let dropped = attempts >= MAX_MFA_ATTEMPTS;
            let mut record = token.record.clone();
            record.state = if dropped {
                TokenState::Active
            } else {
                TokenState::Mfa { provider: slug.to_owned(), session: sealed, attempts, request }
            };
            let item = record.to_item(token.key.clone(), token.version + 1);
            match deps.table.put(item, Condition::VersionIs(token.version)).await {
                // A concurrent use changed the token: that use's outcome stands.
                Ok(()) | Err(StoreError::ConditionFailed { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            tracing::info!(team_id = %team, user_id = %token.record.user_id, provider = slug, attempts, "wrong MFA code");
            LinkOutcome::failed(
                LinkErrorType::IncorrectMfaCode,
                if dropped {
                    "The one-time code is wrong, for the last allowed time: the multi-factor step was dropped; \
                     start the login again."
                } else {
                    "The one-time code is not the one the provider sent; try again."
                },
            )
        }
        Err(e) => provider_refusal(team, &token, slug, e),
    };
    Ok(say(outcome))
}

fn concurrent_use() -> LinkOutcome {
    LinkOutcome::failed(
        LinkErrorType::TokenConsumed,
        "The link token was used by another request at the same time; create a new one.",
    )
}

fn provider_refusal(team: TeamId, token: &ValidToken, slug: &str, e: ProviderError) -> LinkOutcome {
    tracing::info!(team_id = %team, user_id = %token.record.user_id, provider = slug, error_type = %e.link_error_type(), "password link refused");
    LinkOutcome::failed(e.link_error_type(), e.to_string())
}

/// Stores the connection, consuming the token.
async fn finish(
    deps: &Deps,
    team: TeamId,
    token: ValidToken,
    provider: &'static ProviderInfo,
    account: ProviderAccount,
) -> Result<LinkOutcome, DomainError> {
    let user_id = token.record.user_id;
    let new = NewConnection {
        provider,
        account,
        demo: false,
        token: Some(token),
        extra_ops: Vec::<WriteOp>::new(),
        team_app_client_id: None,
        import_op: None,
    };
    Ok(said(connections::commit(deps, team, user_id, new).await?))
}

/// A commit as a link outcome.
pub(crate) fn said(c: Committed) -> LinkOutcome {
    match c {
        Committed::Connected { external_user_id } => LinkOutcome::Connected { external_user_id },
        Committed::Duplicate => LinkOutcome::failed(
            LinkErrorType::DuplicateConnection,
            "This provider account is already connected to a user of the team, and the team rejects \
             duplicate connections.",
        ),
        Committed::TokenConsumed => concurrent_use(),
        Committed::UserGone => {
            LinkOutcome::failed(LinkErrorType::InvalidToken, "The link token's user no longer exists.")
        }
    }
}
