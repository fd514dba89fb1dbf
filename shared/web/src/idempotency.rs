//! `X-Idempotency-Key` on POST requests: the first answer (status and body) is kept per team
//! for 24 hours and replayed for a repeat of the same request; the rules are in
//! `wearlab_domain::common::idempotency`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, StatusCode};
use tower::{Layer, Service};
use wearlab_domain::common::idempotency::{self, Claim, IdempotencyKey, StoredResponse};

use crate::body::{self, MAX_BODY_BYTES};
use crate::{ApiError, AppState, AuthTeam};

pub const IDEMPOTENCY_HEADER: &str = "x-idempotency-key";
pub const REPLAYED_HEADER: &str = "idempotent-replayed";
/// How long a repeat waits for the first request with its key before answering 409.
const WAIT_POLLS: u32 = 50;
const WAIT_POLL: Duration = Duration::from_millis(100);

/// Whether the idempotency rules apply: a POST that carries the header.
fn applies(req: &Request) -> bool {
    req.method() == Method::POST && req.headers().contains_key(IDEMPOTENCY_HEADER)
}

/// Middleware for every route; acts on POST requests that carry the header.
pub async fn honour_idempotency_key(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if !applies(&req) {
        return next.run(req).await;
    }
    claim_and_run(state, req, |req| next.run(req)).await
}

/// [`honour_idempotency_key`] as a layer, which is what `crate::app` serves. Every other
/// request (GETs, POSTs without the header) goes straight to the route: no boxing, no clone of
/// the state, nothing allocated.
#[derive(Clone)]
pub struct IdempotencyLayer {
    state: AppState,
}

impl IdempotencyLayer {
    pub fn new(state: AppState) -> Self {
        Self { state }
    }
}

impl<S> Layer<S> for IdempotencyLayer {
    type Service = Idempotency<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Idempotency { inner, state: self.state.clone() }
    }
}

/// The service of [`IdempotencyLayer`].
#[derive(Clone)]
pub struct Idempotency<S> {
    inner: S,
    state: AppState,
}

impl<S> Service<Request> for Idempotency<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + Unpin + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = IdempotencyFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if !applies(&req) {
            return IdempotencyFuture::Pass(self.inner.call(req));
        }
        // The service that was polled ready runs the request; a fresh clone stays behind.
        let fresh = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, fresh);
        let state = self.state.clone();
        IdempotencyFuture::Claim(Box::pin(claim_and_run(state, req, move |req| async move {
            match ready.call(req).await {
                Ok(res) => res,
                Err(never) => match never {},
            }
        })))
    }
}

/// The future of [`Idempotency`]: the route's own, or the claim-run-keep sequence.
pub enum IdempotencyFuture<F> {
    Pass(F),
    Claim(Pin<Box<dyn Future<Output = Response> + Send>>),
}

impl<F> Future for IdempotencyFuture<F>
where
    F: Future<Output = Result<Response, Infallible>> + Unpin,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Pass(f) => Pin::new(f).poll(cx),
            Self::Claim(f) => f.as_mut().poll(cx).map(Ok),
        }
    }
}

/// Claims the key, runs the request with `run` (or replays the kept answer) and keeps the
/// answer.
async fn claim_and_run<F, Fut>(state: AppState, req: Request, run: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let (mut parts, body) = req.into_parts();
    let raw = parts.headers.get(IDEMPOTENCY_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
    let key = match IdempotencyKey::parse(raw) {
        Ok(k) => k,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let team = match AuthTeam::from_request_parts(&mut parts, &state).await {
        Ok(AuthTeam(team)) => team,
        Err(e) => return e.into_response(),
    };
    // Decoded here, once: the fingerprint is of the body the route reads, so a gzipped request
    // and its plain retry are the same request (`crate::body`).
    let bytes = match body::read(&parts, body).await {
        Ok(bytes) => bytes,
        Err(e) => return e.into_response(),
    };
    body::mark_decoded(&mut parts, bytes.len());
    let target = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let fingerprint = idempotency::fingerprint(parts.method.as_str(), target, &bytes);

    let mut polls = 0;
    let token = loop {
        match idempotency::claim(&state.deps, team, &key, &fingerprint).await {
            Ok(Claim::Proceed(token)) => break token,
            Ok(Claim::Replay(stored)) => return replay(stored),
            Ok(Claim::Mismatch) => {
                return ApiError::Validation(vec![wearlab_domain::common::error::issue(
                    &["header", "X-Idempotency-Key"],
                    "this idempotency key was used for a different request",
                    "idempotency_key_reused",
                )])
                .into_response();
            }
            Ok(Claim::InProgress) if polls < WAIT_POLLS => {
                polls += 1;
                tokio::time::sleep(WAIT_POLL).await;
            }
            Ok(Claim::InProgress) => {
                return ApiError::Busy("A request with this idempotency key is still running; retry.".into())
                    .into_response();
            }
            Err(e) => return ApiError::from(e).into_response(),
        }
    };

    // A use case that can keeps the answer in its own transaction (`Completion`); the
    // `complete` below then finds the claim already answered and leaves it.
    parts.extensions.insert(idempotency::Completion(Some(token.clone())));
    let response = run(Request::from_parts(parts, Body::from(bytes))).await;
    if response.status().is_server_error() {
        // Worth retrying: give the key back so the retry runs the request again.
        if let Err(e) = idempotency::release(&state.deps, token).await {
            tracing::warn!(error = %e, "idempotency claim not released");
        }
        return response;
    }
    let (res_parts, res_body) = response.into_parts();
    let Ok(body) = axum::body::to_bytes(res_body, MAX_BODY_BYTES).await else {
        return ApiError::Internal("response body unreadable".into()).into_response();
    };
    let stored = StoredResponse {
        status: res_parts.status.as_u16(),
        content_type: res_parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    if let Err(e) = idempotency::complete(&state.deps, token, stored).await {
        tracing::warn!(error = %e, "idempotent answer not kept");
    }
    Response::from_parts(res_parts, Body::from(body))
}

fn replay(stored: StoredResponse) -> Response {
    let mut res = Response::new(Body::from(stored.body));
    *res.status_mut() = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    if let Some(ct) = stored.content_type.and_then(|c| HeaderValue::from_str(&c).ok()) {
        res.headers_mut().insert(http::header::CONTENT_TYPE, ct);
    }
    res.headers_mut().insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    res
}
