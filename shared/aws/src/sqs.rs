//! `Queue` on SQS, and the glue that runs a consumer over an SQS batch inside a Lambda with
//! partial batch responses.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use wearlab_domain::ports::{Clock, Envelope, Outcome, Outgoing, Queue, QueueError, QueueName};

use crate::error::describe;
use crate::lazy::{LazyClient, LazySdkConfig};

/// SendMessageBatch takes at most 10 entries and 1 MiB in all (each message at most 1 MiB;
/// producers keep bodies under `MESSAGE_BUDGET` so that ten fill one call).
const BATCH_ENTRIES: usize = 10;
const BATCH_BYTES: usize = 1024 * 1024;
const TRIES: u32 = 3;

#[derive(Clone)]
pub struct SqsQueue {
    client: LazyClient<Client>,
    urls: HashMap<QueueName, String>,
    clock: Arc<dyn Clock>,
    /// SendMessageBatch calls made (benchmarks, tests).
    batch_calls: Arc<std::sync::atomic::AtomicU64>,
}

/// Splits message bodies into SendMessageBatch calls: at most 10 entries and 1 MiB each.
/// Returns index ranges into `sizes`. A single body over the limit gets a call of its own
/// (and SQS refuses it, which the caller reports).
pub fn plan_batches(sizes: &[usize]) -> Vec<std::ops::Range<usize>> {
    plan_batches_within(sizes, BATCH_ENTRIES, BATCH_BYTES)
}

/// Splits entries of `sizes` into calls of at most `max_entries` entries and `max_bytes` in all,
/// in order. An entry over `max_bytes` gets a call of its own (which the service refuses).
pub fn plan_batches_within(
    sizes: &[usize],
    max_entries: usize,
    max_bytes: usize,
) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, &size) in sizes.iter().enumerate() {
        if i > start && (i - start == max_entries || bytes + size > max_bytes) {
            out.push(start..i);
            start = i;
            bytes = 0;
        }
        bytes += size;
    }
    if start < sizes.len() {
        out.push(start..sizes.len());
    }
    out
}

impl SqsQueue {
    pub fn new(client: Client, urls: HashMap<QueueName, String>, clock: Arc<dyn Clock>) -> Self {
        Self { client: LazyClient::ready(client), urls, clock, batch_calls: Arc::default() }
    }

    /// The queues with a client built from `config` on the first send (see [`LazySdkConfig`]).
    pub fn on_first_use(
        config: LazySdkConfig,
        urls: HashMap<QueueName, String>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            client: LazyClient::on_first_use(config, Client::new),
            urls,
            clock,
            batch_calls: Arc::default(),
        }
    }

    /// SendMessageBatch calls made so far by this queue and its clones.
    pub fn send_batch_calls(&self) -> u64 {
        self.batch_calls.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn send_batch(
        &self,
        url: &str,
        mut entries: Vec<SendMessageBatchRequestEntry>,
    ) -> Result<(), QueueError> {
        let mut reason = String::new();
        for attempt in 0..TRIES {
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(50 << attempt)).await;
            }
            self.batch_calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match self
                .client
                .get()
                .await
                .send_message_batch()
                .queue_url(url)
                .set_entries(Some(entries.clone()))
                .send()
                .await
            {
                Ok(out) if out.failed().is_empty() => return Ok(()),
                Ok(out) => {
                    let failed: Vec<&str> = out.failed().iter().map(|f| f.id()).collect();
                    reason = out.failed().first().map(|f| f.code().to_owned()).unwrap_or_default();
                    // A sender fault (too large, malformed) will not heal by retrying.
                    if out.failed().iter().any(|f| f.sender_fault()) {
                        return Err(QueueError::NotSent { failed: failed.len(), reason });
                    }
                    entries.retain(|e| failed.contains(&e.id()));
                }
                Err(e) => reason = describe("SendMessageBatch", &e, false),
            }
        }
        Err(QueueError::NotSent { failed: entries.len(), reason })
    }
}

#[async_trait]
impl Queue for SqsQueue {
    async fn send(&self, q: QueueName, messages: Vec<Outgoing>) -> Result<(), QueueError> {
        let url = self.urls.get(&q).ok_or_else(|| QueueError::NotSent {
            failed: messages.len(),
            reason: format!("no queue URL configured for {}", q.as_str()),
        })?;
        let now = self.clock.now();
        let mut bodies = Vec::with_capacity(messages.len());
        for m in &messages {
            let (envelope, delay) = m.envelope(now);
            let body = serde_json::to_string(&envelope)
                .map_err(|e| QueueError::NotSent { failed: messages.len(), reason: e.to_string() })?;
            bodies.push((body, delay.as_secs() as i32));
        }
        let sizes: Vec<usize> = bodies.iter().map(|(b, _)| b.len()).collect();
        let mut failed = 0;
        let mut reason = String::new();
        for range in plan_batches(&sizes) {
            let entries = range
                .clone()
                .map(|i| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(&bodies[i].0)
                        .delay_seconds(bodies[i].1)
                        .build()
                        .expect("id and body are set")
                })
                .collect();
            if let Err(QueueError::NotSent { failed: n, reason: r }) = self.send_batch(url, entries).await {
                failed += n;
                reason = r;
            }
        }
        if failed > 0 {
            return Err(QueueError::NotSent { failed, reason });
        }
        Ok(())
    }
}

/// Runs `handler` over an SQS batch delivered to a Lambda, answering with the partial batch
/// response: failed messages return to the queue (and end in its dead-letter queue after
/// maxReceiveCount); `RetryAfter` re-sends the message for later and lets the original go, so
/// waiting for capacity never counts as a failed delivery and waits may exceed SQS's limits.
pub async fn handle_sqs_batch<F, Fut>(
    queue: &SqsQueue,
    name: QueueName,
    event: SqsEvent,
    handler: F,
) -> SqsBatchResponse
where
    F: Fn(Envelope, u32) -> Fut,
    Fut: Future<Output = Outcome>,
{
    // The batch's messages are handled at once: each mostly waits on a provider or on
    // DynamoDB, and the invocation lasts as long as the slowest rather than the sum.
    let failures = futures_util::future::join_all(
        event.records.into_iter().map(|record| handle_record(queue, name, record, &handler)),
    )
    .await;
    let mut response = SqsBatchResponse::default();
    for id in failures.into_iter().flatten() {
        response.add_failure(id);
    }
    response
}

/// One message of [`handle_sqs_batch`]: its id when it must return to the queue.
async fn handle_record<F, Fut>(
    queue: &SqsQueue,
    name: QueueName,
    record: aws_lambda_events::sqs::SqsMessage,
    handler: &F,
) -> Option<String>
where
    F: Fn(Envelope, u32) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let id = record.message_id.clone().unwrap_or_default();
    let attempt = record.attributes.get("ApproximateReceiveCount").and_then(|c| c.parse().ok()).unwrap_or(1);
    let envelope = match record.body.as_deref().map(serde_json::from_str::<Envelope>) {
        Some(Ok(e)) => e,
        _ => {
            // Unreadable: let it fail its way to the dead-letter queue, where it can be inspected.
            tracing::error!(message_id = %id, "unreadable queue message");
            return Some(id);
        }
    };
    let outcome = match Outcome::not_due(&envelope, queue.clock.now()) {
        Some(wait) => wait,
        None => handler(envelope.clone(), attempt).await,
    };
    match outcome {
        Outcome::Ack => None,
        Outcome::RetryAfter(wait) => {
            let later = queue.clock.now() + chrono::Duration::from_std(wait).unwrap_or_default();
            let resend = Outgoing { body: envelope.body, not_before: Some(later) };
            if let Err(e) = queue.send(name, vec![resend]).await {
                tracing::warn!(message_id = %id, error = %e, "could not re-send for later; returning it");
                return Some(id);
            }
            None
        }
        Outcome::Fail(reason) => {
            tracing::warn!(message_id = %id, attempt, reason = %reason, "message failed");
            Some(id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_count_and_size() {
        assert_eq!(plan_batches(&[1; 25]), vec![0..10, 10..20, 20..25]);
        assert_eq!(plan_batches(&[400 * 1024; 5]), vec![0..2, 2..4, 4..5]);
        assert_eq!(plan_batches(&[1100 * 1024, 1]), vec![0..1, 1..2]);
        assert_eq!(plan_batches(&[wearlab_domain::ports::MESSAGE_BUDGET; 20]), vec![0..10, 10..20]);
        assert!(plan_batches(&[]).is_empty());
    }
}
