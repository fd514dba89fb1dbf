//! Paths that do not percent-decode to UTF-8 (`/v2/user/%FF`) are refused before routing:
//! axum's `Path<String>` would answer them with a text/plain 400, and every answer of the API is
//! JSON.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use wearlab_domain::error::issue;

use crate::ApiError;

/// Middleware: 422 `{"detail": [{"loc": ["path"], ...}]}` for a path that is not UTF-8 once
/// percent-decoded; every other request goes on untouched.
pub(crate) async fn utf8_path(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    // The fast path: without `%` a URI path is ASCII.
    if !path.contains('%') || percent_encoding::percent_decode_str(path).decode_utf8().is_ok() {
        return next.run(req).await;
    }
    ApiError::Validation(vec![issue(
        &["path"],
        "the path is not valid UTF-8 once percent-decoded",
        "value_error",
    )])
    .into_response()
}
