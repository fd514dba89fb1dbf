//! `DocumentReference`: the requisition of a lab order (its id the order id), a PDF at the
//! API's own `GET /v3/order/{order_id}/requisition/pdf` (which takes the same API key). Source:
//! <https://hl7.org/fhir/R4/documentreference.html>.

use serde_json::{Value, json};
use uuid::Uuid;

use super::{FhirError, instant, patient_reference};
use crate::Deps;
use crate::DomainError;
use crate::common::ids::TeamId;
use crate::lab::orders::{self, OrderRecord};

/// `GET DocumentReference/{id}`: the requisition of the team's order `id`; `api_base` is the
/// API's public URL (where the PDF is).
pub async fn read(deps: &Deps, team: TeamId, api_base: &str, id: &str) -> Result<Value, FhirError> {
    let missing = || FhirError::NotFound(format!("DocumentReference {id} not found."));
    let order_id = Uuid::parse_str(id).map_err(|_| missing())?;
    match orders::stored(deps, team, order_id).await {
        Ok((rec, _)) => Ok(of_order(&rec, api_base)),
        Err(DomainError::NotFound(_)) => Err(missing()),
        Err(e) => Err(e.into()),
    }
}

/// The requisition of an order.
pub fn of_order(rec: &OrderRecord, api_base: &str) -> Value {
    json!({
        "resourceType": "DocumentReference",
        "id": rec.id.to_string(),
        "status": "current",
        "type": {"text": "Lab requisition"},
        "subject": patient_reference(rec.user_id),
        "date": instant(rec.created_at),
        "content": [{"attachment": {
            "contentType": "application/pdf",
            "url": format!("{api_base}/v3/order/{}/requisition/pdf", rec.id),
            "title": format!("Requisition {}", rec.sample_id),
        }}],
        "context": {"related": [{"reference": format!("ServiceRequest/{}", rec.id)}]},
    })
}
