//! What every API function shares: application state, the API-key extractor, input extractors
//! that answer 422 in one shape, and the single mapping from domain errors to HTTP.

mod auth;
mod error;
mod extract;
pub mod idempotency;
pub mod openapi;
mod state;

pub use auth::AuthTeam;
pub use error::ApiError;
pub use extract::{JsonBody, QueryParams, path_user_id};
pub use state::AppState;

use axum::Router;
use tower::Layer;
use tower_http::normalize_path::{NormalizePath, NormalizePathLayer};

/// A router as it is served: `/v2/user/` and `/v2/user` reach the same route.
pub type App = NormalizePath<Router>;

/// A function's routes with their documentation, before state is attached.
pub type Routes = utoipa_axum::router::OpenApiRouter<AppState>;

/// The OpenAPI document of `routes`, finished (security, shared error answers).
pub fn openapi(routes: Routes) -> utoipa::openapi::OpenApi {
    let (_, mut doc) = Routes::with_openapi(openapi::base()).merge(routes).split_for_parts();
    openapi::finish(&mut doc);
    doc
}

/// Finishes routes for serving: their document at `/openapi.json`, JSON 404/405 answers, the
/// 6 MB body limit and trailing-slash tolerance.
pub fn app(routes: Routes, state: AppState) -> App {
    let (router, mut doc) = Routes::with_openapi(openapi::base()).merge(routes).split_for_parts();
    openapi::finish(&mut doc);
    let doc = std::sync::Arc::new(doc);
    let router = router
        .route(
            openapi::OPENAPI_PATH,
            axum::routing::get(move || async move { axum::Json(doc.as_ref().clone()) }),
        )
        .layer(axum::middleware::from_fn_with_state(state.clone(), idempotency::honour_idempotency_key))
        .with_state(state)
        .fallback(|| async { ApiError::NotFound("Not Found".into()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        // Bodies up to the platform's 6 MB pass; larger ones get a 413 from `JsonBody`.
        .layer(axum::extract::DefaultBodyLimit::max(extract::MAX_BODY_BYTES));
    NormalizePathLayer::trim_trailing_slash().layer(router)
}

/// Structured JSON logs to stdout (CloudWatch picks them up on Lambda). `RUST_LOG` filters.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .without_time()
        .try_init();
}
