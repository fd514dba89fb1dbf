//! Per-team fair use at the HTTP edge: [`AuthTeam`](crate::AuthTeam) admits each request of a
//! team through `wearlab_domain::common::fair_use` (429 when the team is over its limit), and
//! [`RateLimitHeadersLayer`] writes what it was told as `RateLimit-Limit`,
//! `RateLimit-Remaining` and `RateLimit-Reset` on the answer, refused or not.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use http::HeaderValue;
use tower::{Layer, Service};
use wearlab_domain::common::fair_use::Admission;

use crate::auth::API_KEY_HEADER;

/// Where the admission of a request is left for the answer's headers.
#[derive(Clone, Default)]
pub(crate) struct AdmissionSlot(Arc<OnceLock<Admission>>);

impl AdmissionSlot {
    pub(crate) fn set(&self, admission: Admission) {
        let _ = self.0.set(admission);
    }

    pub(crate) fn get(&self) -> Option<Admission> {
        self.0.get().copied()
    }
}

/// Adds the `RateLimit-*` headers of the request's admission to its answer. Only requests with
/// an API key get a slot (one small allocation); the others pass untouched.
#[derive(Clone, Copy, Default)]
pub struct RateLimitHeadersLayer;

impl<S> Layer<S> for RateLimitHeadersLayer {
    type Service = RateLimitHeaders<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitHeaders { inner }
    }
}

/// The service of [`RateLimitHeadersLayer`].
#[derive(Clone)]
pub struct RateLimitHeaders<S> {
    inner: S,
}

impl<S> Service<Request> for RateLimitHeaders<S>
where
    S: Service<Request, Response = Response>,
    S::Future: Unpin,
{
    type Response = Response;
    type Error = S::Error;
    type Future = RateLimitHeadersFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let slot = req.headers().contains_key(API_KEY_HEADER).then(AdmissionSlot::default);
        if let Some(slot) = &slot {
            req.extensions_mut().insert(slot.clone());
        }
        RateLimitHeadersFuture { inner: self.inner.call(req), slot }
    }
}

/// The future of [`RateLimitHeaders`].
pub struct RateLimitHeadersFuture<F> {
    inner: F,
    slot: Option<AdmissionSlot>,
}

impl<F, E> Future for RateLimitHeadersFuture<F>
where
    F: Future<Output = Result<Response, E>> + Unpin,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut res = match Pin::new(&mut this.inner).poll(cx) {
            Poll::Ready(Ok(res)) => res,
            other => return other,
        };
        if let Some(a) = this.slot.take().and_then(|s| s.0.get().copied()) {
            let headers = res.headers_mut();
            headers.insert("ratelimit-limit", HeaderValue::from(a.limit));
            headers.insert("ratelimit-remaining", HeaderValue::from(a.remaining));
            headers.insert("ratelimit-reset", HeaderValue::from(a.reset_secs));
        }
        Poll::Ready(Ok(res))
    }
}
