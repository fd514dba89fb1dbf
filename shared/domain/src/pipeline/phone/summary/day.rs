//! The day summaries: `activity` (one per local day), `body` (the day's last weight and body fat)
//! and the `profile`.

use std::collections::{BTreeMap, HashMap};

use chrono::{Datelike, NaiveDate};
use serde_json::Value;
use wearlab_models::data::{ActivitySummary, BodySummary, DayHeartRate, ProfileSummary, SourceContext};
use wearlab_models::{LocPart, Resource};

use super::fields::{self, Issues, refuse};
use super::{AT_LEAST_0, Cx, HEART_RATE};
use crate::common::ids::TimeZoneId;
use crate::pipeline::normalize::{Entry, record_id, source_of};
use crate::pipeline::phone::{Point, SourcedSeries, quantity};
use crate::ports::to_body;

/// Source type of what a phone sums over all its sources (the iOS SDK's hourly and daily
/// statistics, Health Connect's aggregates).
const MULTIPLE_SOURCES: &str = "multiple_sources";

/// iOS `ActivityPatch.Activity` / Android `LocalActivity`: a `day_summary` of one local day (the
/// device's zone) and sample lists (iOS sends them empty; their samples come again as
/// timeseries, so they are not read here). A record without a day summary gives nothing.
pub(super) fn activity(cx: &Cx, data: &Value, loc: Vec<LocPart>, issues: &mut Issues) -> Vec<SourcedSeries> {
    let mut out = Vec::new();
    for (loc, v) in fields::list(data, loc, issues) {
        let Some(a) = fields::object(v, loc, issues) else { continue };
        for k in [
            "active_energy_burned",
            "basal_energy_burned",
            "steps",
            "floors_climbed",
            "distance_walking_running",
            "vo2_max",
        ] {
            a.list(k, issues);
        }
        let Some(d) = a.object("day_summary", false, issues) else { continue };
        let date = d.date("calendar_date", true, issues);
        let active = d.number("active_energy_burned_sum", AT_LEAST_0, issues);
        let basal = d.number("basal_energy_burned_sum", AT_LEAST_0, issues);
        let steps = d.number("steps_sum", AT_LEAST_0, issues);
        let floors = d.number("floors_climbed_sum", AT_LEAST_0, issues);
        let distance = d.number("distance_walking_running_sum", AT_LEAST_0, issues);
        // Sent by iOS, not held by the activity summary: checked, not kept.
        d.number("vo2_max", 0.0..=100.0, issues);
        // iOS: the day's heart rate statistics and HealthKit's resting heart rate (bpm).
        let [max_hr, min_hr, avg_hr, resting_hr] =
            ["max_heart_rate", "min_heart_rate", "avg_heart_rate", "resting_heart_rate"]
                .map(|k| d.number(k, HEART_RATE, issues));
        d.number("exercise_time", 0.0..=1440.0, issues);
        for k in ["low", "medium", "high", "distance_wheelchair", "wheelchair_push"] {
            d.number(k, AT_LEAST_0, issues);
        }
        d.flag("wheelchair_use", issues);
        let Some(date) = date else { continue };
        let n = "0";
        let source = source_of(cx.provider, Some(MULTIPLE_SOURCES.into()), None);
        let summary = ActivitySummary {
            id: cx.id(&Resource::Activity, date, n),
            user_id: cx.user.as_uuid(),
            calendar_date: date,
            calories_total: active.zip(basal).map(|(a, b)| a + b),
            calories_active: active,
            steps,
            distance,
            floors_climbed: floors,
            low: None,
            high: None,
            heart_rate: DayHeartRate::of(avg_hr, min_hr, max_hr, resting_hr),
            timezone: cx.tz.name().to_owned(),
            timezone_offset: Cx::day_offset(&cx.tz, date),
            source: source.clone(),
        };
        out.push(cx.summary(Resource::Activity, date, n, source, &summary));
    }
    out
}

/// The day's last reading of one kind.
fn last_by_day(points: Vec<Point>, tz: &TimeZoneId) -> BTreeMap<NaiveDate, Point> {
    let mut days: BTreeMap<NaiveDate, Point> = BTreeMap::new();
    for p in points {
        let day = p.tz.as_ref().unwrap_or(tz).local_date(p.timestamp);
        if days.get(&day).is_none_or(|kept| kept.timestamp <= p.timestamp) {
            days.insert(day, p);
        }
    }
    days
}

/// iOS `BodyPatch` / Android `LocalBody` (one object): sample lists, each sample dated by its own
/// zone (`HKTimeZone`) else the device's; iOS adds `time_zones`, the zone of each day it sends.
/// A day's summary holds its last weight and its last body fat; the BMI, waist and lean mass
/// lists are checked but the body summary has no field for them.
pub(super) fn body(cx: &Cx, data: &Value, loc: Vec<LocPart>, issues: &mut Issues) -> Vec<SourcedSeries> {
    let Some(b) = fields::object(data, loc, issues) else { return Vec::new() };
    let read = |key: &str, resource: &Resource, issues: &mut Issues| -> Vec<Point> {
        b.list(key, issues)
            .into_iter()
            .filter_map(|(loc, v)| quantity(resource, cx.provider, v, loc, issues))
            .collect()
    };
    let weights = read("body_mass", &Resource::Weight, issues);
    let fats = read("body_fat_percentage", &Resource::Fat, issues);
    for key in ["body_mass_index", "waist_circumference", "lean_body_mass"] {
        for (loc, v) in b.list(key, issues) {
            let Some(s) = fields::object(v, loc, issues) else { continue };
            s.number_of("value", true, AT_LEAST_0, issues);
            s.span("start_date", "end_date", issues);
        }
    }
    let mut zones: HashMap<NaiveDate, TimeZoneId> = HashMap::new();
    for (loc, v) in b.list("time_zones", issues) {
        let pair = v.as_array().map(Vec::as_slice);
        let day = pair.and_then(|p| p.first()).and_then(Value::as_str).and_then(|s| s.parse().ok());
        let zone = pair.and_then(|p| p.get(1)).and_then(Value::as_str).and_then(TimeZoneId::parse);
        match (day, zone, pair.map(<[Value]>::len)) {
            (Some(day), Some(zone), Some(2)) => {
                zones.insert(day, zone);
            }
            _ => refuse(
                issues,
                loc,
                "Input should be a [date, IANA time zone] pair, e.g. [\"2026-11-20\", \"Europe/London\"]",
                "value_error",
            ),
        }
    }
    let (mut weights, mut fats) = (last_by_day(weights, &cx.tz), last_by_day(fats, &cx.tz));
    let days: std::collections::BTreeSet<NaiveDate> = weights.keys().chain(fats.keys()).copied().collect();
    let mut out = Vec::new();
    for date in days {
        let (weight, fat) = (weights.remove(&date), fats.remove(&date));
        let newest = match (&weight, &fat) {
            (Some(w), Some(f)) if f.timestamp > w.timestamp => f,
            (Some(w), _) => w,
            (None, Some(f)) => f,
            (None, None) => continue,
        };
        let zone = zones.get(&date).or(newest.tz.as_ref()).unwrap_or(&cx.tz).clone();
        let source: SourceContext = newest.source.clone();
        let n = "0";
        let summary = BodySummary {
            id: cx.id(&Resource::Body, date, n),
            user_id: cx.user.as_uuid(),
            calendar_date: date,
            weight: weight.map(|p| p.value),
            fat: fat.map(|p| p.value),
            height: None,
            timezone: zone.name().to_owned(),
            timezone_offset: Cx::day_offset(&zone, date),
            source: source.clone(),
        };
        out.push(cx.summary(Resource::Body, date, n, source, &summary));
    }
    out
}

/// iOS `ProfilePatch` / Android `LocalProfile` (one object): the height in whole centimetres
/// (Android: 0 when Health Connect has none), the birth date as an instant (iOS only). The
/// biological sex (`not_set` when unknown), time zone and wheelchair use are checked; the profile
/// summary has no field for them.
pub(super) fn profile(cx: &Cx, data: &Value, loc: Vec<LocPart>, issues: &mut Issues) -> Vec<SourcedSeries> {
    let Some(p) = fields::object(data, loc, issues) else { return Vec::new() };
    let height_cm = p.number("height", 0.0..=300.0, issues);
    let born = p.instant("date_of_birth", false, issues);
    p.one_of("biological_sex", false, &["male", "female", "other", "not_set"], issues);
    if p.text("time_zone", false, issues).is_some_and(|z| TimeZoneId::parse(z).is_none()) {
        refuse(
            issues,
            p.loc_of("time_zone"),
            "time_zone must be an IANA time zone identifier",
            "value_error",
        );
    }
    p.flag("wheelchair_use", issues);
    let source = source_of(cx.provider, None, None);
    let summary = ProfileSummary {
        id: record_id(&[&cx.user.to_string(), cx.provider, Resource::Profile.as_str()]),
        user_id: cx.user.as_uuid(),
        height: height_cm.filter(|cm| *cm > 0.0).map(|cm| cm / 100.0),
        birth_year: born.map(|t| t.year()),
        source: source.clone(),
    };
    vec![SourcedSeries { source, entry: Entry::Profile { value: to_body(&summary) } }]
}
