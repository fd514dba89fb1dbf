//! What every API function shares: application state, the API-key extractor, input extractors
//! that answer 422 in one shape, and the single mapping from domain errors to HTTP.

pub mod audit;
mod auth;
mod body;
mod error;
mod extract;
pub mod fair_use;
pub mod i18n;
pub mod idempotency;
mod json;
pub mod openapi;
pub mod pages;
mod path_check;
mod routes;
mod schema_check;
mod state;
mod well_formed;

pub use auth::{AuthCaller, AuthTeam};
pub use body::{MAX_BODY_BYTES, MAX_DECODED_BODY_BYTES};
pub use error::{ApiError, Inputs};
pub use extract::{JsonBody, Parsed, QueryParams, path_user_id};
pub use json::{Json, JsonText};
pub use routes::{AddDocs, DocRouter, Documented, Routes};
pub use state::AppState;
pub use well_formed::MAX_URI_BYTES;

/// The API's public address for links in answers (`link_web_url`, OAuth callbacks, requisition
/// and portal URLs): `configured` (the deployment's `WEARLAB_PUBLIC_URL`, read once at start
/// into [`Settings`](wearlab_domain::common::settings::Settings): every deployed function requires it),
/// else the request's own `Host`, and only a loopback one (the local stack):
/// `X-Forwarded-Host` is never read, so no caller can point the links elsewhere. Handlers call
/// it through [`AppState::public_links`].
pub fn public_links(configured: Option<&str>, headers: &http::HeaderMap) -> wearlab_domain::lab::Links {
    let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    wearlab_domain::lab::Links::for_host(configured, h("host"), h("x-forwarded-proto"))
}

/// What [`routes!`] expands to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use axum::routing::MethodRouter;
    pub use utoipa_axum;
    pub use utoipa_axum::PathItemExt;
}

use axum::Router;
use tower::Layer;
use tower_http::normalize_path::{NormalizePath, NormalizePathLayer};

/// A router as it is served: `/v2/user/` and `/v2/user` reach the same route.
pub type App = NormalizePath<Router>;

/// The OpenAPI document of `routes`, finished (security, shared error answers).
pub fn openapi(routes: Routes) -> utoipa::openapi::OpenApi {
    let (_, docs, _) = routes.into_parts();
    finished(&docs)
}

/// The routes' own document inside the frame, with what every operation shares.
fn finished(docs: &[AddDocs]) -> utoipa::openapi::OpenApi {
    let mut doc = openapi::base();
    doc.merge(Routes::build_docs(docs));
    openapi::finish(&mut doc);
    doc
}

/// Finishes routes for serving: their document at `/openapi.json`, JSON 404/405 answers, the
/// 6 MB body limit, trailing-slash tolerance, and every error well formed (`well_formed`).
pub fn app(routes: Routes, state: AppState) -> App {
    let (router, docs, ports) = routes.into_parts();
    // Built when first asked for, not at start: a Lambda's init does not pay for it.
    let doc = std::sync::Arc::new(std::sync::LazyLock::new(move || finished(&docs)));
    let router = router
        .route(
            openapi::OPENAPI_PATH,
            axum::routing::get(move || async move { axum::Json(utoipa::openapi::OpenApi::clone(&doc)) }),
        )
        // Every layer in one call: each `Router::layer` wraps every route in another boxed
        // `Route`, which costs each request a clone of the boxed service and a boxed future.
        // The fallbacks (404, 405) read no body and claim no idempotency key.
        .layer(
            tower::ServiceBuilder::new()
                // The ports only some functions have (`Routes::provide`), for the handlers.
                .map_request(move |mut req: axum::extract::Request| {
                    ports.add_to(req.extensions_mut());
                    req
                })
                // Bodies up to the platform's 6 MB pass; larger ones get a 413 from `JsonBody`.
                .layer(axum::extract::DefaultBodyLimit::max(body::MAX_BODY_BYTES))
                .layer(fair_use::RateLimitHeadersLayer)
                .layer(path_check::Utf8PathLayer)
                .layer(idempotency::IdempotencyLayer::new(state.clone())),
        )
        .with_state(state)
        .fallback(|| async { ApiError::NotFound("Not Found".into()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        // Last, so that it sees every answer, the fallbacks' included.
        .layer(well_formed::WellFormedLayer);
    NormalizePathLayer::trim_trailing_slash().layer(router)
}

#[cfg(test)]
mod tests {
    use http::HeaderMap;

    use super::public_links;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap())).collect()
    }

    // Without a configured public URL; it wins over all of this when set.
    #[test]
    fn links_follow_the_host_the_request_came_to() {
        let base = |pairs| public_links(None, &headers(pairs)).base_url;
        assert_eq!(base(&[("host", "127.0.0.1:8080")]), "http://127.0.0.1:8080");
        assert_eq!(base(&[("host", "localhost:9000")]), "http://localhost:9000");
        assert_eq!(base(&[("host", "[::1]:8080")]), "http://[::1]:8080");
        assert_eq!(
            base(&[("host", "127.0.0.1:8443"), ("x-forwarded-proto", "https")]),
            "https://127.0.0.1:8443"
        );
        // Only loopback hosts: anything a caller could send is not a place links point to.
        assert_eq!(base(&[("host", "api.example.test")]), "http://localhost");
        assert_eq!(
            base(&[("host", "127.0.0.1:8080"), ("x-forwarded-host", "evil.test")]),
            "http://127.0.0.1:8080"
        );
        assert_eq!(base(&[("host", "localhost.evil.test")]), "http://localhost");
        assert_eq!(base(&[("host", "127.0.0.1@evil.test")]), "http://localhost");
        assert_eq!(base(&[("host", "127.0.0.1:80/x")]), "http://localhost");
        assert_eq!(base(&[("host", "localhost"), ("x-forwarded-proto", "javascript")]), "http://localhost");
        assert_eq!(base(&[]), "http://localhost");
    }

    #[test]
    fn the_public_url_wins_over_the_request_when_set() {
        let resolve = wearlab_domain::lab::Links::for_host;
        let forwarded = (Some("127.0.0.1:7000"), Some("http"));
        let public = resolve(Some(" https://api.example.com/ "), forwarded.0, forwarded.1);
        assert_eq!(public.base_url, "https://api.example.com", "trimmed, without its trailing slash");
        assert_eq!(resolve(Some("https://api.example.com"), None, None).base_url, "https://api.example.com");
        assert_eq!(
            resolve(Some("  "), forwarded.0, forwarded.1).base_url,
            "http://127.0.0.1:7000",
            "blank is unset"
        );
        assert_eq!(resolve(None, forwarded.0, forwarded.1).base_url, "http://127.0.0.1:7000");
    }
}
