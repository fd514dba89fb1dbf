//! `Scheduler` on EventBridge Scheduler: one `at(...)` schedule per job, deleted by the
//! service once it has run, invoking the erasure Lambda with the job's payload.

use async_trait::async_trait;
use aws_sdk_scheduler::Client;
use aws_sdk_scheduler::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_scheduler::types::{ActionAfterCompletion, FlexibleTimeWindow, FlexibleTimeWindowMode, Target};
use wearlab_domain::ports::{Schedule, Scheduler, SchedulerError};

use crate::error::{describe, is_code};
use crate::lazy::{LazyClient, LazySdkConfig};

/// Where schedules live and what they invoke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerTarget {
    /// Schedule group (must exist).
    pub group: String,
    /// ARN of the function a schedule invokes (the erasure worker).
    pub target_arn: String,
    /// Role EventBridge Scheduler assumes to invoke the target.
    pub role_arn: String,
}

#[derive(Debug, Clone)]
pub struct EventBridgeScheduler {
    client: LazyClient<Client>,
    target: SchedulerTarget,
}

/// Create/update races (the job firing and deleting itself in between) resolved before giving up.
const REPLACE_TRIES: usize = 3;

impl EventBridgeScheduler {
    pub fn new(client: Client, target: SchedulerTarget) -> Self {
        Self { client: LazyClient::ready(client), target }
    }

    /// The scheduler with a client built from `config` on its first request (see [`LazySdkConfig`]).
    pub fn on_first_use(config: LazySdkConfig, target: SchedulerTarget) -> Self {
        Self { client: LazyClient::on_first_use(config, Client::new), target }
    }

    fn target(&self, payload: &serde_json::Value) -> Result<Target, SchedulerError> {
        Target::builder()
            .arn(&self.target.target_arn)
            .role_arn(&self.target.role_arn)
            .input(payload.to_string())
            .build()
            .map_err(|e| SchedulerError::Unavailable(e.to_string()))
    }
}

fn off() -> Result<FlexibleTimeWindow, SchedulerError> {
    FlexibleTimeWindow::builder()
        .mode(FlexibleTimeWindowMode::Off)
        .build()
        .map_err(|e| SchedulerError::Unavailable(e.to_string()))
}

/// EventBridge accepts names of 1 to 64 characters from `[0-9a-zA-Z-_.]`. Ours (`erase-user-<uuid>`)
/// always fit; anything else is a bug, reported instead of silently renamed.
fn check_name(name: &str) -> Result<(), SchedulerError> {
    let valid = (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if valid {
        Ok(())
    } else {
        Err(SchedulerError::Unavailable(format!(
            "invalid schedule name {name:?}: want 1-64 of [0-9a-zA-Z-_.]"
        )))
    }
}

/// Scheduler messages name schedules and parameters, never payloads: kept for diagnosis.
fn scheduler_error<E, R>(op: &str, err: &SdkError<E, R>) -> SchedulerError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    SchedulerError::Unavailable(describe(op, err, true))
}

/// Every field of a one-time schedule, on a CreateSchedule or UpdateSchedule request (two SDK
/// builder types with the same setters; UpdateSchedule replaces every field, so both set all).
macro_rules! one_time {
    ($request:expr, $this:expr, $schedule:expr, $expression:expr, $target:expr) => {
        $request
            .group_name(&$this.target.group)
            .name(&$schedule.name)
            .schedule_expression(&$expression)
            .schedule_expression_timezone("UTC")
            .flexible_time_window(off()?)
            .action_after_completion(ActionAfterCompletion::Delete)
            .target($target.clone())
    };
}

#[async_trait]
impl Scheduler for EventBridgeScheduler {
    /// Creates the schedule, or replaces it (UpdateSchedule) when one with this name exists.
    async fn schedule_once(&self, schedule: Schedule) -> Result<(), SchedulerError> {
        check_name(&schedule.name)?;
        let expression = format!("at({})", schedule.at.format("%Y-%m-%dT%H:%M:%S"));
        let target = self.target(&schedule.payload)?;
        let client = self.client.get().await;
        for _ in 0..REPLACE_TRIES {
            let created =
                one_time!(client.create_schedule(), self, schedule, expression, target).send().await;
            match created {
                Ok(_) => return Ok(()),
                Err(e) if is_code(&e, "ConflictException") => {}
                Err(e) => return Err(scheduler_error("CreateSchedule", &e)),
            }
            // UpdateSchedule replaces every field, so this is a full replacement.
            let updated =
                one_time!(client.update_schedule(), self, schedule, expression, target).send().await;
            match updated {
                Ok(_) => return Ok(()),
                // It ran (and deleted itself) or was cancelled since: create it again.
                Err(e) if is_code(&e, "ResourceNotFoundException") => {}
                Err(e) => return Err(scheduler_error("UpdateSchedule", &e)),
            }
        }
        Err(SchedulerError::Unavailable(format!(
            "CreateSchedule: {:?} kept changing concurrently",
            schedule.name
        )))
    }

    async fn cancel(&self, name: &str) -> Result<(), SchedulerError> {
        check_name(name)?;
        match self.client.get().await.delete_schedule().group_name(&self.target.group).name(name).send().await
        {
            Ok(_) => Ok(()),
            Err(e) if is_code(&e, "ResourceNotFoundException") => Ok(()),
            Err(e) => Err(scheduler_error("DeleteSchedule", &e)),
        }
    }
}

/// Creates the schedule group unless it exists (tests against moto, the local stack).
pub async fn ensure_schedule_group(client: &Client, name: &str) -> Result<(), SchedulerError> {
    // Looked up first: moto's CreateScheduleGroup silently replaces (and empties) a group.
    match client.get_schedule_group().name(name).send().await {
        Ok(_) => return Ok(()),
        Err(e) if is_code(&e, "ResourceNotFoundException") => {}
        Err(e) => return Err(scheduler_error("GetScheduleGroup", &e)),
    }
    match client.create_schedule_group().name(name).send().await {
        Ok(_) => Ok(()),
        Err(e) if is_code(&e, "ConflictException") => Ok(()),
        Err(e) => Err(scheduler_error("CreateScheduleGroup", &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(check_name("erase-user-0b0e7a0e-59a4-4c5c-9c2b-4b4a0d6f7c11").is_ok());
        assert!(check_name("a.b_c-1").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("has space").is_err());
        assert!(check_name(&"x".repeat(65)).is_err());
        assert!(check_name(&"x".repeat(64)).is_ok());
    }
}
