//! The bulk routes. Every one first authenticates and checks the team's bulk switch (403),
//! before reading any body.

use std::sync::Arc;

use axum::extract::{FromRequestParts, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http::StatusCode;
use http::request::Parts;
use serde::Deserialize;
use utoipa::IntoParams;
use wearlab_domain::DomainError;
use wearlab_domain::bulk::ledger::OpRef;
use wearlab_domain::bulk::{
    self, export::ExportRequest, import::ImportRequest, pause::PauseRequest, trigger::TriggerRequest,
};
use wearlab_domain::common::ids::{TeamId, UserId};
use wearlab_domain::ports::{Cursor, Queue};
use wearlab_domain::teams;
use wearlab_models::DetailBody;
use wearlab_models::bulk::{
    BulkExportBody, BulkExportPage, BulkFailure, BulkImportBody, BulkImportResult, BulkOpPage, BulkPauseBody,
    BulkPauseResult, BulkTriggerBody, BulkTriggerResult,
};
use wearlab_web::{ApiError, AppState, AuthTeam, Inputs, JsonBody, QueryParams};

type Answer<T> = Result<T, ApiError>;

/// A team that may use bulk operations.
pub struct BulkTeam(TeamId);

impl FromRequestParts<AppState> for BulkTeam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let AuthTeam(team) = AuthTeam::from_request_parts(parts, state).await?;
        teams::require_bulk_operations(&state.deps, team).await?;
        Ok(BulkTeam(team))
    }
}

fn ids(users: Vec<UserId>) -> Vec<uuid::Uuid> {
    users.into_iter().map(|u| u.as_uuid()).collect()
}

/// 202 with no body now; with `wait`, 200 and the results if the operation ends in time.
async fn answer<T: serde::Serialize>(
    s: &AppState,
    op: OpRef,
    wait: bool,
    body: impl FnOnce(Vec<uuid::Uuid>, Vec<uuid::Uuid>, Vec<BulkFailure>) -> T,
) -> Answer<Response> {
    if wait && let Some(r) = bulk::wait(&s.deps, &op).await? {
        let failures = r
            .reasons
            .into_iter()
            .map(|(user, reason)| BulkFailure { user_id: user.as_uuid(), reason })
            .collect();
        return Ok((StatusCode::OK, Json(body(ids(r.ok), ids(r.failed), failures))).into_response());
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

/// Imports existing connections made with the team's own OAuth app. Answers 202 at once (the
/// import runs in the background: see the list of bulk operations); with
/// `wait_for_completion`, 200 and the outcome per user if it ends within 20 seconds.
#[utoipa::path(operation_id = "bulk_import", post, path = "/v2/link/bulk_import", tag = "bulk", request_body = BulkImportBody,
    responses(
        (status = 200, description = "Finished while the request waited.", body = BulkImportResult),
        (status = 202, description = "Accepted; runs in the background."),
        (status = 400, description = "The team has no OAuth app for the provider.", body = DetailBody),
        (status = 403, description = "Bulk operations are not enabled for the team.", body = DetailBody),
    ))]
pub async fn import(
    State(s): State<AppState>,
    Extension(bulk_queue): Extension<Arc<dyn Queue>>,
    BulkTeam(team): BulkTeam,
    JsonBody(body): JsonBody<BulkImportBody>,
) -> Answer<Response> {
    let req = ImportRequest::parse(body)?;
    let wait = req.wait_for_completion;
    let op = bulk::import::submit(&s.deps, bulk_queue.as_ref(), team, req).await?;
    answer(&s, op, wait, |user_ids_imported, user_ids_failed, failures| BulkImportResult {
        user_ids_imported,
        user_ids_failed,
        failures,
    })
    .await
}

/// Starts the historical pull of each user's connection to the provider, under the team's
/// throttle for that provider. Answers 202 at once; with `wait_for_completion`, 200 if every
/// pull started within 20 seconds.
#[utoipa::path(operation_id = "bulk_trigger_historical_pull", post, path = "/v2/link/bulk_trigger_historical_pull", tag = "bulk",
    request_body = BulkTriggerBody,
    responses(
        (status = 200, description = "Every pull started while the request waited.", body = BulkTriggerResult),
        (status = 202, description = "Accepted; pulls start at the provider's throttle rate."),
        (status = 403, description = "Bulk operations are not enabled for the team.", body = DetailBody),
    ))]
pub async fn trigger_historical_pull(
    State(s): State<AppState>,
    Extension(bulk_queue): Extension<Arc<dyn Queue>>,
    BulkTeam(team): BulkTeam,
    JsonBody(body): JsonBody<BulkTriggerBody>,
) -> Answer<Response> {
    let req = TriggerRequest::parse(body)?;
    let wait = req.wait_for_completion;
    let op = bulk::trigger::submit(&s.deps, bulk_queue.as_ref(), team, req).await?;
    answer(&s, op, wait, |user_ids_triggered, user_ids_failed, failures| BulkTriggerResult {
        user_ids_triggered,
        user_ids_failed,
        failures,
    })
    .await
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Page size, 1 to 50 (default 10).
    #[serde(default)]
    #[param(minimum = 1, maximum = 50)]
    page_size: Option<u32>,
    /// From the previous page.
    #[serde(default)]
    next_cursor: Option<String>,
}

/// The team's bulk operations, newest first, with their progress.
#[utoipa::path(operation_id = "list_bulk_ops", get, path = "/v2/link/bulk_op", tag = "bulk", params(ListParams),
    responses(
        (status = 200, description = "One page of operations.", body = BulkOpPage),
        (status = 403, description = "Bulk operations are not enabled for the team.", body = DetailBody),
    ))]
pub async fn list_ops(
    State(s): State<AppState>,
    BulkTeam(team): BulkTeam,
    QueryParams(p): QueryParams<ListParams>,
) -> Answer<Json<BulkOpPage>> {
    let cursor = p.next_cursor.as_deref().map(Cursor::decode).transpose().map_err(DomainError::from)?;
    let (data, next) = bulk::list(&s.deps, team, p.page_size, cursor)
        .await
        .map_err(|e| Inputs { query: &["page_size"], path: &[] }.locate(e))?;
    Ok(Json(BulkOpPage { data, next_cursor: next.map(|c| c.encode()) }))
}

/// The team's connections to the provider made with its own OAuth app, as connection recipes
/// (tokens included), 100 connections looked at per page.
#[utoipa::path(operation_id = "bulk_export", post, path = "/v2/link/bulk_export", tag = "bulk", request_body = BulkExportBody,
    responses(
        (status = 200, description = "One page of recipes.", body = BulkExportPage),
        (status = 400, description = "The team has no OAuth app for the provider.", body = DetailBody),
        (status = 403, description = "Bulk operations are not enabled for the team.", body = DetailBody),
    ))]
pub async fn export(
    State(s): State<AppState>,
    BulkTeam(team): BulkTeam,
    JsonBody(body): JsonBody<BulkExportBody>,
) -> Answer<Json<BulkExportPage>> {
    let (data, next_token) = bulk::export::export(&s.deps, team, ExportRequest::parse(body)?).await?;
    Ok(Json(BulkExportPage { data, next_token }))
}

/// Pauses the users' connections to the provider: no polling and no historical pulls, the
/// connections kept (status `paused`). At most 1,000 users per request.
#[utoipa::path(operation_id = "bulk_pause", post, path = "/v2/link/bulk_pause", tag = "bulk", request_body = BulkPauseBody,
    responses(
        (status = 200, description = "Paused, and the users without such a connection.", body = BulkPauseResult),
        (status = 403, description = "Bulk operations are not enabled for the team.", body = DetailBody),
    ))]
pub async fn pause(
    State(s): State<AppState>,
    BulkTeam(team): BulkTeam,
    JsonBody(body): JsonBody<BulkPauseBody>,
) -> Answer<Json<BulkPauseResult>> {
    let (paused, failed) = bulk::pause::pause(&s.deps, team, PauseRequest::parse(body)?).await?;
    Ok(Json(BulkPauseResult { user_ids_paused: ids(paused), user_ids_failed: ids(failed) }))
}
