//! A user's provider connections: list, deregister one, pull its history again.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::{Extension, Json};
use http::StatusCode;
use wearlab_domain::common::provider_marks;
use wearlab_domain::linking::{connections, known_provider};
use wearlab_domain::pipeline;
use wearlab_domain::ports::Queue;
use wearlab_models::data::HistoricalPullStarted;
use wearlab_models::{DetailBody, SuccessBody, UserConnections};
use wearlab_web::{ApiError, AppState, AuthCaller, AuthTeam, path_user_id};

/// Lists the user's connections with their status and resources.
#[utoipa::path(operation_id = "list_user_connections", get, path = "/v2/user/providers/{user_id}", tag = "users", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 200, description = "The user's connections, oldest first.", body = UserConnections),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn list(
    State(s): State<AppState>,
    caller: AuthCaller,
    headers: http::HeaderMap,
    Path(user_id): Path<String>,
) -> Result<Json<UserConnections>, ApiError> {
    let mut list = connections::list(&s.deps, caller.team, caller.user_in_path(&user_id)?).await?;
    // Each logo is the provider's mark on this deployment (GET /v2/providers says the same).
    let base = s.public_links(&headers).base_url;
    for c in &mut list.providers {
        c.logo = c.logo.as_deref().map(|path| provider_marks::logo_url(&base, path));
    }
    Ok(Json(list))
}

/// Removes the user's connection to a provider and deregisters it at the provider.
#[utoipa::path(operation_id = "deregister_user_connection", delete, path = "/v2/user/{user_id}/{provider}", tag = "users", security(("api_key" = []), ("user_token" = [])),
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
    caller: AuthCaller,
    Path((user_id, provider)): Path<(String, String)>,
) -> Result<Json<SuccessBody>, ApiError> {
    connections::deregister(&s.deps, caller.team, caller.user_in_path(&user_id)?, &provider).await?;
    Ok(Json(SuccessBody { success: true }))
}

/// Starts a historical pull of the user's connection to a provider (on demand, e.g. after the
/// team raised its history window). It waits for the team's throttle of the provider; each
/// resource emits `historical.data.<resource>.created` when done.
#[utoipa::path(operation_id = "start_historical_pull", post, path = "/v2/user/historical_pull/{user_id}/{provider}", tag = "users",
    params(
        ("user_id" = uuid::Uuid, Path, description = "The user's id."),
        ("provider" = String, Path, example = "oura", description = "The provider's slug."),
    ),
    responses(
        (status = 202, description = "Queued.", body = HistoricalPullStarted),
        (status = 400, description = "The connection is paused or failing: link it again first.", body = DetailBody),
        (status = 404, description = "No such user in this team, unknown provider, or no connection to it.", body = DetailBody),
    ))]
pub async fn historical_pull(
    State(s): State<AppState>,
    Extension(pull_queue): Extension<Arc<dyn Queue>>,
    AuthTeam(team): AuthTeam,
    Path((user_id, provider)): Path<(String, String)>,
) -> Result<(StatusCode, Json<HistoricalPullStarted>), ApiError> {
    let user_id = path_user_id(&user_id)?;
    let provider = known_provider(&provider)?.slug.clone();
    let pull_id = pipeline::pull::start(&s.deps, pull_queue.as_ref(), team, user_id, &provider).await?;
    Ok((StatusCode::ACCEPTED, Json(HistoricalPullStarted { user_id: user_id.as_uuid(), provider, pull_id })))
}
