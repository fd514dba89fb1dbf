//! `/v2/user/{user_id}/create_portal_url`: links to the user portal (served by lab-api at
//! `/v3/portal` and `/v3/p/{code}`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use wearlab_domain::lab::portal;
use wearlab_models::DetailBody;
use wearlab_models::lab::{PortalUrl, PortalUrlBody};
use wearlab_web::{ApiError, AppState, AuthTeam, Inputs, JsonBody, path_user_id};

/// Creates a link to the portal pre-authorized for the user: `launch` lives 10 minutes,
/// `communications` 4 weeks (a short link). The user must have demographics.
#[utoipa::path(post, path = "/v2/user/{user_id}/create_portal_url", operation_id = "create_portal_url", tag = "lab",
    request_body = PortalUrlBody,
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 200, description = "The link and its lifetime in seconds.", body = PortalUrl),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn create(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<PortalUrlBody>,
) -> Result<Json<PortalUrl>, ApiError> {
    let user_id = path_user_id(&user_id)?;
    Ok(Json(
        portal::create(&s.deps, team, user_id, body, &s.public_links(&headers))
            .await
            .map_err(|e| Inputs { query: &[], path: &["user_id"] }.locate(e))?,
    ))
}
