//! `/v2/link/bulk_*`: bulk connection operations (link migration). Off for a team until the
//! operator enables them (`wearlab-admin team enable-bulk`); until then every route answers 403.
//! Handlers parse, call one use case of `wearlab_domain::bulk`, and answer.

mod handlers;

use wearlab_web::{AppState, Routes, routes};

/// The routes of this function with their documentation.
pub fn routes() -> Routes {
    Routes::new()
        .routes(routes!(handlers::import))
        .routes(routes!(handlers::trigger_historical_pull))
        .routes(routes!(handlers::list_ops))
        .routes(routes!(handlers::export))
        .routes(routes!(handlers::pause))
}

/// The function as served, `/openapi.json` included. The state must carry the work queues.
pub fn app(state: AppState) -> wearlab_web::App {
    wearlab_web::app(routes(), state)
}
