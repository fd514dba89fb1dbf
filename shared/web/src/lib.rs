//! What every API function shares: application state, the API-key extractor, input extractors
//! that answer 422 in one shape, and the single mapping from domain errors to HTTP.

mod auth;
mod error;
mod extract;
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

/// Finishes a router for serving: JSON 404/405 answers and trailing-slash tolerance.
pub fn app(router: Router) -> App {
    let router = router
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
