use axum::Json;
use axum::extract::State;
use http::HeaderMap;
use serde::Deserialize;
use utoipa::IntoParams;
use wearlab_domain::common::provider_catalog::catalog;
use wearlab_domain::common::provider_marks;
use wearlab_models::ProviderEntry;
use wearlab_web::{ApiError, AppState, AuthTeam, QueryParams};

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Only providers of this auth type (oauth, team_oauth, sdk, password, email, app).
    #[serde(default)]
    source_type: Option<String>,
}

/// Lists the supported providers and the resources each supplies.
#[utoipa::path(operation_id = "list_providers", get, path = "/v2/providers", tag = "providers", params(ListParams),
    responses((status = 200, description = "The provider catalog.", body = Vec<ProviderEntry>)))]
pub async fn list(
    State(s): State<AppState>,
    AuthTeam(_team): AuthTeam,
    headers: HeaderMap,
    QueryParams(p): QueryParams<ListParams>,
) -> Result<Json<Vec<ProviderEntry>>, ApiError> {
    let base = super::base_url(&s, &headers);
    let mut entries = catalog().list_on(s.deps.providers.as_ref(), p.source_type.as_deref());
    for e in &mut entries {
        e.logo = e.logo.as_deref().map(|path| provider_marks::logo_url(&base, path));
    }
    Ok(Json(entries))
}
