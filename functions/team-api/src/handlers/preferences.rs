//! `/v2/team/data_pull_preferences`: how much history a new connection pulls (per provider,
//! default 90 days, at most 365), and whether the deprecated hypnogram events are sent.

use axum::Json;
use axum::extract::State;
use wearlab_domain::pipeline;
use wearlab_models::data::DataPullPreferences;
use wearlab_web::{ApiError, AppState, AuthTeam, JsonBody};

/// Reads the team's data pull preferences (the defaults when never set).
#[utoipa::path(operation_id = "get_data_pull_preferences", get, path = "/v2/team/data_pull_preferences", tag = "team",
    responses((status = 200, description = "The preferences.", body = DataPullPreferences)))]
pub async fn get(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
) -> Result<Json<DataPullPreferences>, ApiError> {
    Ok(Json(pipeline::preferences(&s.deps, team).await?))
}

/// Replaces the team's data pull preferences. Applies to pulls that start afterwards.
#[utoipa::path(operation_id = "put_data_pull_preferences", put, path = "/v2/team/data_pull_preferences", tag = "team", request_body = DataPullPreferences,
    responses((status = 200, description = "The preferences as stored.", body = DataPullPreferences)))]
pub async fn put(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    JsonBody(body): JsonBody<DataPullPreferences>,
) -> Result<Json<DataPullPreferences>, ApiError> {
    Ok(Json(pipeline::set_preferences(&s.deps, team, body).await?))
}
