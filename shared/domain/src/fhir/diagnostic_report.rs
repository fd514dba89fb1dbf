//! `DiagnosticReport`: the results of a lab order, one per order whose lab reported, with one
//! contained `Observation` per result (the marker's LOINC code, the value and unit, the
//! reference range, the interpretation). Its id is the order id; `basedOn` is the order's
//! `ServiceRequest`.
//!
//! Sources: the `DiagnosticReport` and `Observation` resources of FHIR R4
//! (<https://hl7.org/fhir/R4/diagnosticreport.html>), the category `LAB` of HL7 v2 table 0074
//! (<https://terminology.hl7.org/CodeSystem-v2-0074.html>), the interpretation codes of
//! <https://terminology.hl7.org/CodeSystem-v3-ObservationInterpretation.html> (`N`, `A`, `AA`,
//! `H`, `L`) and LOINC 11502-2 "Laboratory report" (<https://loinc.org/11502-2/>).

use serde_json::{Value, json};
use uuid::Uuid;
use wearlab_models::lab::{Interpretation, OrderResults, ResultEntry};

use super::codes::{CATEGORY_SYSTEM, LOINC};
use super::{Cursor, FhirError, Params, instant, patient_reference, searchset, subject};
use crate::Deps;
use crate::DomainError;
use crate::common::ids::TeamId;
use crate::lab::orders::{self, OrderRecord};

/// The parameters a DiagnosticReport search takes.
pub const SEARCH_PARAMS: &[&str] = &["subject", "patient", "_count", "_cursor", "_format"];

const V2_0074: &str = "http://terminology.hl7.org/CodeSystem/v2-0074";
const INTERPRETATION: &str = "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation";

/// `GET DiagnosticReport/{id}`: the results of the team's order `id`.
pub async fn read(deps: &Deps, team: TeamId, id: &str) -> Result<Value, FhirError> {
    let missing = || FhirError::NotFound(format!("DiagnosticReport {id} not found."));
    let order_id = Uuid::parse_str(id).map_err(|_| missing())?;
    let (rec, results) = match orders::stored(deps, team, order_id).await {
        Ok(found) => found,
        Err(DomainError::NotFound(_)) => return Err(missing()),
        Err(e) => return Err(e.into()),
    };
    let results = results.ok_or_else(missing)?;
    Ok(of_results(&rec, &results))
}

/// `GET DiagnosticReport?subject=Patient/{id}`: the reports of the user's orders, oldest order
/// first, a page of `_count`.
pub async fn search(deps: &Deps, team: TeamId, base: &str, query: Option<&str>) -> Result<Value, FhirError> {
    let mut p = Params::parse(query);
    let user = subject(&mut p)?;
    let count = p.count();
    let cursor = p.one("_cursor").map(|c| Cursor::decode(&c)).transpose()?;
    let params = p.clone();
    p.finish(SEARCH_PARAMS)?;
    super::patient::check(deps, team, user).await?;
    let all = orders::stored_of_user(deps, user).await?;
    let from = cursor.map_or(0, |c| c.i);
    let mut entries = Vec::new();
    let mut next = None;
    for (i, rec) in all.iter().enumerate().skip(from) {
        if entries.len() == count {
            next = Some(Cursor { i, after: None });
            break;
        }
        if let Some(results) = orders::stored_results(deps, rec).await? {
            entries.push(("DiagnosticReport".to_owned(), rec.id.to_string(), of_results(rec, &results)));
        }
    }
    let self_url = format!("{base}/DiagnosticReport?{}", query.unwrap_or_default());
    let next_url = next.map(|c| format!("{base}/DiagnosticReport?{}", params.query_with_cursor(&c.encode())));
    Ok(searchset(base, entries, &self_url, next_url))
}

/// The report of an order's results.
pub fn of_results(rec: &OrderRecord, results: &OrderResults) -> Value {
    let contained: Vec<Value> =
        results.results.iter().enumerate().map(|(i, r)| observation(rec, results, r, i)).collect();
    let references: Vec<Value> =
        (0..contained.len()).map(|i| json!({"reference": format!("#r{}", i + 1)})).collect();
    let status = if results.metadata.status == "final" { "final" } else { "partial" };
    let mut report = json!({
        "resourceType": "DiagnosticReport",
        "id": rec.id.to_string(),
        "contained": contained,
        "identifier": [{"system": "urn:wearlab:lab:accession_number", "value": rec.sample_id}],
        "basedOn": [{"reference": format!("ServiceRequest/{}", rec.id)}],
        "status": status,
        "category": [{"coding": [{"system": V2_0074, "code": "LAB", "display": "Laboratory"}]}],
        "code": {"coding": [{"system": LOINC, "code": "11502-2", "display": "Laboratory report"}], "text": "Laboratory report"},
        "subject": patient_reference(rec.user_id),
        "issued": instant(results.metadata.date_reported),
        "performer": [{"display": results.metadata.laboratory}],
        "result": references,
    });
    if let Some(at) = results.metadata.date_collected {
        report["effectiveDateTime"] = json!(instant(at));
    }
    if contained.is_empty()
        && let Some(o) = report.as_object_mut()
    {
        o.remove("contained");
        o.remove("result");
    }
    report
}

/// One result as a contained Observation (`#r<n>`).
fn observation(rec: &OrderRecord, results: &OrderResults, r: &ResultEntry, i: usize) -> Value {
    let mut code = json!({"text": r.name});
    if let Some(loinc) = r.loinc.as_deref().filter(|l| !l.is_empty()) {
        code["coding"] = json!([{"system": LOINC, "code": loinc, "display": r.name}]);
    }
    let status = if results.metadata.status == "final" { "final" } else { "preliminary" };
    let mut o = json!({
        "resourceType": "Observation",
        "id": format!("r{}", i + 1),
        "status": status,
        "category": [{"coding": [{"system": CATEGORY_SYSTEM, "code": "laboratory", "display": "Laboratory"}]}],
        "code": code,
        "subject": patient_reference(rec.user_id),
        "issued": instant(r.timestamp),
    });
    if let Some(at) = results.metadata.date_collected {
        o["effectiveDateTime"] = json!(instant(at));
    }
    let quantity = |v: f64| match r.unit.as_deref().filter(|u| !u.is_empty()) {
        Some(unit) => json!({"value": v, "unit": unit}),
        None => json!({"value": v}),
    };
    match (r.result_type.as_str(), r.value) {
        ("numeric", Some(v)) => o["valueQuantity"] = quantity(v),
        _ => o["valueString"] = json!(r.result),
    }
    let mut range = serde_json::Map::new();
    if let Some(lo) = r.min_range_value {
        range.insert("low".into(), quantity(lo));
    }
    if let Some(hi) = r.max_range_value {
        range.insert("high".into(), quantity(hi));
    }
    if !range.is_empty() {
        o["referenceRange"] = json!([range]);
    }
    let (flag, display) = match (r.is_above_max_range, r.is_below_min_range, &r.interpretation) {
        (Some(true), _, _) => ("H", "High"),
        (_, Some(true), _) => ("L", "Low"),
        (_, _, Interpretation::Critical) => ("AA", "Critical abnormal"),
        (_, _, Interpretation::Abnormal) => ("A", "Abnormal"),
        _ => ("N", "Normal"),
    };
    o["interpretation"] = json!([{"coding": [{"system": INTERPRETATION, "code": flag, "display": display}]}]);
    if let Some(n) = r.notes.as_deref().filter(|n| !n.is_empty()) {
        o["note"] = json!([{"text": n}]);
    }
    o
}
