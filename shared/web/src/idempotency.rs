//! `X-Idempotency-Key` on POST requests: the first answer (status and body) is kept per team
//! for 24 hours and replayed for a repeat of the same request; the rules are in
//! `wearlab_domain::idempotency`.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, StatusCode};
use wearlab_domain::idempotency::{self, Claim, IdempotencyKey, StoredResponse};

use crate::extract::MAX_BODY_BYTES;
use crate::{ApiError, AppState, AuthTeam};

pub const IDEMPOTENCY_HEADER: &str = "x-idempotency-key";
pub const REPLAYED_HEADER: &str = "idempotent-replayed";
/// How long a repeat waits for the first request with its key before answering 409.
const WAIT_POLLS: u32 = 50;
const WAIT_POLL: Duration = Duration::from_millis(100);

fn too_large() -> Response {
    ApiError::PayloadTooLarge(format!(
        "Request body too large: the limit is {} MB. Split the request into smaller ones.",
        MAX_BODY_BYTES / (1024 * 1024)
    ))
    .into_response()
}

/// Middleware for every route; acts on POST requests that carry the header.
pub async fn honour_idempotency_key(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST || !req.headers().contains_key(IDEMPOTENCY_HEADER) {
        return next.run(req).await;
    }
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
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else { return too_large() };
    let target = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let fingerprint = idempotency::fingerprint(parts.method.as_str(), target, &bytes);

    let mut polls = 0;
    let token = loop {
        match idempotency::claim(&state.deps, team, &key, &fingerprint).await {
            Ok(Claim::Proceed(token)) => break token,
            Ok(Claim::Replay(stored)) => return replay(stored),
            Ok(Claim::Mismatch) => {
                return ApiError::Validation(vec![wearlab_domain::error::issue(
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

    let response = next.run(Request::from_parts(parts, Body::from(bytes))).await;
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
