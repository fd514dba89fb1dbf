//! What the mobile SDKs send and receive around their syncs: connecting an SDK provider, the
//! sync state, the start of a historical stage and the sync progress reports. Shapes as the
//! SDKs build them: iOS `tryVital/vital-ios`, Android `tryVital/vital-android` (paths in
//! docs/MOBILE.md).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A time as the mobile SDKs read it, `YYYY-MM-DDTHH:MM:SS+00:00`: whole seconds (Swift's
/// standard ISO-8601 decoder refuses fractions) and an offset (Android rewrites `+00:00` to `Z`
/// before it parses an instant).
pub fn sdk_time(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
}

/// [`sdk_time`] as a serde serializer.
pub fn serialize_sdk_time<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&sdk_time(t))
}

/// POST /v2/link/provider/manual/{provider}: iOS sends `{user_id, granted_permissions?}`,
/// Android `{user_id, provider_id?, granted_permissions?}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ManualConnectionBody {
    /// The user (a UUID, any case).
    pub user_id: String,
    /// The provider's slug again (Android, the Python client); ignored: the path names it.
    #[serde(default)]
    pub provider_id: Option<String>,
    /// The permissions the app asked for: HealthKit identifiers
    /// (`HKQuantityTypeIdentifierHeartRate`) or Health Connect permissions
    /// (`android.permission.health.READ_STEPS`).
    #[serde(default)]
    pub granted_permissions: Option<Vec<String>>,
}

/// POST /v2/user/{user_id}/sdk_sync_state/{provider}: every field optional, as the SDKs send
/// what they know.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct SyncStateBody {
    /// The device's IANA time zone.
    #[serde(default)]
    pub tzinfo: Option<String>,
    /// Now minus the app's historical days.
    #[serde(default)]
    pub request_start_date: Option<String>,
    /// Now.
    #[serde(default)]
    pub request_end_date: Option<String>,
    #[serde(default)]
    pub granted_permissions: Option<Vec<String>>,
}

/// How many historical days the SDK reads back from its first sync.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct PullPreferences {
    pub historical_days_to_pull: u32,
    /// Per SDK resource name: `{historical_days_to_pull}`.
    pub backfill_type_overrides: BTreeMap<String, BackfillOverride>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct BackfillOverride {
    pub historical_days_to_pull: u32,
}

/// Samples (or records) per upload, per kind of resource.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct QueryChunkSizes {
    pub timeseries: u32,
    pub activity_timeseries: u32,
    pub electrocardiogram: u32,
    pub workout: u32,
    /// 0: unlimited (sleep is not chunked).
    pub sleep: u32,
}

/// The iOS SDK's HealthKit parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct HealthKitParams {
    pub query_chunk_sizes_background: QueryChunkSizes,
    pub query_chunk_sizes_foreground: QueryChunkSizes,
    /// Workout streams (distance, strokes) are uploaded.
    pub workout_stream: bool,
    /// Workouts carry their heart rate samples.
    pub workout_heart_rate: bool,
}

/// The sync state: what the SDK syncs and how. No field is ever null.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SyncState {
    /// `active`: sync; `paused`: stop for now (the user's ingestion ended); `error`: no
    /// connection to the provider (removed): stop.
    pub status: String,
    /// Seconds the SDK may keep this answer.
    pub expires_in: u32,
    /// The user's ingestion start (UTC midnight), when the team set one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingestion_start: Option<String>,
    /// The upper bound of every query: the end of the user's ingestion day, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_end_date: Option<String>,
    /// Android's historical anchor: now, or the ingestion end when it has passed.
    pub request_start_date: String,
    pub per_device_activity_ts: bool,
    pub pull_preferences: PullPreferences,
    /// Seconds between sync progress reports.
    pub reporting_interval: u32,
    pub health_kit_params: HealthKitParams,
}

/// POST /v2/user/{user_id}/sdk_start_historical_stage/apple_health_kit.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct HistoricalStageBody {
    #[serde(default)]
    pub range_start: Option<String>,
    #[serde(default)]
    pub range_end: Option<String>,
    #[serde(default)]
    pub backfill_type: Option<String>,
}

/// One status of a sync, or a system event (`type`: an integer code, see docs/MOBILE.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ProgressEvent {
    pub timestamp: String,
    #[serde(rename = "type")]
    pub kind: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_details: Option<String>,
}

/// One sync of one backfill type.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ProgressSync {
    pub start: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    #[serde(default)]
    pub tags: Vec<i64>,
    #[serde(default)]
    pub statuses: Vec<ProgressEvent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_count: Option<i64>,
}

/// The progress of one backfill type (a summary or timeseries name).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct BackfillProgress {
    #[serde(default)]
    pub syncs: Vec<ProgressSync>,
    #[serde(default)]
    pub system_events: Vec<ProgressEvent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_asked: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SyncProgress {
    pub backfill_types: BTreeMap<String, BackfillProgress>,
}

/// The phone and app that reported.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct DeviceInfo {
    pub os_version: String,
    pub model: String,
    pub app_bundle: String,
    pub app_version: String,
    pub app_build: String,
}

/// POST /v2/user/{user_id}/sdk_sync_progress/{provider}.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SyncProgressBody {
    pub sync_progress: SyncProgress,
    pub device_info: DeviceInfo,
}

/// GET /v2/user/{user_id}/sdk_sync_progress/{provider}: the latest report as the SDK sent it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SyncProgressReport {
    pub user_id: uuid::Uuid,
    pub provider: String,
    pub received_at: DateTime<Utc>,
    pub sync_progress: SyncProgress,
    pub device_info: DeviceInfo,
}
