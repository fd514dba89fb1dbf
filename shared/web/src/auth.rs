use axum::extract::FromRequestParts;
use http::request::Parts;
use wearlab_domain::common::ids::TeamId;
use wearlab_domain::teams;

use crate::audit::CallerSlot;
use crate::fair_use::AdmissionSlot;
use crate::{ApiError, AppState};

pub const API_KEY_HEADER: &str = "x-service-api-key";

/// The team whose API key the request carries (header `x-service-api-key`).
#[derive(Debug, Clone, Copy)]
pub struct AuthTeam(pub TeamId);

impl FromRequestParts<AppState> for AuthTeam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
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
        // On an audited route, the audit layer learns who called.
        if let Some(slot) = parts.extensions.get::<CallerSlot>() {
            slot.fill(caller, state);
        }
        admit(parts, state, caller.team_id).await?;
        Ok(AuthTeam(caller.team_id))
    }
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
