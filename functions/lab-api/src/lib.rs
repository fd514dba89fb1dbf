//! `/v3/**`: lab test markers and lab tests, orders with results and requisitions, patient
//! service centers near an order, the payor directory's search, and the user portal pages.
//! Handlers parse, call one use case from `wearlab_domain::lab`, and answer; the rules live in
//! the domain.

mod handlers;
mod html;
mod query;
pub mod requisition;

use std::sync::Arc;

use wearlab_domain::ports::LabNetwork;
use wearlab_web::audit::AuditLayer;
use wearlab_web::{AppState, Routes, routes};

use handlers::{lab_tests, markers, orders, payors, portal_page, psc};

/// The routes; the orders and the portal pages take the lab network (`Extension`), which
/// [`app`] hands them.
#[allow(deprecated)] // GET /v3/lab_tests is deprecated but served.
pub fn routes() -> Routes {
    Routes::new()
        .routes(routes!(markers::list))
        .routes(routes!(markers::of_lab_test))
        .routes(routes!(markers::of_order_set))
        .routes(routes!(lab_tests::list))
        .routes(routes!(lab_tests::list_deprecated))
        .merge(order_routes())
        .routes(routes!(psc::info))
        .routes(routes!(payors::search))
        .routes(routes!(portal_page::by_token))
        .routes(routes!(portal_page::by_code))
        // The portal's other pages and forms: browser-only, like the link widget's, so not in
        // the OpenAPI document (see docs/HOSTED_PAGES.md).
        .route(portal_page::ORDER_BY_TOKEN_PATH, axum::routing::get(portal_page::order_by_token))
        .route(portal_page::ORDER_BY_CODE_PATH, axum::routing::get(portal_page::order_by_code))
        .route(portal_page::SEND_CODE_PATH, axum::routing::post(portal_page::send_code))
        .route(portal_page::VERIFY_PATH, axum::routing::post(portal_page::verify))
}

/// Orders, their results and requisitions (patient details): every request through them is
/// recorded in the audit log.
fn order_routes() -> Routes {
    Routes::new()
        .routes(routes!(orders::create))
        .routes(routes!(orders::list))
        .routes(routes!(orders::get))
        .routes(routes!(orders::cancel))
        .routes(routes!(orders::result))
        .routes(routes!(orders::requisition_pdf))
        .layer(AuditLayer)
}

/// The function as served, `/openapi.json` included, on the lab network that places and
/// advances its orders.
pub fn app(state: AppState, network: Arc<dyn LabNetwork>) -> wearlab_web::App {
    wearlab_web::app(routes().provide(network), state)
}
