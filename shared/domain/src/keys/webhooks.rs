//! Key shapes of webhook endpoints and their delivery records.

use chrono::{DateTime, SecondsFormat, Utc};

use crate::common::ids::TeamId;
use crate::ports::Key;

pub fn endpoint(team: TeamId, endpoint_id: &str) -> Key {
    Key::new(super::team(team).pk, format!("WEBHOOK#{endpoint_id}"))
}

pub const ENDPOINT_PREFIX: &str = "WEBHOOK#";

/// One partition per endpoint for its delivery attempts, newest last by time.
pub fn attempts_partition(team: TeamId, endpoint_id: &str) -> String {
    format!("WEBHOOK_ATTEMPTS#{team}#{endpoint_id}")
}

/// One delivery attempt of a message to an endpoint, in the endpoint's attempts partition,
/// ordered by time.
pub fn attempt(team: TeamId, endpoint_id: &str, at: DateTime<Utc>, message_id: &str, attempt: u32) -> Key {
    let sk = format!("{}#{message_id}#{attempt:02}", at.to_rfc3339_opts(SecondsFormat::Micros, true));
    Key::new(attempts_partition(team, endpoint_id), sk)
}

/// Marks a message delivered to an endpoint, so a duplicate job sends nothing.
pub fn delivered(team: TeamId, endpoint_id: &str, message_id: &str) -> Key {
    Key::new(format!("WEBHOOK_DELIVERED#{team}#{endpoint_id}"), message_id)
}
