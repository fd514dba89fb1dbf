use axum::extract::FromRequestParts;
use http::request::Parts;
use wearlab_domain::ids::TeamId;
use wearlab_domain::teams;

use crate::audit::CallerSlot;
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
        Ok(AuthTeam(caller.team_id))
    }
}
