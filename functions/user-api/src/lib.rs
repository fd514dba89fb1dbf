//! `/v2/user/**`: routes of the users endpoint group. Handlers parse, call one use case from
//! `wearlab_domain::users`, and answer; the rules live in the domain.

mod handlers;

use axum::Router;
use axum::routing::{get, post};
use wearlab_web::AppState;

/// The routes of this function, unfinished (see [`app`]).
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v2/user", get(handlers::list).post(handlers::create))
        .route("/v2/user/resolve/{client_user_id}", get(handlers::resolve))
        .route("/v2/user/undo_delete", post(handlers::undo_delete))
        .route("/v2/user/refresh/{user_id}", post(handlers::refresh))
        .route("/v2/user/{user_id}", get(handlers::get).patch(handlers::patch).delete(handlers::delete))
        .with_state(state)
}

/// The function as served: routes plus JSON fallbacks and trailing-slash tolerance.
pub fn app(state: AppState) -> wearlab_web::App {
    wearlab_web::app(router(state))
}
