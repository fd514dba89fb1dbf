use axum::Json;
use axum::extract::{Path, State};
use http::HeaderMap;
use wearlab_domain::linking::{demo, oauth, password, tokens};
use wearlab_models::{
    CompleteMfaBody, DemoConnectionAnswer, DemoConnectionBody, DetailBody, LinkResult, LinkTokenAnswer,
    LinkTokenBody, OauthProviderEntry, PasswordLinkBody,
};
use wearlab_web::{ApiError, AppState, AuthTeam, Inputs, JsonBody};

use super::{base_url, link_token};

type Answer<T> = Result<Json<T>, ApiError>;

/// Creates a link token for a user: valid 60 minutes, consumed by the first successful
/// connection. Shown once; only its hash is stored.
#[utoipa::path(operation_id = "create_link_token", post, path = "/v2/link/token", tag = "link", request_body = LinkTokenBody,
    responses(
        (status = 200, description = "The token and the hosted link page for it.", body = LinkTokenAnswer),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn create_token(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    headers: HeaderMap,
    JsonBody(body): JsonBody<LinkTokenBody>,
) -> Answer<LinkTokenAnswer> {
    let new = tokens::NewLinkToken::parse(body)?;
    Ok(Json(tokens::create(&s.deps, team, new, &base_url(&s, &headers)).await?))
}

/// Links a password provider. A failed link is not an HTTP error: the Link result says
/// `state: error` with an `error_type`; a provider asking for a one-time code answers
/// `pending_provider_mfa` (continue with complete_mfa and the same link token).
#[utoipa::path(operation_id = "link_password_provider", post, path = "/v2/link/provider/password/{provider}", tag = "link",
    request_body = PasswordLinkBody,
    params(
        ("provider" = String, Path, example = "peloton", description = "A password provider: whoop, renpho, peloton, \
            zwift, eight_sleep, beurer_api, dexcom, my_fitness_pal, kardia, abbott_libreview, tandem_source."),
        ("x-service-link-token" = Option<String>, Header, description = "A link token made for the user."),
    ),
    responses(
        (status = 200, description = "The Link result.", body = LinkResult),
        (status = 404, description = "Unknown provider.", body = DetailBody),
    ))]
pub async fn password(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(provider): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<PasswordLinkBody>,
) -> Answer<LinkResult> {
    let attempt = password::PasswordAttempt::parse(&provider, body).map_err(|e| PROVIDER.locate(e))?;
    Ok(Json(
        password::link(&s.deps, team, link_token(&headers), attempt).await.map_err(|e| PROVIDER.locate(e))?,
    ))
}

/// Completes a password link that asked for a one-time code, with the same link token.
#[utoipa::path(operation_id = "complete_password_provider_mfa", post, path = "/v2/link/provider/password/{provider}/complete_mfa", tag = "link",
    request_body = CompleteMfaBody,
    params(
        ("provider" = String, Path, example = "peloton", description = "The password provider of the pending link."),
        ("x-service-link-token" = Option<String>, Header, description = "The link token of the pending link."),
    ),
    responses(
        (status = 200, description = "The Link result.", body = LinkResult),
        (status = 404, description = "Unknown provider.", body = DetailBody),
    ))]
pub async fn complete_mfa(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(provider): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CompleteMfaBody>,
) -> Answer<LinkResult> {
    Ok(Json(
        password::complete_mfa(&s.deps, team, link_token(&headers), &provider, &body.mfa_code)
            .await
            .map_err(|e| PROVIDER.locate(e))?,
    ))
}

/// Starts an OAuth link: the provider entry with `oauth_url`, where the end user's browser
/// grants access; the callback then redirects to the token's `redirect_url` with `state`
/// (success or error), `error_type` and `error`.
#[utoipa::path(operation_id = "start_oauth_link", get, path = "/v2/link/provider/oauth/{provider}", tag = "link",
    params(
        ("provider" = String, Path, example = "oura", description = "An OAuth provider (auth type oauth or team_oauth)."),
        ("x-service-link-token" = Option<String>, Header, description = "A link token made for the user."),
    ),
    responses(
        (status = 200, description = "The provider with its consent URL.", body = OauthProviderEntry),
        (status = 400, description = "Link token unusable (the detail names its error_type), or the \
            provider needs the team's own OAuth app.", body = DetailBody),
        (status = 404, description = "Unknown provider.", body = DetailBody),
    ))]
pub async fn oauth(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(provider): Path<String>,
    headers: HeaderMap,
) -> Answer<OauthProviderEntry> {
    Ok(Json(
        oauth::start(&s.deps, Some(team), link_token(&headers), &provider, &base_url(&s, &headers))
            .await
            .map_err(|e| PROVIDER.locate(e))?,
    ))
}

/// Connects a user to a demo account of apple_health_kit, fitbit, freestyle_libre or oura,
/// whose data is synthetic.
#[utoipa::path(operation_id = "connect_demo_provider", post, path = "/v2/link/connect/demo", tag = "link", request_body = DemoConnectionBody,
    responses(
        (status = 200, description = "Connected.", body = DemoConnectionAnswer),
        (status = 400, description = "The user is already connected to that provider.", body = DetailBody),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn demo(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    JsonBody(body): JsonBody<DemoConnectionBody>,
) -> Answer<DemoConnectionAnswer> {
    let req = demo::DemoRequest::parse(body)?;
    Ok(Json(demo::connect(&s.deps, team, req).await?))
}

/// The provider of a link route is in its path; the rest of what the use case names is the body's.
const PROVIDER: Inputs = Inputs { query: &[], path: &["provider"] };
