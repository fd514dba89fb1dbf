//! The ledger of bulk operations, below both `bulk` (which starts operations and handles their
//! messages) and `pipeline` (whose pull worker reports the pulls a trigger started).
//!
//! An operation is a header item in the team's partition (counts, start, end) plus result
//! items in a partition of its own. Whoever finishes items records them in one transaction
//! that writes the result item (only if it does not exist yet) and moves the header's counts.
//! A redelivered message therefore never counts twice, and the operation ends exactly when
//! every item is counted.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::bulk::{BulkOp, BulkOpStatus, BulkOpType};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::common::throttle::{self, Policy};
use crate::keys::bulk as keys;
use crate::ports::{Condition, Item, Key, Query, StoreError, WriteOp, query_all, to_body};

/// Operations and their results are kept this long after they start (then expire).
pub const RETENTION_DAYS: i64 = 30;
/// Tries of a result write that lost the race for the header to another worker.
const TRIES: u32 = 40;

/// Names an operation: enough to find its header without a lookup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpRef {
    pub team_id: TeamId,
    pub op_id: String,
    pub started_at: DateTime<Utc>,
}

impl OpRef {
    pub(crate) fn key(&self) -> Key {
        keys::op(self.team_id, self.started_at, &self.op_id)
    }

    fn expiry(&self) -> i64 {
        (self.started_at + chrono::Duration::days(RETENTION_DAYS)).timestamp()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct OpRecord {
    op: OpRef,
    op_type: String,
    pub(crate) provider: String,
    total: u64,
    processed: u64,
    failed: u64,
    pub(crate) ended_at: Option<DateTime<Utc>>,
    /// The operation could not go on (its items still end, as failed).
    #[serde(default)]
    aborted: bool,
}

impl OpRecord {
    fn status(&self) -> BulkOpStatus {
        match (self.ended_at, self.aborted, self.failed) {
            (None, _, _) => BulkOpStatus::InProgress,
            (Some(_), true, _) => BulkOpStatus::Aborted,
            (Some(_), false, 0) => BulkOpStatus::Success,
            (Some(_), false, _) => BulkOpStatus::Failure,
        }
    }

    pub(crate) fn to_wire(&self, now: DateTime<Utc>) -> BulkOp {
        BulkOp {
            id: self.op.op_id.clone(),
            op_type: BulkOpType::from(self.op_type.as_str()),
            status: self.status(),
            provider: self.provider.clone(),
            pending: self.total.saturating_sub(self.processed),
            processed: self.processed,
            failed: self.failed,
            started_at: self.op.started_at,
            ended_at: self.ended_at,
            estimated_completion_at: self.estimate(now),
        }
    }

    /// When the rest should be done: at the provider's throttle rate for pull triggers,
    /// otherwise at the rate seen so far.
    fn estimate(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if self.ended_at.is_some() {
            return None;
        }
        let pending = self.total.saturating_sub(self.processed);
        if self.op_type == BulkOpType::LinkBulkHistoricalTrigger.as_str()
            && let Policy::Rate { limit, window } = throttle::policy_for(&self.provider)
        {
            let windows = pending.div_ceil(u64::from(limit.max(1)));
            let wait = window.saturating_mul(u32::try_from(windows).unwrap_or(u32::MAX));
            return Some(now + chrono::Duration::from_std(wait).ok()?);
        }
        if self.processed == 0 {
            return None;
        }
        let elapsed = (now - self.op.started_at).num_milliseconds().max(1) as f64;
        let rest_ms = elapsed / self.processed as f64 * pending as f64;
        Some(now + chrono::Duration::milliseconds(rest_ms.min(1e12) as i64))
    }
}

/// Which users an item result names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ResultRecord {
    #[serde(default)]
    pub(crate) ok: Vec<UserId>,
    #[serde(default)]
    pub(crate) failed: Vec<UserId>,
    /// Items that failed without a readable user id (an unreadable dead-lettered message).
    #[serde(default)]
    pub(crate) failed_unnamed: u64,
    /// Why users of `failed` failed, where it is known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) reasons: Vec<(UserId, String)>,
}

impl ResultRecord {
    /// One user that failed, and why.
    pub(crate) fn failed_because(user: UserId, reason: impl Into<String>) -> Self {
        Self { failed: vec![user], reasons: vec![(user, reason.into())], ..Default::default() }
    }

    /// Adds a user that failed, and why.
    pub(crate) fn fail(&mut self, user: UserId, reason: impl Into<String>) {
        self.failed.push(user);
        self.reasons.push((user, reason.into()));
    }
}

/// What an ended operation did per user (sorted by user id).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Results {
    /// Users imported or triggered.
    pub ok: Vec<UserId>,
    pub failed: Vec<UserId>,
    /// Why users of `failed` failed, where it is known.
    pub reasons: Vec<(UserId, String)>,
}

/// Records a new operation; its items are queued next.
pub(crate) async fn begin(
    deps: &Deps,
    team: TeamId,
    op_type: BulkOpType,
    provider: &str,
    total: u64,
) -> Result<OpRef, DomainError> {
    let op =
        OpRef { team_id: team, op_id: uuid::Uuid::new_v4().simple().to_string(), started_at: deps.now() };
    let record = OpRecord {
        op: op.clone(),
        op_type: op_type.as_str().to_owned(),
        provider: provider.to_owned(),
        total,
        processed: 0,
        failed: 0,
        ended_at: None,
        aborted: false,
    };
    let item = Item::new(op.key(), to_body(&record)).with_expiry(Some(op.expiry()));
    deps.table.put(item, Condition::NotExists).await?;
    tracing::info!(team_id = %team, op_id = %op.op_id, op_type = %op_type, provider, total, "bulk operation started");
    Ok(op)
}

/// Ends an operation whose items could not be queued: they count as failed.
pub(crate) async fn abandon(deps: &Deps, op: &OpRef, items: u64) {
    let key = keys::chunk_result(&op.op_id, u32::MAX);
    let result = ResultRecord { failed_unnamed: items, ..Default::default() };
    if let Err(e) = record(deps, op, vec![(key, result)], true).await {
        tracing::error!(op_id = %op.op_id, error = %e, "abandoned bulk operation not closed");
    }
}

/// Writes result items that do not exist yet and counts them on the header, in one
/// transaction. Returns how many of them were new.
pub(crate) async fn record(
    deps: &Deps,
    op: &OpRef,
    mut results: Vec<(Key, ResultRecord)>,
    abort: bool,
) -> Result<usize, DomainError> {
    for attempt in 0..TRIES {
        if results.is_empty() {
            return Ok(0);
        }
        let Some(item) = deps.table.get(&op.key()).await? else {
            // The operation expired or never existed: nothing to count.
            return Ok(0);
        };
        let mut header: OpRecord = item.decode()?;
        let (mut processed, mut failed) = (0, 0);
        for (_, r) in &results {
            let failed_here = r.failed.len() as u64 + r.failed_unnamed;
            processed += r.ok.len() as u64 + failed_here;
            failed += failed_here;
        }
        header.processed += processed;
        header.failed += failed;
        let was_open = header.ended_at.is_none();
        header.aborted |= abort;
        if header.ended_at.is_none() && header.processed >= header.total {
            header.ended_at = Some(deps.now());
        }
        let mut next = Item::new(op.key(), to_body(&header)).with_expiry(Some(op.expiry()));
        next.version = item.version + 1;
        let mut ops = vec![WriteOp::Put { item: next, condition: Condition::VersionIs(item.version) }];
        for (key, r) in &results {
            ops.push(WriteOp::Put {
                item: Item::new(key.clone(), to_body(r)).with_expiry(Some(op.expiry())),
                condition: Condition::NotExists,
            });
        }
        match deps.table.transact(ops).await {
            Ok(()) => {
                let ended_now = was_open && header.ended_at.is_some();
                crate::common::metrics::bulk_progress(&header.op_type, processed, failed, ended_now);
                if let Some(ended) = header.ended_at.filter(|_| header.processed >= header.total) {
                    tracing::info!(op_id = %op.op_id, processed = header.processed, failed = header.failed,
                        status = %header.status(), %ended, "bulk operation progressed to its end");
                }
                return Ok(results.len());
            }
            Err(StoreError::ConditionFailed { .. }) => {
                // Either the header moved (retry) or a result exists already (drop it).
                let mut fresh = Vec::with_capacity(results.len());
                for (key, r) in results {
                    if deps.table.get(&key).await?.is_none() {
                        fresh.push((key, r));
                    }
                }
                results = fresh;
                // Spread competing workers apart.
                let base = Duration::from_millis(2 + u64::from(attempt));
                tokio::time::sleep(base + crate::common::backoff::jitter(Duration::from_millis(19))).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(DomainError::Busy("the bulk operation is being updated concurrently; retry".into()))
}

/// The users an ended operation handled, and those it failed, with the reasons known.
pub(crate) async fn results(deps: &Deps, op: &OpRef) -> Result<Results, DomainError> {
    let items =
        query_all(deps.table.as_ref(), Query::partition(keys::results_partition(&op.op_id)), 1_000_000)
            .await?;
    let mut out = Results::default();
    for item in &items {
        let r: ResultRecord = item.decode()?;
        out.ok.extend(r.ok);
        out.failed.extend(r.failed);
        out.reasons.extend(r.reasons);
    }
    out.ok.sort();
    out.failed.sort();
    out.reasons.sort();
    Ok(out)
}

/// The pull worker's report: the user's pull started (or could not).
pub async fn record_pull(deps: &Deps, op: &OpRef, user: UserId, started: bool) -> Result<(), DomainError> {
    let key = keys::user_result(&op.op_id, user);
    if deps.table.get(&key).await?.is_some() {
        return Ok(());
    }
    let r = if started {
        ResultRecord { ok: vec![user], ..Default::default() }
    } else {
        ResultRecord::failed_because(user, "the pull could not start: the connection is gone or not usable")
    };
    record(deps, op, vec![(key, r)], false).await.map(|_| ())
}
