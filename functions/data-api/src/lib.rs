//! `/v2/summary/**` and `/v2/timeseries/**`: the read side of ingested data. Handlers parse,
//! call one use case from `wearlab_domain::pipeline::read`, and answer.

mod handlers;

use wearlab_web::audit::AuditLayer;
use wearlab_web::{AppState, Routes, routes};

/// The routes of this function with their documentation. All of them read health data, so
/// every request is recorded in the audit log.
pub fn routes() -> Routes {
    Routes::new()
        .routes(routes!(handlers::activity))
        .routes(routes!(handlers::sleep))
        .routes(routes!(handlers::sleep_cycle))
        .routes(routes!(handlers::workouts))
        .routes(routes!(handlers::body))
        .routes(routes!(handlers::meal))
        .routes(routes!(handlers::menstrual_cycle))
        .routes(routes!(handlers::electrocardiogram))
        .routes(routes!(handlers::profile))
        .routes(routes!(handlers::timeseries))
        .layer(AuditLayer)
}

/// The function as served, `/openapi.json` included.
pub fn app(state: AppState) -> wearlab_web::App {
    wearlab_web::app(routes(), state)
}
