//! `/v2/link/bulk_*`: bulk connection operations (link migration). Off for a team until the
//! operator enables them (`wearlab-admin team enable-bulk`); until then every route answers 403.
//! Handlers parse, call one use case of `wearlab_domain::bulk`, and answer.

mod handlers;

use std::sync::Arc;

use wearlab_domain::ports::Queue;
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

/// The function as served, `/openapi.json` included, with the bulk queue its operations'
/// messages go to.
pub fn app(state: AppState, bulk_queue: Arc<dyn Queue>) -> wearlab_web::App {
    wearlab_web::app(routes().provide(bulk_queue), state)
}
