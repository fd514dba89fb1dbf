//! Key shapes of the audit log of PHI access. Outside the user's partition on purpose: an
//! entry holds ids only, and the record of who read a user's data outlives the user's erasure
//! (it expires with the team's retention instead).

use chrono::{DateTime, SecondsFormat, Utc};

use crate::common::ids::{TeamId, UserId};
use crate::ports::Key;

/// The team's entries, ordered by time.
pub fn team_partition(team: TeamId) -> String {
    format!("AUDIT#{team}")
}

/// GSI1 partition of the team's entries about one user, ordered by time.
pub fn user_index(team: TeamId, user: UserId) -> String {
    format!("AUDIT#{team}#USER#{user}")
}

/// Sort key (and GSI1 sort key) of an entry: the time first, so `since`/`until` are a range.
pub fn entry_sort(at: DateTime<Utc>, id: &str) -> String {
    format!("{}#{id}", time_bound(at))
}

/// Where entries of `at` begin in the sort order.
pub fn time_bound(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub fn entry(team: TeamId, at: DateTime<Utc>, id: &str) -> Key {
    Key::new(team_partition(team), entry_sort(at, id))
}
