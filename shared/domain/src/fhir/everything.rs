//! `GET Patient/{id}/$everything?start=&end=`: the Patient, then its wearable Observations of
//! every code in the range, then its lab orders placed in the range (each order's
//! `ServiceRequest`, requisition `DocumentReference` and, once reported, `DiagnosticReport`), a
//! `searchset` Bundle of `_count` entries a page with `next` links. Source:
//! <https://hl7.org/fhir/R4/patient-operation-everything.html> (`start`, `end`, `_count`).

use chrono::NaiveDate;
use serde_json::Value;

use super::codes::codes;
use super::observation::{self, DEFAULT_DAYS, Entry};
use super::{Cursor, FhirError, Params, diagnostic_report, document_reference, searchset, service_request};
use crate::Deps;
use crate::common::ids::{TeamId, UserId};
use crate::lab::orders;
use crate::pipeline::read::{Days, MAX_RANGE_DAYS};

/// The parameters the operation takes.
pub const PARAMS: &[&str] = &["start", "end", "_count", "_cursor", "_format"];

/// One page of the operation. `base` is the FHIR base, `api_base` the API's (the requisition's
/// PDF).
pub async fn page(
    deps: &Deps,
    team: TeamId,
    base: &str,
    api_base: &str,
    id: &str,
    query: Option<&str>,
) -> Result<Value, FhirError> {
    let mut p = Params::parse(query);
    let day = |p: &mut Params, name: &str| {
        let v = p.one(name)?;
        let parsed = super::parse_date(&v).map(|(d, _)| d);
        if parsed.is_none() {
            p.problem(format!("{name} {v} is not a FHIR date (YYYY-MM-DD) or dateTime"));
        }
        parsed
    };
    let start = day(&mut p, "start");
    let end = day(&mut p, "end");
    let count = p.count();
    let cursor = p.one("_cursor").map(|c| Cursor::decode(&c)).transpose()?;
    let end = end.unwrap_or_else(|| deps.now().date_naive());
    let start = start.unwrap_or(end - chrono::Duration::days(DEFAULT_DAYS - 1));
    if (end - start).num_days() >= MAX_RANGE_DAYS {
        p.problem(format!("start to end spans at most {MAX_RANGE_DAYS} days"));
    }
    let params = p.clone();
    p.finish(PARAMS)?;
    let user = UserId::parse(id).ok_or_else(|| FhirError::NotFound(format!("Patient {id} not found.")))?;
    let record = super::patient::check(deps, team, user).await?;

    let all: Vec<usize> = (0..codes().len()).collect();
    let lab_section = all.len();
    let mut entries: Vec<Entry> = Vec::new();
    if cursor.is_none() {
        let info = crate::lab::demographics::find(deps, user).await?;
        entries.push(("Patient".into(), user.to_string(), super::patient::of_user(&record, info.as_ref())));
    }
    let cursor = cursor.unwrap_or(Cursor { i: 0, after: None });
    let mut next = None;
    if cursor.i < lab_section && start <= end {
        let (found, more) = observation::page(
            deps,
            user,
            &all,
            Days { start, end },
            count - entries.len(),
            Some(cursor.clone()),
        )
        .await?;
        entries.extend(found);
        next = more;
    }
    if next.is_none() {
        let from = match (cursor.i >= lab_section, &cursor.after) {
            (true, Some(a)) => a.parse::<usize>().map_err(|_| bad_cursor())?,
            _ => 0,
        };
        next = lab(deps, user, (start, end), api_base, from, count, &mut entries).await?;
    }
    let self_url = format!("{base}/Patient/{id}/$everything?{}", query.unwrap_or_default());
    let next_url =
        next.map(|c| format!("{base}/Patient/{id}/$everything?{}", params.query_with_cursor(&c.encode())));
    Ok(searchset(base, entries, &self_url, next_url))
}

fn bad_cursor() -> FhirError {
    FhirError::Invalid(vec!["_cursor is not one this server gave".into()])
}

/// The lab orders placed in the range, from the `from`th, while the page has room: each order's
/// entries whole (two or three). Where the next page starts, if an order is left.
async fn lab(
    deps: &Deps,
    user: UserId,
    (start, end): (NaiveDate, NaiveDate),
    api_base: &str,
    from: usize,
    count: usize,
    entries: &mut Vec<Entry>,
) -> Result<Option<Cursor>, FhirError> {
    let in_range: Vec<orders::OrderRecord> = orders::stored_of_user(deps, user)
        .await?
        .into_iter()
        .filter(|o| (start..=end).contains(&o.created_at.date_naive()))
        .collect();
    for (n, rec) in in_range.iter().enumerate().skip(from) {
        if entries.len() + 3 > count && !entries.is_empty() {
            return Ok(Some(Cursor { i: codes().len(), after: Some(n.to_string()) }));
        }
        let id = rec.id.to_string();
        entries.push(("ServiceRequest".into(), id.clone(), service_request::of_order(rec)));
        entries.push(("DocumentReference".into(), id.clone(), document_reference::of_order(rec, api_base)));
        if let Some(results) = orders::stored_results(deps, rec).await? {
            entries.push(("DiagnosticReport".into(), id, diagnostic_report::of_results(rec, &results)));
        }
    }
    Ok(None)
}
