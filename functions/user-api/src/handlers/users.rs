//! One function per endpoint: parse, call one use case, answer. Each is documented for the
//! OpenAPI document; shared answers (401, 422, 413) are added in `wearlab_web::openapi`.

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::IntoParams;
use wearlab_domain::common::idempotency::Completion;
use wearlab_domain::common::ids::ClientUserId;
use wearlab_domain::lifecycle::{self, UndoTarget};
use wearlab_domain::ports::Queue;
use wearlab_domain::users::{self, NewUser, UserChanges};
use wearlab_models::{
    ConflictBody, CreateUserBody, DetailBody, PatchUserBody, RefreshResult, SuccessBody, User, UserPage,
};
use wearlab_web::Inputs;
use wearlab_web::{ApiError, AppState, AuthTeam, Json, JsonText, Parsed, QueryParams, path_user_id};

type Answer<T> = Result<T, ApiError>;

/// Creates a user.
#[utoipa::path(operation_id = "create_user", post, path = "/v2/user", tag = "users", request_body = CreateUserBody,
    responses(
        (status = 200, description = "The new user.", body = User),
        (status = 400, description = "client_user_id is taken; names the user holding it.", body = ConflictBody),
    ))]
pub async fn create(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    completion: Option<Extension<Completion>>,
    Parsed(new): Parsed<NewUser>,
) -> Answer<Json<User>> {
    let completion = completion.map(|c| c.0).unwrap_or_default();
    Ok(Json(users::create_keeping(&s.deps, team, new, &completion).await?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Users to skip (default 0, at most 1,000,000).
    #[serde(default)]
    #[param(minimum = 0, maximum = 1_000_000)]
    offset: Option<u64>,
    /// Page size, 1 to 500 (default 100).
    #[serde(default)]
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u64>,
}

/// Lists the team's users, oldest first.
#[utoipa::path(operation_id = "list_users", get, path = "/v2/user", tag = "users", params(ListParams),
    responses((status = 200, description = "A page of users and the total.", body = UserPage)))]
pub async fn list(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    QueryParams(p): QueryParams<ListParams>,
) -> Answer<JsonText> {
    let page = users::PageRequest::parse(p.offset, p.limit)
        .map_err(|e| Inputs { query: &["offset", "limit"], path: &[] }.locate(e))?;
    Ok(JsonText(users::page_cache::list_json(&s.deps, &s.user_pages, team, page).await?))
}

/// Reads a user.
#[utoipa::path(operation_id = "get_user", get, path = "/v2/user/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 200, description = "The user.", body = User),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn get(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
) -> Answer<Json<User>> {
    Ok(Json(users::get(&s.deps, team, path_user_id(&user_id)?).await?))
}

/// Reads a user by the team's own id for it.
#[utoipa::path(operation_id = "resolve_user", get, path = "/v2/user/resolve/{client_user_id}", tag = "users",
    params(("client_user_id" = String, Path, description = "The team's id for the user.")),
    responses(
        (status = 200, description = "The user.", body = User),
        (status = 404, description = "No user with that client_user_id in this team.", body = DetailBody),
    ))]
pub async fn resolve(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(client_user_id): Path<String>,
) -> Answer<Json<User>> {
    Ok(Json(users::resolve(&s.deps, team, &client_user_id).await?))
}

/// Updates a user: omitted fields are kept, `null` clears.
#[utoipa::path(operation_id = "update_user", patch, path = "/v2/user/{user_id}", tag = "users", request_body = PatchUserBody,
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 204, description = "Updated."),
        (status = 400, description = "The new client_user_id is taken.", body = ConflictBody),
        (status = 404, description = "No such user in this team.", body = DetailBody),
        (status = 409, description = "Changed concurrently; retry.", body = DetailBody),
    ))]
pub async fn patch(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    Parsed(changes): Parsed<UserChanges>,
) -> Answer<StatusCode> {
    let user_id = path_user_id(&user_id)?;
    users::patch(&s.deps, team, user_id, changes).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes a user: connections are deregistered now, data is erased after a 7-day grace period
/// unless the deletion is undone.
#[utoipa::path(operation_id = "delete_user", delete, path = "/v2/user/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 200, description = "Deleted.", body = SuccessBody),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn delete(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
) -> Answer<Json<SuccessBody>> {
    lifecycle::delete(&s.deps, team, path_user_id(&user_id)?).await?;
    Ok(Json(SuccessBody { success: true }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UndoParams {
    /// The deleted user's id. Give exactly one of `user_id` and `client_user_id`.
    #[serde(default)]
    #[param(value_type = Option<uuid::Uuid>)]
    user_id: Option<String>,
    /// The deleted user's client_user_id. Give exactly one of `user_id` and `client_user_id`.
    #[serde(default)]
    client_user_id: Option<String>,
}

/// Restores a deleted user within the grace period. Connections are not restored.
#[utoipa::path(operation_id = "undo_delete_user", post, path = "/v2/user/undo_delete", tag = "users", params(UndoParams),
    responses(
        (status = 200, description = "Restored.", body = SuccessBody),
        (status = 400, description = "Another user holds the client_user_id now.", body = DetailBody),
        (status = 404, description = "No deleted user within its grace period.", body = DetailBody),
    ))]
pub async fn undo_delete(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    QueryParams(p): QueryParams<UndoParams>,
) -> Answer<Json<SuccessBody>> {
    let target = match (p.user_id, p.client_user_id) {
        (Some(id), None) => UndoTarget::UserId(path_user_id(&id).map_err(|_| {
            ApiError::invalid(&["query", "user_id"], "Input should be a valid UUID", "uuid_parsing")
        })?),
        (None, Some(cid)) => UndoTarget::ClientUserId(
            ClientUserId::parse(&cid)
                .map_err(|e| ApiError::invalid(&["query", "client_user_id"], e.to_string(), "value_error"))?,
        ),
        _ => {
            return Err(ApiError::invalid(
                &["query"],
                "give exactly one of user_id and client_user_id",
                "value_error",
            ));
        }
    };
    lifecycle::undo_delete(&s.deps, team, target).await?;
    Ok(Json(SuccessBody { success: true }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RefreshParams {
    /// Seconds to wait for sources, 5 to 60 (default 10).
    #[serde(default)]
    #[param(minimum = 5, maximum = 60)]
    timeout: Option<f64>,
}

/// Refreshes the user's connected sources, waiting up to `timeout` seconds.
#[utoipa::path(operation_id = "refresh_user", post, path = "/v2/user/refresh/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), RefreshParams),
    responses(
        (status = 200, description = "What was refreshed, what is still running, what failed.", body = RefreshResult),
        (status = 404, description = "No such user in this team.", body = DetailBody),
        (status = 429, description = "More than 8 refreshes of this user within an hour, or the team over its \
            requests per minute; `Retry-After` says in how many seconds the next one is accepted.", body = DetailBody,
            headers(("Retry-After" = u64, description = "Seconds until a refresh is accepted again."))),
    ))]
pub async fn refresh(
    State(s): State<AppState>,
    Extension(pull_queue): Extension<Arc<dyn Queue>>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    QueryParams(p): QueryParams<RefreshParams>,
) -> Answer<Json<RefreshResult>> {
    let user_id = path_user_id(&user_id)?;
    let timeout = lifecycle::refresh_timeout(p.timeout)
        .map_err(|e| Inputs { query: &["timeout"], path: &[] }.locate(e))?;
    Ok(Json(lifecycle::refresh(&s.deps, pull_queue.as_ref(), team, user_id, timeout).await?))
}
