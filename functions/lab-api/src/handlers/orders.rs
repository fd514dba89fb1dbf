//! `/v3/order`, `/v3/order/{order_id}` and its cancel, result and requisition, `/v3/orders`.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::NaiveDate;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use wearlab_domain::common::ids::{TeamId, UserId};
use wearlab_domain::lab::orders::{self, Links, NewOrder, OrderFilter};
use wearlab_domain::lab::test_catalog::PageSpec;
use wearlab_domain::ports::LabNetwork;
use wearlab_models::DetailBody;
use wearlab_models::lab::{CreateOrderBody, Order, OrderPage, OrderResults, PostOrderResponse};
use wearlab_web::{ApiError, AppState, AuthTeam, Inputs, Parsed, QueryParams};

use crate::requisition;

pub fn order_id(raw: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(raw)
        .map_err(|_| ApiError::invalid(&["path", "order_id"], "Input should be a valid UUID", "uuid_parsing"))
}

/// What every API-key route of one order (`/v3/order/{order_id}/...`) starts from: the team of
/// the key (401 first), the order id of the path (422 when it is not a UUID) and where links in
/// the answer point, and the lab network that answers for the order.
pub struct OrderCall {
    pub team: TeamId,
    pub id: uuid::Uuid,
    pub links: Links,
    pub network: Arc<dyn LabNetwork>,
}

impl FromRequestParts<AppState> for OrderCall {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let AuthTeam(team) = AuthTeam::from_request_parts(parts, state).await?;
        // The routes have the one parameter; a path that does not give it is not an order id.
        let raw = Path::<String>::from_request_parts(parts, state).await.map(|p| p.0).unwrap_or_default();
        // lab-api's `app` takes the network and hands it to every route (`Routes::provide`).
        let Extension(network) = Extension::<Arc<dyn LabNetwork>>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        Ok(Self { team, id: order_id(&raw)?, links: state.public_links(&parts.headers), network })
    }
}

/// Places a lab order for a user. `X-Idempotency-Key` makes retries safe.
#[utoipa::path(post, path = "/v3/order", operation_id = "create_order", tag = "lab", request_body = CreateOrderBody,
    responses(
        (status = 200, description = "The placed order.", body = PostOrderResponse),
        (status = 400, description = "The lab refused the order.", body = DetailBody),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn create(
    State(s): State<AppState>,
    Extension(network): Extension<Arc<dyn LabNetwork>>,
    AuthTeam(team): AuthTeam,
    headers: HeaderMap,
    Parsed(new): Parsed<NewOrder>,
) -> Result<Json<PostOrderResponse>, ApiError> {
    let order = orders::create(&s.deps, network.as_ref(), team, new, &s.public_links(&headers)).await?;
    Ok(Json(PostOrderResponse::success(order, "Order created.")))
}

/// Reads an order with its status history.
#[utoipa::path(get, path = "/v3/order/{order_id}", operation_id = "get_order", tag = "lab",
    params(("order_id" = uuid::Uuid, Path, description = "The order's id.")),
    responses(
        (status = 200, description = "The order.", body = Order),
        (status = 404, description = "No such order in this team.", body = DetailBody),
    ))]
pub async fn get(State(s): State<AppState>, o: OrderCall) -> Result<Json<Order>, ApiError> {
    Ok(Json(orders::get(&s.deps, o.network.as_ref(), o.team, o.id, &o.links).await?))
}

/// Newest or oldest first.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Asc,
    Desc,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Only this user's orders.
    #[serde(default)]
    user_id: Option<uuid::Uuid>,
    /// A status group (`received`, `collecting_sample`, `sample_with_lab`, `completed`,
    /// `cancelled`, `failed`) or a whole status (`received.walk_in_test.ordered`).
    #[serde(default)]
    status: Option<String>,
    /// Only orders of this lab.
    #[serde(default)]
    lab_id: Option<i64>,
    /// Only orders with this collection method.
    #[serde(default)]
    collection_method: Option<String>,
    /// Created on or after this date (UTC).
    #[serde(default)]
    start_date: Option<NaiveDate>,
    /// Created on or before this date (UTC).
    #[serde(default)]
    end_date: Option<NaiveDate>,
    /// `desc` (newest first, default) or `asc`.
    #[serde(default)]
    #[param(inline)]
    order_direction: Option<Direction>,
    /// Page number, from 1 (default 1).
    #[serde(default)]
    #[param(minimum = 1)]
    page: Option<i64>,
    /// Page size, 1 to 100 (default 50).
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    size: Option<i64>,
}

/// Lists the team's orders.
#[utoipa::path(get, path = "/v3/orders", operation_id = "list_orders", tag = "lab", params(ListParams),
    responses((status = 200, description = "A page of orders.", body = OrderPage)))]
pub async fn list(
    State(s): State<AppState>,
    Extension(network): Extension<Arc<dyn LabNetwork>>,
    AuthTeam(team): AuthTeam,
    headers: HeaderMap,
    QueryParams(p): QueryParams<ListParams>,
) -> Result<Json<OrderPage>, ApiError> {
    let spec = PageSpec::parse(p.page, p.size)
        .map_err(|e| Inputs { query: &["page", "size"], path: &[] }.locate(e))?;
    if let (Some(a), Some(b)) = (p.start_date, p.end_date)
        && a > b
    {
        return Err(ApiError::invalid(
            &["query", "end_date"],
            "end_date must not be before start_date",
            "value_error",
        ));
    }
    let filter = OrderFilter {
        user_id: p.user_id.map(UserId::from_uuid),
        status: p.status.filter(|s| !s.is_empty()),
        lab_id: p.lab_id,
        collection_method: p.collection_method.filter(|s| !s.is_empty()),
        start_date: p.start_date,
        end_date: p.end_date,
        ascending: matches!(p.order_direction, Some(Direction::Asc)),
    };
    Ok(Json(orders::list(&s.deps, network.as_ref(), team, &filter, spec, &s.public_links(&headers)).await?))
}

/// Cancels an order the lab has not started processing.
#[utoipa::path(post, path = "/v3/order/{order_id}/cancel", operation_id = "cancel_order", tag = "lab",
    params(("order_id" = uuid::Uuid, Path, description = "The order's id.")),
    responses(
        (status = 200, description = "The cancelled order.", body = PostOrderResponse),
        (status = 400, description = "The order can no longer be cancelled.", body = DetailBody),
        (status = 404, description = "No such order in this team.", body = DetailBody),
    ))]
pub async fn cancel(State(s): State<AppState>, o: OrderCall) -> Result<Json<PostOrderResponse>, ApiError> {
    let order = orders::cancel(&s.deps, o.network.as_ref(), o.team, o.id, &o.links).await?;
    Ok(Json(PostOrderResponse::success(order, "Order cancelled.")))
}

/// Reads the results the lab reported for an order (partial, then final).
#[utoipa::path(get, path = "/v3/order/{order_id}/result", operation_id = "get_order_result", tag = "lab",
    params(("order_id" = uuid::Uuid, Path, description = "The order's id.")),
    responses(
        (status = 200, description = "The order's results.", body = OrderResults),
        (status = 404, description = "No such order in this team, or no results yet.", body = DetailBody),
    ))]
pub async fn result(State(s): State<AppState>, o: OrderCall) -> Result<Json<OrderResults>, ApiError> {
    Ok(Json(orders::results(&s.deps, o.network.as_ref(), o.team, o.id, &o.links).await?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SignedParams {
    /// With `signature`: the expiry (epoch seconds) of a signed requisition URL, which needs
    /// no API key.
    #[serde(default)]
    expires: Option<i64>,
    /// With `expires`: the signature of a signed requisition URL.
    #[serde(default)]
    signature: Option<String>,
}

/// A PDF file.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct PdfFile(#[allow(dead_code)] Vec<u8>);

/// Downloads the order's requisition form (PDF): patient, ordering physician, tests and the
/// accession number as a barcode. Takes the API key, or the signature of the deprecated
/// `requisition_form_url`.
#[utoipa::path(get, path = "/v3/order/{order_id}/requisition/pdf", operation_id = "get_order_requisition_pdf", tag = "lab",
    params(("order_id" = uuid::Uuid, Path, description = "The order's id."), SignedParams),
    responses(
        (status = 200, description = "The requisition form.", content_type = "application/pdf", body = PdfFile),
        (status = 404, description = "No such order in this team, or an invalid or expired signature.", body = DetailBody),
    ))]
pub async fn requisition_pdf(
    State(s): State<AppState>,
    auth: Result<AuthTeam, ApiError>,
    Path(id): Path<String>,
    QueryParams(p): QueryParams<SignedParams>,
) -> Result<Response, ApiError> {
    let id = order_id(&id)?;
    let req = match (p.expires, p.signature) {
        (Some(expires), Some(sig)) => orders::requisition_signed(&s.deps, id, expires, &sig).await?,
        _ => {
            let AuthTeam(team) = auth?;
            orders::requisition(&s.deps, team, id).await?
        }
    };
    let pdf = requisition::render(&req);
    let mut res = pdf.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/pdf"));
    // The form names the patient (name, date of birth, address): kept by no browser or proxy.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(v) = HeaderValue::from_str(&format!("inline; filename=\"requisition-{id}.pdf\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(res)
}
