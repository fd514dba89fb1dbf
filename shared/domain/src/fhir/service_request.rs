//! `ServiceRequest`: a lab order as placed (its id the order id), with its status, priority,
//! ordering physician and accession number. Source: <https://hl7.org/fhir/R4/servicerequest.html>
//! (`status`: `active`, `completed`, `revoked`; `intent` `order`; `priority` `routine` or
//! `urgent`).

use serde_json::{Value, json};
use uuid::Uuid;

use super::codes::LOINC;
use super::{FhirError, instant, patient_reference};
use crate::Deps;
use crate::DomainError;
use crate::common::ids::TeamId;
use crate::lab::orders::{self, OrderRecord};
use crate::ports::lab_network::status_group;

/// `GET ServiceRequest/{id}`: the team's order `id`.
pub async fn read(deps: &Deps, team: TeamId, id: &str) -> Result<Value, FhirError> {
    let missing = || FhirError::NotFound(format!("ServiceRequest {id} not found."));
    let order_id = Uuid::parse_str(id).map_err(|_| missing())?;
    match orders::stored(deps, team, order_id).await {
        Ok((rec, _)) => Ok(of_order(&rec)),
        Err(DomainError::NotFound(_)) => Err(missing()),
        Err(e) => Err(e.into()),
    }
}

/// FHIR's request status of an order's status group.
fn status(order_status: &str) -> &'static str {
    match status_group(order_status) {
        "completed" => "completed",
        "cancelled" | "failed" => "revoked",
        _ => "active",
    }
}

/// The order as a ServiceRequest.
pub fn of_order(rec: &OrderRecord) -> Value {
    let doctor = format!("{} {}", rec.physician.first_name, rec.physician.last_name);
    json!({
        "resourceType": "ServiceRequest",
        "id": rec.id.to_string(),
        "identifier": [{"system": "urn:wearlab:lab:accession_number", "value": rec.sample_id}],
        "status": status(&rec.status),
        "intent": "order",
        "category": [{"coding": [{"system": "http://snomed.info/sct", "code": "108252007", "display": "Laboratory procedure"}]}],
        "priority": if rec.priority { "urgent" } else { "routine" },
        "code": {"coding": [{"system": LOINC, "code": "11502-2", "display": "Laboratory report"}], "text": "Laboratory tests"},
        "subject": patient_reference(rec.user_id),
        "authoredOn": instant(rec.created_at),
        "requester": {
            "display": doctor,
            "identifier": {"system": "http://hl7.org/fhir/sid/us-npi", "value": rec.physician.npi},
        },
    })
}
