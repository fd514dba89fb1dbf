//! Paths that do not percent-decode to UTF-8 (`/v2/user/%FF`) are refused before routing:
//! axum's `Path<String>` would answer them with a text/plain 400, and every answer of the API is
//! JSON. A layer of its own rather than `middleware::from_fn`, so that the requests it lets
//! through (all of them, nearly) cost no boxed future.

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use futures_util::future::Either;
use tower::{Layer, Service};
use wearlab_domain::common::error::issue;

use crate::ApiError;

/// Whether the request's path is UTF-8 once percent-decoded.
fn utf8_path(req: &Request) -> bool {
    let path = req.uri().path();
    // The fast path: without `%` a URI path is ASCII.
    !path.contains('%') || percent_encoding::percent_decode_str(path).decode_utf8().is_ok()
}

/// 422 `{"detail": [{"loc": ["path"], ...}]}`.
fn refusal() -> Response {
    ApiError::Validation(vec![issue(
        &["path"],
        "the path is not valid UTF-8 once percent-decoded",
        "value_error",
    )])
    .into_response()
}

#[derive(Clone, Copy, Default)]
pub(crate) struct Utf8PathLayer;

impl<S> Layer<S> for Utf8PathLayer {
    type Service = Utf8Path<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Utf8Path(inner)
    }
}

#[derive(Clone)]
pub(crate) struct Utf8Path<S>(S);

impl<S> Service<Request> for Utf8Path<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, Ready<Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if utf8_path(&req) { Either::Left(self.0.call(req)) } else { Either::Right(ready(Ok(refusal()))) }
    }
}
