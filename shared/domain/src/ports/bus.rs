//! Events to the team: EventBridge on AWS (rules feed webhooks and the team's own targets), an
//! in-process bus locally.

use async_trait::async_trait;
pub use wearlab_models::EventEnvelope;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BusError {
    /// Some events could not be published even after retries; the count says how many.
    #[error("{failed} event(s) not published: {reason}")]
    NotPublished { failed: usize, reason: String },
}

#[async_trait]
pub trait EventBus: Send + Sync + 'static {
    /// Publishes every event (adapters batch and retry as their service needs).
    async fn publish(&self, events: Vec<EventEnvelope>) -> Result<(), BusError>;
}
