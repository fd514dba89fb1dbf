//! `/v2/link/**` (except bulk), `/v2/providers`, `/v2/team/**`: provider catalog, link tokens,
//! password, OAuth and demo linking, and the team's self-service settings.

use utoipa_axum::router::OpenApiRouter;
use wearlab_web::{AppState, Routes};

/// The routes of this function with their documentation.
pub fn routes() -> Routes {
    OpenApiRouter::new()
}

/// The function as served, `/openapi.json` included.
pub fn app(state: AppState) -> wearlab_web::App {
    wearlab_web::app(routes(), state)
}
