//! `/fhir/**`: the team's data as FHIR R4 (`application/fhir+json`), read-only. Handlers parse,
//! call one use case of `wearlab_domain::fhir`, and answer; every refusal is an
//! `OperationOutcome`. The routes are left out of the OpenAPI document: the FHIR API describes
//! itself at `GET /fhir/metadata`.

mod handlers;

use axum::routing::{any, get};
use wearlab_web::audit::AuditLayer;
use wearlab_web::{AppState, Routes};

/// The routes of this function. All of them read health data (the statement aside), so every
/// request is recorded in the audit log.
pub fn routes() -> Routes {
    Routes::new()
        .route("/fhir/Patient/{user_id}", get(handlers::patient).fallback(handlers::not_allowed))
        .route(
            "/fhir/Patient/{user_id}/$everything",
            get(handlers::everything).fallback(handlers::not_allowed),
        )
        .route("/fhir/Observation", get(handlers::observations).fallback(handlers::not_allowed))
        .route("/fhir/DiagnosticReport", get(handlers::diagnostic_reports).fallback(handlers::not_allowed))
        .route(
            "/fhir/DiagnosticReport/{order_id}",
            get(handlers::diagnostic_report).fallback(handlers::not_allowed),
        )
        .route(
            "/fhir/ServiceRequest/{order_id}",
            get(handlers::service_request).fallback(handlers::not_allowed),
        )
        .route(
            "/fhir/DocumentReference/{order_id}",
            get(handlers::document_reference).fallback(handlers::not_allowed),
        )
        .route("/fhir/{*rest}", any(handlers::unsupported))
        .layer(AuditLayer)
        .route("/fhir/metadata", get(handlers::metadata).fallback(handlers::not_allowed))
        .route("/fhir", any(handlers::unsupported))
}

/// The function as served.
pub fn app(state: AppState) -> wearlab_web::App {
    wearlab_web::app(routes(), state)
}
