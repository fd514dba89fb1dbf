//! OAuth linking: the link token opens a consent at the provider (with the platform's app, or
//! the team's own for team_oauth providers); the provider sends the browser back to the
//! callback, which exchanges the code, stores the connection, consumes the token and sends the
//! browser on to the token's `redirect_url` with `state`, `error_type` and `error`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::{AuthType, LinkErrorType, LinkResult, OauthProviderEntry};

use super::connections::{self, NewConnection};
use super::password::said;
use super::subscriptions;
use super::tokens::{self, ValidToken};
use super::{
    LinkOutcome, ProviderInfo, encode, known_provider, random_hex, redirect_with_result, sha256_hex,
    team_apps,
};
use crate::Deps;
use crate::common::crypto::Secret;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::keys;
use crate::ports::providers::{AuthorizeRequest, CodeExchange};
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key, WriteOp};

/// A consent in progress, by the hash of its `state`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct OauthStateRecord {
    team_id: TeamId,
    user_id: UserId,
    provider: String,
    token_key: Key,
    client_id: String,
    /// The consent runs on the team's own app (else the platform's).
    team_app: bool,
    redirect_uri: String,
    expires_at: DateTime<Utc>,
}

/// The callback address of `provider` under the API's public address.
pub fn callback_url(base_url: &str, provider: &str) -> String {
    format!("{}/v2/link/provider/oauth/{}/callback", base_url.trim_end_matches('/'), encode(provider))
}

fn oauth_provider(slug: &str) -> Result<&'static ProviderInfo, DomainError> {
    let p = known_provider(slug)?;
    if !p.is_oauth() {
        return Err(DomainError::invalid(&["provider"], format!("{slug} does not link by OAuth"), "enum"));
    }
    Ok(p)
}

/// GET /v2/link/provider/oauth/{provider}: the provider entry with the consent URL. `team` is
/// the API key's team (`None` on the hosted link page, where the token alone authorises).
pub async fn start(
    deps: &Deps,
    team: Option<TeamId>,
    raw_token: Option<&str>,
    provider: &str,
    base_url: &str,
) -> Result<OauthProviderEntry, DomainError> {
    let p = oauth_provider(provider)?;
    let slug = p.slug.as_str();
    super::linkable(deps.providers.as_ref(), slug)?;
    let token = match tokens::check(deps, team, raw_token, slug).await? {
        Ok(t) => t,
        Err(r) => return Err(DomainError::Rejected(format!("{}: {}", r.error_type, r.error))),
    };
    let team_id = token.record.team_id;
    let (client_id, team_app) = match team_apps::team_client(deps, team_id, slug).await? {
        Some(c) => (c.client_id, true),
        None if p.is(&AuthType::TeamOauth) => {
            return Err(DomainError::Rejected(format!(
                "{slug} links only through the team's own OAuth app; register it with PUT /v2/team/oauth_app/{slug}."
            )));
        }
        None => match deps.providers.platform_oauth_client(slug) {
            Some(c) => (c.client_id, false),
            None => {
                return Err(DomainError::Rejected(format!(
                    "{slug} has no platform OAuth app here; register the team's own with PUT /v2/team/oauth_app/{slug}."
                )));
            }
        },
    };
    let state = random_hex();
    let redirect_uri = callback_url(base_url, slug);
    let record = OauthStateRecord {
        team_id,
        user_id: token.record.user_id,
        provider: slug.to_owned(),
        token_key: token.key.clone(),
        client_id: client_id.clone(),
        team_app,
        redirect_uri: redirect_uri.clone(),
        expires_at: token.record.expires_at,
    };
    let item = Item::new(keys::linking::oauth_state(&sha256_hex(&state)), to_body(&record))
        .with_expiry(Some(token.record.expires_at.timestamp() + 3600));
    deps.table.put(item, Condition::NotExists).await?;
    let oauth_url = deps
        .providers
        .authorize_url(slug, &AuthorizeRequest { client_id, redirect_uri, state })
        .map_err(|e| DomainError::Rejected(e.to_string()))?;
    tracing::info!(team_id = %team_id, user_id = %token.record.user_id, provider = slug, team_app, "oauth consent started");
    let e = p.entry_on(deps.providers.as_ref());
    Ok(OauthProviderEntry {
        name: e.name,
        slug: e.slug,
        description: e.description,
        logo: e.logo,
        auth_type: e.auth_type,
        supported_resources: e.supported_resources,
        oauth_url,
    })
}

/// What the provider sent back to the callback.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct CallbackParams {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    /// The scopes the user granted, where the provider reports them on the callback (Strava:
    /// comma-separated; the user may untick some of those asked for).
    #[serde(default)]
    pub scope: Option<String>,
}

/// Where the browser goes after the callback, and the result it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct CallbackOutcome {
    /// The token's redirect URL with the outcome as query parameters, when it has one.
    pub redirect_to: Option<String>,
    pub result: LinkResult,
}

fn outcome(slug: &str, redirect_url: Option<String>, o: LinkOutcome) -> CallbackOutcome {
    let result = o.result(slug, redirect_url.clone());
    let redirect_to = redirect_url.map(|url| redirect_with_result(&url, &result));
    CallbackOutcome { redirect_to, result }
}

/// GET /v2/link/provider/oauth/{provider}/callback (the browser, no API key). Once the
/// connection is stored, the provider's per-user set-up is made (`Providers::after_link`:
/// Withings's notifications) when the deployment has a `public_url` providers can call.
pub async fn callback(
    deps: &Deps,
    provider: &str,
    params: CallbackParams,
    public_url: Option<&str>,
) -> Result<CallbackOutcome, DomainError> {
    let p = oauth_provider(provider)?;
    let slug = p.slug.as_str();
    let invalid = || {
        outcome(
            slug,
            None,
            LinkOutcome::failed(LinkErrorType::InvalidToken, "Unknown or already used OAuth state."),
        )
    };
    let Some(state) = params.state.as_deref().filter(|s| !s.is_empty() && s.len() <= 256) else {
        return Ok(invalid());
    };
    let state_key = keys::linking::oauth_state(&sha256_hex(state));
    let Some(item) = deps.table.get(&state_key).await? else { return Ok(invalid()) };
    let record: OauthStateRecord = item.decode()?;
    if record.provider != slug {
        return Ok(invalid());
    }
    let Some(token) = tokens::load_by_key(deps, &record.token_key).await? else { return Ok(invalid()) };
    let token: ValidToken = match tokens::judge(deps, Some(record.team_id), token, Some(slug)).await? {
        Ok(t) => t,
        Err(r) => {
            forget(deps, &state_key).await;
            return Ok(outcome(slug, r.redirect_url, LinkOutcome::failed(r.error_type, r.error)));
        }
    };
    let redirect = token.record.redirect_url.clone();
    // The deployment stopped linking simulated providers while this consent was open.
    if let Some(why) = super::not_linkable(deps.providers.as_ref(), slug) {
        forget(deps, &state_key).await;
        return Ok(outcome(slug, redirect, LinkOutcome::failed(LinkErrorType::ProviderApiError, why)));
    }
    if let Some(error) = params.error.as_deref() {
        forget(deps, &state_key).await;
        let o = if error == "access_denied" {
            LinkOutcome::failed(LinkErrorType::UserCancelled, "The user declined access at the provider.")
        } else {
            let code: String =
                error.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(64).collect();
            LinkOutcome::failed(
                LinkErrorType::ProviderApiError,
                format!("The provider answered with error {code}."),
            )
        };
        tracing::info!(team_id = %record.team_id, user_id = %record.user_id, provider = slug, "oauth consent not given");
        return Ok(outcome(slug, redirect, o));
    }
    let Some(code) = params.code.filter(|c| !c.is_empty()) else {
        forget(deps, &state_key).await;
        return Ok(outcome(
            slug,
            redirect,
            LinkOutcome::failed(LinkErrorType::ProviderApiError, "The provider sent no authorization code."),
        ));
    };
    let client = if record.team_app {
        team_apps::team_client(deps, record.team_id, slug).await?
    } else {
        deps.providers.platform_oauth_client(slug)
    };
    let Some(client) = client.filter(|c| c.client_id == record.client_id) else {
        forget(deps, &state_key).await;
        return Ok(outcome(
            slug,
            redirect,
            LinkOutcome::failed(
                LinkErrorType::ProviderApiError,
                "The OAuth app this consent started with was changed or removed; start again.",
            ),
        ));
    };
    let team_app_client_id = record.team_app.then(|| client.client_id.clone());
    let exchange =
        CodeExchange { code: Secret::new(code), redirect_uri: record.redirect_uri.clone(), client };
    let o = match deps.providers.exchange_code(slug, exchange).await {
        Ok(mut account) => {
            // A token answer naming no scopes (Strava's) leaves the callback's word on what was
            // granted; the adapter reads it back when it fetches.
            if account.credentials.scopes.is_empty()
                && let Some(granted) = &params.scope
            {
                account.credentials.scopes = granted_scopes(granted);
            }
            let linked = account.clone();
            let new = NewConnection {
                provider: p,
                account,
                demo: false,
                token: Some(token),
                extra_ops: vec![WriteOp::Delete { key: state_key.clone(), condition: Condition::Exists }],
                team_app_client_id,
                import_op: None,
            };
            let o = said(connections::commit(deps, record.team_id, record.user_id, new).await?);
            if let (LinkOutcome::Connected { .. }, Some(base)) = (&o, public_url) {
                subscriptions::after_link(deps, slug, &linked, base, (record.team_id, record.user_id)).await;
            }
            o
        }
        Err(e) => {
            forget(deps, &state_key).await;
            tracing::info!(team_id = %record.team_id, user_id = %record.user_id, provider = slug,
                error_type = %e.link_error_type(), "oauth code exchange refused");
            LinkOutcome::failed(e.link_error_type(), e.to_string())
        }
    };
    Ok(outcome(slug, redirect, o))
}

/// A callback's `scope`, separated by commas (Strava) or spaces (RFC 6749), at most 32 kept
/// and each at most 64 characters: it came through the browser.
fn granted_scopes(scope: &str) -> Vec<String> {
    scope.split([',', ' ']).filter(|s| !s.is_empty() && s.len() <= 64).take(32).map(str::to_owned).collect()
}

/// Removes a used OAuth state (best effort: it expires with its token anyway).
async fn forget(deps: &Deps, key: &Key) {
    if let Err(e) = deps.table.delete(key, Condition::None).await {
        tracing::warn!(error = %e, "oauth state not removed");
    }
}
