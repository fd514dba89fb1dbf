//! The one mapping from refusals to HTTP answers.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use wearlab_domain::DomainError;
use wearlab_domain::ports::StoreError;
use wearlab_models::{ConflictBody, ConflictDetail, DetailBody, ValidationErrorBody, ValidationIssue};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("validation failed")]
    Validation(Vec<ValidationIssue>),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("client_user_id taken")]
    ClientUserIdTaken(ConflictDetail),
    /// Temporary; clients retry 409 after `Retry-After`.
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    /// Over a usage limit: 429 with `Retry-After` in whole seconds.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after_secs: u64 },
    /// Logged with its cause; the client sees a generic text.
    #[error("{0}")]
    Internal(String),
    #[error("{0}")]
    Unavailable(String),
}

impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        match e {
            DomainError::Validation(issues) => ApiError::Validation(issues),
            DomainError::NotFound(m) => ApiError::NotFound(m),
            DomainError::ClientUserIdTaken { user_id, created_on } => {
                ApiError::ClientUserIdTaken(ConflictDetail {
                    error_type: "INVALID_REQUEST".into(),
                    error_message: "A user with this client_user_id already exists.".into(),
                    user_id,
                    created_on,
                })
            }
            DomainError::Rejected(m) => ApiError::BadRequest(m),
            DomainError::Unauthenticated(m) => ApiError::Unauthorized(m),
            DomainError::Forbidden(m) => ApiError::Forbidden(m),
            DomainError::Busy(m) => ApiError::Busy(m),
            DomainError::RateLimited { message, retry_after } => ApiError::TooManyRequests {
                message,
                // Rounded up: a client that waits exactly this long is not refused again.
                retry_after_secs: retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0),
            },
            DomainError::Store(StoreError::InvalidCursor) => ApiError::Validation(vec![ValidationIssue {
                loc: vec!["query".into(), "next_cursor".into()],
                msg: "invalid cursor".into(),
                kind: "value_error".into(),
            }]),
            DomainError::Store(StoreError::Contention(m)) => ApiError::Busy(m),
            DomainError::Store(StoreError::Unavailable(m)) => ApiError::Unavailable(m),
            DomainError::Store(e) => ApiError::Internal(e.to_string()),
            DomainError::Scheduler(e) => ApiError::Unavailable(e.to_string()),
            DomainError::Bus(e) => ApiError::Unavailable(e.to_string()),
        }
    }
}

fn detail(status: StatusCode, text: impl Into<String>) -> Response {
    (status, Json(DetailBody { detail: text.into() })).into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::Validation(issues) => {
                (StatusCode::UNPROCESSABLE_ENTITY, Json(ValidationErrorBody { detail: issues }))
                    .into_response()
            }
            ApiError::BadRequest(m) => detail(StatusCode::BAD_REQUEST, m),
            ApiError::Unauthorized(m) => detail(StatusCode::UNAUTHORIZED, m),
            ApiError::Forbidden(m) => detail(StatusCode::FORBIDDEN, m),
            ApiError::NotFound(m) => detail(StatusCode::NOT_FOUND, m),
            ApiError::MethodNotAllowed => detail(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed"),
            ApiError::ClientUserIdTaken(d) => {
                (StatusCode::BAD_REQUEST, Json(ConflictBody { detail: d })).into_response()
            }
            ApiError::Busy(m) => {
                let mut r = detail(StatusCode::CONFLICT, m);
                r.headers_mut().insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
                r
            }
            ApiError::PayloadTooLarge(m) => detail(StatusCode::PAYLOAD_TOO_LARGE, m),
            ApiError::TooManyRequests { message, retry_after_secs } => {
                let mut r = detail(StatusCode::TOO_MANY_REQUESTS, message);
                r.headers_mut().insert(http::header::RETRY_AFTER, HeaderValue::from(retry_after_secs.max(1)));
                r
            }
            ApiError::Unavailable(cause) => {
                tracing::error!(cause = %cause, "dependency unavailable");
                let mut r =
                    detail(StatusCode::SERVICE_UNAVAILABLE, "Service temporarily unavailable, retry.");
                r.headers_mut().insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
                r
            }
            ApiError::Internal(cause) => {
                tracing::error!(cause = %cause, "internal error");
                detail(StatusCode::INTERNAL_SERVER_ERROR, "Internal error.")
            }
        }
    }
}
