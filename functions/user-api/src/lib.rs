//! `/v2/user/**`: routes of the users endpoint group. Handlers parse, call one use case from
//! `wearlab_domain::users`, and answer; the rules live in the domain.

mod handlers;

use std::sync::Arc;

use wearlab_domain::ports::Queue;
use wearlab_web::audit::AuditLayer;
use wearlab_web::{AppState, Routes, routes};

use handlers::{connections, users};
use handlers::{demographics, insurance, portal};

/// The routes of this function with their documentation.
pub fn routes() -> Routes {
    Routes::new()
        .routes(routes!(users::list, users::create))
        .routes(routes!(users::resolve))
        .routes(routes!(users::undo_delete))
        .routes(routes!(users::refresh))
        .routes(routes!(users::get, users::patch, users::delete))
        .routes(routes!(connections::list))
        .routes(routes!(connections::deregister))
        .routes(routes!(connections::historical_pull))
        .merge(phi_routes())
        .routes(routes!(portal::create))
}

/// Demographics and insurance: every request through them is recorded in the audit log.
fn phi_routes() -> Routes {
    Routes::new()
        .routes(routes!(demographics::set))
        .routes(routes!(demographics::latest))
        .routes(routes!(insurance::create))
        .routes(routes!(insurance::latest))
        .layer(AuditLayer)
}

/// The function as served, `/openapi.json` included, with the pull queue that on-demand
/// historical pulls and unfinished refreshes go to.
pub fn app(state: AppState, pull_queue: Arc<dyn Queue>) -> wearlab_web::App {
    wearlab_web::app(routes().provide(pull_queue), state)
}
