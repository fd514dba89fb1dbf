//! A user's provider connections: list, and deregister one.

use axum::Json;
use axum::extract::{Path, State};
use wearlab_domain::linking::connections;
use wearlab_models::{DetailBody, SuccessBody, UserConnections};
use wearlab_web::{ApiError, AppState, AuthTeam, path_user_id};

/// Lists the user's connections with their status and resources.
#[utoipa::path(operation_id = "list_user_connections", get, path = "/v2/user/providers/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 200, description = "The user's connections, oldest first.", body = UserConnections),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn list(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
) -> Result<Json<UserConnections>, ApiError> {
    Ok(Json(connections::list(&s.deps, team, path_user_id(&user_id)?).await?))
}

/// Removes the user's connection to a provider and deregisters it at the provider.
#[utoipa::path(operation_id = "deregister_user_connection", delete, path = "/v2/user/{user_id}/{provider}", tag = "users",
    params(
        ("user_id" = uuid::Uuid, Path, description = "The user's id."),
        ("provider" = String, Path, example = "oura", description = "The provider's slug."),
    ),
    responses(
        (status = 200, description = "Removed.", body = SuccessBody),
        (status = 404, description = "No such user in this team, unknown provider, or no connection to it.", body = DetailBody),
    ))]
pub async fn deregister(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path((user_id, provider)): Path<(String, String)>,
) -> Result<Json<SuccessBody>, ApiError> {
    connections::deregister(&s.deps, team, path_user_id(&user_id)?, &provider).await?;
    Ok(Json(SuccessBody { success: true }))
}
