//! Bulk connection operations: import existing connections, trigger historical pulls, list
//! the operations, export and pause connections. Off for a team until the operator enables
//! them (`teams::require_bulk_operations`).
//!
//! An operation is a header item in the team's partition (counts, start, end) plus result
//! items in a partition of its own. Its items travel on the bulk queue in messages of many
//! items each; whoever finishes items records them in one transaction that writes the result
//! item (only if it does not exist yet) and moves the header's counts. A redelivered message
//! therefore never counts twice, and the operation ends exactly when every item is counted.
//!
//! - import: one result item per message (`CHUNK#n`): the users imported and failed.
//! - historical pull trigger: one result item per user (`USER#id`), written by the bulk worker
//!   for users it cannot trigger and by the pull worker when the user's pull starts under the
//!   provider's throttle.

pub mod export;
pub mod import;
pub mod pause;
pub mod trigger;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::bulk::{BulkOp, BulkOpStatus, BulkOpType, BulkProvider};

use crate::Deps;
use crate::catalog::ProviderInfo;
use crate::crypto::Sealed;
use crate::error::DomainError;
use crate::ids::{TeamId, UserId};
use crate::keys::bulk as keys;
use crate::linking::known_provider;
use crate::ports::to_body;
use crate::ports::{Condition, Cursor, Item, Key, Outcome, Query, Queue, StoreError, WriteOp, query_all};
use crate::throttle::{self, Policy};

/// The longest a request with `wait_for_completion` waits for its operation.
pub const WAIT_LIMIT: Duration = Duration::from_secs(20);
/// How often a waiting request looks at its operation.
const WAIT_POLL: Duration = Duration::from_millis(200);
/// Operations and their results are kept this long after they start (then expire).
pub const RETENTION_DAYS: i64 = 30;
/// Most list entries per page, and the default.
pub const MAX_PAGE: u32 = 50;
pub const DEFAULT_PAGE: u32 = 10;
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
    fn key(&self) -> Key {
        keys::op(self.team_id, self.started_at, &self.op_id)
    }

    fn expiry(&self) -> i64 {
        (self.started_at + chrono::Duration::days(RETENTION_DAYS)).timestamp()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct OpRecord {
    op: OpRef,
    op_type: String,
    provider: String,
    total: u64,
    processed: u64,
    failed: u64,
    ended_at: Option<DateTime<Utc>>,
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

    fn to_wire(&self, now: DateTime<Utc>) -> BulkOp {
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
struct ResultRecord {
    #[serde(default)]
    ok: Vec<UserId>,
    #[serde(default)]
    failed: Vec<UserId>,
    /// Items that failed without a readable user id (an unreadable dead-lettered message).
    #[serde(default)]
    failed_unnamed: u64,
}

/// What travels on the bulk queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BulkMessage {
    /// Connection recipes to import, sealed with the data key (they carry tokens).
    Import { op: OpRef, chunk: u32, items: u32, recipes: Sealed },
    /// Users whose historical pull to start.
    Trigger { op: OpRef, chunk: u32, user_ids: Vec<UserId> },
}

impl BulkMessage {
    pub fn body(&self) -> serde_json::Value {
        to_body(self)
    }
}

/// A provider whose connections can be handled in bulk (the 16 OAuth providers).
pub(crate) fn bulk_provider(p: &BulkProvider) -> Result<&'static ProviderInfo, DomainError> {
    if BulkProvider::known(p.as_str()).is_none() {
        return Err(DomainError::invalid(
            &["body", "provider"],
            format!("provider must be one of: {}", BulkProvider::KNOWN.join(", ")),
            "enum",
        ));
    }
    known_provider(p.as_str())
}

/// Records a new operation; its items are queued next.
async fn begin(
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
async fn abandon(deps: &Deps, op: &OpRef, items: u64) {
    let key = keys::chunk_result(&op.op_id, u32::MAX);
    let result = ResultRecord { failed_unnamed: items, ..Default::default() };
    if let Err(e) = record(deps, op, vec![(key, result)], true).await {
        tracing::error!(op_id = %op.op_id, error = %e, "abandoned bulk operation not closed");
    }
}

/// Writes result items that do not exist yet and counts them on the header, in one
/// transaction. Returns how many of them were new.
async fn record(
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
        for (_, r) in &results {
            let failed = r.failed.len() as u64 + r.failed_unnamed;
            header.processed += r.ok.len() as u64 + failed;
            header.failed += failed;
        }
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
                let jitter = u64::from(uuid::Uuid::new_v4().as_bytes()[0] % 20);
                tokio::time::sleep(Duration::from_millis(2 + jitter + u64::from(attempt))).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(DomainError::Busy("the bulk operation is being updated concurrently; retry".into()))
}

/// GET /v2/link/bulk_op: the team's operations, newest first.
pub async fn list(
    deps: &Deps,
    team: TeamId,
    page_size: Option<u32>,
    cursor: Option<Cursor>,
) -> Result<(Vec<BulkOp>, Option<Cursor>), DomainError> {
    let size = page_size.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&size) {
        return Err(DomainError::invalid(
            &["query", "page_size"],
            format!("page_size must be between 1 and {MAX_PAGE}"),
            "value_error",
        ));
    }
    if let Some(c) = &cursor
        && (c.pk != crate::keys::team(team).pk || !c.sk.starts_with(keys::OP_PREFIX))
    {
        return Err(StoreError::InvalidCursor.into());
    }
    let q = Query::partition(crate::keys::team(team).pk)
        .prefix(keys::OP_PREFIX)
        .descending()
        .limit(size)
        .after(cursor);
    let page = deps.table.query(q).await?;
    let now = deps.now();
    let ops = page
        .items
        .iter()
        .map(|i| Ok(i.decode::<OpRecord>()?.to_wire(now)))
        .collect::<Result<Vec<_>, DomainError>>()?;
    Ok((ops, page.next_cursor))
}

/// The users an ended operation handled, and those it failed (sorted).
async fn results(deps: &Deps, op: &OpRef) -> Result<(Vec<UserId>, Vec<UserId>), DomainError> {
    let items =
        query_all(deps.table.as_ref(), Query::partition(keys::results_partition(&op.op_id)), 1_000_000)
            .await?;
    let (mut ok, mut failed) = (Vec::new(), Vec::new());
    for item in &items {
        let r: ResultRecord = item.decode()?;
        ok.extend(r.ok);
        failed.extend(r.failed);
    }
    ok.sort();
    failed.sort();
    Ok((ok, failed))
}

/// Waits (at most `WAIT_LIMIT` on the deployment's clock) for the operation to end; its
/// results if it did.
pub async fn wait(deps: &Deps, op: &OpRef) -> Result<Option<(Vec<UserId>, Vec<UserId>)>, DomainError> {
    let deadline = op.started_at + chrono::Duration::from_std(WAIT_LIMIT).expect("small");
    // Bounded in real time too, should the clock stand still (a manual clock in tests).
    let polls = WAIT_LIMIT.as_millis() / WAIT_POLL.as_millis();
    for _ in 0..=polls {
        if let Some(item) = deps.table.get(&op.key()).await?
            && item.decode::<OpRecord>()?.ended_at.is_some()
        {
            return Ok(Some(results(deps, op).await?));
        }
        if deps.now() >= deadline {
            break;
        }
        tokio::time::sleep(WAIT_POLL).await;
    }
    Ok(None)
}

/// Handles one message of the bulk queue.
pub async fn handle(deps: &Deps, queue: &dyn Queue, message: BulkMessage) -> Outcome {
    let result = match &message {
        BulkMessage::Import { op, chunk, items, recipes } => {
            import::import_chunk(deps, op, *chunk, *items, recipes).await
        }
        BulkMessage::Trigger { op, user_ids, .. } => trigger::trigger_chunk(deps, queue, op, user_ids).await,
    };
    result.unwrap_or_else(|e| Outcome::Fail(e.to_string()))
}

/// A message the queue gave up on (dead-lettered): its items not done yet count as failed,
/// so the operation still ends.
pub async fn dead_lettered(deps: &Deps, message: BulkMessage) -> Result<(), DomainError> {
    match message {
        BulkMessage::Import { op, chunk, items, recipes } => {
            import::give_up(deps, &op, chunk, items, &recipes).await
        }
        BulkMessage::Trigger { op, user_ids, .. } => trigger::give_up(deps, &op, &user_ids).await,
    }
}

/// Checks a list of user ids: at least one, none twice, at most `max` (when bounded).
pub(crate) fn check_user_ids(ids: &[uuid::Uuid], max: Option<usize>) -> Result<Vec<UserId>, DomainError> {
    if ids.is_empty() {
        return Err(DomainError::invalid(&["body", "user_ids"], "give at least one user_id", "value_error"));
    }
    if let Some(max) = max
        && ids.len() > max
    {
        return Err(DomainError::invalid(
            &["body", "user_ids"],
            format!("at most {max} user_ids per request; split the list"),
            "value_error",
        ));
    }
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        if !seen.insert(*id) {
            let at = i.to_string();
            return Err(DomainError::invalid(
                &["body", "user_ids", at.as_str()],
                format!("user_id {id} appears more than once"),
                "value_error",
            ));
        }
    }
    Ok(ids.iter().copied().map(UserId).collect())
}
