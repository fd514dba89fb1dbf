//! `/v2/team/**`: what a team sets for itself and reads about itself: its webhook endpoints and
//! their delivery attempts, its own OAuth apps and link settings, its data-pull preferences, its
//! brand on the hosted pages (and its uploaded logo), and the audit log of PHI access by its API
//! keys.

mod handlers;

use wearlab_web::{AppState, Routes, routes};

use handlers::{audit, branding, linking, preferences, webhooks};

/// The routes of this function with their documentation.
pub fn routes() -> Routes {
    Routes::new()
        .routes(routes!(linking::get_oauth_app, linking::put_oauth_app, linking::delete_oauth_app))
        .routes(routes!(linking::get_link_config, linking::patch_link_config))
        .routes(routes!(webhooks::list, webhooks::create))
        .routes(routes!(webhooks::delete))
        .routes(routes!(webhooks::attempts))
        .routes(routes!(preferences::get, preferences::put))
        .routes(routes!(audit::list))
        .routes(routes!(branding::get, branding::put))
        .routes(routes!(branding::put_logo, branding::delete_logo))
}

/// The function as served, `/openapi.json` included.
pub fn app(state: AppState) -> wearlab_web::App {
    wearlab_web::app(routes(), state)
}
