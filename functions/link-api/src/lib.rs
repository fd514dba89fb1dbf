//! `/v2/link/**` (except bulk), `/v2/providers`, `/v2/provider_webhooks/*`: provider catalog,
//! link tokens, password, OAuth and demo linking, the hosted link page, and the providers'
//! pushes. (The team's own settings, `/v2/team/**`, are team-api's.)
//!
//! Browser-facing routes carry no API key and are therefore not in the OpenAPI document: the
//! OAuth callback (`/v2/link/provider/oauth/{provider}/callback`, where the provider sends the
//! end user back), the hosted link page (`/v2/link/web/**`, the `link_web_url` of a token;
//! see `docs/HOSTED_PAGES.md`; with the teams' uploaded logos at `/v2/link/web/brand/{logo_id}`),
//! and the providers' push endpoint
//! (`/v2/provider_webhooks/{provider}`, see `docs/PROVIDERS.md`).

mod handlers;
mod widget_html;

use std::sync::Arc;

use wearlab_domain::ports::Queue;
use wearlab_web::{AppState, Routes, routes};

use handlers::{brand, catalog, link, provider_push, web};

/// The routes of this function with their documentation.
pub fn routes() -> Routes {
    Routes::new()
        .routes(routes!(catalog::list))
        .routes(routes!(link::create_token))
        .routes(routes!(link::password))
        .routes(routes!(link::complete_mfa))
        .routes(routes!(link::oauth))
        .routes(routes!(link::demo))
        .route(web::CALLBACK_PATH, axum::routing::get(web::oauth_callback))
        .route(web::PAGE_PATH, axum::routing::get(web::page))
        .route(web::PROVIDER_PATH, axum::routing::get(web::provider))
        .route(web::PAGE_OAUTH_PATH, axum::routing::get(web::page_oauth))
        .route(web::PASSWORD_PATH, axum::routing::post(web::post_password))
        .route(web::MFA_PATH, axum::routing::post(web::post_mfa))
        .route(brand::PATH, axum::routing::get(brand::logo))
        .route(web::SCRIPT_PATH, axum::routing::get(web::script))
        .route(web::MARK_PATH, axum::routing::get(web::mark))
        .route(provider_push::PATH, axum::routing::get(provider_push::receive).post(provider_push::receive))
}

/// The deployed function, `/openapi.json` included: with the simulated providers' consent page
/// only when the deployment links simulated providers (`WEARLAB_SIMULATED_PROVIDERS=true`), and
/// the pull queue that the providers' pushes queue polls on.
pub fn app(state: AppState, pull_queue: Arc<dyn Queue>, simulator_pages: bool) -> wearlab_web::App {
    let routes = routes().provide(pull_queue);
    let routes = if simulator_pages { routes.merge(Routes::from(wearlab_sim::routes())) } else { routes };
    wearlab_web::app(routes, state)
}
