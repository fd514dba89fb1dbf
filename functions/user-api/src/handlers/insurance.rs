//! `/v2/user/{user_id}/insurance`: the user's insurances.

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use utoipa::IntoParams;
use wearlab_domain::lab::insurance::{self, NewInsurance};
use wearlab_models::DetailBody;
use wearlab_models::lab::{Insurance, InsuranceBody};
use wearlab_web::{ApiError, AppState, AuthTeam, Parsed, QueryParams, path_user_id};

/// Stores an insurance of the user; `company` is resolved from `payor_code`.
#[utoipa::path(post, path = "/v2/user/{user_id}/insurance", operation_id = "create_insurance", tag = "lab",
    request_body = InsuranceBody,
    params(("user_id" = uuid::Uuid, Path, description = "The user's id.")),
    responses(
        (status = 200, description = "The stored insurance with its company.", body = Insurance),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn create(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    Parsed(new): Parsed<NewInsurance>,
) -> Result<Json<Insurance>, ApiError> {
    let user_id = path_user_id(&user_id)?;
    Ok(Json(insurance::create(&s.deps, team, user_id, new).await?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LatestParams {
    /// The primary (default) or the secondary insurance.
    #[serde(default)]
    is_primary: Option<bool>,
}

/// Reads the user's latest primary (or secondary) insurance.
#[utoipa::path(get, path = "/v2/user/{user_id}/insurance/latest", operation_id = "get_insurance_latest", tag = "lab",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), LatestParams),
    responses(
        (status = 200, description = "The latest insurance of that kind.", body = Insurance),
        (status = 404, description = "No such user in this team, or no such insurance.", body = DetailBody),
    ))]
pub async fn latest(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    QueryParams(p): QueryParams<LatestParams>,
) -> Result<Json<Insurance>, ApiError> {
    let user_id = path_user_id(&user_id)?;
    Ok(Json(insurance::latest(&s.deps, team, user_id, p.is_primary.unwrap_or(true)).await?))
}
