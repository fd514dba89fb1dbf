//! `/v2/team/webhooks`: the team's webhook endpoints and their delivery attempts.

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use utoipa::IntoParams;
use wearlab_domain::DomainError;
use wearlab_domain::ports::Cursor;
use wearlab_domain::webhooks;
use wearlab_models::webhooks::{
    CreateWebhookBody, CreatedWebhook, WebhookAttemptPage, WebhookEndpoint, WebhookList,
};
use wearlab_models::{DetailBody, SuccessBody};
use wearlab_web::{ApiError, AppState, AuthTeam, JsonBody, QueryParams};

type Answer<T> = Result<T, ApiError>;

/// Creates an endpoint. The answer carries its signing secret, shown this once.
#[utoipa::path(operation_id = "create_webhook", post, path = "/v2/team/webhooks", tag = "team", request_body = CreateWebhookBody,
    responses(
        (status = 200, description = "The endpoint and its signing secret.", body = CreatedWebhook),
        (status = 400, description = "The team has the most endpoints allowed.", body = DetailBody),
    ))]
pub async fn create(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    JsonBody(body): JsonBody<CreateWebhookBody>,
) -> Answer<Json<CreatedWebhook>> {
    let (endpoint, secret) =
        webhooks::create_endpoint(&s.deps, team, &body.url, body.event_types, s.webhook_urls).await?;
    Ok(Json(CreatedWebhook { endpoint, secret: secret.expose().to_owned() }))
}

/// Lists the team's endpoints (never their secrets).
#[utoipa::path(operation_id = "list_webhooks", get, path = "/v2/team/webhooks", tag = "team",
    responses((status = 200, description = "The endpoints.", body = WebhookList)))]
pub async fn list(State(s): State<AppState>, AuthTeam(team): AuthTeam) -> Answer<Json<WebhookList>> {
    let data = webhooks::list_endpoints(&s.deps, team).await?.iter().map(WebhookEndpoint::from).collect();
    Ok(Json(WebhookList { data }))
}

/// Deletes an endpoint; deliveries still queued for it are dropped.
#[utoipa::path(operation_id = "delete_webhook", delete, path = "/v2/team/webhooks/{endpoint_id}", tag = "team",
    params(("endpoint_id" = String, Path, description = "The endpoint's id.")),
    responses(
        (status = 200, description = "Deleted.", body = SuccessBody),
        (status = 404, description = "No such endpoint.", body = DetailBody),
    ))]
pub async fn delete(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(endpoint_id): Path<String>,
) -> Answer<Json<SuccessBody>> {
    webhooks::delete_endpoint(&s.deps, team, &endpoint_id).await?;
    Ok(Json(SuccessBody { success: true }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AttemptParams {
    /// Page size, 1 to 100 (default 50).
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// From the previous page.
    #[serde(default)]
    next_cursor: Option<String>,
}

/// Delivery attempts of an endpoint, oldest first.
#[utoipa::path(operation_id = "list_webhook_attempts", get, path = "/v2/team/webhooks/{endpoint_id}/attempts", tag = "team",
    params(("endpoint_id" = String, Path, description = "The endpoint's id."), AttemptParams),
    responses(
        (status = 200, description = "One page of attempts.", body = WebhookAttemptPage),
        (status = 404, description = "No such endpoint.", body = DetailBody),
    ))]
pub async fn attempts(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(endpoint_id): Path<String>,
    QueryParams(p): QueryParams<AttemptParams>,
) -> Answer<Json<WebhookAttemptPage>> {
    let limit = p.limit.unwrap_or(50);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::invalid(&["query", "limit"], "limit must be between 1 and 100", "value_error"));
    }
    let cursor = p.next_cursor.as_deref().map(Cursor::decode).transpose().map_err(DomainError::from)?;
    let (data, next) = webhooks::list_attempts(&s.deps, team, &endpoint_id, limit, cursor).await?;
    Ok(Json(WebhookAttemptPage { data, next_cursor: next.map(|c| c.encode()) }))
}
