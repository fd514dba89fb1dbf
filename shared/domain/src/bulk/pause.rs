//! POST /v2/link/bulk_pause: stops polling and historical pulls of connections while keeping
//! them (status `paused`), e.g. while a team migrates them elsewhere. Linking or importing the
//! connection again makes it active.

use wearlab_models::ConnectionStatus;
use wearlab_models::bulk::BulkPauseBody;

use super::{bulk_provider, check_user_ids};
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::ProviderInfo;
use crate::keys;
use crate::linking::connections::ConnectionRecord;
use crate::ports::{Condition, StoreError};
use crate::users;

/// Most users one request pauses (the answer waits for all of them).
pub const MAX_USER_IDS: usize = 1_000;
const TRIES: usize = 4;

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
    if users::load(deps, team, user).await?.is_none_or(|(u, _)| u.deletion.is_some()) {
        return Ok(false);
    }
    let key = keys::linking::connection(user, provider);
    for _ in 0..TRIES {
        let Some(item) = deps.table.get(&key).await? else { return Ok(false) };
        let mut conn: ConnectionRecord = item.decode()?;
        if conn.status == ConnectionStatus::Paused {
            return Ok(true);
        }
        conn.status = ConnectionStatus::Paused;
        match deps.table.put(conn.to_item(item.version + 1), Condition::VersionIs(item.version)).await {
            Ok(()) => return Ok(true),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(DomainError::Busy("the connection is being changed concurrently, retry".into()))
}
