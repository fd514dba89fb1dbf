//! `GET /fhir/metadata`: the `CapabilityStatement` of what this server does, and nothing more.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::codes::codes;
use super::observation::DEFAULT_DAYS;
use super::{FHIR_VERSION, MAX_COUNT, instant};

/// The statement for a server at `base` (`https://.../fhir`), dated `now`.
pub fn statement(base: &str, now: DateTime<Utc>) -> Value {
    // Every code an Observation carries (heart rate's 8867-4 also codes resting heart rate),
    // each once.
    let mut loinc: Vec<&str> = Vec::new();
    for l in codes().iter().flat_map(|c| std::iter::once(&c.loinc).chain(c.also)) {
        if !loinc.contains(&l.code) {
            loinc.push(l.code);
        }
    }
    let param =
        |name: &str, kind: &str, doc: String| json!({"name": name, "type": kind, "documentation": doc});
    json!({
        "resourceType": "CapabilityStatement",
        "status": "active",
        "date": instant(now),
        "publisher": "Wearlab",
        "kind": "instance",
        "software": {"name": "Wearlab"},
        "implementation": {"description": "Wearlab's wearable data as FHIR R4, read-only", "url": base},
        "fhirVersion": FHIR_VERSION,
        "format": ["json"],
        "rest": [{
            "mode": "server",
            "documentation": "Read-only. Every request carries the team's API key in the x-service-api-key header; \
                every resource belongs to one of the team's users, any other is not found.",
            "security": {"description": "The team's API key in the x-service-api-key header."},
            "resource": [
                {
                    "type": "Patient",
                    "interaction": [{"code": "read"}],
                    "operation": [{
                        "name": "everything",
                        "definition": "http://hl7.org/fhir/OperationDefinition/Patient-everything",
                        "documentation": format!("start and end (dates; default the {DEFAULT_DAYS} days up to today), _count: the Patient, its Observations, then its lab orders placed in the range (ServiceRequest, DocumentReference, DiagnosticReport), paged."),
                    }],
                },
                {
                    "type": "Observation",
                    "interaction": [{"code": "search-type"}],
                    "searchParam": [
                        param("subject", "reference", "Required: Patient/{id} of one of the team's users.".into()),
                        param("patient", "reference", "The same as subject.".into()),
                        param("code", "token", format!("LOINC codes (http://loinc.org|code or code), comma-separated: {}.", loinc.join(", "))),
                        param("category", "token", "vital-signs, activity or laboratory.".into()),
                        param("date", "date", format!(
                            "Prefixes ge, gt, le, lt, eq; taken at UTC days. Without a lower bound, the {DEFAULT_DAYS} days up to the upper one (default today)."
                        )),
                        param("_count", "number", format!("1 to {MAX_COUNT}, default {}.", super::DEFAULT_COUNT)),
                    ],
                },
                {
                    "type": "DiagnosticReport",
                    "interaction": [{"code": "read"}, {"code": "search-type"}],
                    "searchParam": [
                        param("subject", "reference", "Required: Patient/{id}. The results of the patient's lab orders, with one contained Observation per result.".into()),
                        param("patient", "reference", "The same as subject.".into()),
                    ],
                },
                {"type": "ServiceRequest", "interaction": [{"code": "read"}]},
                {"type": "DocumentReference", "interaction": [{"code": "read"}]},
            ],
        }],
    })
}
