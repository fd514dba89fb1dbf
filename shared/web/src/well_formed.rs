//! Every error answer is well formed, whichever code produced it: a JSON `{"detail": ...}` body
//! for the API (axum's own refusals, e.g. a body over the limit or a query that does not parse,
//! are `text/plain`), the hosted pages' security headers on every answer under a hosted page's
//! path (their 404 and 405 included), and a JSON 414 for a URI longer than the API takes.
//!
//! A layer of its own: a request that succeeds (nearly all of them) pays a status check, no
//! boxed future; only an error answer to rewrite is read in a boxed one.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use tower::{Layer, Service};

use crate::ApiError;
use crate::pages;

/// The longest URI (path and query) the API reads: far above any id, cursor or filter it takes,
/// and under API Gateway's 10 KB request line.
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Error bodies longer than this are not carried over into `detail` (axum's are one line).
const MAX_DETAIL_BYTES: usize = 1024;

#[derive(Clone, Copy, Default)]
pub(crate) struct WellFormedLayer;

impl<S> Layer<S> for WellFormedLayer {
    type Service = WellFormed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        WellFormed(inner)
    }
}

#[derive(Clone)]
pub(crate) struct WellFormed<S>(S);

impl<S> Service<Request> for WellFormed<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answer<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let hosted = pages::is_hosted_path(req.uri().path());
        if req.uri().path_and_query().map_or(0, |p| p.as_str().len()) > MAX_URI_BYTES {
            let refusal = detail(
                StatusCode::URI_TOO_LONG,
                format!("The address is longer than the API reads ({MAX_URI_BYTES} bytes)."),
            );
            return Answer::Ready { response: Some(finish(refusal, hosted)) };
        }
        Answer::Inner { future: self.0.call(req), hosted }
    }
}

pin_project_lite::pin_project! {
    /// The inner service's answer, finished; or an answer made here.
    #[project = AnswerProj]
    pub(crate) enum Answer<F> {
        Inner { #[pin] future: F, hosted: bool },
        Ready { response: Option<Response> },
        /// An error answer whose body is being read to keep its text as the `detail`.
        Rewriting { future: Pin<Box<dyn Future<Output = Response> + Send>> },
    }
}

impl<F> Future for Answer<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let rewriting = match self.as_mut().project() {
                AnswerProj::Inner { future, hosted } => {
                    let Poll::Ready(Ok(response)) = future.poll(cx) else { return Poll::Pending };
                    if !needs_rewrite(&response) {
                        return Poll::Ready(Ok(finish(response, *hosted)));
                    }
                    Box::pin(rewrite(response, *hosted))
                }
                AnswerProj::Rewriting { future } => return future.as_mut().poll(cx).map(Ok),
                AnswerProj::Ready { response } => {
                    return Poll::Ready(Ok(response.take().expect("an answer is polled once")));
                }
            };
            self.set(Answer::Rewriting { future: rewriting });
        }
    }
}

/// An error answer whose body is neither JSON (the API's, or FHIR's `OperationOutcome`) nor a page.
fn needs_rewrite(response: &Response) -> bool {
    if !(response.status().is_client_error() || response.status().is_server_error()) {
        return false;
    }
    let kind = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    !(kind.starts_with("application/json")
        || kind.starts_with("application/fhir+json")
        || kind.starts_with("text/html"))
}

async fn rewrite(response: Response, hosted: bool) -> Response {
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_DETAIL_BYTES)
        .await
        .ok()
        .and_then(|b| String::from_utf8(b.to_vec()).ok())
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| parts.status.canonical_reason().unwrap_or("Error").to_owned());
    let mut fresh = detail(parts.status, text);
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            fresh.headers_mut().insert(name.clone(), value.clone());
        }
    }
    finish(fresh, hosted)
}

fn detail(status: StatusCode, text: String) -> Response {
    let mut r = ApiError::BadRequest(text).into_response();
    *r.status_mut() = status;
    r
}

/// Under a hosted page's path every answer carries the pages' security headers (a handler's
/// page already has them, with its own form target, which is kept).
fn finish(mut response: Response, hosted: bool) -> Response {
    if hosted && !response.headers().contains_key(header::CONTENT_SECURITY_POLICY) {
        pages::set_security_headers(response.headers_mut(), None);
    }
    response
}
