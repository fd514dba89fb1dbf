//! `GET /v2/team/audit_log`: the team's record of access to its users' health data.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// One request through a route that reads or changes a user's health data, demographics,
/// insurance or lab orders. Ids and the outcome only: never the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AuditLogEntry {
    pub id: String,
    /// When the request was answered.
    pub at: DateTime<Utc>,
    /// Which of the team's API keys made the request; `user_token` when the user's own app made
    /// it, with the access token its phone got from the token exchange (`POST /auth/v1/token`).
    pub key_id: String,
    #[schema(example = "GET")]
    pub method: String,
    /// The route template, not the concrete path.
    #[schema(example = "/v2/summary/sleep/{user_id}")]
    pub route: String,
    /// The user the route named (path or `user_id` query parameter), when it named one.
    #[schema(required = true)]
    pub user_id: Option<Uuid>,
    /// The route's other path values (an order id, a timeseries resource), `/`-joined.
    #[schema(required = true)]
    pub resource: Option<String>,
    /// The answer's HTTP status.
    pub status: u16,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AuditLogPage {
    /// Newest first.
    pub data: Vec<AuditLogEntry>,
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}
