//! The team's count of active users (what `GET /v2/user` answers as `total`) and the version
//! that tells the kept pages of its user list ([`super::page_cache`]) they are out of date:
//! written in the same transaction as every change of a listed user.

use serde::{Deserialize, Serialize};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::keys;
use crate::ports::{Add, Condition, Item, Key, Query, RawItem, StoreError, WriteOp, query_all, to_body};

/// Most users counted when a team without counter shards is counted once (a safety bound, far
/// above any real team).
const MAX_COUNTED: usize = 1_000_000;
/// Tries of a change of the active-user set: a try fails when the team's counter item does not
/// exist yet (it is then created, once per team) or when the user changed under it.
pub(crate) const COUNT_TRIES: usize = 10;

/// The refusal after [`COUNT_TRIES`] failed tries of a change of the active-user set.
pub(crate) fn users_busy() -> DomainError {
    DomainError::Busy("the team's users are being changed concurrently, retry".into())
}

/// A short, growing, jittered pause before another try of a change whose user changed under
/// it (so that concurrent changes do not retry in lockstep).
pub(crate) async fn count_backoff(attempt: usize) {
    let base = std::time::Duration::from_millis(1 << attempt.min(4));
    tokio::time::sleep(base + crate::common::backoff::jitter(std::time::Duration::from_millis(7))).await;
}

/// The field of a counter shard that holds its part of the active users.
const ACTIVE: &str = "active";

/// The stored count of one shard. A shard's count may go below zero: a team counted once puts
/// its whole count in shard 0, and a user of another shard deleted later takes one from that
/// shard. Only the sum means something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct UserCount {
    active: i64,
}

/// The write that moves the team's active-user count by `delta`, to go in the same transaction
/// as the change of `user`: an atomic add to the user's shard of the counter
/// ([`keys::team_user_count`]), so concurrent changes of one team never conflict on it and
/// spread over [`keys::TEAM_USER_COUNT_SHARDS`] partitions (one user's changes stay on one).
/// It requires the shard to exist: a team whose users were created before the shards has none,
/// and an add would start it at `delta`. Such a transaction fails on this write; the caller
/// then creates the shards ([`active_total`]: the team is counted once) and tries again.
pub(crate) fn count_change(team: TeamId, user: UserId, delta: i64) -> WriteOp {
    WriteOp::Add(count_add(keys::team_user_count(team, keys::team_user_count_shard(user)), delta))
}

fn count_add(shard: Key, delta: i64) -> Add {
    Add::new(shard, ACTIVE, delta).when(Condition::Exists)
}

/// The write that goes in the same transaction as a change of a user who stays listed (PATCH,
/// a connection made or removed; for a bulk import's see [`listed_changed`]): it adds nothing
/// to the count but moves the version of the user's shard, which tells the kept pages of the
/// team's users ([`super::page_cache`]) that they are out of date. Like [`count_change`] it
/// fails on a team without counter shards; the caller then creates them
/// ([`counter_made_sure_of`]) and tries again.
pub(crate) fn listed_change(team: TeamId, user: UserId) -> WriteOp {
    count_change(team, user, 0)
}

/// After a transaction holding [`listed_change`] as write `counter` failed a condition on write
/// `failed` (`None`: unknown which): if that may be the counter's, the team has no counter
/// shards yet, so they are created (the team counted once) before the caller tries again.
pub(crate) async fn counter_made_sure_of(
    deps: &Deps,
    team: TeamId,
    failed: Option<usize>,
    counter: usize,
) -> Result<(), DomainError> {
    if failed.is_none_or(|op| op == counter) {
        active_total(deps, team).await?;
    }
    Ok(())
}

/// [`listed_change`] on its own, after changes of listed users written without it: a bulk
/// import's connections, moved for once per imported message (before the message counts as
/// done), where a move per connection would make every import of a team contend on one item.
/// Any shard's version tells the kept pages, so a random one is moved (imports of one team
/// spread like its other changes). A team without counter shards has no kept page to tell:
/// nothing to move.
pub(crate) async fn listed_changed(deps: &Deps, team: TeamId) -> Result<(), DomainError> {
    let shard = uuid::Uuid::new_v4().as_bytes()[15] % keys::TEAM_USER_COUNT_SHARDS;
    match deps.table.add(count_add(keys::team_user_count(team, shard), 0)).await {
        Ok(_) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Counts the team's active users by reading their index partition (bounded): only for a team
/// that has no counter shards yet.
async fn count_active(deps: &Deps, team: TeamId) -> Result<u64, DomainError> {
    let q = Query::gsi1(keys::team_users_index(team));
    let n = query_all(deps.table.as_ref(), q, MAX_COUNTED).await?.len() as u64;
    tracing::info!(team_id = %team, active = n, "team user count computed from the index");
    Ok(n)
}

/// The team's counter as a page reads it: its active users (the sum of the shards' counts) and
/// its version, the sum of the shards' versions. Every change of a listed user moves one
/// shard's version by one (it is written in the same transaction as the change:
/// [`count_change`] or [`listed_change`]) and no write moves one back, so the sum moves with
/// every change, and the same sum read later means the same shard versions: no change since.
/// A page read after the shards show `version` shows every change up to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListedUsers {
    pub(crate) active: u64,
    pub(crate) version: u64,
}

/// The team's active-user count: the sum of the counter shards, else counted once and stored.
pub(crate) async fn active_total(deps: &Deps, team: TeamId) -> Result<u64, DomainError> {
    Ok(listed_users(deps, team).await?.active)
}

/// The team's counter ([`ListedUsers`]): its shards in one batch read (one round trip on
/// DynamoDB), created (the team counted once) if missing.
pub(crate) async fn listed_users(deps: &Deps, team: TeamId) -> Result<ListedUsers, DomainError> {
    let shards = keys::team_user_counts(team);
    for _ in 0..COUNT_TRIES {
        let read = deps.table.get_many(&shards).await?;
        if read.iter().all(Option::is_some) {
            let (mut active, mut version) = (0_i64, 0_u64);
            for item in read.iter().flatten() {
                let (count, item_version) = item.decode::<UserCount>()?;
                active = active.saturating_add(count.active);
                version = version.saturating_add(item_version);
            }
            return Ok(ListedUsers { active: u64::try_from(active).unwrap_or(0), version });
        }
        if read.iter().any(Option::is_some) {
            // Some shards only (a repair deleted the others): the count they hold cannot be
            // completed while changes go on through them, so they go too, then the team is
            // counted from the index with nothing moving under the count.
            remove_shards(deps, &read).await?;
            continue;
        }
        // No shard, so no change of the team's active set can commit: the index count is exact.
        let counted = count_active(deps, team).await?;
        // Versions start at the creation time in microseconds, not at 1: shards deleted and
        // counted again (a repair) then never repeat a version sum a kept page was read under
        // (that would take more changes than microseconds passed per shard).
        let start = u64::try_from(deps.now().timestamp_micros()).unwrap_or(1).max(1);
        let mut ops: Vec<WriteOp> = shards
            .iter()
            .enumerate()
            .map(|(n, key)| {
                let active = if n == 0 { i64::try_from(counted).unwrap_or(i64::MAX) } else { 0 };
                let mut item = Item::new(key.clone(), to_body(&UserCount { active }));
                item.version = start;
                WriteOp::Put { item, condition: Condition::NotExists }
            })
            .collect();
        // The one counter item of before the shards, if the team has one, is counted in them now.
        ops.push(WriteOp::Delete { key: keys::team_user_count_unsharded(team), condition: Condition::None });
        match deps.table.transact(ops).await {
            Ok(()) => {
                let version = start.saturating_mul(u64::from(keys::TEAM_USER_COUNT_SHARDS));
                return Ok(ListedUsers { active: counted, version });
            }
            // A change of the team's users created them meanwhile: read those.
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(users_busy())
}

/// Deletes the shards read in `read`, each only if unchanged since (else the next read sees it).
async fn remove_shards(deps: &Deps, read: &[Option<RawItem>]) -> Result<(), DomainError> {
    let mut ops = Vec::with_capacity(read.len());
    for item in read.iter().flatten() {
        let (_, version) = item.decode::<serde::de::IgnoredAny>()?;
        ops.push(WriteOp::Delete { key: item.key().clone(), condition: Condition::VersionIs(version) });
    }
    match deps.table.transact(ops).await {
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
