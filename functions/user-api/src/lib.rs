//! `/v2/user/**`: routes of the users endpoint group. Handlers parse, call one use case from
//! `wearlab_domain::users`, and answer; the rules live in the domain.

mod handlers;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use wearlab_web::{AppState, Routes};

/// The routes of this function with their documentation.
pub fn routes() -> Routes {
    OpenApiRouter::new()
        .routes(routes!(handlers::list, handlers::create))
        .routes(routes!(handlers::resolve))
        .routes(routes!(handlers::undo_delete))
        .routes(routes!(handlers::refresh))
        .routes(routes!(handlers::get, handlers::patch, handlers::delete))
}

/// The function as served, `/openapi.json` included.
pub fn app(state: AppState) -> wearlab_web::App {
    wearlab_web::app(routes(), state)
}
