//! The envelope of every event about a user: the event type, the user's team, id and
//! `client_user_id`, and the data. One constructor, used by every use case that announces
//! something (lifecycle, connections, lab orders and portal codes, data events).

pub mod lifecycle;

use wearlab_models::EventEnvelope;

use crate::common::ids::{TeamId, UserId};
use crate::users::UserRecord;

/// An event of the user `user` of team `team`, whose `client_user_id` it carries.
pub fn user_event(
    event_type: impl Into<String>,
    team: TeamId,
    user: UserId,
    client_user_id: &str,
    data: serde_json::Value,
) -> EventEnvelope {
    EventEnvelope {
        event_type: event_type.into(),
        user_id: user.as_uuid(),
        client_user_id: client_user_id.to_owned(),
        team_id: team.as_uuid(),
        data,
    }
}

/// An event of a stored user.
pub fn of_user(user: &UserRecord, event_type: &str, data: serde_json::Value) -> EventEnvelope {
    user_event(event_type, user.team_id, user.user_id, user.client_user_id.as_str(), data)
}
