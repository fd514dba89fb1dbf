//! `/v2/team/audit_log`: the team's audit log of access to PHI (`wearlab_domain::common::audit`).

use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;
use wearlab_domain::common::audit::{self, AuditEntry, AuditFilter, RawFilter};
use wearlab_models::DetailBody;
use wearlab_models::audit::{AuditLogEntry, AuditLogPage};
use wearlab_web::Inputs;
use wearlab_web::{ApiError, AppState, AuthTeam, Json, QueryParams};

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// Only entries about this user.
    #[serde(default)]
    #[param(format = Uuid)]
    user_id: Option<String>,
    /// Entries at or after this time (RFC 3339).
    #[serde(default)]
    #[param(format = DateTime)]
    since: Option<String>,
    /// Entries before this time (RFC 3339).
    #[serde(default)]
    #[param(format = DateTime)]
    until: Option<String>,
    /// Page size, 1 to 500 (default 50).
    #[serde(default)]
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// From the previous page (with the same filters).
    #[serde(default)]
    next_cursor: Option<String>,
}

/// Who read or changed the team's users' health data, demographics, insurance and lab orders:
/// one entry per request (key id, route, user, status), newest first. Entries are kept for the
/// deployment's retention (six years unless the operator set another).
#[utoipa::path(operation_id = "list_audit_log", get, path = "/v2/team/audit_log", tag = "team",
    params(AuditParams),
    responses(
        (status = 200, description = "One page of entries.", body = AuditLogPage),
        (status = 401, description = "Missing or unknown API key.", body = DetailBody),
    ))]
pub async fn list(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    QueryParams(p): QueryParams<AuditParams>,
) -> Result<Json<AuditLogPage>, ApiError> {
    let filter = AuditFilter::parse(RawFilter {
        user_id: p.user_id.as_deref(),
        since: p.since.as_deref(),
        until: p.until.as_deref(),
        limit: p.limit,
        next_cursor: p.next_cursor.as_deref(),
    })
    .map_err(|e| {
        Inputs { query: &["user_id", "since", "until", "limit", "next_cursor"], path: &[] }.locate(e)
    })?;
    let (entries, next) = audit::list(&s.deps, team, filter).await?;
    Ok(Json(AuditLogPage {
        data: entries.into_iter().map(wire).collect(),
        next_cursor: next.map(|c| c.encode()),
    }))
}

fn wire(e: AuditEntry) -> AuditLogEntry {
    AuditLogEntry {
        id: e.id,
        at: e.at,
        key_id: e.key_id,
        method: e.method,
        route: e.route,
        user_id: e.user_id.map(|u| u.as_uuid()),
        resource: e.resource,
        status: e.status,
    }
}
