//! What Withings's JSON becomes in Wearlab's records: the answer shapes the Withings API reference
//! documents (measure groups, activities, workouts, sleep summaries, intraday series) and their
//! mapping to the normalised records, with units and days as the module header of [`super`] says.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use wearlab_domain::common::ids::TimeZoneId;
use wearlab_domain::ports::providers::DateRange;
use wearlab_models::Resource;

use super::categories;

/// The measure groups of every page, and the user's zone.
#[derive(Debug)]
pub(super) struct Measures {
    pub(super) timezone: Option<String>,
    pub(super) measuregrps: Vec<MeasureGroup>,
}

#[derive(Debug, Deserialize)]
pub(super) struct MeasureGroup {
    date: i64,
    #[serde(default)]
    measures: Vec<Measure>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Measure {
    value: i64,
    #[serde(rename = "type")]
    kind: i64,
    unit: i32,
}

impl Measure {
    /// value x 10^unit (divided for negative units: `72450 / 1000` is exactly the nearest
    /// double to 72.45, `72450 * 0.001` is not).
    fn real(&self) -> f64 {
        let v = self.value as f64;
        if self.unit < 0 { v / 10f64.powi(-self.unit) } else { v * 10f64.powi(self.unit) }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct Activity {
    date: String,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    steps: Option<f64>,
    #[serde(default)]
    distance: Option<f64>,
    #[serde(default)]
    elevation: Option<f64>,
    #[serde(default)]
    soft: Option<f64>,
    #[serde(default)]
    intense: Option<f64>,
    #[serde(default)]
    calories: Option<f64>,
    #[serde(default)]
    totalcalories: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Workout {
    /// A code of the Withings API reference's workout category table ([`categories::CATEGORIES`]).
    #[serde(default)]
    category: Option<i64>,
    startdate: i64,
    enddate: i64,
    date: String,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    data: WorkoutData,
}

#[derive(Debug, Default, Deserialize)]
struct WorkoutData {
    #[serde(default)]
    calories: Option<f64>,
    #[serde(default)]
    distance: Option<f64>,
    #[serde(default)]
    hr_average: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub(super) struct SleepSummary {
    startdate: i64,
    enddate: i64,
    date: String,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    data: SleepData,
}

#[derive(Debug, Default, Deserialize)]
struct SleepData {
    #[serde(default)]
    total_timeinbed: Option<i64>,
    #[serde(default)]
    lightsleepduration: Option<i64>,
    #[serde(default)]
    remsleepduration: Option<i64>,
    #[serde(default)]
    deepsleepduration: Option<i64>,
    #[serde(default)]
    wakeupduration: Option<i64>,
    #[serde(default)]
    sleep_efficiency: Option<f64>,
    #[serde(default)]
    hr_average: Option<f64>,
}

/// Intraday samples: the Withings API reference's `series` is an object keyed by epoch second
/// (`$timestamp`). Read as a `Value`, so that anything else (no samples written as a list, say) is
/// no rows rather than an unreadable answer.
#[derive(Debug, Deserialize)]
pub(super) struct Intraday {
    #[serde(default)]
    series: Value,
}

pub(super) fn epoch(secs: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(secs, 0)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

pub(super) fn in_range(range: DateRange, day: NaiveDate) -> bool {
    range.start <= day && day <= range.end
}

/// Whether a Withings `YYYY-MM-DD` day is in the range.
fn on_day_in(range: DateRange, ymd: &str) -> bool {
    ymd.parse().is_ok_and(|d| in_range(range, d))
}

pub(super) fn midnight(day: NaiveDate) -> DateTime<Utc> {
    day.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc()
}

/// The local day of `t` in the IANA zone `zone` (UTC when absent or unknown).
fn local_day(t: DateTime<Utc>, zone: Option<&str>) -> NaiveDate {
    zone.and_then(TimeZoneId::parse).map_or_else(|| t.date_naive(), |tz| tz.local_date(t))
}

fn with_zone(mut record: Value, zone: Option<&str>) -> Value {
    if let (Some(zone), Some(map)) = (zone, record.as_object_mut()) {
        map.insert("timezone".into(), Value::String(zone.to_owned()));
    }
    record
}

/// Sets `key` when the value is there.
fn put(record: &mut Value, key: &str, value: Option<f64>) {
    if let Some(v) = value {
        record[key] = json!(v);
    }
}

/// The `getmeas` types of a measure resource, and the unit of its rows.
pub(super) fn measure_types(resource: &Resource) -> Option<(&'static [i64], &'static str)> {
    Some(match resource {
        Resource::Weight => (&[1], "kg"),
        Resource::Fat => (&[6], "percent"),
        Resource::BloodOxygen => (&[54], "%"),
        Resource::BodyTemperature => (&[12, 71], "°C"),
        _ => return None,
    })
}

/// Rows of the measures of `types`, each at its group's time.
pub(super) fn measure_rows(m: &Measures, types: &[i64], unit: &str, range: DateRange) -> Vec<Value> {
    let zone = m.timezone.as_deref();
    let mut rows = Vec::new();
    for g in &m.measuregrps {
        let Some(at) = epoch(g.date) else { continue };
        // Series are stored by UTC day.
        if !in_range(range, at.date_naive()) {
            continue;
        }
        for x in g.measures.iter().filter(|x| types.contains(&x.kind)) {
            rows.push(with_zone(json!({"timestamp": rfc3339(at), "value": x.real(), "unit": unit}), zone));
        }
    }
    rows
}

/// The `getmeas` types a body record reads: weight (1, kg), height (4, m), fat ratio (6, %).
pub(super) const BODY_TYPES: [i64; 3] = [1, 4, 6];

/// A body record per local day: the day's last weight, last height and last fat ratio (each
/// measure group carries its date, so a measured height is dated as a weight is).
pub(super) fn body_records(m: &Measures, range: DateRange) -> Vec<Value> {
    let zone = m.timezone.as_deref();
    let mut days: BTreeMap<NaiveDate, [(i64, Option<f64>); 3]> = BTreeMap::new();
    for g in &m.measuregrps {
        let Some(at) = epoch(g.date) else { continue };
        let day = local_day(at, zone);
        if !in_range(range, day) {
            continue;
        }
        let entry = days.entry(day).or_insert([(i64::MIN, None); 3]);
        for x in &g.measures {
            let Some(slot) = BODY_TYPES.iter().position(|t| *t == x.kind) else { continue };
            if g.date >= entry[slot].0 {
                entry[slot] = (g.date, Some(x.real()));
            }
        }
    }
    days.into_iter()
        .filter(|(_, slots)| slots.iter().any(|s| s.1.is_some()))
        .map(|(day, [w, h, f])| {
            let mut r = json!({"date": day.to_string()});
            put(&mut r, "weight_kg", w.1);
            put(&mut r, "height_m", h.1);
            put(&mut r, "fat_percent", f.1);
            with_zone(r, zone)
        })
        .collect()
}

/// The profile: the last height measured.
pub(super) fn profile_records(m: &Measures) -> Vec<Value> {
    m.measuregrps
        .iter()
        .flat_map(|g| g.measures.iter().filter(|x| x.kind == 4).map(move |x| (g.date, x.real())))
        .max_by_key(|(date, _)| *date)
        .map(|(_, height)| vec![json!({"height_m": height})])
        .unwrap_or_default()
}

pub(super) fn activity_records(activities: &[Activity], range: DateRange) -> Vec<Value> {
    activities
        .iter()
        .filter(|a| on_day_in(range, &a.date))
        .map(|a| {
            let mut r = json!({"date": a.date});
            put(&mut r, "steps", a.steps);
            put(&mut r, "distance_m", a.distance);
            put(&mut r, "floors_climbed", a.elevation);
            put(&mut r, "low_minutes", a.soft.map(|s| s / 60.0));
            put(&mut r, "high_minutes", a.intense.map(|s| s / 60.0));
            put(&mut r, "calories_active", a.calories);
            put(&mut r, "calories_total", a.totalcalories);
            with_zone(r, a.timezone.as_deref())
        })
        .collect()
}

pub(super) fn workout_records(workouts: &[Workout], range: DateRange) -> Vec<Value> {
    workouts
        .iter()
        .filter(|w| on_day_in(range, &w.date))
        .filter_map(|w| {
            let (start, end) = (epoch(w.startdate)?, epoch(w.enddate)?);
            let sport = w.category.map_or_else(|| "other".to_owned(), categories::sport);
            let mut r = json!({
                "date": w.date,
                "time_start": rfc3339(start),
                "time_end": rfc3339(end),
                "sport": sport,
            });
            put(&mut r, "calories", w.data.calories);
            put(&mut r, "distance_m", w.data.distance);
            put(&mut r, "average_hr", w.data.hr_average);
            Some(with_zone(r, w.timezone.as_deref()))
        })
        .collect()
}

/// Sleep summaries: the longest per day (a nap and a night can share a day).
pub(super) fn sleep_records(sleeps: &[SleepSummary], range: DateRange) -> Vec<Value> {
    let mut by_day: BTreeMap<NaiveDate, (i64, Value)> = BTreeMap::new();
    for s in sleeps {
        let Ok(day) = s.date.parse::<NaiveDate>() else { continue };
        let (Some(start), Some(stop)) = (epoch(s.startdate), epoch(s.enddate)) else { continue };
        if !in_range(range, day) {
            continue;
        }
        let d = &s.data;
        let in_bed = d.total_timeinbed.unwrap_or(s.enddate - s.startdate);
        let mut r = json!({
            "date": s.date,
            "bedtime_start": rfc3339(start),
            "bedtime_stop": rfc3339(stop),
            "duration_s": in_bed,
            "deep_s": d.deepsleepduration.unwrap_or(0),
            "rem_s": d.remsleepduration.unwrap_or(0),
            "light_s": d.lightsleepduration.unwrap_or(0),
            "awake_s": d.wakeupduration.unwrap_or(0),
        });
        // Withings gives the efficiency as a ratio; Wearlab's is a percentage (1-100).
        put(
            &mut r,
            "efficiency",
            d.sleep_efficiency.map(|e| if e <= 1.0 { (e * 1000.0).round() / 10.0 } else { e }),
        );
        put(&mut r, "hr_average", d.hr_average);
        let r = with_zone(r, s.timezone.as_deref());
        if by_day.get(&day).is_none_or(|(longest, _)| in_bed > *longest) {
            by_day.insert(day, (in_bed, r));
        }
    }
    by_day.into_values().map(|(_, r)| r).collect()
}

/// The intraday field of a series resource and the unit of its rows.
pub(super) fn intraday_field(resource: &Resource) -> Option<(&'static str, &'static str)> {
    Some(match resource {
        Resource::Heartrate => ("heart_rate", "bpm"),
        Resource::Steps => ("steps", "count"),
        Resource::Distance => ("distance", "m"),
        Resource::CaloriesActive => ("calories", "kcal"),
        _ => return None,
    })
}

pub(super) fn intraday_rows(intraday: Intraday, field: &str, unit: &str) -> Vec<Value> {
    let Value::Object(samples) = intraday.series else { return vec![] };
    let mut rows: Vec<(i64, Value)> = samples
        .into_iter()
        .filter_map(|(at, sample)| {
            let secs = at.parse::<i64>().ok()?;
            let value = sample.get(field)?.as_f64()?;
            Some((secs, json!({"timestamp": rfc3339(epoch(secs)?), "value": value, "unit": unit})))
        })
        .collect();
    rows.sort_by_key(|(secs, _)| *secs);
    rows.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_are_value_times_ten_to_the_unit() {
        let m = |value, unit| Measure { value, kind: 1, unit }.real();
        assert_eq!(m(58788, -3), 58.788);
        assert_eq!(m(72450, -3), 72.45);
        assert_eq!(m(97, 0), 97.0);
        assert_eq!(m(5, 2), 500.0);
    }
}
