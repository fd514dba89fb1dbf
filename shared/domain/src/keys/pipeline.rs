//! Key shapes of ingested data and of pull progress. Everything of a user is in the user's
//! partition (`super::user_partition`), so erasure removes it; the poll index is a sparse GSI1
//! entry of the user's sync item, so it goes with it.

use chrono::NaiveDate;

use crate::ids::{TeamId, UserId};
use crate::ports::Key;

/// A stored summary: one item per (resource, day, provider, record within the day).
pub fn summary(user: UserId, resource: &str, date: NaiveDate, provider: &str, n: &str) -> Key {
    Key::new(super::user_partition(user), format!("DATA#SUM#{resource}#{date}#{provider}#{n}"))
}

/// Sort-key bounds of a resource's summaries from `start` to `end` (inclusive).
pub fn summary_range(resource: &str, start: NaiveDate, end: NaiveDate) -> (String, String) {
    (format!("DATA#SUM#{resource}#{start}#"), format!("DATA#SUM#{resource}#{end}#~"))
}

/// The samples of one resource, day and provider.
pub fn series(user: UserId, resource: &str, date: NaiveDate, provider: &str) -> Key {
    Key::new(super::user_partition(user), format!("DATA#TS#{resource}#{date}#{provider}"))
}

pub fn series_range(resource: &str, start: NaiveDate, end: NaiveDate) -> (String, String) {
    (format!("DATA#TS#{resource}#{start}#"), format!("DATA#TS#{resource}#{end}#~"))
}

/// The user's profile at a provider.
pub fn profile(user: UserId, provider: &str) -> Key {
    Key::new(super::user_partition(user), format!("DATA#PROFILE#{provider}"))
}

pub const PROFILE_PREFIX: &str = "DATA#PROFILE#";

/// Progress and done marker of one historical pull.
pub fn pull(user: UserId, provider: &str, pull_id: &str) -> Key {
    Key::new(super::user_partition(user), format!("PULL#{provider}#{pull_id}"))
}

/// How far the periodic poll got for a connection; indexed for the poll's fan-out.
pub fn sync(user: UserId, provider: &str) -> Key {
    Key::new(super::user_partition(user), format!("SYNC#{provider}"))
}

/// GSI1 partition of every polled connection.
pub const POLL_INDEX: &str = "POLL";

pub fn poll_index_sort(team: TeamId, user: UserId, provider: &str) -> String {
    format!("{team}#{user}#{provider}")
}

/// The team's data pull preferences.
pub fn preferences(team: TeamId) -> Key {
    Key::new(super::team(team).pk, "SETTINGS#DATA_PULL")
}
