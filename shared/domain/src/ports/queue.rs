//! Background work: messages on named queues (SQS on AWS, a table-backed queue locally) and
//! consumers that answer each message with an `Outcome`.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The queues Wearlab uses. Each maps to one SQS queue (with its dead-letter queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueName {
    /// Historical pulls, one message per (user, provider).
    Pull,
    /// Bulk imports, many connection recipes per message.
    Bulk,
    /// Webhook deliveries.
    Webhook,
}

impl QueueName {
    pub const ALL: [QueueName; 3] = [QueueName::Pull, QueueName::Bulk, QueueName::Webhook];

    pub fn as_str(self) -> &'static str {
        match self {
            QueueName::Pull => "pull",
            QueueName::Bulk => "bulk",
            QueueName::Webhook => "webhook",
        }
    }
}

/// The longest delay SQS allows on a message; a longer wait is split (see [`Envelope`]).
pub const MAX_NATIVE_DELAY: Duration = Duration::from_secs(15 * 60);

/// Producers keep each message body under this size, so that ten of them (one batch call)
/// fit SQS's 1 MiB per SendMessageBatch.
pub const MESSAGE_BUDGET: usize = 96 * 1024;

/// What travels on a queue: the payload, plus the earliest time it may be handled. A consumer
/// that sees `not_before` in the future answers `RetryAfter` for the rest of the wait, so waits
/// longer than the queue's own maximum delay still hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<DateTime<Utc>>,
    pub body: serde_json::Value,
}

/// A message to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub body: serde_json::Value,
    /// Earliest handling time; `None` for now.
    pub not_before: Option<DateTime<Utc>>,
}

impl Outgoing {
    pub fn now(body: serde_json::Value) -> Self {
        Self { body, not_before: None }
    }

    pub fn at(body: serde_json::Value, not_before: DateTime<Utc>) -> Self {
        Self { body, not_before: Some(not_before) }
    }

    /// The envelope, and the native delay to ask of the queue (capped at its maximum).
    pub fn envelope(&self, now: DateTime<Utc>) -> (Envelope, Duration) {
        let wait = self.not_before.map(|t| (t - now).to_std().unwrap_or_default()).unwrap_or_default();
        (Envelope { not_before: self.not_before, body: self.body.clone() }, wait.min(MAX_NATIVE_DELAY))
    }
}

/// A received message.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub id: String,
    pub envelope: Envelope,
    /// 1 on the first delivery.
    pub attempt: u32,
}

/// A consumer's answer to one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Done: delete it.
    Ack,
    /// Not now: deliver again after this long (a throttle's exact wait, a retry schedule).
    RetryAfter(Duration),
    /// Failed: deliver again with the queue's backoff until its attempts are used up, then
    /// dead-letter it.
    Fail(String),
}

impl Outcome {
    /// `RetryAfter` the rest of the envelope's wait, if it is not due yet.
    pub fn not_due(envelope: &Envelope, now: DateTime<Utc>) -> Option<Outcome> {
        let t = envelope.not_before?;
        (t > now)
            .then(|| Outcome::RetryAfter((t - now).to_std().unwrap_or_default().max(Duration::from_secs(1))))
    }
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum QueueError {
    #[error("{failed} message(s) not sent: {reason}")]
    NotSent { failed: usize, reason: String },
}

#[async_trait]
pub trait Queue: Send + Sync + 'static {
    /// Sends every message (adapters batch as their service needs).
    async fn send(&self, queue: QueueName, messages: Vec<Outgoing>) -> Result<(), QueueError>;
}
