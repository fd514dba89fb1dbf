//! The providers' push endpoint: no API key (the provider's signature or handshake token is
//! the proof), not in the OpenAPI document (providers call it, not clients).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http::{HeaderMap, Method, StatusCode};
use wearlab_domain::pipeline::push::{self, PushReply};
use wearlab_domain::ports::Queue;
use wearlab_domain::ports::providers::PushRequest;
use wearlab_web::{ApiError, AppState};

pub const PATH: &str = "/v2/provider_webhooks/{provider}";

pub async fn receive(
    State(s): State<AppState>,
    Extension(pull_queue): Extension<Arc<dyn Queue>>,
    Path(provider): Path<String>,
    method: Method,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request = PushRequest {
        method: method.as_str().to_owned(),
        query: url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()).into_owned().collect(),
        headers: headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect(),
        body: body.to_vec(),
    };
    Ok(match push::receive(&s.deps, pull_queue.as_ref(), &provider, &request).await? {
        PushReply::Handshake { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            match body {
                Some(b) => (status, Json(b)).into_response(),
                None => status.into_response(),
            }
        }
        PushReply::Accepted { .. } => {
            (StatusCode::OK, Json(serde_json::json!({"status": "accepted"}))).into_response()
        }
    })
}
