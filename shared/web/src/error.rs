//! The mapping from refusals to the API's JSON answers (status, body, `Retry-After`), and where a
//! validation issue's field was in the request ([`Inputs`]). The hosted pages answer the same
//! refusals as HTML pages instead (`pages::PageError`: a busy store is a "try again" page, not a
//! 409), and the hosted OAuth start turns a refusal of the team's settings into a page of its own
//! (`link-api`'s `handlers/web.rs`).

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use wearlab_domain::DomainError;
use wearlab_domain::ports::StoreError;
use wearlab_models::{
    ConflictBody, ConflictDetail, DetailBody, LocPart, ValidationErrorBody, ValidationIssue,
};

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
    /// A `Content-Encoding` the API does not decode: 415.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Over a usage limit: 429 with `Retry-After` in whole seconds.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after_secs: u64 },
    /// Logged with its cause; the client sees a generic text.
    #[error("{0}")]
    Internal(String),
    #[error("{0}")]
    Unavailable(String),
}

/// Where a route takes its inputs: the names of its query and path parameters. A use case's
/// validation issue names a field (`["end_date"]`, `["patient_address", "zip_code"]`); the web
/// layer says where the field was: in the query or the path when the route names it so, else in
/// the body. `?` on a [`DomainError`] locates its issues in the body ([`Inputs::BODY`]).
#[derive(Debug, Clone, Copy)]
pub struct Inputs {
    pub query: &'static [&'static str],
    pub path: &'static [&'static str],
}

impl Inputs {
    /// A route whose use case validates its body only.
    pub const BODY: Inputs = Inputs { query: &[], path: &[] };

    /// The one mapping of a refusal to its answer, each validation issue under the input it
    /// came from.
    pub fn locate(&self, e: DomainError) -> ApiError {
        match e {
            DomainError::Validation(issues) => {
                ApiError::Validation(issues.into_iter().map(|i| self.locate_issue(i)).collect())
            }
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

    fn locate_issue(&self, mut issue: ValidationIssue) -> ValidationIssue {
        let first = match issue.loc.first() {
            Some(LocPart::Key(k)) => Some(k.as_str()),
            _ => None,
        };
        let place = match first {
            Some(f) if self.query.contains(&f) => "query",
            Some(f) if self.path.contains(&f) => "path",
            _ => "body",
        };
        issue.loc.insert(0, place.into());
        issue
    }
}

/// An uploaded logo's refusal: another type 415, too large 413, not the declared image 422.
impl From<wearlab_domain::teams::branding::LogoRefusal> for ApiError {
    fn from(e: wearlab_domain::teams::branding::LogoRefusal) -> Self {
        use wearlab_domain::teams::branding::LogoRefusal;
        match e {
            LogoRefusal::UnsupportedType => ApiError::UnsupportedMediaType(e.to_string()),
            LogoRefusal::TooLarge => ApiError::PayloadTooLarge(e.to_string()),
            LogoRefusal::NotThatImage(_) => ApiError::invalid(&["body"], e.to_string(), "value_error"),
        }
    }
}

impl ApiError {
    /// One offending input, already located (`["path", "order_id"]`): for checks the web layer
    /// makes itself before any use case runs.
    pub fn invalid(loc: &[&str], msg: impl Into<String>, kind: &str) -> ApiError {
        ApiError::Validation(vec![wearlab_domain::common::error::issue(loc, msg, kind)])
    }
}

impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        Inputs::BODY.locate(e)
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
            ApiError::UnsupportedMediaType(m) => detail(StatusCode::UNSUPPORTED_MEDIA_TYPE, m),
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
