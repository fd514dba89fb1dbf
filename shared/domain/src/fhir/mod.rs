//! FHIR R4 (4.0.1), read-only: what Wearlab holds, as the resources an EHR reads. One file per
//! resource type (`patient.rs`, `observation.rs`, `diagnostic_report.rs`, `service_request.rs`,
//! `document_reference.rs`, `capability.rs`), the codes every wearable Observation
//! carries in one table (`codes.rs`), and what they share here: the search parameters' parsing,
//! `searchset` Bundles with their paging links, and `OperationOutcome`s.
//!
//! The resources are built as JSON (`serde_json::json!`), not as Rust types: FHIR's resources
//! are wide and sparse, Wearlab emits a small part of each, nothing here reads FHIR back, and
//! what is emitted is checked against the specification by a validator no one here wrote
//! (`infra/tests/fhir/validate.py`, in `make test`), which a hand-written Rust model could not
//! replace. Every resource is scoped to the team like the rest of the API: a user of another
//! team, or none, is a 404.

pub mod capability;
pub mod codes;
pub mod diagnostic_report;
pub mod document_reference;
pub mod everything;
pub mod observation;
pub mod patient;
pub mod service_request;

use base64::Engine;
use chrono::{DateTime, NaiveDate, NaiveTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::DomainError;
use crate::common::ids::UserId;

/// The FHIR version served.
pub const FHIR_VERSION: &str = "4.0.1";

/// Most entries one page of a search answers (`_count`), and the default.
pub const MAX_COUNT: usize = 100;
pub const DEFAULT_COUNT: usize = 50;

/// Why a FHIR request is refused. The edge maps each to its status (400, 404, ...) and answers
/// [`FhirError::outcome`].
#[derive(Debug, thiserror::Error)]
pub enum FhirError {
    /// Search parameters or values the server does not support or cannot read (400).
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
    /// No such resource for this team (404).
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl FhirError {
    /// The `OperationOutcome` that explains the refusal. Store and bus failures name no cause
    /// (the edge logs it).
    pub fn outcome(&self) -> Value {
        match self {
            FhirError::Invalid(problems) => {
                let issues = problems.iter().map(|p| {
                    let code = if p.starts_with("unsupported") { "not-supported" } else { "invalid" };
                    issue("error", code, p)
                });
                outcome_of(issues.collect())
            }
            FhirError::NotFound(m) => outcome("error", "not-found", m),
            FhirError::Domain(e) => match e {
                DomainError::NotFound(m) => outcome("error", "not-found", m),
                DomainError::Validation(issues) => {
                    outcome_of(issues.iter().map(|i| issue("error", "invalid", &i.msg)).collect())
                }
                DomainError::Unauthenticated(m) => outcome("error", "login", m),
                DomainError::Forbidden(m) => outcome("error", "forbidden", m),
                DomainError::RateLimited { message, .. } => outcome("error", "throttled", message),
                DomainError::Busy(m) => outcome("error", "transient", m),
                DomainError::Rejected(m) => outcome("error", "processing", m),
                _ => outcome("fatal", "exception", "Internal error."),
            },
        }
    }
}

/// One issue of an `OperationOutcome` (severity and code from FHIR's `issue-severity` and
/// `issue-type` value sets).
pub fn issue(severity: &str, code: &str, diagnostics: &str) -> Value {
    json!({"severity": severity, "code": code, "diagnostics": diagnostics})
}

/// An `OperationOutcome` of one issue.
pub fn outcome(severity: &str, code: &str, diagnostics: &str) -> Value {
    outcome_of(vec![issue(severity, code, diagnostics)])
}

/// An `OperationOutcome` of these issues.
pub fn outcome_of(issues: Vec<Value>) -> Value {
    json!({"resourceType": "OperationOutcome", "issue": issues})
}

/// A FHIR `instant` (and `dateTime`): RFC 3339 in UTC to the second.
pub fn instant(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The reference to a user's Patient.
pub fn patient_reference(user: UserId) -> Value {
    json!({"reference": format!("Patient/{user}")})
}

/// A `searchset` Bundle of `entries` (each `(resource type, id, resource)`), `self_url` the
/// request's own and `next_url` where the next page is, when one may follow.
pub fn searchset(
    base: &str,
    entries: Vec<(String, String, Value)>,
    self_url: &str,
    next_url: Option<String>,
) -> Value {
    let mut links = vec![json!({"relation": "self", "url": self_url})];
    if let Some(next) = next_url {
        links.push(json!({"relation": "next", "url": next}));
    }
    let entry: Vec<Value> = entries
        .into_iter()
        .map(|(kind, id, resource)| {
            json!({"fullUrl": format!("{base}/{kind}/{id}"), "resource": resource, "search": {"mode": "match"}})
        })
        .collect();
    json!({"resourceType": "Bundle", "type": "searchset", "link": links, "entry": entry})
}

/// A search's query parameters, each read once: whatever is left unread when the search has
/// taken what it supports is reported, never ignored ([`Params::finish`]).
#[derive(Debug, Clone)]
pub struct Params {
    pairs: Vec<(String, String, bool)>,
    problems: Vec<String>,
}

impl Params {
    /// The parameters of a query string (`a=1&b=2`, percent-decoded).
    pub fn parse(query: Option<&str>) -> Self {
        let pairs = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned(), false))
            .collect();
        Self { pairs, problems: Vec::new() }
    }

    /// Every value of `name`, each split at commas (FHIR's "or"), marked read. A modifier
    /// (`code:text`) is not supported: it stays unread and is reported.
    pub fn all(&mut self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (k, v, read) in &mut self.pairs {
            if k == name {
                *read = true;
                out.push(v.clone());
            }
        }
        out
    }

    /// The one value of `name`; a second is a problem.
    pub fn one(&mut self, name: &str) -> Option<String> {
        let mut all = self.all(name);
        if all.len() > 1 {
            self.problems.push(format!("{name} may be given once"));
        }
        all.pop()
    }

    /// A problem with a value.
    pub fn problem(&mut self, text: impl Into<String>) {
        self.problems.push(text.into());
    }

    /// `_count`: 1 to [`MAX_COUNT`], default [`DEFAULT_COUNT`].
    pub fn count(&mut self) -> usize {
        match self.one("_count") {
            None => DEFAULT_COUNT,
            Some(c) => match c.parse::<usize>() {
                Ok(n) if (1..=MAX_COUNT).contains(&n) => n,
                _ => {
                    self.problem(format!("_count must be a whole number from 1 to {MAX_COUNT}"));
                    DEFAULT_COUNT
                }
            },
        }
    }

    /// `_format`, when given, must be JSON (the only format served).
    fn format(&mut self) {
        if let Some(f) = self.one("_format")
            && !matches!(f.as_str(), "json" | "application/json" | "application/fhir+json")
        {
            self.problem(format!("unsupported _format {f}: only application/fhir+json is served"));
        }
    }

    /// The parameters as read, or every problem: each parameter left unread is reported as
    /// unsupported (`supported` names the ones this search takes).
    pub fn finish(mut self, supported: &[&str]) -> Result<(), FhirError> {
        self.format();
        let mut problems = std::mem::take(&mut self.problems);
        for (k, _, read) in &self.pairs {
            if !*read {
                problems.push(format!(
                    "unsupported search parameter {k}: this search takes {}",
                    supported.join(", ")
                ));
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(FhirError::Invalid(problems)) }
    }

    /// The parameters as given, for paging links (`_cursor` replaced).
    pub fn query_with_cursor(&self, cursor: &str) -> String {
        let mut s = url::form_urlencoded::Serializer::new(String::new());
        for (k, v, _) in &self.pairs {
            if k != "_cursor" {
                s.append_pair(k, v);
            }
        }
        s.append_pair("_cursor", cursor);
        s.finish()
    }
}

/// The Patient a search names (`subject=Patient/{id}`, `subject={id}`, or `patient=...`).
pub fn subject(params: &mut Params) -> Result<UserId, FhirError> {
    let mut given = params.all("subject");
    given.extend(params.all("patient"));
    match given.as_slice() {
        [one] => {
            let id = one.strip_prefix("Patient/").unwrap_or(one);
            UserId::parse(id).ok_or_else(|| FhirError::NotFound(format!("Patient {id} not found.")))
        }
        [] => Err(FhirError::Invalid(vec![
            "subject (or patient) is required: Patient/{id} of one of the team's users".into(),
        ])),
        _ => Err(FhirError::Invalid(vec!["subject (or patient) may be given once".into()])),
    }
}

/// The days a `date` search covers: each value a FHIR date or dateTime with a prefix (`ge`,
/// `gt`, `le`, `lt`, `eq`, none is `eq`). Wearlab's Observations of wearable data cover UTC days,
/// so a bound is taken at the day it falls in (`lt` a midnight is the day before). Without a
/// lower bound the search starts `default_days` before the upper one (default: today).
pub fn date_range(
    params: &mut Params,
    today: NaiveDate,
    default_days: i64,
) -> Option<(NaiveDate, NaiveDate)> {
    let mut start: Option<NaiveDate> = None;
    let mut end: Option<NaiveDate> = None;
    for v in params.all("date") {
        let (prefix, value) = match v.get(..2) {
            Some(p @ ("ge" | "gt" | "le" | "lt" | "eq")) => (p, &v[2..]),
            Some(p) if p.chars().all(|c| c.is_ascii_alphabetic()) => {
                params.problem(format!("unsupported date prefix {p}: use ge, gt, le, lt or eq"));
                continue;
            }
            _ => ("eq", v.as_str()),
        };
        let Some((day, midnight)) = parse_date(value) else {
            params.problem(format!("date {value} is not a FHIR date (YYYY-MM-DD) or dateTime"));
            continue;
        };
        let (s, e) = match prefix {
            "ge" => (Some(day), None),
            "gt" => (Some(if midnight { day } else { day.succ_opt()? }), None),
            "le" => (None, Some(day)),
            "lt" => (None, Some(if midnight { day.pred_opt()? } else { day })),
            _ => (Some(day), Some(day)),
        };
        if let Some(s) = s {
            start = Some(start.map_or(s, |c| c.max(s)));
        }
        if let Some(e) = e {
            end = Some(end.map_or(e, |c| c.min(e)));
        }
    }
    let end = end.unwrap_or(today);
    let start = start.unwrap_or(end - chrono::Duration::days(default_days - 1));
    Some((start, end))
}

/// A date (`2026-11-20`: its day, taken as beginning at midnight) or a dateTime (its UTC day,
/// and whether it is that day's midnight).
pub(crate) fn parse_date(s: &str) -> Option<(NaiveDate, bool)> {
    if s.len() == 10 {
        return NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().map(|d| (d, true));
    }
    let t = DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&Utc);
    Some((t.date_naive(), t.time() == NaiveTime::MIN))
}

/// Where a search's next page starts: the position in the code table and the data read's own
/// position within it. Opaque to clients (base64url JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// Index into the list the search walks.
    pub i: usize,
    /// The read's position within that entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl Cursor {
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).expect("cursor serializes");
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    pub fn decode(s: &str) -> Result<Self, FhirError> {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(|| FhirError::Invalid(vec!["_cursor is not one this server gave".into()]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn date_bounds_become_utc_days() {
        let today = day("2026-11-28");
        let mut p = Params::parse(Some("date=ge2026-11-01&date=lt2026-11-10"));
        assert_eq!(date_range(&mut p, today, 30), Some((day("2026-11-01"), day("2026-11-09"))));
        let mut p = Params::parse(Some("date=lt2026-11-10T12:00:00Z"));
        assert_eq!(date_range(&mut p, today, 30), Some((day("2026-10-12"), day("2026-11-10"))));
        let mut p = Params::parse(Some("date=2026-11-05"));
        assert_eq!(date_range(&mut p, today, 30), Some((day("2026-11-05"), day("2026-11-05"))));
        assert!(p.finish(&["date"]).is_ok());
    }

    #[test]
    fn unread_and_bad_parameters_are_reported_not_ignored() {
        let mut p = Params::parse(Some("date=sa2026-11-01&_sort=date&_count=500"));
        date_range(&mut p, day("2026-11-28"), 30);
        p.count();
        let Err(FhirError::Invalid(problems)) = p.finish(&["date", "_count"]) else { panic!() };
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("_sort")));
        assert!(problems.iter().any(|p| p.contains("prefix sa")));
        assert!(problems.iter().any(|p| p.contains("_count")));
    }
}
