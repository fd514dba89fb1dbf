//! `/v2/user/{user_id}/info`: the user's demographics for lab ordering.

use axum::Json;
use axum::extract::{Path, State};
use wearlab_domain::lab::demographics::{self, Demographics};
use wearlab_models::DetailBody;
use wearlab_models::lab::UserInfo;
use wearlab_web::{ApiError, AppState, AuthTeam, Parsed, path_user_id};

/// Sets the user's demographics (every required field; replaces earlier ones).
#[utoipa::path(patch, path = "/v2/user/{user_id}/info", operation_id = "set_user_info", tag = "lab",
    request_body = UserInfo,
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 200, description = "The stored demographics.", body = UserInfo),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn set(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    Parsed(d): Parsed<Demographics>,
) -> Result<Json<UserInfo>, ApiError> {
    let user_id = path_user_id(&user_id)?;
    Ok(Json(demographics::set(&s.deps, team, user_id, d).await?))
}

/// Reads the user's demographics.
#[utoipa::path(get, path = "/v2/user/{user_id}/info/latest", operation_id = "get_user_info_latest", tag = "lab",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 200, description = "The user's demographics.", body = UserInfo),
        (status = 404, description = "No such user in this team, or no demographics set.", body = DetailBody),
    ))]
pub async fn latest(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
) -> Result<Json<UserInfo>, ApiError> {
    Ok(Json(demographics::latest(&s.deps, team, path_user_id(&user_id)?).await?))
}
