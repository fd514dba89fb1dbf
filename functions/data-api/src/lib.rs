//! `/v2/summary/**` and `/v2/timeseries/**`: the read side of ingested data. Handlers parse,
//! call one use case from `wearlab_domain::pipeline::read`, and answer.

mod handlers;

use wearlab_web::audit::AuditLayer;
use wearlab_web::{AppState, Routes, routes};

/// The routes of this function with their documentation. All of them read health data, so
/// every request is recorded in the audit log.
pub fn routes() -> Routes {
    read_routes().layer(AuditLayer)
}

/// The same routes without the audit layer, for the benchmark that measures what the audit
/// costs (`audit-twin`, `scripts/bench http`) and nothing else: only with the `bench` feature,
/// which no function's build turns on.
#[cfg(feature = "bench")]
pub fn unaudited_twin_for_benchmarks() -> Routes {
    read_routes()
}

fn read_routes() -> Routes {
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
}

/// The function as served, `/openapi.json` included.
pub fn app(state: AppState) -> wearlab_web::App {
    wearlab_web::app(routes(), state)
}
