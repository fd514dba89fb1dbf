//! The event envelope every event shares, as webhooks and EventBridge rules see it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EventEnvelope {
    /// For example `provider.connection.created` or `historical.data.sleep.created`.
    pub event_type: String,
    pub user_id: Uuid,
    pub client_user_id: String,
    pub team_id: Uuid,
    /// The event's payload; its shape depends on `event_type`.
    pub data: serde_json::Value,
}
