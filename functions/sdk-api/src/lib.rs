//! What the mobile SDKs call (Apple HealthKit, Health Connect, Samsung Health and the phone's
//! Bluetooth devices): a user's sign-in token and the token exchange, the connection of an SDK
//! provider, the sync state and progress, and the summary and timeseries uploads. Handlers parse,
//! call one use case of `wearlab_domain::phone`, and answer. docs/MOBILE.md tells a team how to
//! wire an app to it.

mod handlers;

use wearlab_web::audit::AuditLayer;
use wearlab_web::{AppState, Routes, routes};

/// The routes of this function with their documentation.
pub fn routes() -> Routes {
    Routes::new()
        .routes(routes!(handlers::tokens::sign_in_token))
        .routes(routes!(handlers::tokens::token))
        .routes(routes!(handlers::tokens::ow_user_token))
        .routes(routes!(handlers::tokens::ow_refresh))
        .routes(routes!(handlers::tokens::ow_revoke))
        .routes(routes!(handlers::connect::connect))
        .routes(routes!(handlers::sync::sync_state))
        .routes(routes!(handlers::sync::start_historical_stage))
        .routes(routes!(handlers::sync::post_progress, handlers::sync::get_progress))
        .merge(uploads())
}

/// The uploads change a user's health data: every request through them is recorded in the audit
/// log, with the API key or the user's own token that made it.
fn uploads() -> Routes {
    Routes::new()
        .routes(routes!(handlers::uploads::timeseries))
        .routes(routes!(handlers::uploads::activity))
        .routes(routes!(handlers::uploads::body))
        .routes(routes!(handlers::uploads::profile))
        .routes(routes!(handlers::uploads::sleep))
        .routes(routes!(handlers::uploads::workouts))
        .routes(routes!(handlers::uploads::meal))
        .routes(routes!(handlers::uploads::menstrual_cycle))
        .routes(routes!(handlers::uploads::electrocardiogram))
        .routes(routes!(handlers::uploads::open_wearables_sync))
        .layer(AuditLayer)
}

/// The function as served, `/openapi.json` included.
pub fn app(state: AppState) -> wearlab_web::App {
    wearlab_web::app(routes(), state)
}
