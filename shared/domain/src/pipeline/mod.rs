//! The data pipeline: historical pulls of a connection (throttled per team and provider),
//! the periodic poll for new and changed data, storage of summaries and timeseries in the
//! user's partition, the data events, and the read side.
//!
//! Work arrives on the pull queue as a [`PullMessage`]: a pull job, a poll job, the scheduled
//! "poll everything", or a `provider.connection.created` event from the bus (which starts the
//! connection's historical pull).

mod columns;
pub mod normalize;
pub mod phone;
pub mod pull;
pub mod push;
pub mod read;
pub mod sport;
pub(crate) mod store;

use serde::{Deserialize, Serialize};
use wearlab_models::data::DataPullPreferences;
use wearlab_models::{EventEnvelope, Resource};

use crate::Deps;
use crate::common::error::{DomainError, issue};
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::catalog;
use crate::keys::pipeline as keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item};

pub use pull::{PROVIDER_FAILURE_BUDGET, PollJob, PullJob, handle};

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
    /// A poll a verified push of the provider asked for: a [`Job::Poll`] that also marks the
    /// connection as one whose pushes arrive, so the schedule polls it less often.
    PushedPoll(PollJob),
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
        issues.push(issue(&["default_history_days"], range.clone(), "value_error"));
    }
    let many = crate::common::limits::too_many(
        &["history_days"],
        prefs.history_days.len(),
        crate::common::limits::MAX_HISTORY_DAYS_PROVIDERS,
    );
    let listed = if many.is_some() { None } else { Some(&prefs.history_days) };
    issues.extend(many);
    for (provider, days) in listed.into_iter().flatten() {
        if catalog().get(provider).is_none() {
            issues.push(issue(&["history_days", provider.as_str()], "unknown provider", "value_error"));
        } else if !(1..=MAX_HISTORY_DAYS).contains(days) {
            issues.push(issue(&["history_days", provider.as_str()], range.clone(), "value_error"));
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

pub(crate) use crate::events::user_event as event;

/// Most bytes of one serialized event. EventBridge refuses entries over 256 KB and SQS messages
/// over 256 KB; the EventBridge event that reaches the webhook queue wraps the envelope in its own
/// metadata (under 1 KB), so the envelope keeps a margin below that.
pub const MAX_EVENT_BYTES: usize = 240 * 1024;

/// The events of one stored value (a summary, a profile, or a timeseries day `{source, data}`)
/// under `event_type`. A timeseries day too large for one event (a day of 1-second heart rate)
/// goes out as several events of the same type, each `{source, data: [consecutive samples]}`
/// and valid on its own, so a subscriber receives every sample.
pub(crate) fn data_events(
    event_type: &str,
    team: TeamId,
    user: UserId,
    client_user_id: &str,
    value: &serde_json::Value,
) -> Vec<EventEnvelope> {
    let whole = event(event_type.to_owned(), team, user, client_user_id, value.clone());
    let size = serde_json::to_vec(&whole).map_or(0, |b| b.len());
    let samples = value.get("data").and_then(serde_json::Value::as_array);
    let Some(samples) = samples.filter(|s| size > MAX_EVENT_BYTES && s.len() > 1) else {
        if size > MAX_EVENT_BYTES {
            // Summaries are a few KB; nothing to split them by.
            tracing::warn!(user_id = %user, event_type, size, "event over the size limit");
        }
        return vec![whole];
    };
    // Parts of equal sample counts; more parts while one does not fit (bounded: one sample each).
    let mut parts = size.div_ceil(MAX_EVENT_BYTES);
    loop {
        let per_part = samples.len().div_ceil(parts);
        let events: Vec<EventEnvelope> = samples
            .chunks(per_part)
            .map(|chunk| {
                let mut part = value.clone();
                part["data"] = serde_json::Value::Array(chunk.to_vec());
                event(event_type.to_owned(), team, user, client_user_id, part)
            })
            .collect();
        let fits = events.iter().all(|e| serde_json::to_vec(e).map_or(0, |b| b.len()) <= MAX_EVENT_BYTES);
        if fits || per_part == 1 {
            return events;
        }
        parts *= 2;
    }
}

/// The event types that announce `resource` (the deprecated hypnogram ones ride on sleep_cycle
/// for teams that switched them on).
pub(crate) fn event_types(kind: &str, resource: &Resource, hypnogram: bool) -> Vec<String> {
    let mut out = vec![format!("{kind}.data.{resource}")];
    if *resource == Resource::SleepCycle && hypnogram {
        out.push(format!("{kind}.timeseries.hypnogram"));
    }
    out
}
