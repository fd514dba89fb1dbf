//! Bulk connection operations: import, historical pull trigger, the list of operations,
//! export and pause (`/v2/link/bulk_*`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

crate::open_enum!(
    /// The OAuth providers whose connections can be imported and pulled in bulk.
    BulkProvider {
        Oura => "oura",
        Fitbit => "fitbit",
        Garmin => "garmin",
        Strava => "strava",
        Wahoo => "wahoo",
        Ihealth => "ihealth",
        Withings => "withings",
        GoogleFit => "google_fit",
        DexcomV3 => "dexcom_v3",
        Polar => "polar",
        Cronometer => "cronometer",
        Omron => "omron",
        WhoopV2 => "whoop_v2",
        MyFitnessPalV2 => "my_fitness_pal_v2",
        Ultrahuman => "ultrahuman",
        Runkeeper => "runkeeper",
    }
);

crate::open_enum!(
    BulkOpType {
        LinkBulkImport => "link_bulk_import",
        LinkBulkHistoricalTrigger => "link_bulk_historical_trigger",
    }
);

crate::open_enum!(
    /// `success`: every item done, none failed; `failure`: every item done, some failed (see
    /// `failed`); `aborted`: stopped before every item was done (the team's OAuth app for the
    /// provider was removed meanwhile; the rest count as failed).
    BulkOpStatus {
        InProgress => "in_progress",
        Success => "success",
        Failure => "failure",
        Aborted => "aborted",
    }
);

/// An existing connection to import (a bulk import item).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ConnectionRecipe {
    pub user_id: Uuid,
    pub access_token: String,
    pub refresh_token: String,
    /// The user's id at the provider.
    pub provider_id: String,
    /// When the access token expires, Unix seconds.
    pub expires_at: i64,
    pub oauth_scopes: Vec<String>,
}

/// POST /v2/link/bulk_import body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkImportBody {
    pub provider: BulkProvider,
    pub connections: Vec<ConnectionRecipe>,
    /// Wait up to 20 seconds for the operation to finish.
    #[serde(default)]
    pub wait_for_completion: bool,
}

/// Why one user of a bulk operation failed (our addition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkFailure {
    pub user_id: Uuid,
    pub reason: String,
}

/// The answer of a bulk import that finished while the request waited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkImportResult {
    pub user_ids_imported: Vec<Uuid>,
    pub user_ids_failed: Vec<Uuid>,
    /// Why each user of `user_ids_failed` failed, where it is known (our addition).
    #[serde(default)]
    pub failures: Vec<BulkFailure>,
}

/// POST /v2/link/bulk_trigger_historical_pull body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkTriggerBody {
    pub user_ids: Vec<Uuid>,
    pub provider: BulkProvider,
    #[serde(default)]
    pub wait_for_completion: bool,
}

/// The answer of a historical pull trigger that finished while the request waited: a user is
/// triggered once its pull started under the provider's throttle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkTriggerResult {
    pub user_ids_triggered: Vec<Uuid>,
    pub user_ids_failed: Vec<Uuid>,
    /// Why each user of `user_ids_failed` failed, where it is known (our addition).
    #[serde(default)]
    pub failures: Vec<BulkFailure>,
}

/// A bulk operation and its progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkOp {
    /// The operation's id (our addition).
    pub id: String,
    #[serde(rename = "type")]
    pub op_type: BulkOpType,
    pub status: BulkOpStatus,
    pub provider: String,
    /// Items not done yet.
    pub pending: u64,
    /// Items done (imported, triggered or failed).
    pub processed: u64,
    /// Items that failed, counted in `processed` (our addition).
    pub failed: u64,
    pub started_at: DateTime<Utc>,
    #[schema(required = true)]
    pub ended_at: Option<DateTime<Utc>>,
    /// When a throttled operation should be done at the provider's rate (our addition; `null`
    /// when done or when no estimate can be made yet).
    #[schema(required = true)]
    pub estimated_completion_at: Option<DateTime<Utc>>,
}

/// GET /v2/link/bulk_op answer, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkOpPage {
    pub data: Vec<BulkOp>,
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// POST /v2/link/bulk_export body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkExportBody {
    pub provider: BulkProvider,
    /// Only these users (at most 1,000); omitted: every connection of the provider.
    #[serde(default)]
    pub user_ids: Option<Vec<Uuid>>,
    /// From the previous page.
    #[serde(default)]
    pub next_token: Option<String>,
}

/// One page of exported connections (made with the team's own OAuth app).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkExportPage {
    pub data: Vec<ConnectionRecipe>,
    #[schema(required = true)]
    pub next_token: Option<String>,
}

/// POST /v2/link/bulk_pause body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkPauseBody {
    /// At most 1,000 per request.
    pub user_ids: Vec<Uuid>,
    pub provider: BulkProvider,
}

/// The answer of a pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkPauseResult {
    pub user_ids_paused: Vec<Uuid>,
    /// Users without a connection to the provider (or unknown, or deleted).
    pub user_ids_failed: Vec<Uuid>,
}
