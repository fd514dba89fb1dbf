//! The SDKs' uploads: `POST /v2/timeseries/{user_id}/{resource}` and
//! `POST /v2/summary/{resource}/{user_id}` of the Junction SDKs, and
//! `POST /api/v1/sdk/users/{user_id}/sync` of the Open Wearables SDKs, stored with their source,
//! merged, deduplicated and announced by one use case (`wearlab_domain::phone::uploads`;
//! docs/MOBILE.md, "Uploads: storage, deduplication and events").

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wearlab_domain::phone::uploads;
use wearlab_domain::pipeline::phone::UploadBody;
use wearlab_web::{ApiError, AppState, AuthCaller, Inputs, Json, JsonBody};

/// An upload's body as the SDKs write it (iOS `tryVital/vital-ios`
/// `Sources/VitalCore/Core/Client/Data Models/Patches/TaggedPayload.swift`; Android
/// `tryVital/vital-android` `.../services/data/Timeseries.kt`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct SdkUploadBody {
    /// `daily` (new data since the last sync) or `historical` (a chunk of the first sync).
    pub stage: String,
    /// Historical stage only: the start of the whole window, the same in every chunk (RFC 3339).
    #[serde(default)]
    pub start_date: Option<String>,
    /// Historical stage only: the end of the whole window (RFC 3339).
    #[serde(default)]
    pub end_date: Option<String>,
    /// The device's IANA time zone.
    pub time_zone: String,
    /// An `sdk` provider of the catalog (`apple_health_kit`, `health_connect`, `omron_ble` ...).
    pub provider: String,
    /// Timeseries: the samples, `{value, unit, start_date, end_date, source_bundle?,
    /// product_type?, type?, metadata?}`, or for `blood_pressure` `{systolic, diastolic, pulse?}`
    /// of such samples. Summaries: the records of the resource (one object for `body` and
    /// `profile`), as docs/MOBILE.md, "Uploads: summaries", shows.
    #[schema(value_type = Vec<Object>)]
    pub data: serde_json::Value,
    /// Whether this is the stage's last chunk for the resource (absent: true).
    #[serde(default)]
    pub is_final_chunk: Option<bool>,
}

/// What an upload did (the SDKs ignore the body; a team's own client may log it). Counts are of
/// days of one source (resource, local day, provider, source type).
#[derive(Debug, Serialize, ToSchema)]
pub struct UploadAccepted {
    /// Days stored for the first time or that gained points.
    pub created: usize,
    /// Days whose stored values changed.
    pub updated: usize,
    /// Days the upload changed nothing of (a resend).
    pub unchanged: usize,
}

/// Where an upload's inputs are: the path's user and resource, the rest in the body.
const UPLOAD: Inputs = Inputs { query: &[], path: &["user_id", "resource"] };

/// A mobile SDK's upload of one timeseries resource (user before resource, as the SDKs write the
/// path; `heartrate_variability` and `temperature` are the SDKs' names of `hrv` and
/// `body_temperature`). Merged point by point into what is stored per source type; a resend
/// changes nothing and announces nothing. The body may be gzip-compressed.
#[utoipa::path(operation_id = "post_sdk_timeseries", post, path = "/v2/timeseries/{user_id}/{resource}", tag = "sdk", security(("api_key" = []), ("user_token" = [])),
    params(
        ("user_id" = String, Path, description = "The user's id (upper-case UUIDs accepted, as iOS sends them)."),
        ("resource" = String, Path, example = "heartrate", description = "The SDK's timeseries name."),
    ),
    request_body = SdkUploadBody,
    responses(
        (status = 200, description = "Stored (or already stored).", body = UploadAccepted),
        (status = 404, description = "No such user in this team."),
        (status = 422, description = "An unknown resource (`path.resource`), a provider that is not an SDK provider (`body.provider`), or a bad sample (`body.data.3.value`): every offending field at once."),
    ))]
pub async fn timeseries(
    State(s): State<AppState>,
    caller: AuthCaller,
    Path((user_id, resource)): Path<(String, String)>,
    JsonBody(body): JsonBody<SdkUploadBody>,
) -> Result<Json<UploadAccepted>, ApiError> {
    let (team, user) = (caller.team, caller.user_in_path(&user_id)?);
    let done = uploads::timeseries(&s.deps, team, user, &resource, &body.into_upload())
        .await
        .map_err(|e| UPLOAD.locate(e))?;
    Ok(Json(UploadAccepted::from(done)))
}

/// Where a summary upload's inputs are: the path's resource and user, the rest in the body.
const SUMMARY_UPLOAD: Inputs = Inputs { query: &[], path: &["resource", "user_id"] };

/// Stores a summary upload of `resource` (the path's) for the path's user.
async fn summary(
    s: AppState,
    caller: AuthCaller,
    resource: &str,
    user_id: &str,
    body: SdkUploadBody,
) -> Result<Json<UploadAccepted>, ApiError> {
    let (team, user) = (caller.team, caller.user_in_path(user_id)?);
    let done = uploads::summary(&s.deps, team, user, resource, &body.into_upload())
        .await
        .map_err(|e| SUMMARY_UPLOAD.locate(e))?;
    Ok(Json(UploadAccepted::from(done)))
}

/// One route per summary the SDKs upload, on the same path as the data API's read of it (so
/// that the local stack, which serves both functions in one router, routes the POST here and
/// the GET there; API Gateway sends `POST /v2/summary/{resource}/{user_id}` to this function).
macro_rules! summary_upload {
    ($name:ident, $resource:literal, $path:literal, $what:literal) => {
        #[doc = concat!("A mobile SDK's upload of ", $what, " summaries: a summary replaces its earlier version with the same id (docs/MOBILE.md, \"Uploads: summaries\"); a resend changes nothing and announces nothing. The body may be gzip-compressed.")]
        #[utoipa::path(operation_id = concat!("post_sdk_summary_", $resource), post, path = $path, tag = "sdk", security(("api_key" = []), ("user_token" = [])),
            params(("user_id" = String, Path, description = "The user's id (upper-case UUIDs accepted, as iOS sends them).")),
            request_body = SdkUploadBody,
            responses(
                (status = 200, description = "Stored (or already stored).", body = UploadAccepted),
                (status = 404, description = "No such user in this team (or not the user of the bearer token)."),
                (status = 422, description = "A provider that is not an SDK provider (`body.provider`), or a bad record (`body.data.0...`): every offending field at once."),
            ))]
        pub async fn $name(
            State(s): State<AppState>,
            caller: AuthCaller,
            Path(user_id): Path<String>,
            JsonBody(body): JsonBody<SdkUploadBody>,
        ) -> Result<Json<UploadAccepted>, ApiError> {
            summary(s, caller, $resource, &user_id, body).await
        }
    };
}

summary_upload!(activity, "activity", "/v2/summary/activity/{user_id}", "activity (one per local day)");
summary_upload!(body, "body", "/v2/summary/body/{user_id}", "body");
summary_upload!(profile, "profile", "/v2/summary/profile/{user_id}", "profile");
summary_upload!(sleep, "sleep", "/v2/summary/sleep/{user_id}", "sleep");
summary_upload!(workouts, "workouts", "/v2/summary/workouts/{user_id}", "workout");
summary_upload!(meal, "meal", "/v2/summary/meal/{user_id}", "meal");
summary_upload!(
    menstrual_cycle,
    "menstrual_cycle",
    "/v2/summary/menstrual_cycle/{user_id}",
    "menstrual cycle"
);
summary_upload!(
    electrocardiogram,
    "electrocardiogram",
    "/v2/summary/electrocardiogram/{user_id}",
    "electrocardiogram"
);

impl SdkUploadBody {
    fn into_upload(self) -> UploadBody {
        UploadBody {
            stage: self.stage,
            start_date: self.start_date,
            end_date: self.end_date,
            time_zone: self.time_zone,
            provider: self.provider,
            data: self.data,
            is_final_chunk: self.is_final_chunk,
        }
    }
}

impl From<uploads::Uploaded> for UploadAccepted {
    fn from(done: uploads::Uploaded) -> Self {
        Self { created: done.created, updated: done.updated, unchanged: done.unchanged }
    }
}

/// The Open Wearables SDKs' answer to a sync (`the-momentum/open-wearables`
/// `backend/app/api/routes/v1/sdk_sync.py`): they look only at the status.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncAccepted {
    pub status_code: u16,
    pub response: String,
    pub user_id: String,
    /// Wearlab's: what the sync stored, in days of one source and summaries.
    pub stored: UploadAccepted,
    /// Wearlab's: records, sleep slices and workouts not kept (a type Wearlab keeps no data of, or
    /// a value that cannot be read).
    pub skipped: usize,
}

/// Where a sync's inputs are: the path's user, the rest in the body.
const SYNC: Inputs = Inputs { query: &[], path: &["user_id"] };

/// An Open Wearables SDK's sync (`{provider: apple|samsung|google, sdkVersion, syncTimestamp,
/// data: {records, sleep, workouts}}`), stored as the Junction SDKs' uploads are: same units,
/// storage, deduplication, events and reads. Stored before the answer, which is the dialect's
/// 202. The body may be gzip-compressed.
#[utoipa::path(operation_id = "post_open_wearables_sync", post, path = "/api/v1/sdk/users/{user_id}/sync", tag = "sdk", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = String, Path, description = "The user's id.")),
    request_body = Object,
    responses(
        (status = 202, description = "Stored.", body = SyncAccepted),
        (status = 404, description = "No such user in this team (or not the user of the bearer token)."),
        (status = 422, description = "Not a sync body, or a provider other than apple, samsung or google (`body.provider`)."),
    ))]
pub async fn open_wearables_sync(
    State(s): State<AppState>,
    caller: AuthCaller,
    Path(user_id): Path<String>,
    JsonBody(body): JsonBody<serde_json::Value>,
) -> Result<(StatusCode, Json<SyncAccepted>), ApiError> {
    let (team, user) = (caller.team, caller.user_in_path(&user_id)?);
    let done = uploads::open_wearables(&s.deps, team, user, &body).await.map_err(|e| SYNC.locate(e))?;
    Ok((
        StatusCode::ACCEPTED,
        Json(SyncAccepted {
            status_code: 202,
            response: "Import task queued successfully".into(),
            user_id: user.to_string(),
            stored: UploadAccepted::from(done.stored),
            skipped: done.skipped,
        }),
    ))
}
