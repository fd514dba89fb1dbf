//! Bulk connection operations: import existing connections, trigger historical pulls, list
//! the operations, export and pause connections. Off for a team until the operator enables
//! them (`teams::require_bulk_operations`).
//!
//! An operation is recorded in the ledger (`crate::bulk::ledger`); its items travel on the bulk
//! queue in messages of many items each, and whoever finishes items records them there.
//!
//! - import: one result item per message (`CHUNK#n`): the users imported and failed.
//! - historical pull trigger: one result item per user (`USER#id`), written by the bulk worker
//!   for users it cannot trigger and by the pull worker when the user's pull starts under the
//!   provider's throttle.

pub mod export;
pub mod import;
pub mod ledger;
pub mod pause;
pub mod trigger;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use wearlab_models::bulk::{BulkOp, BulkProvider};

use crate::Deps;
use crate::bulk::ledger::{OpRecord, OpRef, Results, results};
use crate::common::crypto::Sealed;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::ProviderInfo;
use crate::keys::bulk as keys;
use crate::linking::known_provider;
use crate::ports::to_body;
use crate::ports::{Cursor, Outcome, Query, Queue, StoreError};

/// The longest a request with `wait_for_completion` waits for its operation.
pub const WAIT_LIMIT: Duration = Duration::from_secs(20);
/// How often a waiting request looks at its operation.
const WAIT_POLL: Duration = Duration::from_millis(200);
/// Most list entries per page, and the default.
pub const MAX_PAGE: u32 = 50;
pub const DEFAULT_PAGE: u32 = 10;

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
            &["provider"],
            format!("provider must be one of: {}", BulkProvider::KNOWN.join(", ")),
            "enum",
        ));
    }
    known_provider(p.as_str())
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
            &["page_size"],
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

/// Waits (at most `WAIT_LIMIT` on the deployment's clock) for the operation to end; its
/// results if it did.
pub async fn wait(deps: &Deps, op: &OpRef) -> Result<Option<Results>, DomainError> {
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

/// Handles one message of the bulk queue; a trigger's pulls go to `queue` (the pull queue).
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
        return Err(DomainError::invalid(&["user_ids"], "give at least one user_id", "value_error"));
    }
    if let Some(max) = max
        && ids.len() > max
    {
        return Err(DomainError::invalid(
            &["user_ids"],
            format!("at most {max} user_ids per request; split the list"),
            "value_error",
        ));
    }
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        if !seen.insert(*id) {
            let at = i.to_string();
            return Err(DomainError::invalid(
                &["user_ids", at.as_str()],
                format!("user_id {id} appears more than once"),
                "value_error",
            ));
        }
    }
    Ok(ids.iter().copied().map(UserId::from_uuid).collect())
}
