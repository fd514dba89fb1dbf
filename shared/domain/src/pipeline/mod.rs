//! The data pipeline: historical pulls of a connection (throttled per team and provider),
//! the periodic poll for new and changed data, storage of summaries and timeseries in the
//! user's partition, the data events, and the read side.
//!
//! Work arrives on the pull queue as a [`PullMessage`]: a pull job, a poll job, the scheduled
//! "poll everything", or a `provider.connection.created` event from the bus (which starts the
//! connection's historical pull).

pub mod normalize;
pub mod pull;
pub mod read;
mod store;

use serde::{Deserialize, Serialize};
use wearlab_models::EventEnvelope;
use wearlab_models::data::DataPullPreferences;

use crate::Deps;
use crate::catalog::catalog;
use crate::error::{DomainError, issue};
use crate::ids::{TeamId, UserId};
use crate::keys::pipeline as keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item};

pub use pull::{PollJob, PullJob, handle};

/// Most days of history a pull may reach back.
pub const MAX_HISTORY_DAYS: u32 = 365;
/// Days of history by default.
pub const DEFAULT_HISTORY_DAYS: u32 = 90;

/// What travels on the pull queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PullMessage {
    Job(Job),
    /// An event from the bus; `provider.connection.created` starts a historical pull.
    Event(EventEnvelope),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Job {
    /// A historical pull of one (user, provider).
    Pull(PullJob),
    /// A poll of one connection for new and changed data.
    Poll(PollJob),
    /// The scheduled poll: fans out one poll job per polled connection.
    PollAll {},
}

impl PullMessage {
    pub fn body(&self) -> serde_json::Value {
        to_body(self)
    }
}

/// The team's data pull preferences (defaults when never set).
pub async fn preferences(deps: &Deps, team: TeamId) -> Result<DataPullPreferences, DomainError> {
    Ok(match deps.table.get(&keys::preferences(team)).await? {
        Some(item) => item.decode()?,
        None => DataPullPreferences::default(),
    })
}

/// Replaces the team's data pull preferences after checking every value.
pub async fn set_preferences(
    deps: &Deps,
    team: TeamId,
    prefs: DataPullPreferences,
) -> Result<DataPullPreferences, DomainError> {
    let mut issues = Vec::new();
    let range = format!("must be between 1 and {MAX_HISTORY_DAYS}");
    if !(1..=MAX_HISTORY_DAYS).contains(&prefs.default_history_days) {
        issues.push(issue(&["body", "default_history_days"], range.clone(), "value_error"));
    }
    for (provider, days) in &prefs.history_days {
        if catalog().get(provider).is_none() {
            issues.push(issue(
                &["body", "history_days", provider.as_str()],
                "unknown provider",
                "value_error",
            ));
        } else if !(1..=MAX_HISTORY_DAYS).contains(days) {
            issues.push(issue(&["body", "history_days", provider.as_str()], range.clone(), "value_error"));
        }
    }
    if !issues.is_empty() {
        return Err(DomainError::Validation(issues));
    }
    deps.table.put(Item::new(keys::preferences(team), to_body(&prefs)), Condition::None).await?;
    Ok(prefs)
}

/// Days of history for `provider` under `prefs`.
pub fn history_days(prefs: &DataPullPreferences, provider: &str) -> u32 {
    prefs.history_days.get(provider).copied().unwrap_or(prefs.default_history_days).clamp(1, MAX_HISTORY_DAYS)
}

/// An event of the user.
pub(crate) fn event(
    event_type: String,
    team: TeamId,
    user: UserId,
    client_user_id: &str,
    data: serde_json::Value,
) -> EventEnvelope {
    EventEnvelope {
        event_type,
        user_id: user.0,
        client_user_id: client_user_id.to_owned(),
        team_id: team.0,
        data,
    }
}

/// The event types that announce `resource` (the deprecated hypnogram ones ride on sleep_cycle
/// for teams that switched them on).
pub(crate) fn event_types(kind: &str, resource: &str, hypnogram: bool) -> Vec<String> {
    let mut out = vec![format!("{kind}.data.{resource}")];
    if resource == "sleep_cycle" && hypnogram {
        out.push(format!("{kind}.timeseries.hypnogram"));
    }
    out
}
