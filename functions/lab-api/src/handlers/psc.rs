//! `/v3/order/{order_id}/psc/info`: patient service centers near an order's patient.

use axum::Json;
use axum::extract::State;
use axum::http::Uri;
use utoipa::IntoParams;
use wearlab_domain::lab::psc;
use wearlab_models::DetailBody;
use wearlab_models::lab::{PscCapability, PscInfo};
use wearlab_web::{ApiError, AppState, Inputs};

use super::orders::OrderCall;
use crate::query::RawParams;

/// Query of the listing (documentation; read by `RawParams`).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PscParams {
    /// Search radius in miles: 10, 20, 25 (default), 50 or 100.
    #[param(inline)]
    radius: Option<PscRadius>,
    /// Keep only centers with every one of these capabilities (repeated keys).
    capabilities: Option<Vec<PscCapability>>,
}

/// A search radius in miles (documentation of `radius`).
pub struct PscRadius;

impl utoipa::PartialSchema for PscRadius {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .enum_values(Some(psc::RADII.iter().map(|r| serde_json::Value::from(*r))))
            .default(Some(serde_json::Value::from(psc::DEFAULT_RADIUS)))
            .into()
    }
}

impl utoipa::ToSchema for PscRadius {}

/// Lists the patient service centers of the order's lab near the patient, nearest first.
#[utoipa::path(get, path = "/v3/order/{order_id}/psc/info", operation_id = "get_order_psc_info", tag = "lab",
    params(("order_id" = uuid::Uuid, Path, description = "The order's id."), PscParams),
    responses(
        (status = 200, description = "Centers within the radius, nearest first.", body = PscInfo),
        (status = 400, description = "The patient's ZIP code has no known location.", body = DetailBody),
        (status = 404, description = "No such order in this team.", body = DetailBody),
    ))]
pub async fn info(State(s): State<AppState>, o: OrderCall, uri: Uri) -> Result<Json<PscInfo>, ApiError> {
    let q = RawParams::parse(uri.query());
    let radius = psc::parse_radius(q.string("radius").as_deref()).map_err(|e| QUERY.locate(e))?;
    let caps = psc::parse_capabilities(&q.all_strings("capabilities")).map_err(|e| QUERY.locate(e))?;
    q.finish()?;
    Ok(Json(psc::for_order(&s.deps, o.network.as_ref(), o.team, o.id, radius, &caps, &o.links).await?))
}

/// The search's inputs: all in the query.
const QUERY: Inputs =
    Inputs { query: &["zip_code", "radius", "lab_id", "lab_account_id", "capabilities"], path: &[] };
