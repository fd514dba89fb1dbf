use axum::extract::FromRequestParts;
use http::request::Parts;
use wearlab_domain::common::audit::{Actor, Credential};
use wearlab_domain::common::ids::{TeamId, UserId};
use wearlab_domain::phone::tokens;
use wearlab_domain::{DomainError, teams, users};

use crate::audit::CallerSlot;
use crate::fair_use::AdmissionSlot;
use crate::{ApiError, AppState, path_user_id};

pub const API_KEY_HEADER: &str = "x-service-api-key";

/// The team whose API key the request carries (header `x-service-api-key`).
#[derive(Debug, Clone, Copy)]
pub struct AuthTeam(pub TeamId);

impl FromRequestParts<AppState> for AuthTeam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        team_of_key(parts, state).await.map(AuthTeam)
    }
}

/// The team of the request's API key, fair use admitted.
async fn team_of_key(parts: &mut Parts, state: &AppState) -> Result<TeamId, ApiError> {
    let key = parts
        .headers
        .get(API_KEY_HEADER)
        .ok_or_else(|| ApiError::Unauthorized("Missing API key header x-service-api-key.".into()))?
        .to_str()
        .map_err(|_| ApiError::Unauthorized("Invalid API key.".into()))?;
    let caller = match state.cached_team(key) {
        Some(caller) => caller,
        None => {
            let caller = teams::identify(&state.deps, key).await?;
            state.remember_team(key, caller);
            caller
        }
    };
    tell_audit(parts, caller.into(), state);
    admit(parts, state, caller.team_id).await?;
    Ok(caller.team_id)
}

/// Who calls a user-level route the mobile SDKs call: a team by its API key (header
/// `x-service-api-key`, as [`AuthTeam`]), or one user of a team by the access token the phone
/// got from the token exchange (`Authorization: Bearer <token>`). A user's token is verified in
/// memory (RS256 signature with the deployment's key, expiry), then the user's record is read
/// once: a user deleted since gets 401. On a route that takes [`AuthTeam`] only, a user's
/// token is no key: 401.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthCaller {
    pub team: TeamId,
    /// The user whose token it is; `None` for the team's API key.
    pub user: Option<UserId>,
}

impl AuthCaller {
    /// The `{user_id}` of the path, which a user's token must name (compared as UUIDs, so the
    /// iOS SDK's upper-case ids match): another user's id is 404, as an unknown user is.
    pub fn user_in_path(&self, raw: &str) -> Result<UserId, ApiError> {
        self.acting_for(path_user_id(raw)?)
    }

    /// `user`, if the caller may act for it: a team for any of its users (the use case then
    /// finds whether the user is the team's), a user's token for that user only (another user:
    /// 404, as an unknown user is).
    pub fn acting_for(&self, user: UserId) -> Result<UserId, ApiError> {
        match self.user {
            Some(own) if own != user => Err(users::not_found(user).into()),
            _ => Ok(user),
        }
    }
}

impl FromRequestParts<AppState> for AuthCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if parts.headers.contains_key(API_KEY_HEADER) {
            return Ok(Self { team: team_of_key(parts, state).await?, user: None });
        }
        let Some(token) = bearer_token(parts) else {
            // No credential at all: the API key's answer.
            return Ok(Self { team: team_of_key(parts, state).await?, user: None });
        };
        let refused = || ApiError::Unauthorized("Invalid or expired user token.".into());
        let key = state.phone_key().ok_or_else(refused)?;
        let claims = tokens::verify_access(key, token, state.deps.now()).ok_or_else(refused)?;
        match users::load_active(&state.deps, claims.team, claims.sub).await {
            Ok(_) => {}
            Err(DomainError::NotFound(_)) => return Err(refused()),
            Err(e) => return Err(e.into()),
        }
        tell_audit(
            parts,
            Actor { team_id: claims.team, credential: Credential::UserToken(claims.sub) },
            state,
        );
        admit(parts, state, claims.team).await?;
        Ok(Self { team: claims.team, user: Some(claims.sub) })
    }
}

/// On an audited route, the audit layer learns who called.
fn tell_audit(parts: &Parts, actor: Actor, state: &AppState) {
    if let Some(slot) = parts.extensions.get::<CallerSlot>() {
        slot.fill(actor, state);
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
fn bearer_token(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(http::header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// The team's fair use: 429 over its limit; the figures go to the answer's `RateLimit-*` headers.
async fn admit(parts: &Parts, state: &AppState, team: TeamId) -> Result<(), ApiError> {
    let slot = parts.extensions.get::<AdmissionSlot>();
    // A request is admitted once, even when the key is checked twice (the idempotency layer
    // checks it before the handler does).
    if slot.is_some_and(|s| s.get().is_some_and(|a| a.allowed)) {
        return Ok(());
    }
    let admission = state.fair_use().admit(&state.deps, team).await?;
    if let Some(slot) = slot {
        slot.set(admission);
    }
    if admission.allowed {
        return Ok(());
    }
    Err(ApiError::TooManyRequests {
        message: format!(
            "Rate limit exceeded: this team may send {} requests per minute. Retry after {} s.",
            admission.limit, admission.reset_secs
        ),
        retry_after_secs: admission.reset_secs,
    })
}
