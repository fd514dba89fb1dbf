//! The `LabNetwork` port: what a lab does with an order. `wearlab_sim::SimulatedLab` implements it
//! deterministically on the clock; a real lab integration implements the same trait.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// An order as the lab receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct LabRequest {
    pub order_id: Uuid,
    pub lab_id: i64,
    pub lab_slug: String,
    /// `walk_in_test`, `at_home_phlebotomy` or `testkit`.
    pub collection_method: String,
    pub marker_ids: Vec<i64>,
    pub placed_at: DateTime<Utc>,
}

/// The lab's acknowledgement.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// The lab's accession number for the sample.
    pub accession_number: String,
    /// The first status, e.g. `received.walk_in_test.ordered`.
    pub status: String,
}

/// What the lab knows of an order it accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct LabOrderRef {
    pub order_id: Uuid,
    pub lab_id: i64,
    pub collection_method: String,
    pub marker_ids: Vec<i64>,
    pub placed_at: DateTime<Utc>,
    pub accession_number: String,
    /// The latest status the platform has recorded.
    pub last_status: String,
}

/// One status change reported by the lab.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusUpdate {
    pub status: String,
    pub at: DateTime<Utc>,
}

/// Status changes since `last_status` up to now, and when the next one is due.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Poll {
    pub updates: Vec<StatusUpdate>,
    pub next_due: Option<DateTime<Utc>>,
}

/// One reported result.
#[derive(Debug, Clone, PartialEq)]
pub struct LabResultValue {
    pub loinc_code: String,
    pub name: String,
    pub slug: String,
    pub provider_id: String,
    /// As reported: `"5.4"`, `"<0.5"`, `"Negative"`.
    pub result: String,
    /// numeric, range, comment or coded_value.
    pub result_type: String,
    pub value: Option<f64>,
    pub unit: Option<String>,
    pub min_range_value: Option<f64>,
    pub max_range_value: Option<f64>,
    /// normal, abnormal or critical.
    pub interpretation: String,
    pub notes: Option<String>,
}

/// The lab's report on an order.
#[derive(Debug, Clone, PartialEq)]
pub struct LabReport {
    /// `partial` or `final`.
    pub status: String,
    pub collected_at: Option<DateTime<Utc>>,
    pub reported_at: DateTime<Utc>,
    pub results: Vec<LabResultValue>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabError {
    /// The lab refuses the order or the change for good.
    #[error("{0}")]
    Rejected(String),
    /// The order can no longer be cancelled.
    #[error("{0}")]
    NotCancellable(String),
    /// The lab cannot be reached; retry later.
    #[error("lab unavailable: {0}")]
    Unavailable(String),
}

#[async_trait]
pub trait LabNetwork: Send + Sync + 'static {
    /// Places an order.
    async fn place(&self, request: &LabRequest) -> Result<Placement, LabError>;

    /// Status changes after `order.last_status` that happened by `now`.
    async fn poll(&self, order: &LabOrderRef, now: DateTime<Utc>) -> Result<Poll, LabError>;

    /// Cancels an order the lab has not started processing; answers the cancelled status.
    async fn cancel(&self, order: &LabOrderRef, now: DateTime<Utc>) -> Result<StatusUpdate, LabError>;

    /// The results reported by `now`, if any.
    async fn results(&self, order: &LabOrderRef, now: DateTime<Utc>) -> Result<Option<LabReport>, LabError>;
}

/// The group of a status: `received` of `received.walk_in_test.ordered`.
pub fn status_group(status: &str) -> &str {
    status.split('.').next().unwrap_or(status)
}

/// The detail of a status: `ordered` of `received.walk_in_test.ordered`.
pub fn status_detail(status: &str) -> &str {
    status.rsplit('.').next().unwrap_or(status)
}
