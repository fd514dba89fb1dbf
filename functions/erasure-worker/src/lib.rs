//! The erasure worker. Two kinds of events reach it: a user's one-time schedule
//! (`{"erase_user": "<uuid>"}`) and the hourly sweep rule (an EventBridge "Scheduled Event").

use serde::Serialize;
use serde_json::Value;
use wearlab_domain::lifecycle::{self, Erasure};
use wearlab_domain::users::ErasureJob;
use wearlab_domain::{Deps, DomainError};

/// What one invocation did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Erased { items: usize },
    Skipped { reason: &'static str },
    Swept { users: usize },
}

/// Handles one event. An error makes Lambda retry the invocation (the scheduler retries too);
/// erasure is idempotent, so retries are safe.
pub async fn handle(deps: &Deps, event: Value) -> Result<Outcome, DomainError> {
    if let Ok(job) = serde_json::from_value::<ErasureJob>(event.clone()) {
        return Ok(match lifecycle::erase_user(deps, job.erase_user).await? {
            Erasure::Erased { items } => Outcome::Erased { items },
            Erasure::AlreadyGone => Outcome::Skipped { reason: "already erased" },
            Erasure::NotDeleted => Outcome::Skipped { reason: "deletion undone" },
            Erasure::NotDue => Outcome::Skipped { reason: "grace period not over" },
        });
    }
    if event.get("detail-type").and_then(Value::as_str) != Some("Scheduled Event") {
        // Anything else is a misconfigured trigger; sweeping is always safe and catches up.
        tracing::warn!("unrecognised event; running a sweep");
    }
    Ok(Outcome::Swept { users: lifecycle::sweep(deps).await? })
}
