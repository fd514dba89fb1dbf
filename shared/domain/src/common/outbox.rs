//! Events stored in the same transaction as the change they announce (a transactional outbox).
//!
//! A use case that changes state and announces it stages its events: [`Staged::write_op`] goes
//! into the change's own transaction, and once that commits [`Staged::publish`] sends the
//! events and removes the staged copy. If the process stops in between, or the bus refuses,
//! the events stay staged and [`relay`] (every minute) publishes them. So a stored change is
//! always announced, and an announced change is always stored; an event can go out twice (the
//! relay racing a slow publisher, or a crash after publishing), never not at all.

use chrono::Duration;
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use wearlab_models::EventEnvelope;

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::UserId;
use crate::keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Query, WriteOp, query_all};

/// Staged events this old are the relay's: their own publisher has had time to send them.
pub const RELAY_AFTER: Duration = Duration::seconds(60);
/// Most staged entries one relay run publishes per shard; the next run takes the rest.
const RELAY_MAX_PER_SHARD: usize = 500;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct OutboxRecord {
    events: Vec<EventEnvelope>,
}

/// Events about one user, staged with the change they announce.
#[derive(Debug, Clone)]
#[must_use = "write the staged events with the change, then publish them"]
pub struct Staged {
    item: Item,
    events: Vec<EventEnvelope>,
}

impl Staged {
    pub fn new(deps: &Deps, user: UserId, events: Vec<EventEnvelope>) -> Self {
        let (at, id) = (deps.now(), Uuid::new_v4());
        let item = Item::new(keys::outbox(user, at, id), to_body(&OutboxRecord { events: events.clone() }))
            .with_gsi1(keys::outbox_index(id), keys::outbox_index_sort(at, id));
        Self { item, events }
    }

    /// The write that stores the events; put it in the transaction of the change.
    pub fn write_op(&self) -> WriteOp {
        WriteOp::Put { item: self.item.clone(), condition: Condition::NotExists }
    }

    /// After the change committed: sends the events, then drops the staged copy. A failure is
    /// logged and left to the relay.
    pub async fn publish(self, deps: &Deps) {
        let n = self.events.len();
        if let Err(e) = deps.bus.publish(self.events).await {
            tracing::warn!(error = %e, events = n, "events not published yet; the outbox relay will send them");
            return;
        }
        if let Err(e) = deps.table.delete(&self.item.key, Condition::None).await {
            tracing::warn!(error = %e, "published events still staged; the relay may send them again");
        }
    }
}

/// Publishes every staged entry older than [`RELAY_AFTER`] and removes it. Returns how many
/// entries were published. An entry the bus refuses (or that does not read) stays for the next
/// run.
pub async fn relay(deps: &Deps) -> Result<usize, DomainError> {
    let upper = keys::outbox_index_sort(deps.now() - RELAY_AFTER, Uuid::max());
    let mut published = 0;
    for shard in 0..keys::OUTBOX_SHARDS {
        let q = Query::gsi1(keys::outbox_shard_index(shard)).between("", upper.clone());
        for item in query_all(deps.table.as_ref(), q, RELAY_MAX_PER_SHARD).await? {
            // An entry that does not read is logged and left in place, not allowed to stop
            // every later entry from going out.
            let record: OutboxRecord = match item.decode() {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(error = %e, "outbox relay: unreadable staged entry left in place");
                    continue;
                }
            };
            let n = record.events.len();
            if let Err(e) = deps.bus.publish(record.events).await {
                tracing::warn!(error = %e, events = n, "outbox relay: events not published; next run retries");
                continue;
            }
            deps.table.delete(&item.key, Condition::None).await?;
            published += 1;
        }
    }
    if published > 0 {
        tracing::info!(entries = published, "outbox relay published staged events");
    }
    Ok(published)
}
