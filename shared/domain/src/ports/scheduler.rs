//! One-time schedules ("at" schedules): EventBridge Scheduler on AWS, a timer loop locally.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A one-time job. `name` is unique: scheduling the same name again replaces the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub name: String,
    pub at: DateTime<Utc>,
    /// Delivered unchanged to the target (the erasure worker).
    pub payload: serde_json::Value,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SchedulerError {
    #[error("scheduler unavailable: {0}")]
    Unavailable(String),
}

#[async_trait]
pub trait Scheduler: Send + Sync + 'static {
    async fn schedule_once(&self, schedule: Schedule) -> Result<(), SchedulerError>;

    /// Cancels a job; cancelling a job that does not exist (or already ran) is fine.
    async fn cancel(&self, name: &str) -> Result<(), SchedulerError>;
}
