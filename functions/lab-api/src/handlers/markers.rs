//! `/v3/lab_tests/markers`, `/v3/lab_tests/{lab_test_id}/markers`,
//! `/v3/lab_tests/list_order_set_markers`: the marker catalog.

use axum::Json;
use axum::extract::Path;
use axum::http::Uri;
use serde::Deserialize;
use utoipa::IntoParams;
use wearlab_domain::lab::test_catalog::{self, MarkerFilter, PageSpec};
use wearlab_models::DetailBody;
use wearlab_models::lab::{MarkerPage, OrderSetMarkersBody};
use wearlab_web::{ApiError, AuthTeam, Inputs, JsonBody, QueryParams};

use crate::query::RawParams;

/// Query of GET /v3/lab_tests/markers (documentation; read by `RawParams`).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct MarkerParams {
    /// Labs to list, as repeated keys: `?lab_id=1&lab_id=2`.
    lab_id: Option<Vec<i64>>,
    /// A lab's slug; wins over `lab_id` when both are given.
    lab_slug: Option<String>,
    /// Case-insensitive part of a marker's name, of a panel's name or of a test code.
    name: Option<String>,
    a_la_carte_enabled: Option<bool>,
    /// The lab account deciding which markers are available.
    lab_account_id: Option<uuid::Uuid>,
    /// Page number, from 1 (default 1).
    #[param(minimum = 1)]
    page: Option<i64>,
    /// Page size, 1 to 100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    size: Option<i64>,
}

/// Lists markers (biomarkers and panels) with their expected results.
#[utoipa::path(get, path = "/v3/lab_tests/markers", operation_id = "list_markers", tag = "lab", params(MarkerParams),
    responses((status = 200, description = "A page of markers.", body = MarkerPage)))]
pub async fn list(AuthTeam(_team): AuthTeam, uri: Uri) -> Result<Json<MarkerPage>, ApiError> {
    let mut q = RawParams::parse(uri.query());
    let lab_ids = q.all::<i64>("lab_id", "integer");
    let lab_account_id = q.one::<uuid::Uuid>("lab_account_id", "UUID");
    let a_la_carte_enabled = q.boolean("a_la_carte_enabled");
    let page = q.one::<i64>("page", "integer");
    let size = q.one::<i64>("size", "integer");
    let filter = MarkerFilter {
        lab_ids,
        lab_slug: q.string("lab_slug"),
        name: q.string("name").unwrap_or_default(),
        a_la_carte_enabled,
        lab_account_id,
    };
    q.finish()?;
    let spec = PageSpec::parse(page, size).map_err(|e| PAGES.locate(e))?;
    Ok(Json(test_catalog::list_markers(&filter, spec).map_err(|e| PAGES.locate(e))?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LabTestMarkerParams {
    /// The lab account deciding which markers are available.
    #[serde(default)]
    lab_account_id: Option<uuid::Uuid>,
    /// Page number, from 1 (default 1).
    #[serde(default)]
    #[param(minimum = 1)]
    page: Option<i64>,
    /// Page size, 1 to 100 (default 50).
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    size: Option<i64>,
}

fn lab_test_id(raw: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(raw).map_err(|_| {
        ApiError::invalid(&["path", "lab_test_id"], "Input should be a valid UUID", "uuid_parsing")
    })
}

/// Lists the markers of one lab test.
#[utoipa::path(get, path = "/v3/lab_tests/{lab_test_id}/markers", operation_id = "list_lab_test_markers", tag = "lab",
    params(("lab_test_id" = uuid::Uuid, Path, description = "The lab test's id."), LabTestMarkerParams),
    responses(
        (status = 200, description = "A page of the lab test's markers.", body = MarkerPage),
        (status = 404, description = "No such lab test.", body = DetailBody),
    ))]
pub async fn of_lab_test(
    AuthTeam(_team): AuthTeam,
    Path(id): Path<String>,
    QueryParams(p): QueryParams<LabTestMarkerParams>,
) -> Result<Json<MarkerPage>, ApiError> {
    let id = lab_test_id(&id)?;
    let spec = PageSpec::parse(p.page, p.size).map_err(|e| PAGES.locate(e))?;
    Ok(Json(test_catalog::lab_test_markers(id, p.lab_account_id, spec).map_err(|e| PAGES.locate(e))?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Page number, from 1 (default 1).
    #[serde(default)]
    #[param(minimum = 1)]
    page: Option<i64>,
    /// Page size, 1 to 100 (default 50).
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    size: Option<i64>,
}

/// Lists the markers of an order set: its lab tests' markers and its add-ons.
#[utoipa::path(post, path = "/v3/lab_tests/list_order_set_markers", operation_id = "list_order_set_markers", tag = "lab",
    request_body = OrderSetMarkersBody, params(PageParams),
    responses((status = 200, description = "A page of the order set's markers.", body = MarkerPage)))]
pub async fn of_order_set(
    AuthTeam(_team): AuthTeam,
    QueryParams(p): QueryParams<PageParams>,
    JsonBody(body): JsonBody<OrderSetMarkersBody>,
) -> Result<Json<MarkerPage>, ApiError> {
    let spec = PageSpec::parse(p.page, p.size).map_err(|e| PAGES.locate(e))?;
    Ok(Json(test_catalog::order_set_markers(&body, spec)?))
}

/// A marker listing's inputs: the page and the filters are in the query.
const PAGES: Inputs = Inputs {
    query: &["page", "size", "lab_id", "lab_account_id", "name", "a_la_carte_enabled", "lab_slug"],
    path: &["lab_test_id"],
};
