//! One function per interaction: authenticate, call one use case, answer `application/fhir+json`.

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use serde_json::Value;
use wearlab_domain::DomainError;
use wearlab_domain::common::ids::TeamId;
use wearlab_domain::fhir::{self, FhirError};
use wearlab_web::{ApiError, AppState, AuthTeam};

/// FHIR's JSON media type.
pub const FHIR_JSON: &str = "application/fhir+json";

/// A FHIR answer: a resource, or an `OperationOutcome` with its status.
pub struct Fhir {
    status: StatusCode,
    body: Value,
    retry_after: Option<u64>,
}

impl Fhir {
    fn ok(body: Value) -> Self {
        Self { status: StatusCode::OK, body, retry_after: None }
    }
}

impl IntoResponse for Fhir {
    fn into_response(self) -> Response {
        let mut r = (self.status, self.body.to_string()).into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(FHIR_JSON));
        if let Some(s) = self.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s.max(1)));
        }
        r
    }
}

impl From<FhirError> for Fhir {
    fn from(e: FhirError) -> Self {
        let status = match &e {
            FhirError::Invalid(_) => StatusCode::BAD_REQUEST,
            FhirError::NotFound(_) => StatusCode::NOT_FOUND,
            FhirError::Domain(d) => match d {
                DomainError::NotFound(_) => StatusCode::NOT_FOUND,
                DomainError::Validation(_) => StatusCode::BAD_REQUEST,
                DomainError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
                DomainError::Forbidden(_) => StatusCode::FORBIDDEN,
                DomainError::Rejected(_) => StatusCode::UNPROCESSABLE_ENTITY,
                DomainError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
                DomainError::Busy(_) => StatusCode::CONFLICT,
                e => {
                    tracing::error!(error = %e, "fhir read failed");
                    StatusCode::SERVICE_UNAVAILABLE
                }
            },
        };
        let retry_after = match &e {
            FhirError::Domain(DomainError::RateLimited { retry_after, .. }) => {
                Some(retry_after.as_secs() + 1)
            }
            _ => None,
        };
        Self { status, body: e.outcome(), retry_after }
    }
}

/// A refusal of the API's own extractors (the API key, fair use) as an `OperationOutcome`.
impl From<ApiError> for Fhir {
    fn from(e: ApiError) -> Self {
        let (status, code, text, retry_after) = match e {
            ApiError::Unauthorized(m) => (StatusCode::UNAUTHORIZED, "login", m, None),
            ApiError::Forbidden(m) => (StatusCode::FORBIDDEN, "forbidden", m, None),
            ApiError::NotFound(m) => (StatusCode::NOT_FOUND, "not-found", m, None),
            ApiError::TooManyRequests { message, retry_after_secs } => {
                (StatusCode::TOO_MANY_REQUESTS, "throttled", message, Some(retry_after_secs))
            }
            ApiError::Busy(m) => (StatusCode::CONFLICT, "transient", m, Some(1)),
            e => {
                tracing::error!(error = %e, "fhir request refused");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "transient",
                    "Service temporarily unavailable, retry.".into(),
                    Some(1),
                )
            }
        };
        Self { status, body: fhir::outcome("error", code, &text), retry_after }
    }
}

type Answer = Result<Fhir, Fhir>;

/// The team of the request's API key, refused as an `OperationOutcome` (401).
pub struct Team(TeamId);

impl FromRequestParts<AppState> for Team {
    type Rejection = Fhir;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, Fhir> {
        Ok(Team(AuthTeam::from_request_parts(parts, s).await?.0))
    }
}

/// The server's base URL: the deployment's public URL (or the local stack's host) and `/fhir`.
fn base(s: &AppState, headers: &HeaderMap) -> String {
    format!("{}/fhir", s.public_links(headers).base_url.trim_end_matches('/'))
}

/// `GET /fhir/metadata`: what this server supports. No key needed, as FHIR clients read it first.
pub async fn metadata(State(s): State<AppState>, headers: HeaderMap) -> Fhir {
    Fhir::ok(fhir::capability::statement(&base(&s, &headers), s.deps.now()))
}

/// `GET /fhir/Patient/{id}`.
pub async fn patient(State(s): State<AppState>, Team(team): Team, Path(id): Path<String>) -> Answer {
    Ok(Fhir::ok(fhir::patient::read(&s.deps, team, &id).await?))
}

/// `GET /fhir/Patient/{id}/$everything?start=&end=`: the patient's resources in a date range, paged.
pub async fn everything(
    State(s): State<AppState>,
    Team(team): Team,
    headers: HeaderMap,
    Path(id): Path<String>,
    uri: Uri,
) -> Answer {
    let fhir_base = base(&s, &headers);
    let api = s.public_links(&headers).base_url.trim_end_matches('/').to_owned();
    Ok(Fhir::ok(fhir::everything::page(&s.deps, team, &fhir_base, &api, &id, uri.query()).await?))
}

/// `GET /fhir/Observation?subject=...`.
pub async fn observations(
    State(s): State<AppState>,
    Team(team): Team,
    headers: HeaderMap,
    uri: Uri,
) -> Answer {
    let base = base(&s, &headers);
    Ok(Fhir::ok(fhir::observation::search(&s.deps, team, &base, uri.query()).await?))
}

/// `GET /fhir/DiagnosticReport?subject=...`.
pub async fn diagnostic_reports(
    State(s): State<AppState>,
    Team(team): Team,
    headers: HeaderMap,
    uri: Uri,
) -> Answer {
    let base = base(&s, &headers);
    Ok(Fhir::ok(fhir::diagnostic_report::search(&s.deps, team, &base, uri.query()).await?))
}

/// `GET /fhir/DiagnosticReport/{id}`: a lab order's results.
pub async fn diagnostic_report(
    State(s): State<AppState>,
    Team(team): Team,
    Path(id): Path<String>,
) -> Answer {
    Ok(Fhir::ok(fhir::diagnostic_report::read(&s.deps, team, &id).await?))
}

/// `GET /fhir/ServiceRequest/{id}`: a lab order.
pub async fn service_request(State(s): State<AppState>, Team(team): Team, Path(id): Path<String>) -> Answer {
    Ok(Fhir::ok(fhir::service_request::read(&s.deps, team, &id).await?))
}

/// `GET /fhir/DocumentReference/{id}`: a lab order's requisition (the PDF's address).
pub async fn document_reference(
    State(s): State<AppState>,
    Team(team): Team,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Answer {
    let api = s.public_links(&headers).base_url.trim_end_matches('/').to_owned();
    Ok(Fhir::ok(fhir::document_reference::read(&s.deps, team, &api, &id).await?))
}

/// Any other method on a served path: 405.
pub async fn not_allowed() -> Fhir {
    Fhir {
        status: StatusCode::METHOD_NOT_ALLOWED,
        body: fhir::outcome("error", "not-supported", "This server is read-only: GET only."),
        retry_after: None,
    }
}

/// A path under `/fhir` this server does not serve: a 404 that says what it does serve.
pub async fn unsupported(uri: Uri) -> Fhir {
    Fhir {
        status: StatusCode::NOT_FOUND,
        body: fhir::outcome(
            "error",
            "not-supported",
            &format!(
                "{} is not served: see GET /fhir/metadata for the resources and interactions supported.",
                uri.path()
            ),
        ),
        retry_after: None,
    }
}
