//! Keys of bulk operations. An operation's header lives in the team's partition, sorted by
//! start time so the list reads newest first; its per-message and per-user results live in a
//! partition of their own (they expire with the operation).

use chrono::{DateTime, SecondsFormat, Utc};

use crate::common::ids::{TeamId, UserId};
use crate::ports::Key;

pub const OP_PREFIX: &str = "BULKOP#";

pub fn op(team: TeamId, started_at: DateTime<Utc>, op_id: &str) -> Key {
    Key::new(
        super::team(team).pk,
        format!("{OP_PREFIX}{}#{op_id}", started_at.to_rfc3339_opts(SecondsFormat::Micros, true)),
    )
}

/// The partition of an operation's results.
pub fn results_partition(op_id: &str) -> String {
    format!("BULKOP#{op_id}")
}

/// The result of one queue message (its chunk of items).
pub fn chunk_result(op_id: &str, chunk: u32) -> Key {
    Key::new(results_partition(op_id), format!("CHUNK#{chunk:06}"))
}

/// The result of one user's historical pull started by a trigger operation.
pub fn user_result(op_id: &str, user: UserId) -> Key {
    Key::new(results_partition(op_id), format!("USER#{user}"))
}

/// The team's feature switches (set by the operator).
pub fn team_features(team: TeamId) -> Key {
    Key::new(super::team(team).pk, "SETTINGS#FEATURES")
}
