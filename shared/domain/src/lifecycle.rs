//! The lifecycle of a user beyond its record: delete with a grace period, undo, refresh of the
//! connected sources, and erasure of deleted users once their grace period is over. It sits
//! above both `users` (records) and `linking` (connections), which it drives.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::{ConnectionStatus, RefreshResult};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{ClientUserId, TeamId, UserId};
use crate::common::outbox::Staged;
use crate::common::throttle;
use crate::events::lifecycle as lifecycle_events;
use crate::keys;
use crate::linking::{self, connections};
use crate::pipeline::pull::{PollJob, Polled};
use crate::pipeline::{self, Job, PullMessage};
use crate::ports::to_body;
use crate::ports::{
    Condition, Item, Outgoing, Query, Queue, QueueName, Schedule, StoreError, WriteOp, query_all,
};
use crate::users::{
    self, Deletion, ErasureDue, ErasureJob, Reservation, UserRecord, load, load_active, not_found,
};

/// How long a deleted user can be restored before its data is erased.
pub const GRACE_PERIOD_DAYS: i64 = 7;
/// Refresh `timeout` bounds, seconds.
pub const REFRESH_TIMEOUT_DEFAULT: f64 = 10.0;
pub const REFRESH_TIMEOUT_RANGE: (f64, f64) = (5.0, 60.0);
/// Items deleted per transaction while erasing.
const CHUNK: usize = 25;
/// Most pending erasures one sweep handles; the next sweep takes the rest.
const SWEEP_MAX: usize = 10_000;
/// Most items erased for one user per call; a larger user is finished by the next sweep.
const USER_MAX_ITEMS: usize = 1_000_000;

/// Which deleted user an undo names.
#[derive(Debug, Clone, PartialEq)]
pub enum UndoTarget {
    UserId(UserId),
    ClientUserId(ClientUserId),
}

/// Marks a deleted user's client id, for undo by client id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct DeletedClientUserId {
    user_id: UserId,
    deleted_at: DateTime<Utc>,
}

/// Deletes a user: one transaction marks it deleted, releases its client_user_id and records
/// the pending erasure; then a one-time schedule is created. If that schedule cannot be
/// created, the hourly sweep erases the user from the pending record instead.
pub async fn delete(deps: &Deps, team: TeamId, user_id: UserId) -> Result<(), DomainError> {
    let mut tries = 0..users::COUNT_TRIES;
    let (staged, revokes, erase_at) = loop {
        let Some(attempt) = tries.next() else { return Err(users::users_busy()) };
        let (current, version) = load_active(deps, team, user_id).await?;
        let now = deps.now();
        let erase_at = now + Duration::days(GRACE_PERIOD_DAYS);
        let mut deleted = current.clone();
        deleted.deletion = Some(Deletion { deleted_at: now, erase_at });
        // Every connection goes now, in the same transaction; the providers are told after it.
        deleted.connections.clear();
        let (removals, revokes) = crate::linking::connections::removal(deps, team, user_id).await?;
        let expiry = Some(erase_at.timestamp());
        let mut ops = vec![
            WriteOp::Put { item: deleted.to_item(version + 1), condition: Condition::VersionIs(version) },
            users::count_change(team, user_id, -1),
            WriteOp::Delete {
                key: keys::client_user_id(team, &current.client_user_id),
                condition: Condition::None,
            },
            WriteOp::Put {
                item: Item::new(
                    keys::deleted_client_user_id(team, &current.client_user_id, user_id),
                    to_body(&DeletedClientUserId { user_id, deleted_at: now }),
                )
                .with_expiry(expiry),
                condition: Condition::None,
            },
            WriteOp::Put {
                item: Item::new(
                    keys::erasure_due(erase_at, user_id),
                    to_body(&ErasureDue { team_id: team, user_id }),
                )
                .with_expiry(expiry),
                condition: Condition::None,
            },
        ];
        ops.extend(removals);
        let staged = Staged::new(deps, user_id, vec![lifecycle_events::deleted(&current, now, erase_at)]);
        ops.push(staged.write_op());
        match deps.table.transact(ops).await {
            Ok(()) => break (staged, revokes, erase_at),
            // The user or its connections changed between our reads and the write, or the team
            // has no counter item yet (created here): read again (a user deleted meanwhile is
            // then a 404).
            Err(StoreError::ConditionFailed { op }) => {
                if op.is_none_or(|i| i == 1) {
                    users::active_total(deps, team).await?;
                }
                users::count_backoff(attempt).await
            }
            Err(e) => return Err(e.into()),
        }
    };
    staged.publish(deps).await;
    revokes.attempt(deps).await;
    let schedule = Schedule {
        name: keys::erasure_schedule_name(user_id),
        at: erase_at,
        payload: to_body(&ErasureJob { erase_user: user_id }),
    };
    if let Err(e) = deps.scheduler.schedule_once(schedule).await {
        tracing::warn!(user_id = %user_id, error = %e, "erasure schedule not created; the sweep will erase the user");
    }
    tracing::info!(team_id = %team, user_id = %user_id, erase_at = %erase_at, "user deleted");
    Ok(())
}

/// Restores a deleted user inside the grace period. Connections are not restored.
pub async fn undo_delete(deps: &Deps, team: TeamId, target: UndoTarget) -> Result<(), DomainError> {
    for attempt in 0..users::COUNT_TRIES {
        match undo_once(deps, team, &target).await? {
            Undo::Done => return Ok(()),
            Undo::CountMissing => users::count_backoff(attempt).await,
        }
    }
    Err(users::users_busy())
}

/// How one try of an undo ended (errors aside).
enum Undo {
    Done,
    /// The team had no user count item (now created); nothing was written.
    CountMissing,
}

/// Whether someone holds `client_user_id` in the team.
async fn reservation_held(deps: &Deps, team: TeamId, id: &ClientUserId) -> Result<bool, DomainError> {
    Ok(deps.table.get(&keys::client_user_id(team, id)).await?.is_some())
}

async fn undo_once(deps: &Deps, team: TeamId, target: &UndoTarget) -> Result<Undo, DomainError> {
    let now = deps.now();
    let (record, version) = match target {
        UndoTarget::UserId(id) => load(deps, team, *id).await?.ok_or_else(|| not_found(id))?,
        UndoTarget::ClientUserId(cid) => {
            let q = Query::partition(keys::team(team).pk).prefix(keys::deleted_client_user_id_prefix(cid));
            let mut candidates = Vec::new();
            for item in query_all(deps.table.as_ref(), q, 1_000).await? {
                let marker: DeletedClientUserId = item.decode()?;
                if let Some(found) = load(deps, team, marker.user_id).await? {
                    candidates.push(found);
                }
            }
            // The most recently deleted user still inside its grace period.
            candidates
                .into_iter()
                .filter(|(r, _)| r.deletion.as_ref().is_some_and(|d| d.erase_at > now))
                .max_by_key(|(r, _)| r.deletion.as_ref().map(|d| d.deleted_at))
                .ok_or_else(|| DomainError::NotFound(format!("No deleted user with client_user_id {cid}.")))?
        }
    };
    let Some(deletion) = record.deletion.clone() else {
        return Err(DomainError::NotFound(format!("User {} is not deleted.", record.user_id)));
    };
    if deletion.erase_at <= now {
        // The grace period is over; erasure is due or done.
        return Err(not_found(record.user_id));
    }
    let mut restored = record.clone();
    restored.deletion = None;
    let user_id = record.user_id;
    let mut ops = vec![
        WriteOp::Put { item: restored.to_item(version + 1), condition: Condition::VersionIs(version) },
        users::count_change(team, user_id, 1),
        WriteOp::Put {
            item: Item::new(
                keys::client_user_id(team, &record.client_user_id),
                to_body(&Reservation { user_id, created_on: record.created_on }),
            ),
            condition: Condition::NotExists,
        },
        WriteOp::Delete {
            key: keys::deleted_client_user_id(team, &record.client_user_id, user_id),
            condition: Condition::None,
        },
        WriteOp::Delete { key: keys::erasure_due(deletion.erase_at, user_id), condition: Condition::None },
    ];
    let staged = Staged::new(deps, user_id, vec![lifecycle_events::undo_deleted(&restored, now)]);
    ops.push(staged.write_op());
    match deps.table.transact(ops).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed { op: Some(0) }) => {
            return Err(DomainError::Busy("the user changed, retry".into()));
        }
        // The team has no counter item yet: create it, then try again.
        Err(StoreError::ConditionFailed { op: Some(1) }) => {
            users::active_total(deps, team).await?;
            return Ok(Undo::CountMissing);
        }
        Err(StoreError::ConditionFailed { op: None })
            if !reservation_held(deps, team, &record.client_user_id).await? =>
        {
            users::active_total(deps, team).await?;
            return Ok(Undo::CountMissing);
        }
        Err(StoreError::ConditionFailed { .. }) => {
            return Err(DomainError::Rejected(format!(
                "client_user_id {} is now used by another user; delete or rename that user first.",
                record.client_user_id
            )));
        }
        Err(e) => return Err(e.into()),
    }
    staged.publish(deps).await;
    // A stale schedule is harmless (the eraser checks the user is still due), so a failed
    // cancel only costs one no-op invocation.
    if let Err(e) = deps.scheduler.cancel(&keys::erasure_schedule_name(user_id)).await {
        tracing::warn!(user_id = %user_id, error = %e, "erasure schedule not cancelled");
    }
    tracing::info!(team_id = %team, user_id = %user_id, "user deletion undone");
    Ok(Undo::Done)
}

/// Parses the refresh timeout (seconds).
pub fn refresh_timeout(raw: Option<f64>) -> Result<std::time::Duration, DomainError> {
    let t = raw.unwrap_or(REFRESH_TIMEOUT_DEFAULT);
    let (lo, hi) = REFRESH_TIMEOUT_RANGE;
    if !t.is_finite() || t < lo || t > hi {
        return Err(DomainError::invalid(
            &["timeout"],
            format!("timeout must be between {lo} and {hi} seconds"),
            "value_error",
        ));
    }
    Ok(std::time::Duration::from_secs_f64(t))
}

/// Refreshes a user may ask for per hour (sliding window), as upstream.
pub const REFRESHES_PER_HOUR: u32 = 8;

/// Days fetched by the refresh of a connection the poll does not know yet (its historical pull
/// still running).
pub const FIRST_REFRESH_DAYS: u64 = 30;

/// Refreshes the user's connected sources: the poll of each connection (the same incremental
/// fetch, storage and `daily.data.*` events), all at once, fetching until `timeout`. A source
/// whose resources are not all fetched by then is in progress: a poll job of it goes to the pull
/// queue (`queue`), which finishes it. Answers per `provider/resource` what was refreshed, what is in
/// progress and what failed. The ninth refresh of a user within an hour is refused (429) until
/// the oldest leaves the hour.
pub async fn refresh(
    deps: &Deps,
    queue: &dyn Queue,
    team: TeamId,
    user_id: UserId,
    timeout: std::time::Duration,
) -> Result<RefreshResult, DomainError> {
    users::load_active(deps, team, user_id).await?;
    let policy =
        throttle::Policy::Rate { limit: REFRESHES_PER_HOUR, window: std::time::Duration::from_secs(3600) };
    if let throttle::Decision::Wait(retry_after) =
        throttle::take(deps, keys::refresh_rate(user_id), policy, "refresh").await?
    {
        return Err(DomainError::RateLimited {
            message: format!(
                "At most {REFRESHES_PER_HOUR} refreshes per hour per user; retry after {} seconds.",
                retry_after.as_secs().max(1)
            ),
            retry_after,
        });
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let today = deps.now().date_naive();
    let since = today.checked_sub_days(chrono::Days::new(FIRST_REFRESH_DAYS)).unwrap_or(today);
    let mut result = RefreshResult {
        success: true,
        user_id: user_id.as_uuid(),
        refreshed_sources: vec![],
        in_progress_sources: vec![],
        failed_sources: vec![],
    };
    let entries = |provider: &str, resources: Vec<wearlab_models::Resource>| -> Vec<String> {
        resources.into_iter().map(|r| format!("{provider}/{r}")).collect()
    };
    // Each poll runs to the deadline and no further, and all are awaited here: nothing outlives
    // the request (on Lambda it would die with the invocation); unfinished work is queued.
    let mut polls = tokio::task::JoinSet::new();
    for (conn, _) in connections::load_all(deps, user_id).await? {
        // The phone sends its data itself: there is nothing to fetch, refreshed or failed.
        if conn.from_phone() {
            continue;
        }
        if conn.status != ConnectionStatus::Connected {
            result.failed_sources.extend(entries(
                &conn.provider,
                pipeline::pull::data_resources(deps.providers.as_ref(), &conn.provider),
            ));
            continue;
        }
        let job = PollJob { team_id: team, user_id, provider: conn.provider.clone(), since: Some(since) };
        let deps = deps.clone();
        polls.spawn(async move {
            let polled = pipeline::pull::poll_until(&deps, &job, Some(deadline)).await;
            (conn, job, polled)
        });
    }
    while let Some(joined) = polls.join_next().await {
        let Ok((conn, job, polled)) = joined else {
            tracing::error!(user_id = %user_id, "refresh of a source panicked");
            continue;
        };
        let provider = conn.provider.clone();
        let (done, failed, pending) = match polled {
            Ok(Polled::Polled { done, failed, pending }) => (done, failed, pending),
            // Nothing to fetch (outside the user's ingestion bounds, or gone meanwhile).
            Ok(Polled::Nothing) => {
                (pipeline::pull::data_resources(deps.providers.as_ref(), &provider), vec![], vec![])
            }
            Ok(Polled::NoAccess { error: Some(e), resources }) => {
                linking::refresh::record_refusal(deps, &conn, &e).await;
                (vec![], resources, vec![])
            }
            Ok(Polled::NoAccess { error: None, resources }) => (vec![], vec![], resources),
            Err(e) => {
                tracing::warn!(user_id = %user_id, provider, error = %e, "refresh of a source failed");
                (vec![], pipeline::pull::data_resources(deps.providers.as_ref(), &provider), vec![])
            }
        };
        result.refreshed_sources.extend(entries(&provider, done));
        result.failed_sources.extend(entries(&provider, failed));
        if pending.is_empty() {
            continue;
        }
        let message = Outgoing::now(PullMessage::Job(Job::Poll(job)).body());
        match queue.send(QueueName::Pull, vec![message]).await {
            Ok(()) => result.in_progress_sources.extend(entries(&provider, pending)),
            Err(e) => {
                tracing::warn!(user_id = %user_id, provider, error = %e, "unfinished refresh not queued");
                result.failed_sources.extend(entries(&provider, pending));
            }
        }
    }
    result.refreshed_sources.sort();
    result.in_progress_sources.sort();
    result.failed_sources.sort();
    tracing::info!(team_id = %team, user_id = %user_id, refreshed = result.refreshed_sources.len(),
        in_progress = result.in_progress_sources.len(), failed = result.failed_sources.len(), "refresh");
    Ok(result)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Erasure {
    /// Every item of the user is gone.
    Erased { items: usize },
    /// Nothing to do: the user was erased before (a duplicate or late schedule).
    AlreadyGone,
    /// The user is active again (deletion undone).
    NotDeleted,
    /// The grace period is not over (a stale schedule of an earlier deletion).
    NotDue,
}

/// Erases every item of a deleted user whose grace period is over. Safe to repeat.
///
/// The team's user count is not touched: it counts active users, and only a deleted user is
/// erased (the delete already took it off the count, and an undo that restores it puts it back
/// in its own transaction, whose version condition on the user fails this erasure's last write).
pub async fn erase_user(deps: &Deps, user_id: UserId) -> Result<Erasure, DomainError> {
    let Some(item) = deps.table.get(&keys::user(user_id)).await? else {
        return Ok(Erasure::AlreadyGone);
    };
    let record: UserRecord = item.decode()?;
    let Some(deletion) = record.deletion.clone() else { return Ok(Erasure::NotDeleted) };
    if deletion.erase_at > deps.now() {
        return Ok(Erasure::NotDue);
    }
    let user_root = keys::user(user_id);
    let mut keys_to_delete: Vec<_> =
        query_all(deps.table.as_ref(), Query::partition(keys::user_partition(user_id)), USER_MAX_ITEMS)
            .await?
            .into_iter()
            .map(|i| i.key)
            .filter(|k| *k != user_root)
            .collect();
    keys_to_delete.push(keys::deleted_client_user_id(record.team_id, &record.client_user_id, user_id));
    keys_to_delete.extend(keys::lab::outside_keys(&keys_to_delete));
    // The user record goes last, together with the pending marker: if erasure stops half way,
    // the marker and the record remain and the next run (schedule retry or sweep) finishes it.
    let count = keys_to_delete.len() + 1;
    for chunk in keys_to_delete.chunks(CHUNK) {
        let ops =
            chunk.iter().map(|k| WriteOp::Delete { key: k.clone(), condition: Condition::None }).collect();
        deps.table.transact(ops).await?;
    }
    // The erasure proof is staged with the last write, so it goes out exactly when the user is
    // gone (it is the one item left in the partition until it is published).
    keys_to_delete.push(user_root.clone());
    let proof =
        Staged::new(deps, user_id, vec![lifecycle_events::erased(&record, deps.now(), &keys_to_delete)]);
    deps.table
        .transact(vec![
            WriteOp::Delete { key: user_root, condition: Condition::VersionIs(item.version) },
            WriteOp::Delete {
                key: keys::erasure_due(deletion.erase_at, user_id),
                condition: Condition::None,
            },
            proof.write_op(),
        ])
        .await?;
    proof.publish(deps).await;
    tracing::info!(team_id = %record.team_id, user_id = %user_id, items = count, "user erased");
    Ok(Erasure::Erased { items: count })
}

/// Erases every user whose grace period is over; catches what a schedule missed.
pub async fn sweep(deps: &Deps) -> Result<usize, DomainError> {
    let now = deps.now();
    let upper = keys::erasure_due_sort(now, UserId::from_uuid(uuid::Uuid::max()));
    let q = Query::partition(keys::ERASURE_DUE).between("", upper);
    let mut erased = 0;
    for item in query_all(deps.table.as_ref(), q, SWEEP_MAX).await? {
        let due: ErasureDue = item.decode()?;
        match erase_user(deps, due.user_id).await? {
            crate::lifecycle::Erasure::Erased { .. } => erased += 1,
            // A marker whose user was erased or restored without it: drop the marker.
            crate::lifecycle::Erasure::AlreadyGone | crate::lifecycle::Erasure::NotDeleted => {
                deps.table.delete(&item.key, Condition::None).await?;
            }
            crate::lifecycle::Erasure::NotDue => {}
        }
    }
    if erased > 0 {
        tracing::info!(erased, "erasure sweep");
    }
    Ok(erased)
}
