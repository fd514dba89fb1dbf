//! The adapter for a port a function does not use. Every function gets the same [`Deps`], and
//! each `main.rs` wires only the ports its use cases call (a worker that delivers no webhooks
//! links no HTTP client); the rest are this, which refuses every call with an error naming the
//! port. A deployed function fails at start when a port it uses lacks its configuration (e.g.
//! `wearlab_aws::sqs_queue_from_env`), so reaching this is a wiring mistake, never a request's.
//!
//! [`Deps`]: crate::Deps

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::lab_network::{
    LabError, LabNetwork, LabOrderRef, LabReport, LabRequest, Placement, Poll, StatusUpdate,
};
use super::queue::{Outgoing, Queue, QueueError, QueueName};
use super::webhook::WebhookSender;

#[derive(Debug, Clone, Copy, Default)]
pub struct NotWired;

const NO_LAB: &str = "no lab network is wired into this function";

#[async_trait]
impl Queue for NotWired {
    async fn send(&self, queue: QueueName, messages: Vec<Outgoing>) -> Result<(), QueueError> {
        Err(QueueError::NotSent {
            failed: messages.len(),
            reason: format!("no {} queue is wired into this function", queue.as_str()),
        })
    }
}

#[async_trait]
impl LabNetwork for NotWired {
    async fn place(&self, _: &LabRequest) -> Result<Placement, LabError> {
        Err(LabError::Unavailable(NO_LAB.into()))
    }

    async fn poll(&self, _: &LabOrderRef, _: DateTime<Utc>) -> Result<Poll, LabError> {
        Err(LabError::Unavailable(NO_LAB.into()))
    }

    async fn cancel(&self, _: &LabOrderRef, _: DateTime<Utc>) -> Result<StatusUpdate, LabError> {
        Err(LabError::Unavailable(NO_LAB.into()))
    }

    async fn results(&self, _: &LabOrderRef, _: DateTime<Utc>) -> Result<Option<LabReport>, LabError> {
        Err(LabError::Unavailable(NO_LAB.into()))
    }
}

#[async_trait]
impl WebhookSender for NotWired {
    async fn post(&self, _: &str, _: Vec<(&'static str, String)>, _: Vec<u8>) -> Result<u16, String> {
        Err("no webhook sender is wired into this function".into())
    }
}
