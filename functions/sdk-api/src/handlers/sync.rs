//! The SDKs' sync bookkeeping: the sync state, the start of a historical stage and the sync
//! progress reports (which the team reads back).

use axum::extract::{Path, State};
use wearlab_domain::phone::progress::{self, Refused, Report};
use wearlab_domain::phone::sync_state;
use wearlab_models::phone_sync::{
    HistoricalStageBody, SyncProgressBody, SyncProgressReport, SyncState, SyncStateBody,
};
use wearlab_models::{DetailBody, SuccessBody};
use wearlab_web::{ApiError, AppState, AuthCaller, AuthTeam, Json, JsonBody, path_user_id};

/// What the SDK syncs and how: `status` (`active`, `paused` after the user's ingestion end,
/// `error` without a connection), the ingestion bounds, the historical days to pull (the team's
/// data pull preferences), the reporting interval and the chunk sizes.
#[utoipa::path(operation_id = "sdk_sync_state", post, path = "/v2/user/{user_id}/sdk_sync_state/{provider}", tag = "sdk", security(("api_key" = []), ("user_token" = [])),
    params(
        ("user_id" = uuid::Uuid, Path, description = "The user's id (any case)."),
        ("provider" = String, Path, example = "apple_health_kit", description = "An SDK provider's slug."),
    ),
    request_body = SyncStateBody,
    responses(
        (status = 200, description = "The sync state.", body = SyncState),
        (status = 400, description = "Not an SDK provider.", body = DetailBody),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn sync_state(
    State(s): State<AppState>,
    caller: AuthCaller,
    Path((user_id, provider)): Path<(String, String)>,
    JsonBody(_body): JsonBody<SyncStateBody>,
) -> Result<Json<SyncState>, ApiError> {
    let user = caller.user_in_path(&user_id)?;
    Ok(Json(sync_state::sync_state(&s.deps, caller.team, user, &provider).await?))
}

/// The iOS SDK says it starts a historical stage; accepted (the uploads carry the window).
#[utoipa::path(operation_id = "sdk_start_historical_stage", post, path = "/v2/user/{user_id}/sdk_start_historical_stage/apple_health_kit", tag = "sdk", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id (any case).")),
    request_body = HistoricalStageBody,
    responses(
        (status = 200, description = "Accepted.", body = SuccessBody),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn start_historical_stage(
    State(s): State<AppState>,
    caller: AuthCaller,
    Path(user_id): Path<String>,
    JsonBody(_body): JsonBody<HistoricalStageBody>,
) -> Result<Json<SuccessBody>, ApiError> {
    sync_state::historical_stage(&s.deps, caller.team, caller.user_in_path(&user_id)?).await?;
    Ok(Json(SuccessBody { success: true }))
}

/// Keeps the SDK's sync progress report as the latest of the user and provider.
#[utoipa::path(operation_id = "post_sdk_sync_progress", post, path = "/v2/user/{user_id}/sdk_sync_progress/{provider}", tag = "sdk", security(("api_key" = []), ("user_token" = [])),
    params(
        ("user_id" = uuid::Uuid, Path, description = "The user's id (any case)."),
        ("provider" = String, Path, example = "apple_health_kit", description = "An SDK provider's slug."),
    ),
    request_body = SyncProgressBody,
    responses(
        (status = 200, description = "Kept.", body = SuccessBody),
        (status = 400, description = "Not an SDK provider.", body = DetailBody),
        (status = 404, description = "No such user in this team.", body = DetailBody),
        (status = 413, description = "Over 262,144 bytes of JSON.", body = DetailBody),
    ))]
pub async fn post_progress(
    State(s): State<AppState>,
    caller: AuthCaller,
    Path((user_id, provider)): Path<(String, String)>,
    JsonBody(body): JsonBody<SyncProgressBody>,
) -> Result<Json<SuccessBody>, ApiError> {
    let (team, user_id) = (caller.team, caller.user_in_path(&user_id)?);
    let report = Report::parse(body).map_err(|e| match e {
        Refused::TooLarge(_) => ApiError::PayloadTooLarge(e.to_string()),
        Refused::Invalid(e) => e.into(),
    })?;
    progress::record(&s.deps, team, user_id, &provider, report).await?;
    Ok(Json(SuccessBody { success: true }))
}

/// The latest sync progress report the user's SDK sent for the provider, with when it arrived.
#[utoipa::path(operation_id = "get_sdk_sync_progress", get, path = "/v2/user/{user_id}/sdk_sync_progress/{provider}", tag = "sdk",
    params(
        ("user_id" = uuid::Uuid, Path, description = "The user's id (any case)."),
        ("provider" = String, Path, example = "apple_health_kit", description = "An SDK provider's slug."),
    ),
    responses(
        (status = 200, description = "The latest report.", body = SyncProgressReport),
        (status = 400, description = "Not an SDK provider.", body = DetailBody),
        (status = 404, description = "No such user in this team, or no report yet.", body = DetailBody),
    ))]
pub async fn get_progress(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path((user_id, provider)): Path<(String, String)>,
) -> Result<Json<SyncProgressReport>, ApiError> {
    Ok(Json(progress::latest(&s.deps, team, path_user_id(&user_id)?, &provider).await?))
}
