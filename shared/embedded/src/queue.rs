//! `Queue` for one process, on the table (so messages survive a restart of the local stack),
//! with the delivery semantics of SQS: a received message is leased for a visibility timeout
//! and comes back if its consumer never answers (a crash); failures retry with backoff and end
//! in a dead-letter partition after `MAX_ATTEMPTS`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use wearlab_domain::common::dead_letters::{DeadLetter, DeadLetterListing, Redriven};
use wearlab_domain::ports::{
    Clock, Condition, Envelope, Item, Key, Outcome, Outgoing, Query, Queue, QueueError, QueueName, Received,
    StoreError, Table, WriteOp, query_all,
};

/// Deliveries before a failing message is dead-lettered (the template's maxReceiveCount).
pub const MAX_ATTEMPTS: u32 = 5;
/// How long a received message stays invisible while its consumer works.
pub const VISIBILITY: Duration = Duration::from_secs(60);
/// Most messages one poll leases.
pub const BATCH: usize = 10;
/// Races for one batch lost to other pollers before [`TableQueue::receive`] leases one by one.
const LEASE_RACES: u32 = 3;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Stored {
    id: String,
    envelope: Envelope,
    /// Deliveries so far.
    attempts: u32,
    /// When it was dead-lettered (dead letters only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dead_lettered_at: Option<DateTime<Utc>>,
}

#[derive(Clone)]
pub struct TableQueue {
    table: Arc<dyn Table>,
    clock: Arc<dyn Clock>,
}

fn partition(q: QueueName) -> String {
    format!("QUEUE#{}", q.as_str())
}

fn dead_letters(q: QueueName) -> String {
    format!("DLQ#{}", q.as_str())
}

fn sort_key(visible_at: DateTime<Utc>, id: &str) -> String {
    format!("{}#{id}", visible_at.to_rfc3339_opts(SecondsFormat::Micros, true))
}

fn unavailable(e: StoreError) -> QueueError {
    QueueError::NotSent { failed: 0, reason: e.to_string() }
}

/// Backoff of the n-th failed delivery: 1 s, 2 s, 4 s, ... capped at a minute.
fn backoff(attempts: u32) -> Duration {
    Duration::from_secs(1u64 << attempts.saturating_sub(1).min(6)).min(Duration::from_secs(60))
}

impl TableQueue {
    pub fn new(table: Arc<dyn Table>, clock: Arc<dyn Clock>) -> Self {
        Self { table, clock }
    }

    fn item(&self, q: QueueName, visible_at: DateTime<Utc>, stored: &Stored) -> Item {
        Item::new(
            Key::new(partition(q), sort_key(visible_at, &stored.id)),
            serde_json::to_value(stored).expect("queue messages serialize"),
        )
    }

    /// Leases up to `max` due messages for `VISIBILITY`, all in one write. When another poller
    /// leased one of them first, the due messages are read again (those it took are no longer
    /// due) and tried again; after a few such races they are leased one at a time.
    pub async fn receive(&self, q: QueueName, max: usize) -> Result<Vec<Received>, StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let wanted = self.due(q, max).await?;
            if wanted.is_empty() {
                return Ok(Vec::new());
            }
            if attempt > LEASE_RACES {
                return self.lease_one_by_one(wanted).await;
            }
            let ops = wanted
                .iter()
                .flat_map(|(item, _, lease)| {
                    [
                        WriteOp::Delete {
                            key: item.key.clone(),
                            condition: Condition::VersionIs(item.version),
                        },
                        WriteOp::Put { item: lease.clone(), condition: Condition::NotExists },
                    ]
                })
                .collect();
            match self.table.transact(ops).await {
                Ok(()) => {
                    return Ok(wanted
                        .into_iter()
                        .map(|(_, stored, lease)| Received {
                            id: lease.key.sk,
                            envelope: stored.envelope,
                            attempt: stored.attempts,
                        })
                        .collect());
                }
                Err(StoreError::ConditionFailed { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Up to `max` due messages, each with its lease (the message as it will be while leased).
    async fn due(&self, q: QueueName, max: usize) -> Result<Vec<(Item, Stored, Item)>, StoreError> {
        let now = self.clock.now();
        let upper = sort_key(now, "\u{10FFFF}");
        let page =
            self.table.query(Query::partition(partition(q)).between("", upper).limit(max as u32)).await?;
        let mut due = Vec::with_capacity(page.items.len());
        for item in page.items {
            let mut stored: Stored = item.decode()?;
            stored.attempts += 1;
            let lease = self.item(q, now + VISIBILITY, &stored);
            due.push((item, stored, lease));
        }
        Ok(due)
    }

    /// [`TableQueue::receive`]'s leases one message at a time: each message another poller took
    /// first is left to it.
    async fn lease_one_by_one(&self, wanted: Vec<(Item, Stored, Item)>) -> Result<Vec<Received>, StoreError> {
        let mut leased = Vec::new();
        for (item, stored, lease) in wanted {
            let lease_key = lease.key.sk.clone();
            let ops = vec![
                WriteOp::Delete { key: item.key.clone(), condition: Condition::VersionIs(item.version) },
                WriteOp::Put { item: lease, condition: Condition::NotExists },
            ];
            match self.table.transact(ops).await {
                Ok(()) => leased.push(Received {
                    id: lease_key,
                    envelope: stored.envelope,
                    attempt: stored.attempts,
                }),
                // Another poller leased it first.
                Err(StoreError::ConditionFailed { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(leased)
    }

    /// Applies a consumer's answer to a leased message.
    pub async fn settle(&self, q: QueueName, msg: &Received, outcome: Outcome) -> Result<(), StoreError> {
        let lease = Key::new(partition(q), msg.id.clone());
        let Some(item) = self.table.get(&lease).await? else { return Ok(()) };
        let stored: Stored = item.decode()?;
        let now = self.clock.now();
        let next = match outcome {
            Outcome::Ack => None,
            // A fresh message for later: waiting for capacity is not a failed delivery.
            Outcome::RetryAfter(wait) => Some(self.item(
                q,
                now + chrono::Duration::from_std(wait).unwrap_or_default(),
                &Stored { attempts: 0, ..stored.clone() },
            )),
            Outcome::Fail(reason) if stored.attempts >= MAX_ATTEMPTS => {
                tracing::warn!(queue = q.as_str(), id = %stored.id, reason = %reason, "message dead-lettered");
                let dead = Stored { dead_lettered_at: Some(now), ..stored.clone() };
                Some(Item::new(
                    Key::new(dead_letters(q), stored.id.clone()),
                    serde_json::to_value(&dead).expect("queue messages serialize"),
                ))
            }
            Outcome::Fail(_) => Some(self.item(
                q,
                now + chrono::Duration::from_std(backoff(stored.attempts)).unwrap_or_default(),
                &stored,
            )),
        };
        let ops = match next {
            // Due exactly when the lease runs out: the same key, rewritten in place.
            Some(mut next) if next.key == lease => {
                next.version = item.version + 1;
                vec![WriteOp::Put { item: next, condition: Condition::VersionIs(item.version) }]
            }
            Some(next) => vec![
                WriteOp::Delete { key: lease, condition: Condition::VersionIs(item.version) },
                WriteOp::Put { item: next, condition: Condition::None },
            ],
            None => vec![WriteOp::Delete { key: lease, condition: Condition::VersionIs(item.version) }],
        };
        match self.table.transact(ops).await {
            // The lease ran out and someone else holds the message now: their answer counts.
            Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Receives due messages and hands each to `handler`; returns how many were handled.
    pub async fn run_once<F, Fut>(&self, q: QueueName, handler: F) -> Result<usize, StoreError>
    where
        F: Fn(Envelope, u32) -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let batch = self.receive(q, BATCH).await?;
        // The batch's messages are handled at once, as the workers do with an SQS batch on
        // Lambda: each mostly waits (on a provider, on its commits), and concurrent writes share
        // the embedded table's commits.
        let settled = futures_util::future::join_all(batch.iter().map(|msg| {
            let handler = &handler;
            async move {
                let outcome = match Outcome::not_due(&msg.envelope, self.clock.now()) {
                    Some(wait) => wait,
                    None => handler(msg.envelope.clone(), msg.attempt).await,
                };
                self.settle(q, msg, outcome).await
            }
        }))
        .await;
        settled.into_iter().collect::<Result<Vec<()>, _>>()?;
        Ok(batch.len())
    }

    /// Messages waiting or in flight (tests, debugging).
    pub async fn depth(&self, q: QueueName) -> Result<usize, StoreError> {
        Ok(query_all(self.table.as_ref(), Query::partition(partition(q)), 10_000_000).await?.len())
    }

    /// Hands dead-lettered messages to `handler` (as a consumer of the dead-letter queue does
    /// on AWS): those it acknowledges leave the dead-letter partition, the others stay.
    /// Returns how many were handled.
    pub async fn run_dead_letters_once<F, Fut>(&self, q: QueueName, handler: F) -> Result<usize, StoreError>
    where
        F: Fn(Envelope) -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let page = self.table.query(Query::partition(dead_letters(q)).limit(BATCH as u32)).await?;
        let mut handled = 0;
        for item in &page.items {
            let stored: Stored = item.decode()?;
            match handler(stored.envelope).await {
                Outcome::Ack => {
                    self.table.delete(&item.key, Condition::VersionIs(item.version)).await.or_else(|e| {
                        match e {
                            StoreError::ConditionFailed { .. } => Ok(()),
                            e => Err(e),
                        }
                    })?;
                    handled += 1;
                }
                other => {
                    tracing::warn!(queue = q.as_str(), id = %stored.id, outcome = ?other, "dead letter kept")
                }
            }
        }
        Ok(handled)
    }

    /// The number of dead letters and up to `max` of them by kind and ids (no payload).
    pub async fn list_dead_letters(&self, q: QueueName, max: usize) -> Result<DeadLetterListing, StoreError> {
        let all = query_all(self.table.as_ref(), Query::partition(dead_letters(q)), 10_000_000).await?;
        let now = self.clock.now();
        let mut messages = Vec::new();
        for item in all.iter().take(max) {
            let stored: Stored = item.decode()?;
            messages.push(DeadLetter {
                id: stored.id,
                receive_count: stored.attempts,
                age_seconds: stored
                    .dead_lettered_at
                    .map(|at| wearlab_domain::common::dead_letters::age_seconds(at, now)),
                ids: wearlab_domain::common::dead_letters::describe_body(&stored.envelope.body),
            });
        }
        Ok(DeadLetterListing { queue: q.as_str().into(), count: all.len() as u64, messages })
    }

    /// Moves up to `max` dead letters back to the queue, due now with no deliveries counted;
    /// each move is one transaction (the message is never in neither place). Returns how many moved.
    pub async fn redrive_dead_letters(&self, q: QueueName, max: usize) -> Result<Redriven, StoreError> {
        let now = self.clock.now();
        let mut moved = 0u64;
        while (moved as usize) < max {
            let want = (max - moved as usize).min(BATCH) as u32;
            let page = self.table.query(Query::partition(dead_letters(q)).limit(want)).await?;
            if page.items.is_empty() {
                break;
            }
            let before = moved;
            for item in &page.items {
                let stored: Stored = item.decode()?;
                let back = Stored { attempts: 0, dead_lettered_at: None, ..stored };
                let ops = vec![
                    WriteOp::Delete { key: item.key.clone(), condition: Condition::VersionIs(item.version) },
                    WriteOp::Put { item: self.item(q, now, &back), condition: Condition::NotExists },
                ];
                match self.table.transact(ops).await {
                    Ok(()) => moved += 1,
                    // Moved or handled by someone else meanwhile.
                    Err(StoreError::ConditionFailed { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            if moved == before {
                break;
            }
        }
        Ok(Redriven { queue: q.as_str().into(), moved })
    }

    /// Messages waiting or in flight, oldest first (tests, debugging).
    pub async fn waiting(&self, q: QueueName) -> Result<Vec<Envelope>, StoreError> {
        self.envelopes(partition(q)).await
    }

    /// How many messages waiting or in flight `matches` (a page at a time, so a long queue is
    /// never held in memory at once).
    pub async fn count_waiting(
        &self,
        q: QueueName,
        matches: impl Fn(&Envelope) -> bool,
    ) -> Result<usize, StoreError> {
        let mut count = 0;
        let mut cursor = None;
        loop {
            let page = self.table.query(Query::partition(partition(q)).limit(1000).after(cursor)).await?;
            for item in &page.items {
                if matches(&item.decode::<Stored>()?.envelope) {
                    count += 1;
                }
            }
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(count),
            }
        }
    }

    /// Dead-lettered message bodies.
    pub async fn dead_lettered(&self, q: QueueName) -> Result<Vec<Envelope>, StoreError> {
        self.envelopes(dead_letters(q)).await
    }

    async fn envelopes(&self, partition: String) -> Result<Vec<Envelope>, StoreError> {
        query_all(self.table.as_ref(), Query::partition(partition), 10_000_000)
            .await?
            .iter()
            .map(|i| i.decode::<Stored>().map(|s| s.envelope))
            .collect()
    }
}

#[async_trait]
impl Queue for TableQueue {
    async fn send(&self, q: QueueName, messages: Vec<Outgoing>) -> Result<(), QueueError> {
        let now = self.clock.now();
        let total = messages.len();
        let mut ops = Vec::with_capacity(messages.len());
        for m in messages {
            let stored = Stored {
                id: uuid::Uuid::new_v4().simple().to_string(),
                envelope: Envelope { not_before: m.not_before, body: m.body },
                attempts: 0,
                dead_lettered_at: None,
            };
            let visible_at = m.not_before.unwrap_or(now).max(now);
            ops.push(WriteOp::Put {
                item: self.item(q, visible_at, &stored),
                condition: Condition::NotExists,
            });
        }
        for chunk in ops.chunks(25) {
            self.table.transact(chunk.to_vec()).await.map_err(|e| match unavailable(e) {
                QueueError::NotSent { reason, .. } => QueueError::NotSent { failed: total, reason },
            })?;
        }
        Ok(())
    }
}
