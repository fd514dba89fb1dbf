//! A team's uploaded brand logo, served on the hosted pages' origin (`img-src 'self'`) to
//! anyone: the pages show it before any key or token is checked.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use wearlab_domain::teams::branding::{self, LogoId};
use wearlab_web::{ApiError, AppState};

/// `/v2/link/web/brand/{logo_id}`.
pub const PATH: &str = "/v2/link/web/brand/{logo_id}";

/// The image with its type; 404 for an id no brand uses. Its id is the SHA-256 of its bytes,
/// so an answer never changes: kept a year by browsers and caches.
pub async fn logo(State(s): State<AppState>, Path(logo_id): Path<String>) -> Result<Response, ApiError> {
    let not_found = || ApiError::NotFound("no such logo".into());
    let id = LogoId::parse(&logo_id).ok_or_else(not_found)?;
    let image = branding::logo(&s.deps, &id).await?.ok_or_else(not_found)?;
    let mut res = (StatusCode::OK, image.bytes).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(image.kind.content_type()));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    // An image, never a document: nothing it could load or run, and no framing.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'; sandbox"),
    );
    Ok(res)
}

#[cfg(test)]
mod tests {
    /// The route serves the address the brand gives its uploaded logo.
    #[test]
    fn the_route_is_the_logos_address() {
        assert_eq!(super::PATH.replace("{logo_id}", ""), wearlab_domain::teams::branding::LOGO_PATH);
    }
}
