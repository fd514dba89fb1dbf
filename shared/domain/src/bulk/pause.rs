//! POST /v2/link/bulk_pause: stops polling and historical pulls of connections while keeping
//! them (status `paused`), e.g. while a team migrates them elsewhere. Linking or importing the
//! connection again makes it active.

use wearlab_models::bulk::BulkPauseBody;

use super::{bulk_provider, check_user_ids};
use crate::Deps;
use crate::common::error::{DomainError, Found};
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::ProviderInfo;
use crate::linking::connections;
use crate::users;

/// Most users one request pauses (the answer waits for all of them).
pub const MAX_USER_IDS: usize = 1_000;

pub struct PauseRequest {
    provider: &'static ProviderInfo,
    user_ids: Vec<UserId>,
}

impl PauseRequest {
    pub fn parse(body: BulkPauseBody) -> Result<Self, DomainError> {
        Ok(Self {
            provider: bulk_provider(&body.provider)?,
            user_ids: check_user_ids(&body.user_ids, Some(MAX_USER_IDS))?,
        })
    }
}

/// Pauses each user's connection; returns (paused, failed).
pub async fn pause(
    deps: &Deps,
    team: TeamId,
    req: PauseRequest,
) -> Result<(Vec<UserId>, Vec<UserId>), DomainError> {
    let slug = req.provider.slug.as_str();
    let (mut paused, mut failed) = (Vec::new(), Vec::new());
    for user in req.user_ids {
        if pause_one(deps, team, user, slug).await? {
            paused.push(user);
        } else {
            failed.push(user);
        }
    }
    tracing::info!(team_id = %team, provider = slug, paused = paused.len(), failed = failed.len(), "connections paused");
    Ok((paused, failed))
}

async fn pause_one(deps: &Deps, team: TeamId, user: UserId, provider: &str) -> Result<bool, DomainError> {
    if users::load_active(deps, team, user).await.found()?.is_none() {
        return Ok(false);
    }
    connections::pause(deps, user, provider).await
}
