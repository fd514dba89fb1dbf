//! `EventBus` on EventBridge: PutEvents in batches of at most 10 entries and 256 KB (the API's
//! limits; the domain keeps each event under `MAX_EVENT_BYTES`), entries that fail
//! are sent again with backoff; rules route the events to the webhook queue and the team's own
//! targets.

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_eventbridge::Client;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use wearlab_domain::ports::{BusError, EventBus, EventEnvelope};

use crate::error::describe;
use crate::lazy::{LazyClient, LazySdkConfig};

/// `source` of every Wearlab event on the bus; rules match on it.
pub const EVENT_SOURCE: &str = "wearlab";
/// PutEvents takes at most 10 entries, 256 KB in all.
const BATCH: usize = 10;
const BATCH_BYTES: usize = 256 * 1024;
/// Attempts per batch before its remaining entries count as not published.
const TRIES: u32 = 5;

#[derive(Clone, Debug)]
pub struct EventBridgeBus {
    client: LazyClient<Client>,
    bus_name: String,
}

impl EventBridgeBus {
    pub fn new(client: Client, bus_name: impl Into<String>) -> Self {
        Self { client: LazyClient::ready(client), bus_name: bus_name.into() }
    }

    /// The bus with a client built from `config` on its first request (see [`LazySdkConfig`]).
    pub fn on_first_use(config: LazySdkConfig, bus_name: impl Into<String>) -> Self {
        Self { client: LazyClient::on_first_use(config, Client::new), bus_name: bus_name.into() }
    }

    fn entry(&self, e: &EventEnvelope) -> Result<PutEventsRequestEntry, BusError> {
        let detail = serde_json::to_string(e)
            .map_err(|err| BusError::NotPublished { failed: 1, reason: err.to_string() })?;
        Ok(PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus_name)
            .source(EVENT_SOURCE)
            .detail_type(&e.event_type)
            .detail(detail)
            .build())
    }

    /// Sends one batch, then again only the entries that failed, up to `TRIES` times.
    async fn put_batch(&self, mut entries: Vec<PutEventsRequestEntry>) -> Result<(), BusError> {
        let mut reason = String::new();
        let client = self.client.get().await;
        for attempt in 0..TRIES {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
            }
            match client.put_events().set_entries(Some(entries.clone())).send().await {
                Ok(out) if out.failed_entry_count() == 0 => return Ok(()),
                Ok(out) => {
                    // Results are in request order; keep the entries whose result has an error.
                    let results = out.entries();
                    reason = results
                        .iter()
                        .find_map(|r| r.error_code().map(str::to_owned))
                        .unwrap_or_else(|| "failed entries".into());
                    entries = entries
                        .into_iter()
                        .zip(results.iter())
                        .filter(|(_, r)| r.error_code().is_some())
                        .map(|(e, _)| e)
                        .collect();
                }
                Err(e) => reason = describe("PutEvents", &e, false),
            }
        }
        Err(BusError::NotPublished { failed: entries.len(), reason })
    }
}

#[async_trait]
impl EventBus for EventBridgeBus {
    async fn publish(&self, events: Vec<EventEnvelope>) -> Result<(), BusError> {
        let entries = events.iter().map(|e| self.entry(e)).collect::<Result<Vec<_>, _>>()?;
        // An entry's size as EventBridge counts it: source, detail type and detail.
        let sizes: Vec<usize> = entries
            .iter()
            .map(|e| {
                e.source().map_or(0, str::len)
                    + e.detail_type().map_or(0, str::len)
                    + e.detail().map_or(0, str::len)
            })
            .collect();
        let mut failed = 0;
        let mut reason = String::new();
        for range in crate::sqs::plan_batches_within(&sizes, BATCH, BATCH_BYTES) {
            if let Err(BusError::NotPublished { failed: n, reason: r }) =
                self.put_batch(entries[range].to_vec()).await
            {
                failed += n;
                reason = r;
            }
        }
        if failed > 0 {
            tracing::error!(failed, reason = %reason, "events not published");
            return Err(BusError::NotPublished { failed, reason });
        }
        Ok(())
    }
}
