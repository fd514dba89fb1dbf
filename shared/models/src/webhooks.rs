//! Webhook endpoints and their delivery attempts, as the team's self-service API shows them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// POST /v2/team/webhooks body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CreateWebhookBody {
    /// https:// URL to a public address, without user name or password (http:// to 127.0.0.1
    /// or localhost only on the local stack).
    pub url: String,
    /// Event types to deliver, e.g. `provider.connection.created`; omitted or empty: every type.
    /// A set: each type at most once.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub event_types: Vec<String>,
}

/// An endpoint (never its secret).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookEndpoint {
    pub id: String,
    pub url: String,
    pub event_types: Vec<String>,
    pub created_on: DateTime<Utc>,
}

/// The answer to a create: the endpoint and its signing secret, shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// Standard Webhooks signing secret (`whsec_...`). Store it now: it is never shown again.
    pub secret: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookList {
    pub data: Vec<WebhookEndpoint>,
}

/// One delivery attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookAttempt {
    /// The `webhook-id` header: the same for every attempt of one event.
    pub message_id: String,
    pub event_type: String,
    pub attempt: u32,
    pub at: DateTime<Utc>,
    /// The receiver's HTTP status, when it answered.
    #[schema(required = true)]
    pub status_code: Option<u16>,
    /// delivered, failed (will retry), dead_lettered (retries used up) or dropped (user erased).
    pub outcome: String,
    #[schema(required = true)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookAttemptPage {
    pub data: Vec<WebhookAttempt>,
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}
