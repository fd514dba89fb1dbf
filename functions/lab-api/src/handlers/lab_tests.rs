//! `/v3/lab_test` (cursor pages) and the deprecated `/v3/lab_tests` (plain list).

use axum::Json;
use axum::http::{HeaderMap, HeaderValue};
use serde::Deserialize;
use utoipa::IntoParams;
use wearlab_domain::lab::test_catalog::{self, LabTestFilter};
use wearlab_models::lab::{LabTest, LabTestPage};
use wearlab_web::Inputs;
use wearlab_web::{ApiError, AuthTeam, QueryParams};

/// `Deprecation` (RFC 9745) of GET /v3/lab_tests: deprecated since 2025-01-01.
pub const LAB_TESTS_DEPRECATED_AT: &str = "@1735689600";

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LabTestParams {
    /// Lab tests per page, 1 to 100 (default 50).
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    lab_test_limit: Option<i64>,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    next_cursor: Option<String>,
    /// Only this lab's tests.
    #[serde(default)]
    lab_slug: Option<String>,
    /// Only tests for this collection method (testkit, walk_in_test, at_home_phlebotomy).
    #[serde(default)]
    collection_method: Option<String>,
    /// Case-insensitive part of the test's name or slug.
    #[serde(default)]
    name: Option<String>,
}

/// Lists lab tests, a page at a time.
#[utoipa::path(get, path = "/v3/lab_test", operation_id = "list_lab_tests_paginated", tag = "lab", params(LabTestParams),
    responses((status = 200, description = "A page of lab tests and the cursor of the next.", body = LabTestPage)))]
pub async fn list(
    AuthTeam(_team): AuthTeam,
    QueryParams(p): QueryParams<LabTestParams>,
) -> Result<Json<LabTestPage>, ApiError> {
    let filter = LabTestFilter { lab_slug: p.lab_slug, collection_method: p.collection_method, name: p.name };
    Ok(Json(test_catalog::list_lab_tests(&filter, p.lab_test_limit, p.next_cursor.as_deref()).map_err(
        |e| Inputs { query: &["lab_test_limit", "lab_account_id", "next_cursor"], path: &[] }.locate(e),
    )?))
}

/// Deprecated: lists every lab test. Use GET /v3/lab_test.
#[utoipa::path(get, path = "/v3/lab_tests", operation_id = "list_lab_tests", tag = "lab",
    responses((status = 200, description = "Every lab test.", body = Vec<LabTest>,
        headers(
            ("Deprecation" = String, description = "When this operation was deprecated (RFC 9745)."),
            ("Link" = String, description = "The successor operation."),
        ))))]
#[deprecated(note = "use GET /v3/lab_test")]
pub async fn list_deprecated(AuthTeam(_team): AuthTeam) -> (HeaderMap, Json<Vec<LabTest>>) {
    let mut headers = HeaderMap::new();
    headers.insert("deprecation", HeaderValue::from_static(LAB_TESTS_DEPRECATED_AT));
    headers.insert("link", HeaderValue::from_static("</v3/lab_test>; rel=\"successor-version\""));
    (headers, Json(test_catalog::all_lab_tests()))
}
