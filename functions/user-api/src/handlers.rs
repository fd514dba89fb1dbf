use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use wearlab_domain::DomainError;
use wearlab_domain::ids::ClientUserId;
use wearlab_domain::users::{self, NewUser, UndoTarget, UserChanges};
use wearlab_models::{CreateUserBody, PatchUserBody, RefreshResult, SuccessBody, User, UserPage};
use wearlab_web::{ApiError, AppState, AuthTeam, JsonBody, QueryParams, path_user_id};

type Answer<T> = Result<T, ApiError>;

pub async fn create(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    JsonBody(body): JsonBody<CreateUserBody>,
) -> Answer<Json<User>> {
    let new = NewUser::parse(body, s.deps.now().date_naive())?;
    Ok(Json(users::create(&s.deps, team, new).await?))
}

#[derive(Deserialize)]
pub struct ListParams {
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
}

pub async fn list(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    QueryParams(p): QueryParams<ListParams>,
) -> Answer<Json<UserPage>> {
    let limit = p.limit.unwrap_or(users::DEFAULT_LIMIT);
    if !(1..=users::MAX_LIMIT).contains(&limit) {
        return Err(DomainError::invalid(
            &["query", "limit"],
            format!("limit must be between 1 and {}", users::MAX_LIMIT),
            "value_error",
        )
        .into());
    }
    Ok(Json(users::list(&s.deps, team, p.offset.unwrap_or(0), limit).await?))
}

pub async fn get(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
) -> Answer<Json<User>> {
    Ok(Json(users::get(&s.deps, team, path_user_id(&user_id)?).await?))
}

pub async fn resolve(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(client_user_id): Path<String>,
) -> Answer<Json<User>> {
    Ok(Json(users::resolve(&s.deps, team, &client_user_id).await?))
}

pub async fn patch(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    JsonBody(body): JsonBody<PatchUserBody>,
) -> Answer<StatusCode> {
    let user_id = path_user_id(&user_id)?;
    let changes = UserChanges::parse(body, s.deps.now().date_naive())?;
    users::patch(&s.deps, team, user_id, changes).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn delete(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
) -> Answer<Json<SuccessBody>> {
    users::delete(&s.deps, team, path_user_id(&user_id)?).await?;
    Ok(Json(SuccessBody { success: true }))
}

#[derive(Deserialize)]
pub struct UndoParams {
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    client_user_id: Option<String>,
}

pub async fn undo_delete(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    QueryParams(p): QueryParams<UndoParams>,
) -> Answer<Json<SuccessBody>> {
    let target =
        match (p.user_id, p.client_user_id) {
            (Some(id), None) => UndoTarget::UserId(path_user_id(&id).map_err(|_| {
                DomainError::invalid(&["query", "user_id"], "Input should be a valid UUID", "uuid_parsing")
            })?),
            (None, Some(cid)) => UndoTarget::ClientUserId(ClientUserId::parse(&cid).map_err(|e| {
                DomainError::invalid(&["query", "client_user_id"], e.to_string(), "value_error")
            })?),
            _ => {
                return Err(DomainError::invalid(
                    &["query"],
                    "give exactly one of user_id and client_user_id",
                    "value_error",
                )
                .into());
            }
        };
    users::undo_delete(&s.deps, team, target).await?;
    Ok(Json(SuccessBody { success: true }))
}

#[derive(Deserialize)]
pub struct RefreshParams {
    #[serde(default)]
    timeout: Option<f64>,
}

pub async fn refresh(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    QueryParams(p): QueryParams<RefreshParams>,
) -> Answer<Json<RefreshResult>> {
    let user_id = path_user_id(&user_id)?;
    let timeout = users::refresh_timeout(p.timeout)?;
    Ok(Json(users::refresh(&s.deps, team, user_id, timeout).await?))
}
