//! `Observation` of wearable data: one per stored day of a timeseries of one provider and
//! source (a period summary), coded from [`super::codes`]. A day of 1-second heart rate is one
//! Observation (the day's mean over its `effectivePeriod`), not 86,400: a page of N
//! Observations reads N stored days, whatever else the user holds. Sleep is read from the
//! sleep summaries instead: one Observation per stored session (a night and a nap are two), a
//! page of N of them one query of N items; and so are the values a day summary holds (the
//! activity summary's resting heart rate, the body summary's height): one Observation per stored
//! summary that holds the value, a page one query of at most N items.
//!
//! Search: `Observation?subject=Patient/{id}&code=&category=&date=&_count=`, paged by `_cursor`.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wearlab_models::data::{BodySummary, Sample, SleepSummary, SleepType, SourceContext};

use super::codes::{
    Aggregate, CATEGORY_SYSTEM, Category, Code, DayReading, DayValue, LOINC, Reading, SleepStage, UCUM, codes,
};
use super::{Cursor, FhirError, Params, date_range, instant, patient_reference, searchset, subject};
use crate::Deps;
use crate::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::pipeline::read::{self, Days, MAX_RANGE_DAYS, SeriesDay};
use crate::ports::StoreError;

/// The parameters an Observation search takes.
pub const SEARCH_PARAMS: &[&str] =
    &["subject", "patient", "code", "category", "date", "_count", "_cursor", "_format"];

/// Days a search without a lower `date` bound covers, up to its upper bound (default today).
pub const DEFAULT_DAYS: i64 = 30;

/// A parsed Observation search.
#[derive(Debug, Clone)]
pub struct Search {
    pub user: UserId,
    /// The codes searched (indices into [`codes`]), in table order.
    pub codes: Vec<usize>,
    pub days: Option<Days>,
    pub count: usize,
    pub cursor: Option<Cursor>,
    params: Params,
}

impl Search {
    /// Reads the query string; anything unsupported or unreadable is a 400 naming it.
    pub fn parse(query: Option<&str>, today: chrono::NaiveDate) -> Result<Self, FhirError> {
        let mut p = Params::parse(query);
        let user = subject(&mut p)?;
        let tokens: Vec<String> = split(p.all("code"));
        // `None`: a category Wearlab does not emit, which matches nothing.
        let mut categories: Vec<Option<Category>> = Vec::new();
        for c in split(p.all("category")) {
            let (system, code) = c.split_once('|').map_or((None, c.as_str()), |(s, c)| (Some(s), c));
            match Category::ALL.iter().find(|k| k.code() == code) {
                Some(k) if system.is_none_or(|s| s.is_empty() || s == CATEGORY_SYSTEM) => {
                    categories.push(Some(*k))
                }
                _ => categories.push(None),
            }
        }
        let range = date_range(&mut p, today, DEFAULT_DAYS);
        let count = p.count();
        let cursor = p.one("_cursor").map(|c| Cursor::decode(&c)).transpose()?;
        let days = match range {
            Some((start, end)) if (end - start).num_days() >= MAX_RANGE_DAYS => {
                p.problem(format!("a date range spans at most {MAX_RANGE_DAYS} days"));
                None
            }
            Some((start, end)) if start <= end => Some(Days { start, end }),
            _ => None,
        };
        let params = p.clone();
        p.finish(SEARCH_PARAMS)?;
        let selected = codes()
            .iter()
            .enumerate()
            .filter(|(_, c)| tokens.is_empty() || tokens.iter().any(|t| c.matches(t)))
            .filter(|(_, c)| categories.is_empty() || categories.iter().flatten().any(|k| *k == c.category))
            .map(|(i, _)| i)
            .collect();
        Ok(Self { user, codes: selected, days, count, cursor, params })
    }
}

/// Comma-separated values (FHIR's "or") of every occurrence, flattened.
fn split(values: Vec<String>) -> Vec<String> {
    values.iter().flat_map(|v| v.split(',')).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// One page of a search: a `searchset` Bundle, its `next` link when more may follow. Costs the
/// user's read (one) and about (the stored items of the page's days) / 100 + 1 reads per code
/// searched.
pub async fn search(deps: &Deps, team: TeamId, base: &str, query: Option<&str>) -> Result<Value, FhirError> {
    let s = Search::parse(query, deps.now().date_naive())?;
    super::patient::check(deps, team, s.user).await?;
    let self_url = format!("{base}/Observation?{}", query.unwrap_or_default());
    let Some(days) = s.days else {
        return Ok(searchset(base, Vec::new(), &self_url, None));
    };
    let (entries, next) = page(deps, s.user, &s.codes, days, s.count, s.cursor.clone()).await?;
    let next_url = next.map(|c| format!("{base}/Observation?{}", s.params.query_with_cursor(&c.encode())));
    Ok(searchset(base, entries, &self_url, next_url))
}

/// A Bundle entry: resource type, id, resource.
pub type Entry = (String, String, Value);

/// At most `count` Observations of the user's `selected` codes (indices into [`codes`], walked in
/// that order) in `days`, from `cursor` (its `i` a position in `selected`), and where the next
/// page starts (`None`: every selected code is read to its end).
pub async fn page(
    deps: &Deps,
    user: UserId,
    selected: &[usize],
    days: Days,
    count: usize,
    cursor: Option<Cursor>,
) -> Result<(Vec<Entry>, Option<Cursor>), FhirError> {
    let mut entries = Vec::new();
    let (first, mut after) = match cursor {
        Some(c) => (c.i, c.after),
        None => (0, None),
    };
    let bad_cursor = |e: DomainError| match e {
        DomainError::Store(StoreError::InvalidCursor) => {
            FhirError::Invalid(vec!["_cursor is not one this server gave".into()])
        }
        e => e.into(),
    };
    for (pos, &i) in selected.iter().enumerate().skip(first) {
        let remaining = count.saturating_sub(entries.len());
        if remaining == 0 {
            return Ok((entries, Some(Cursor { i: pos, after })));
        }
        let code = &codes()[i];
        let after_here = after.take();
        let next = match code.reading {
            Reading::Samples(how) => {
                let got =
                    read::series_days(deps, user, &code.resource, days, after_here.as_deref(), remaining)
                        .await
                        .map_err(bad_cursor)?;
                entries.extend(got.days.iter().filter_map(|d| of_day(code, how, user, d)));
                got.next
            }
            Reading::SleepSessions => {
                let got = read::summary_page::<SleepSummary>(
                    deps,
                    user,
                    &code.resource,
                    days,
                    after_here.as_deref(),
                    remaining,
                )
                .await
                .map_err(bad_cursor)?;
                entries.extend(got.items.iter().map(|s| of_sleep(code, user, s)));
                got.next
            }
            Reading::DayValues(value) => {
                let after_here = after_here.as_deref();
                let (found, next) = match value {
                    DayValue::RestingHeartRate => {
                        day_values(
                            deps,
                            user,
                            code,
                            value,
                            days,
                            after_here,
                            remaining,
                            DayValue::of_activity,
                        )
                        .await
                    }
                    DayValue::Height | DayValue::BodyWeight | DayValue::BodyFat => {
                        day_values(deps, user, code, value, days, after_here, remaining, |b: &BodySummary| {
                            value.of_body(b)
                        })
                        .await
                    }
                }
                .map_err(bad_cursor)?;
                entries.extend(found);
                next
            }
        };
        if let Some(n) = next {
            return Ok((entries, Some(Cursor { i: pos, after: Some(n) })));
        }
    }
    Ok((entries, None))
}

/// At most `max` of the user's day summaries of type `S` that `code` reads, from `after`, and
/// the Observations of the `value` each holds (as `reading` takes it from a summary), with where
/// the next page of summaries starts.
#[allow(clippy::too_many_arguments)]
async fn day_values<S: serde::de::DeserializeOwned>(
    deps: &Deps,
    user: UserId,
    code: &Code,
    value: DayValue,
    days: Days,
    after: Option<&str>,
    max: usize,
    reading: impl for<'a> Fn(&'a S) -> DayReading<'a>,
) -> Result<(Vec<Entry>, Option<String>), DomainError> {
    let got = read::summary_page::<S>(deps, user, &code.resource, days, after, max).await?;
    let found = got.items.iter().filter_map(|s| of_day_value(code, value, user, &reading(s))).collect();
    Ok((found, got.next))
}

/// A stable FHIR id (at most 64 of `[A-Za-z0-9.-]`) of what these parts name.
fn id_of(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..16])
}

/// The id of the Observation of one stored day of samples.
fn id_of_day(user: UserId, code: &Code, day: &SeriesDay) -> String {
    let source = &day.group.source;
    id_of(&[
        user.to_string().as_str(),
        code.resource.as_str(),
        &day.date.to_string(),
        &day.provider,
        &source.source_type,
        source.app_id.as_deref().unwrap_or_default(),
    ])
}

/// Rounded to 2 decimals.
fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// The value of `values` (in the code's unit) by `how`, rounded to 2 decimals.
fn aggregate(how: Aggregate, values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let sum: f64 = values.iter().sum();
    let v = match how {
        Aggregate::Sum => sum,
        Aggregate::Mean => sum / values.len() as f64,
    };
    Some(round2(v))
}

fn quantity(code: &Code, value: f64) -> Value {
    json!({"value": value, "unit": code.unit, "system": UCUM, "code": code.ucum})
}

fn coding(code: &Code) -> Value {
    let mut coding = vec![json!({"system": LOINC, "code": code.loinc.code, "display": code.loinc.display})];
    coding.extend(code.also.iter().map(|l| json!({"system": LOINC, "code": l.code, "display": l.display})));
    json!({"coding": coding, "text": code.text})
}

/// `meta.source` of data from a provider: the provider, by its Wearlab slug.
pub fn provider_source(provider: &str) -> String {
    format!("urn:wearlab:provider:{provider}")
}

/// What every Observation of wearable data holds: its code, category and profile, the patient,
/// and where it came from (`meta.source` the provider, `device.display` the source).
fn observation(code: &Code, id: &str, user: UserId, provider: &str, source: &SourceContext) -> Value {
    let device = match &source.app_id {
        Some(app) => format!("{} ({}, {app})", source.name, source.source_type),
        None => format!("{} ({})", source.name, source.source_type),
    };
    let mut meta = json!({"source": provider_source(provider)});
    if let Some(p) = code.profile_url() {
        meta["profile"] = json!([p]);
    }
    json!({
        "resourceType": "Observation",
        "id": id,
        "meta": meta,
        "status": "final",
        "category": [{"coding": [{"system": CATEGORY_SYSTEM, "code": code.category.code(), "display": code.category.display()}]}],
        "code": coding(code),
        "subject": patient_reference(user),
        "device": {"display": device},
    })
}

/// The Observation of one stored day of samples, its value the day's by `how`, or `None` when
/// none of its samples is in a unit the code reads.
pub fn of_day(code: &Code, how: Aggregate, user: UserId, day: &SeriesDay) -> Option<Entry> {
    let samples: Vec<&Sample> = day.group.data.iter().collect();
    let mut times: Vec<DateTime<Utc>> = Vec::new();
    let mut values = Vec::new();
    let mut diastolic = Vec::new();
    for s in &samples {
        let Some(v) = code.convert(&s.unit, s.systolic.unwrap_or(s.value)) else { continue };
        if code.components.is_some() {
            let Some(d) = s.diastolic.and_then(|d| code.convert(&s.unit, d)) else { continue };
            diastolic.push(d);
        }
        values.push(v);
        times.push(s.timestamp);
    }
    let value = aggregate(how, &values)?;
    let (start, end) = (*times.iter().min()?, *times.iter().max()?);
    let id = id_of_day(user, code, day);
    let what = match how {
        Aggregate::Mean => "Mean",
        Aggregate::Sum => "Sum",
    };
    let source = &day.group.source;
    let mut o = observation(code, &id, user, &day.provider, source);
    o["method"] = json!({"text": format!("{what} of {} samples from {} over the UTC day {}", values.len(), source.name, day.date)});
    if start == end {
        o["effectiveDateTime"] = json!(instant(start));
    } else {
        o["effectivePeriod"] = json!({"start": instant(start), "end": instant(end)});
    }
    match &code.components {
        Some((systolic, dia)) => {
            let d = aggregate(how, &diastolic)?;
            o["component"] = json!([
                {"code": {"coding": [{"system": LOINC, "code": systolic.code, "display": systolic.display}]}, "valueQuantity": quantity(code, value)},
                {"code": {"coding": [{"system": LOINC, "code": dia.code, "display": dia.display}]}, "valueQuantity": quantity(code, d)},
            ]);
        }
        None => o["valueQuantity"] = quantity(code, value),
    }
    Some(("Observation".into(), id, o))
}

/// The Observation of one stored sleep session: over the time in bed, its value the time
/// asleep, and one component per stage ([`SleepStage::ALL`]), each in the code's unit. A
/// session the provider is still recording (`type` `unknown`) is `preliminary`.
pub fn of_sleep(code: &Code, user: UserId, sleep: &SleepSummary) -> Entry {
    let minutes = |seconds: i64| quantity(code, round2(seconds as f64 / 60.0));
    let id = id_of(&[user.to_string().as_str(), code.resource.as_str(), &sleep.id]);
    let source = &sleep.source;
    let mut o = observation(code, &id, user, &source.provider, source);
    if sleep.sleep_type == SleepType::Unknown {
        o["status"] = json!("preliminary");
    }
    o["method"] = json!({"text": format!(
        "Time asleep (light, deep and REM) of one sleep session from {}, by its night of {}",
        source.name, sleep.calendar_date
    )});
    o["effectivePeriod"] = json!({"start": instant(sleep.bedtime_start), "end": instant(sleep.bedtime_stop)});
    o["valueQuantity"] = minutes(sleep.total);
    o["component"] = SleepStage::ALL
        .iter()
        .map(|stage| {
            let concept = match stage.loinc() {
                Some(l) => json!({"coding": [{"system": LOINC, "code": l.code, "display": l.display}], "text": stage.text()}),
                None => json!({"text": stage.text()}),
            };
            json!({"code": concept, "valueQuantity": minutes(stage.seconds(sleep))})
        })
        .collect();
    ("Observation".into(), id, o)
}

/// The Observation of the value one stored day summary holds (`None` when it holds none, or
/// in a unit the code does not read): effective the summary's day (a date: the summary keeps
/// the day, not the time of the reading).
pub fn of_day_value(code: &Code, value: DayValue, user: UserId, day: &DayReading<'_>) -> Option<Entry> {
    let (v, unit) = day.value?;
    let v = round2(code.convert(unit, v)?);
    let id = id_of(&[user.to_string().as_str(), code.resource.as_str(), value.field(), day.id]);
    let source = day.source;
    let mut o = observation(code, &id, user, &source.provider, source);
    o["method"] = json!({"text": format!(
        "The {} summary's {} from {} of the day {}",
        code.resource.as_str(),
        value.field(),
        source.name,
        day.date
    )});
    o["effectiveDateTime"] = json!(day.date.to_string());
    o["valueQuantity"] = quantity(code, v);
    Some(("Observation".into(), id, o))
}

#[cfg(test)]
mod tests {
    use wearlab_models::data::{ActivitySummary, BodySummary, DayHeartRate};

    use super::*;
    use crate::pipeline::normalize::source_of;

    fn user() -> UserId {
        UserId::from_uuid(uuid::Uuid::nil())
    }

    fn code_of(value: DayValue) -> &'static Code {
        codes().iter().find(|c| c.reading == Reading::DayValues(value)).unwrap()
    }

    fn activity(resting_bpm: Option<f64>) -> ActivitySummary {
        ActivitySummary {
            id: "a-1".into(),
            user_id: uuid::Uuid::nil(),
            calendar_date: "2026-11-21".parse().unwrap(),
            calories_total: None,
            calories_active: None,
            steps: None,
            distance: None,
            floors_climbed: None,
            low: None,
            high: None,
            heart_rate: DayHeartRate::of(Some(70.0), None, None, resting_bpm),
            timezone: "Etc/GMT-1".into(),
            timezone_offset: 3600,
            source: source_of("whoop_v2", None, None),
        }
    }

    #[test]
    fn a_resting_heart_rate_is_a_heart_rate_observation_of_its_day() {
        let code = code_of(DayValue::RestingHeartRate);
        let a = activity(Some(51.2));
        let (kind, id, o) =
            of_day_value(code, DayValue::RestingHeartRate, user(), &DayValue::of_activity(&a)).unwrap();
        assert_eq!((kind.as_str(), o["id"].as_str()), ("Observation", Some(id.as_str())));
        let codings: Vec<&str> =
            o["code"]["coding"].as_array().unwrap().iter().map(|c| c["code"].as_str().unwrap()).collect();
        assert_eq!(codings, ["8867-4", "40443-4"]);
        assert_eq!(o["code"]["text"], "Resting heart rate");
        assert_eq!(o["meta"]["profile"][0], "http://hl7.org/fhir/StructureDefinition/heartrate");
        assert_eq!(o["meta"]["source"], "urn:wearlab:provider:whoop_v2");
        assert_eq!(o["category"][0]["coding"][0]["code"], "vital-signs");
        assert_eq!(o["effectiveDateTime"], "2026-11-21");
        assert_eq!(
            o["valueQuantity"],
            json!({"value": 51.2, "unit": "beats/minute", "system": UCUM, "code": "/min"})
        );
        // A day whose summary has a heart rate but no resting one gives no Observation.
        assert!(
            of_day_value(code, DayValue::RestingHeartRate, user(), &DayValue::of_activity(&activity(None)))
                .is_none()
        );
    }

    #[test]
    fn a_measured_height_is_a_body_height_observation_in_centimetres() {
        let code = code_of(DayValue::Height);
        let b = BodySummary {
            id: "b-1".into(),
            user_id: uuid::Uuid::nil(),
            calendar_date: "2026-01-05".parse().unwrap(),
            weight: Some(72.0),
            fat: None,
            height: Some(1.78),
            timezone: "Europe/Paris".into(),
            timezone_offset: 3600,
            source: source_of("withings", Some("scale".into()), None),
        };
        let (_, _, o) = of_day_value(code, DayValue::Height, user(), &DayValue::Height.of_body(&b)).unwrap();
        assert_eq!(o["code"]["coding"][0]["code"], "8302-2");
        assert_eq!(o["meta"]["profile"][0], "http://hl7.org/fhir/StructureDefinition/bodyheight");
        assert_eq!(o["valueQuantity"], json!({"value": 178.0, "unit": "cm", "system": UCUM, "code": "cm"}));
        assert_eq!(o["effectiveDateTime"], "2026-01-05");
        let weighed_only = BodySummary { height: None, ..b };
        assert!(
            of_day_value(code, DayValue::Height, user(), &DayValue::Height.of_body(&weighed_only)).is_none()
        );
    }

    /// A body summary's weight and body fat are Observations of their day when the provider
    /// keeps no such timeseries (Google Health); not when it does (Withings: its samples are).
    #[test]
    fn a_body_summarys_weight_and_fat_are_observations_unless_the_provider_keeps_their_samples() {
        let b = BodySummary {
            id: "b-2".into(),
            user_id: uuid::Uuid::nil(),
            calendar_date: "2026-11-20".parse().unwrap(),
            weight: Some(70.5),
            fat: Some(21.25),
            height: None,
            timezone: "UTC".into(),
            timezone_offset: 0,
            source: source_of("google_health", None, None),
        };
        let (weight, fat) = (code_of(DayValue::BodyWeight), code_of(DayValue::BodyFat));
        let (_, _, o) =
            of_day_value(weight, DayValue::BodyWeight, user(), &DayValue::BodyWeight.of_body(&b)).unwrap();
        assert_eq!(o["code"]["coding"][0]["code"], "29463-7");
        assert_eq!(o["meta"]["profile"][0], "http://hl7.org/fhir/StructureDefinition/bodyweight");
        assert_eq!(o["valueQuantity"], json!({"value": 70.5, "unit": "kg", "system": UCUM, "code": "kg"}));
        assert_eq!(o["effectiveDateTime"], "2026-11-20");
        let (_, _, o) = of_day_value(fat, DayValue::BodyFat, user(), &DayValue::BodyFat.of_body(&b)).unwrap();
        assert_eq!(o["code"]["coding"][0]["code"], "41982-0");
        assert_eq!(o["valueQuantity"], json!({"value": 21.25, "unit": "%", "system": UCUM, "code": "%"}));
        let withings = BodySummary { source: source_of("withings", Some("scale".into()), None), ..b };
        assert!(
            of_day_value(weight, DayValue::BodyWeight, user(), &DayValue::BodyWeight.of_body(&withings))
                .is_none()
        );
        assert!(
            of_day_value(fat, DayValue::BodyFat, user(), &DayValue::BodyFat.of_body(&withings)).is_none()
        );
    }
}
