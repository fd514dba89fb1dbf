//! `/v3/insurance/search/payor`: finding the `payor_code` of an insurance company.

use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use wearlab_domain::lab::insurance::{self, PayorSearch};
use wearlab_models::lab::PayorSearchEntry;
use wearlab_web::Inputs;
use wearlab_web::{ApiError, AuthTeam, QueryParams};

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PayorSearchParams {
    /// Case-insensitive part of the payor's name or of one of its aliases (e.g. `uhc`).
    insurance_name: Option<String>,
    /// The clearinghouse whose payer id `provider_payor_id` is: change_healthcare, availity,
    /// stedi, waystar, claim_md or apero. Required with `provider_payor_id`.
    provider: Option<String>,
    /// The payor's id at that clearinghouse.
    provider_payor_id: Option<String>,
}

/// Searches the payor directory; without criteria lists all of it.
#[utoipa::path(get, path = "/v3/insurance/search/payor", operation_id = "search_payor", tag = "lab",
    params(PayorSearchParams),
    responses((status = 200, description = "Matching payors, possibly none.", body = Vec<PayorSearchEntry>)))]
pub async fn search(
    AuthTeam(_team): AuthTeam,
    QueryParams(p): QueryParams<PayorSearchParams>,
) -> Result<Json<Vec<PayorSearchEntry>>, ApiError> {
    let search = PayorSearch::parse(
        p.insurance_name.as_deref(),
        p.provider.as_deref(),
        p.provider_payor_id.as_deref(),
    )
    .map_err(|e| {
        Inputs { query: &["insurance_name", "provider", "provider_payor_id"], path: &[] }.locate(e)
    })?;
    Ok(Json(insurance::search_payors(&search)))
}
