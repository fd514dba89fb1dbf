//! Key shapes of webhook endpoints and their delivery records.

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

/// Marks a message delivered to an endpoint, so a duplicate job sends nothing.
pub fn delivered(team: TeamId, endpoint_id: &str, message_id: &str) -> Key {
    Key::new(format!("WEBHOOK_DELIVERED#{team}#{endpoint_id}"), message_id)
}
