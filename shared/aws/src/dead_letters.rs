//! Dead-letter queues on SQS for operators: a bounded look (kinds and ids only) and a redrive
//! back to the source queue by receive, send, then delete (a message is deleted from the
//! dead-letter queue only once its copy was accepted by the source queue).

use std::collections::HashMap;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry, MessageSystemAttributeName,
    QueueAttributeName, SendMessageBatchRequestEntry,
};
use chrono::{DateTime, Utc};
use wearlab_domain::common::dead_letters::{self, DeadLetter, DeadLetterListing, Redriven};

use crate::error::describe;

/// Why a dead-letter operation stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum DeadLetterError {
    NoDeadLetterQueue,
    Sqs(String),
    /// Some messages moved before the failure; those not moved are still in the dead-letter queue.
    Partial {
        moved: u64,
        reason: String,
    },
}

impl std::fmt::Display for DeadLetterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoDeadLetterQueue => {
                f.write_str("the source queue has no redrive policy naming a dead-letter queue")
            }
            Self::Sqs(reason) => write!(f, "SQS: {reason}"),
            Self::Partial { moved, reason } => write!(f, "{moved} moved, then SQS: {reason}"),
        }
    }
}

impl std::error::Error for DeadLetterError {}

/// One source queue and its dead-letter queue.
#[derive(Clone)]
pub struct SqsDeadLetters {
    client: Client,
    name: String,
    source_url: String,
    dlq_url: String,
}

/// How long a listed message stays hidden before it is released again.
const LIST_VISIBILITY_SECS: i32 = 30;

impl SqsDeadLetters {
    /// The dead-letter queue of `source_url`, found by its `RedrivePolicy`.
    pub async fn for_source(client: Client, name: &str, source_url: &str) -> Result<Self, DeadLetterError> {
        let attrs = client
            .get_queue_attributes()
            .queue_url(source_url)
            .attribute_names(QueueAttributeName::RedrivePolicy)
            .send()
            .await
            .map_err(|e| DeadLetterError::Sqs(describe("GetQueueAttributes", &e, false)))?;
        let policy = attrs
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::RedrivePolicy))
            .ok_or(DeadLetterError::NoDeadLetterQueue)?;
        let arn = serde_json::from_str::<serde_json::Value>(policy)
            .ok()
            .and_then(|p| p["deadLetterTargetArn"].as_str().map(str::to_owned))
            .ok_or(DeadLetterError::NoDeadLetterQueue)?;
        // arn:aws:sqs:<region>:<account>:<name>
        let parts: Vec<&str> = arn.split(':').collect();
        let [.., account, queue_name] = parts.as_slice() else {
            return Err(DeadLetterError::NoDeadLetterQueue);
        };
        let dlq_url = client
            .get_queue_url()
            .queue_name(*queue_name)
            .queue_owner_aws_account_id(*account)
            .send()
            .await
            .map_err(|e| DeadLetterError::Sqs(describe("GetQueueUrl", &e, false)))?
            .queue_url
            .ok_or(DeadLetterError::NoDeadLetterQueue)?;
        Ok(Self::new(client, name, source_url, &dlq_url))
    }

    pub fn new(client: Client, name: &str, source_url: &str, dlq_url: &str) -> Self {
        Self { client, name: name.into(), source_url: source_url.into(), dlq_url: dlq_url.into() }
    }

    pub fn dlq_url(&self) -> &str {
        &self.dlq_url
    }

    async fn count(&self) -> Result<u64, DeadLetterError> {
        let attrs = self
            .client
            .get_queue_attributes()
            .queue_url(&self.dlq_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .map_err(|e| DeadLetterError::Sqs(describe("GetQueueAttributes", &e, false)))?;
        let attrs = attrs.attributes().cloned().unwrap_or_default();
        let n = |k: QueueAttributeName| attrs.get(&k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        Ok(n(QueueAttributeName::ApproximateNumberOfMessages)
            + n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
    }

    async fn receive(
        &self,
        max: usize,
        visibility: i32,
    ) -> Result<Vec<aws_sdk_sqs::types::Message>, DeadLetterError> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.dlq_url)
            .max_number_of_messages(max.clamp(1, 10) as i32)
            .visibility_timeout(visibility)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .map_err(|e| DeadLetterError::Sqs(describe("ReceiveMessage", &e, false)))?;
        Ok(out.messages.unwrap_or_default())
    }

    /// The count and up to `max` messages by kind and ids. Listed messages are made visible
    /// again at once (each listing adds one to their receive count).
    pub async fn list(&self, max: usize, now: DateTime<Utc>) -> Result<DeadLetterListing, DeadLetterError> {
        let count = self.count().await?;
        let mut seen: HashMap<String, DeadLetter> = HashMap::new();
        let mut order = Vec::new();
        let mut handles = Vec::new();
        let mut empty_polls = 0;
        while seen.len() < max && empty_polls < 2 {
            let batch = self.receive(max - seen.len(), LIST_VISIBILITY_SECS).await?;
            if batch.is_empty() {
                empty_polls += 1;
                continue;
            }
            for m in batch {
                let id = m.message_id().unwrap_or_default().to_owned();
                if let Some(h) = m.receipt_handle() {
                    handles.push(h.to_owned());
                }
                if seen.contains_key(&id) {
                    continue;
                }
                let attrs = m.attributes.clone().unwrap_or_default();
                let receive_count = attrs
                    .get(&MessageSystemAttributeName::ApproximateReceiveCount)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let age_seconds = attrs
                    .get(&MessageSystemAttributeName::SentTimestamp)
                    .and_then(|v| v.parse::<i64>().ok())
                    .and_then(DateTime::<Utc>::from_timestamp_millis)
                    .map(|sent| dead_letters::age_seconds(sent, now));
                let ids = dead_letters::describe(m.body().unwrap_or_default());
                order.push(id.clone());
                seen.insert(id.clone(), DeadLetter { id, receive_count, age_seconds, ids });
            }
        }
        self.release(handles).await?;
        let messages = order.into_iter().filter_map(|id| seen.remove(&id)).collect();
        Ok(DeadLetterListing { queue: self.name.clone(), count, messages })
    }

    async fn release(&self, handles: Vec<String>) -> Result<(), DeadLetterError> {
        for chunk in handles.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    ChangeMessageVisibilityBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(h)
                        .visibility_timeout(0)
                        .build()
                        .expect("id and handle are set")
                })
                .collect();
            self.client
                .change_message_visibility_batch()
                .queue_url(&self.dlq_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| DeadLetterError::Sqs(describe("ChangeMessageVisibilityBatch", &e, false)))?;
        }
        Ok(())
    }

    /// Moves up to `max` messages back to the source queue, ten at a time: each batch is sent
    /// to the source queue first, and only the messages it accepted are deleted from the
    /// dead-letter queue (a failure in between leaves a duplicate, never a loss).
    pub async fn redrive(&self, max: u64) -> Result<Redriven, DeadLetterError> {
        let mut moved = 0u64;
        let partial = |moved: u64, e: DeadLetterError| match e {
            DeadLetterError::Sqs(reason) if moved > 0 => DeadLetterError::Partial { moved, reason },
            e => e,
        };
        let mut empty_polls = 0;
        while moved < max && empty_polls < 2 {
            let batch =
                self.receive((max - moved).min(10) as usize, 60).await.map_err(|e| partial(moved, e))?;
            if batch.is_empty() {
                empty_polls += 1;
                continue;
            }
            let entries: Vec<SendMessageBatchRequestEntry> = batch
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(m.body().unwrap_or_default())
                        .build()
                        .expect("id and body are set")
                })
                .collect();
            let sent = self
                .client
                .send_message_batch()
                .queue_url(&self.source_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| partial(moved, DeadLetterError::Sqs(describe("SendMessageBatch", &e, false))))?;
            let deletes: Vec<DeleteMessageBatchRequestEntry> = sent
                .successful()
                .iter()
                .filter_map(|ok| ok.id().parse::<usize>().ok())
                .filter_map(|i| batch.get(i).and_then(|m| m.receipt_handle()).map(|h| (i, h)))
                .map(|(i, h)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(h)
                        .build()
                        .expect("id and handle are set")
                })
                .collect();
            if deletes.is_empty() {
                let reason = sent.failed().first().map(|f| f.code().to_owned()).unwrap_or_default();
                return Err(partial(moved, DeadLetterError::Sqs(format!("SendMessageBatch: {reason}"))));
            }
            let deleted = self
                .client
                .delete_message_batch()
                .queue_url(&self.dlq_url)
                .set_entries(Some(deletes))
                .send()
                .await
                .map_err(|e| {
                    partial(moved, DeadLetterError::Sqs(describe("DeleteMessageBatch", &e, false)))
                })?;
            moved += deleted.successful().len() as u64;
            if !sent.failed().is_empty() {
                let reason = sent.failed()[0].code().to_owned();
                return Err(DeadLetterError::Partial { moved, reason });
            }
        }
        Ok(Redriven { queue: self.name.clone(), moved })
    }
}
