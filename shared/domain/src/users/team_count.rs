//! The team's count of active users (what `GET /v2/user` answers as `total`) and the version
//! that tells the kept pages of its user list ([`super::page_cache`]) they are out of date:
//! written in the same transaction as every change of a listed user.

use serde::{Deserialize, Serialize};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::TeamId;
use crate::keys;
use crate::ports::{Add, Condition, Item, Query, StoreError, WriteOp, query_all, to_body};

/// Most users counted when a team without a counter item is counted once (a safety bound, far
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

/// The field of the team's counter item that holds its active users.
const ACTIVE: &str = "active";

/// The stored count of a team's active users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct UserCount {
    active: u64,
}

/// The write that moves the team's active-user count by `delta`, to go in the same transaction
/// as the change of the active set: an atomic add, so concurrent changes of one team never
/// conflict on it. It requires the counter item to exist: a team whose users were created
/// before the counter has none, and an add would start it at `delta`. Such a transaction fails
/// on this write; the caller then creates the counter ([`active_total`]: the team is counted
/// once) and tries again.
pub(crate) fn count_change(team: TeamId, delta: i64) -> WriteOp {
    WriteOp::Add(count_add(team, delta))
}

fn count_add(team: TeamId, delta: i64) -> Add {
    Add::new(keys::team_user_count(team), ACTIVE, delta).when(Condition::Exists)
}

/// The write that goes in the same transaction as a change of a user who stays listed (PATCH,
/// a connection made or removed; for a bulk import's see [`listed_changed`]): it adds nothing
/// to the count but moves the counter item's version, which tells the kept pages of the team's
/// users ([`super::page_cache`]) that they are out of date. Like [`count_change`] it fails on a team
/// without a counter item; the caller then creates it ([`counter_made_sure_of`]) and tries
/// again.
pub(crate) fn listed_change(team: TeamId) -> WriteOp {
    count_change(team, 0)
}

/// After a transaction holding [`listed_change`] as write `counter` failed a condition on write
/// `failed` (`None`: unknown which): if that may be the counter's, the team has no counter item
/// yet, so it is created (the team counted once) before the caller tries again.
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
/// A team without a counter item has no kept page to tell: nothing to move.
pub(crate) async fn listed_changed(deps: &Deps, team: TeamId) -> Result<(), DomainError> {
    match deps.table.add(count_add(team, 0)).await {
        Ok(_) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Counts the team's active users by reading their index partition (bounded): only for a team
/// that has no counter item yet.
async fn count_active(deps: &Deps, team: TeamId) -> Result<u64, DomainError> {
    let q = Query::gsi1(keys::team_users_index(team));
    let n = query_all(deps.table.as_ref(), q, MAX_COUNTED).await?.len() as u64;
    tracing::info!(team_id = %team, active = n, "team user count computed from the index");
    Ok(n)
}

/// The team's counter item as a page reads it: its active users, and the item's version, which
/// every change of a listed user moves (it is written in the same transaction as the change:
/// [`count_change`] or [`listed_change`]). A page read after the counter shows `version` shows
/// every change up to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListedUsers {
    pub(crate) active: u64,
    pub(crate) version: u64,
}

/// The team's active-user count: the counter item, else counted once and stored.
pub(crate) async fn active_total(deps: &Deps, team: TeamId) -> Result<u64, DomainError> {
    Ok(listed_users(deps, team).await?.active)
}

/// The team's counter item ([`ListedUsers`]), created (the team counted once) if missing.
pub(crate) async fn listed_users(deps: &Deps, team: TeamId) -> Result<ListedUsers, DomainError> {
    let key = keys::team_user_count(team);
    for _ in 0..COUNT_TRIES {
        if let Some(item) = deps.table.get(&key).await? {
            return Ok(ListedUsers { active: item.decode::<UserCount>()?.active, version: item.version });
        }
        let counted = count_active(deps, team).await?;
        let mut item = Item::new(key.clone(), to_body(&UserCount { active: counted }));
        // Versions start at the creation time in microseconds, not at 1: an item deleted and
        // counted again (a repair) then never repeats a version a kept page was read under.
        item.version = u64::try_from(deps.now().timestamp_micros()).unwrap_or(1).max(1);
        let version = item.version;
        match deps.table.put(item, Condition::NotExists).await {
            Ok(()) => return Ok(ListedUsers { active: counted, version }),
            // A change of the team's users created it meanwhile: read that one.
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(users_busy())
}
