//! `POST /v2/timeseries/{user_id}/{resource}`: the SDKs' timeseries uploads, stored with their
//! source, merged, deduplicated and announced (`wearlab_domain::phone::uploads`;
//! docs/MOBILE.md, "Uploads: storage, deduplication and events").

use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wearlab_domain::phone::uploads;
use wearlab_domain::pipeline::phone::UploadBody;
use wearlab_web::{ApiError, AppState, AuthTeam, Inputs, Json, JsonBody, path_user_id};

/// An upload's body as the SDKs write it (iOS `tryVital/vital-ios`
/// `Sources/VitalCore/Core/Client/Data Models/Patches/TaggedPayload.swift`; Android
/// `tryVital/vital-android` `.../services/data/Timeseries.kt`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct TimeseriesUploadBody {
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
    /// The samples: `{value, unit, start_date, end_date, source_bundle?, product_type?, type?,
    /// metadata?}`, or for `blood_pressure` `{systolic, diastolic, pulse?}` of such samples.
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
#[utoipa::path(operation_id = "post_sdk_timeseries", post, path = "/v2/timeseries/{user_id}/{resource}", tag = "sdk",
    params(
        ("user_id" = String, Path, description = "The user's id (upper-case UUIDs accepted, as iOS sends them)."),
        ("resource" = String, Path, example = "heartrate", description = "The SDK's timeseries name."),
    ),
    request_body = TimeseriesUploadBody,
    responses(
        (status = 200, description = "Stored (or already stored).", body = UploadAccepted),
        (status = 404, description = "No such user in this team."),
        (status = 422, description = "An unknown resource (`path.resource`), a provider that is not an SDK provider (`body.provider`), or a bad sample (`body.data.3.value`): every offending field at once."),
    ))]
pub async fn timeseries(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path((user_id, resource)): Path<(String, String)>,
    JsonBody(body): JsonBody<TimeseriesUploadBody>,
) -> Result<Json<UploadAccepted>, ApiError> {
    let user = path_user_id(&user_id)?;
    let body = UploadBody {
        stage: body.stage,
        start_date: body.start_date,
        end_date: body.end_date,
        time_zone: body.time_zone,
        provider: body.provider,
        data: body.data,
        is_final_chunk: body.is_final_chunk,
    };
    let done =
        uploads::timeseries(&s.deps, team, user, &resource, &body).await.map_err(|e| UPLOAD.locate(e))?;
    Ok(Json(UploadAccepted { created: done.created, updated: done.updated, unchanged: done.unchanged }))
}
