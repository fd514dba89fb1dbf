use axum::Json;
use axum::extract::{Path, State};
use wearlab_domain::linking::team_apps;
use wearlab_models::{DetailBody, LinkConfig, LinkConfigPatch, OauthApp, OauthAppBody, SuccessBody};
use wearlab_web::{ApiError, AppState, AuthTeam, Inputs, JsonBody};

type Answer<T> = Result<Json<T>, ApiError>;

/// Reads the team's own OAuth app for a provider (never its secret).
#[utoipa::path(operation_id = "get_team_oauth_app", get, path = "/v2/team/oauth_app/{provider}", tag = "team",
    params(("provider" = String, Path, example = "strava", description = "An OAuth provider (auth type oauth or team_oauth).")),
    responses(
        (status = 200, description = "The app, without its secret.", body = OauthApp),
        (status = 404, description = "Unknown provider, or no app registered for it.", body = DetailBody),
    ))]
pub async fn get_oauth_app(
    State(s): State<AppState>,
    AuthTeam(t): AuthTeam,
    Path(provider): Path<String>,
) -> Answer<OauthApp> {
    Ok(Json(team_apps::get_oauth_app(&s.deps, t, &provider).await.map_err(|e| PROVIDER.locate(e))?))
}

/// Registers (or replaces) the team's own OAuth app for a provider. team_oauth providers link
/// only through it; for oauth providers it replaces the platform's app. The secret is stored
/// encrypted and never returned.
#[utoipa::path(operation_id = "put_team_oauth_app", put, path = "/v2/team/oauth_app/{provider}", tag = "team", request_body = OauthAppBody,
    params(("provider" = String, Path, example = "strava", description = "An OAuth provider (auth type oauth or team_oauth).")),
    responses(
        (status = 200, description = "The app, without its secret.", body = OauthApp),
        (status = 404, description = "Unknown provider.", body = DetailBody),
    ))]
pub async fn put_oauth_app(
    State(s): State<AppState>,
    AuthTeam(t): AuthTeam,
    Path(provider): Path<String>,
    JsonBody(body): JsonBody<OauthAppBody>,
) -> Answer<OauthApp> {
    let app = team_apps::NewOauthApp::parse(body)?;
    Ok(Json(team_apps::put_oauth_app(&s.deps, t, &provider, app).await.map_err(|e| PROVIDER.locate(e))?))
}

/// Removes the team's OAuth app for a provider.
#[utoipa::path(operation_id = "delete_team_oauth_app", delete, path = "/v2/team/oauth_app/{provider}", tag = "team",
    params(("provider" = String, Path, example = "strava", description = "An OAuth provider (auth type oauth or team_oauth).")),
    responses(
        (status = 200, description = "Removed.", body = SuccessBody),
        (status = 404, description = "Unknown provider, or no app registered for it.", body = DetailBody),
    ))]
pub async fn delete_oauth_app(
    State(s): State<AppState>,
    AuthTeam(t): AuthTeam,
    Path(provider): Path<String>,
) -> Answer<SuccessBody> {
    team_apps::delete_oauth_app(&s.deps, t, &provider).await.map_err(|e| PROVIDER.locate(e))?;
    Ok(Json(SuccessBody { success: true }))
}

/// Reads the team's linking settings.
#[utoipa::path(operation_id = "get_team_link_config", get, path = "/v2/team/link_config", tag = "team",
    responses((status = 200, description = "The settings.", body = LinkConfig)))]
pub async fn get_link_config(State(s): State<AppState>, AuthTeam(t): AuthTeam) -> Answer<LinkConfig> {
    Ok(Json(team_apps::link_config(&s.deps, t).await?))
}

/// Changes the team's linking settings; omitted fields are kept.
#[utoipa::path(operation_id = "update_team_link_config", patch, path = "/v2/team/link_config", tag = "team", request_body = LinkConfigPatch,
    responses((status = 200, description = "The settings now.", body = LinkConfig)))]
pub async fn patch_link_config(
    State(s): State<AppState>,
    AuthTeam(t): AuthTeam,
    JsonBody(body): JsonBody<LinkConfigPatch>,
) -> Answer<LinkConfig> {
    Ok(Json(team_apps::patch_link_config(&s.deps, t, body).await?))
}

/// The provider of an OAuth app route is in its path; the rest of what the use case names is
/// the body's.
const PROVIDER: Inputs = Inputs { query: &[], path: &["provider"] };
