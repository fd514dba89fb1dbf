//! `EventBus` for one process: events are kept in memory, in order, so tests and developers
//! can read what was published (`GET /local/events` on the local stack).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use wearlab_domain::ports::{BusError, EventBus, EventEnvelope, Outgoing, Queue, QueueName};

/// Most events kept for reading; older ones are dropped first. Only a debugging aid (the
/// webhook queue holds every event durably), so it is kept small enough that a long run's
/// memory stays flat: 10,000 events of a pull are a few megabytes.
const KEEP: usize = 10_000;
/// EventBridge's limit on one entry.
const ENTRY_LIMIT: usize = 256 * 1024;

#[derive(Clone, Default)]
pub struct MemoryBus {
    events: Arc<Mutex<Vec<EventEnvelope>>>,
    /// Where every event also goes, as the EventBridge rule sends events to the webhook queue.
    webhook_queue: Option<Arc<dyn Queue>>,
}

impl MemoryBus {
    pub fn new() -> Self {
        Self::default()
    }

    /// A bus that also puts every event on the webhook queue.
    pub fn feeding(queue: Arc<dyn Queue>) -> Self {
        Self { webhook_queue: Some(queue), ..Self::default() }
    }

    /// The last events published (at most 10,000), oldest first.
    pub fn published(&self) -> Vec<EventEnvelope> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl EventBus for MemoryBus {
    async fn publish(&self, events: Vec<EventEnvelope>) -> Result<(), BusError> {
        // EventBridge refuses an entry over 256 KB; so does this bus, so that local runs and tests
        // meet the limit where AWS would.
        if events.iter().any(|e| serde_json::to_vec(e).map_or(0, |b| b.len()) > ENTRY_LIMIT) {
            return Err(BusError::NotPublished {
                failed: events.len(),
                reason: "event entry over 256 KB".into(),
            });
        }
        if let Some(queue) = &self.webhook_queue {
            let messages = events
                .iter()
                .map(|e| Outgoing::now(serde_json::to_value(e).expect("events serialize")))
                .collect();
            queue
                .send(QueueName::Webhook, messages)
                .await
                .map_err(|e| BusError::NotPublished { failed: events.len(), reason: e.to_string() })?;
        }
        let mut kept = self.events.lock().map_err(|_| BusError::NotPublished {
            failed: events.len(),
            reason: "bus lock poisoned".into(),
        })?;
        kept.extend(events);
        let excess = kept.len().saturating_sub(KEEP);
        kept.drain(..excess);
        Ok(())
    }
}
