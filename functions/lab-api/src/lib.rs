//! `/v3/**`: lab test markers and lab tests, orders with results and requisitions, and patient
//! service centers near an order.

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
