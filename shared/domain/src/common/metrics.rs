//! Operational metrics of pulls, webhook deliveries and bulk operations, as facts the use cases
//! report where they happen.
//!
//! Each fact is one `tracing` event of target [`TARGET`]: its string fields are the metric's
//! dimensions, its numeric fields the values (a name ending in `_ms` is milliseconds, any other a
//! count). The telemetry crate (`wearlab_telemetry`) writes each as one CloudWatch Embedded
//! Metric Format line; the domain stays free of any metrics backend, and a process without that
//! layer only logs them. Dimensions are low-cardinality on purpose (provider, outcome, operation
//! type): never a team, user or message id, which would make a metric per id.

/// The `tracing` target of metric events.
pub const TARGET: &str = "wearlab_metrics";

/// A pull worker's chunk of one resource written: how many records (summaries, timeseries days,
/// profiles) it stored.
pub fn pull_records_stored(provider: &str, records: usize) {
    tracing::info!(target: TARGET, provider, records_stored = records as u64);
}

/// One pull-queue message of a historical pull handled: how long it took and whether it failed
/// (a wait for throttle capacity is not a failure).
pub fn pull_handled(provider: &str, duration_ms: u64, failed: bool) {
    tracing::info!(target: TARGET, provider, pull_duration_ms = duration_ms,
        pull_failures = u64::from(failed));
}

/// How a webhook delivery attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Delivered,
    /// Failed, retried later.
    Failed,
    /// Failed for the last time.
    DeadLettered,
}

/// One webhook delivery attempt (`attempt` counts from 1).
pub fn webhook_attempt(result: Delivery, attempt: u32) {
    let (delivered, failed, dead) = match result {
        Delivery::Delivered => (1u64, 0u64, 0u64),
        Delivery::Failed => (0, 1, 0),
        Delivery::DeadLettered => (0, 1, 1),
    };
    tracing::info!(target: TARGET, webhook_delivered = delivered,
        webhook_failed = failed, webhook_dead_lettered = dead, webhook_attempts = u64::from(attempt));
}

/// Items of a bulk operation counted (imported or triggered users): how many, how many of those
/// failed, and whether the operation ended with them.
pub fn bulk_progress(op_type: &str, processed: u64, failed: u64, ended: bool) {
    tracing::info!(target: TARGET, op_type, bulk_items_processed = processed,
        bulk_items_failed = failed, bulk_operations_ended = u64::from(ended));
}
