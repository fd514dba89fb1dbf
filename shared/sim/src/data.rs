//! Deterministic synthetic data: the same account, resource and day always give the same
//! records, so tests can assert on them and the data pipeline can be built on them.
//!
//! Summary resources (activity, sleep, body, workouts, meal, profile, ...) give one record per
//! day; every other resource gives hourly samples `{timestamp, value, unit}`.

use chrono::{Datelike, NaiveDate, NaiveTime, TimeZone, Timelike, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wearlab_domain::pipeline::normalize;
use wearlab_domain::ports::providers::DateRange;
use wearlab_models::Resource;

/// A number in `[lo, hi)` that depends only on the inputs.
fn value(parts: &[&str], lo: f64, hi: f64) -> f64 {
    value_of(hashed(parts), lo, hi)
}

/// The hash of `parts`, each followed by a zero byte, not finished: the hash of more parts
/// that start with these goes on from a copy of it (a day's samples share their first parts).
fn hashed(parts: &[&str]) -> Sha256 {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h
}

/// [`value`] of the parts hashed into `h`.
fn value_of(h: Sha256, lo: f64, hi: f64) -> f64 {
    let d = h.finalize();
    let n = u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
    lo + (hi - lo) * (n as f64 / u64::MAX as f64)
}

fn round(v: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (v * f).round() / f
}

/// Unit, range and decimals of an hourly sample of `resource`.
fn series(resource: &Resource) -> (&'static str, f64, f64, i32) {
    match resource {
        Resource::Heartrate => ("bpm", 52.0, 110.0, 0),
        Resource::Hrv => ("ms", 25.0, 95.0, 1),
        Resource::Glucose => ("mg/dL", 76.0, 171.0, 0),
        Resource::BloodOxygen => ("%", 93.0, 99.5, 1),
        Resource::BloodPressure => ("mmHg", 105.0, 135.0, 0),
        Resource::RespiratoryRate => ("bpm", 12.0, 19.0, 1),
        Resource::Steps => ("count", 0.0, 1400.0, 0),
        Resource::CaloriesActive | Resource::CaloriesBasal => ("kcal", 5.0, 120.0, 0),
        Resource::Distance | Resource::WorkoutDistance => ("m", 0.0, 1100.0, 0),
        Resource::FloorsClimbed => ("count", 0.0, 4.0, 0),
        Resource::Weight => ("kg", 61.0, 62.5, 2),
        Resource::Fat => ("percent", 18.0, 24.0, 1),
        Resource::BodyTemperature | Resource::BasalBodyTemperature => ("°C", 36.2, 37.3, 2),
        Resource::BodyTemperatureDelta => ("°C", -0.6, 0.6, 2),
        Resource::StressLevel => ("percent", 5.0, 80.0, 0),
        Resource::Vo2Max => ("mL/kg/min", 38.0, 46.0, 1),
        Resource::Water => ("mL", 0.0, 400.0, 0),
        Resource::Caffeine => ("mg", 0.0, 80.0, 0),
        Resource::InsulinInjection => ("unit", 0.0, 6.0, 1),
        Resource::Carbohydrates => ("g", 0.0, 60.0, 0),
        _ => ("count", 0.0, 100.0, 1),
    }
}

fn summary(provider: &str, account: &str, resource: &Resource, day: NaiveDate) -> Option<Value> {
    let d = day.to_string();
    let v = |field: &str, lo: f64, hi: f64| value(&[provider, account, resource.as_str(), &d, field], lo, hi);
    let at = |h: u32, m: u32| {
        Utc.from_utc_datetime(&day.and_time(NaiveTime::from_hms_opt(h, m, 0).unwrap_or_default()))
    };
    Some(match resource {
        Resource::Activity => json!({
            "date": d,
            "steps": round(v("steps", 2500.0, 16000.0), 0),
            "calories_active": round(v("cal", 150.0, 900.0), 0),
            "calories_total": round(v("cal", 150.0, 900.0) + 1650.0, 0),
            "distance_m": round(v("dist", 1800.0, 12000.0), 0),
            "floors_climbed": round(v("floors", 0.0, 25.0), 0),
            "low_minutes": round(v("low", 60.0, 240.0), 0),
            "high_minutes": round(v("high", 0.0, 75.0), 0),
            // An adult's resting heart rate, whole beats per minute as wearables report it.
            "resting_hr_bpm": round(v("rhr", 52.0, 68.0), 0),
        }),
        Resource::Sleep | Resource::SleepCycle => {
            let start = at(22, 0) + chrono::Duration::minutes(v("start", 0.0, 120.0) as i64);
            let duration = v("duration", 5.5 * 3600.0, 9.0 * 3600.0) as i64;
            let deep = (duration as f64 * v("deep", 0.12, 0.25)) as i64;
            let rem = (duration as f64 * v("rem", 0.15, 0.25)) as i64;
            let awake = (duration as f64 * v("awake", 0.02, 0.08)) as i64;
            json!({
                "date": d,
                "bedtime_start": start,
                "bedtime_stop": start + chrono::Duration::seconds(duration),
                // A night of 5.5 to 9 hours: the day's main sleep.
                "type": "long_sleep",
                "duration_s": duration,
                "deep_s": deep,
                "rem_s": rem,
                "awake_s": awake,
                "light_s": duration - deep - rem - awake,
                "efficiency": round(v("eff", 80.0, 97.0), 0),
                "hr_average": round(v("hr", 50.0, 64.0), 0),
                "stages": stages(duration, deep, rem, awake),
            })
        }
        Resource::Workouts => {
            if v("any", 0.0, 1.0) < 0.4 {
                return None;
            }
            let start = at(6, 30) + chrono::Duration::minutes(v("start", 0.0, 660.0) as i64);
            let minutes = v("minutes", 20.0, 95.0) as i64;
            let sports = ["running", "cycling", "walking", "swimming", "strength_training"];
            json!({
                "date": d,
                "sport": sports[(v("sport", 0.0, 5.0) as usize).min(4)],
                "time_start": start,
                "time_end": start + chrono::Duration::minutes(minutes),
                "calories": round(v("cal", 120.0, 900.0), 0),
                "distance_m": round(v("dist", 0.0, 25000.0), 0),
                "average_hr": round(v("hr", 105.0, 160.0), 0),
            })
        }
        Resource::Body => json!({
            "date": d,
            "weight_kg": round(v("w", 61.0, 62.5), 2),
            "fat_percent": round(v("f", 18.0, 24.0), 1),
        }),
        Resource::Meal => json!({
            "date": d,
            "name": "Daily total",
            "energy_kcal": round(v("kcal", 1500.0, 2800.0), 0),
            "carbohydrates_g": round(v("carb", 150.0, 330.0), 0),
            "protein_g": round(v("prot", 50.0, 140.0), 0),
            "fat_g": round(v("fat", 40.0, 110.0), 0),
        }),
        Resource::MenstrualCycle => json!({"date": d, "cycle_day": (day.ordinal0() % 28) + 1}),
        _ => return None,
    })
}

/// The hypnogram of a night: cycles of about 90 minutes (light, deep, light, rem), the awake
/// time at the end; offsets in seconds from bedtime, the stages add up to `duration`.
fn stages(duration: i64, deep: i64, rem: i64, awake: i64) -> Value {
    let light = duration - deep - rem - awake;
    let cycles = ((duration - awake) / 5400).max(1);
    let mut out = Vec::new();
    let mut t = 0i64;
    let mut push = |stage: &str, len: i64| {
        if len > 0 {
            out.push(json!({"stage": stage, "start_offset_s": t, "end_offset_s": t + len}));
            t += len;
        }
    };
    for c in 0..cycles {
        let share = |total: i64| total / cycles + if c == cycles - 1 { total % cycles } else { 0 };
        let l = share(light);
        push("light", l / 2);
        push("deep", share(deep));
        push("light", l - l / 2);
        push("rem", share(rem));
    }
    push("awake", awake);
    Value::Array(out)
}

/// The provider's view at `now`: sleep sessions and workouts that have not ended yet are not
/// there, and today's activity so far grows through the day (so a poll sees it change), in
/// proportion to the part of the day (UTC) gone by.
pub(crate) fn as_of(resource: &Resource, records: &mut Vec<Value>, now: chrono::DateTime<Utc>) {
    let end_field = match resource {
        Resource::Sleep | Resource::SleepCycle => Some("bedtime_stop"),
        Resource::Workouts => Some("time_end"),
        _ => None,
    };
    if let Some(field) = end_field {
        records.retain(|r| {
            r[field]
                .as_str()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .is_none_or(|end| end <= now)
        });
        return;
    }
    if *resource != Resource::Activity {
        return;
    }
    let today = now.date_naive().to_string();
    let part = f64::from(now.num_seconds_from_midnight()) / 86_400.0;
    for r in records.iter_mut().filter(|r| r["date"] == today.as_str()) {
        let fields =
            ["steps", "calories_active", "distance_m", "floors_climbed", "low_minutes", "high_minutes"];
        for field in fields {
            if let Some(x) = r[field].as_f64() {
                r[field] = json!(round(x * part, 0));
            }
        }
        if let (Some(active), Some(_)) = (r["calories_active"].as_f64(), r["calories_total"].as_f64()) {
            r["calories_total"] = json!(round(active + 1650.0 * part, 0));
        }
    }
}

/// Whether `resource` gives one record per day: the pipeline's summaries, and the menstrual
/// cycle (which Wearlab does not model yet).
fn is_daily(resource: &Resource) -> bool {
    normalize::is_summary(resource) || *resource == Resource::MenstrualCycle
}

/// The records of `resource` for every day of `range`.
pub(crate) fn records(provider: &str, account: &str, resource: &Resource, range: DateRange) -> Vec<Value> {
    if *resource == Resource::Profile {
        return vec![json!({
            "height_cm": round(value(&[provider, account, "height"], 155.0, 195.0), 0),
            "birth_year": round(value(&[provider, account, "birth"], 1955.0, 2004.0), 0),
        })];
    }
    let mut out = Vec::new();
    for day in range.days() {
        if is_daily(resource) {
            out.extend(summary(provider, account, resource, day));
            continue;
        }
        let (unit, lo, hi, places) = series(resource);
        let d = day.to_string();
        let day_hashed = hashed(&[provider, account, resource.as_str(), &d]);
        for hour in 0..24u32 {
            // As `value(&[provider, account, resource, &d, &hour.to_string()])`, going on
            // from the day's hash; the timestamp's text as chrono writes a whole hour in UTC.
            let mut h = day_hashed.clone();
            h.update(hour.to_string());
            h.update([0]);
            out.push(json!({
                "timestamp": format!("{d}T{hour:02}:00:00Z"),
                "value": round(value_of(h, lo, hi), places),
                "unit": unit,
            }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hourly samples go on from their day's hash and write their timestamp as text; they
    /// are the samples of the plain formula: the value of all five parts, chrono's timestamp.
    #[test]
    fn hourly_samples_are_the_plain_formulas() {
        let range = DateRange { start: "2025-12-30".parse().unwrap(), end: "2026-01-02".parse().unwrap() };
        for resource in [Resource::Heartrate, Resource::Hrv, Resource::Steps, Resource::BodyTemperatureDelta]
        {
            let (unit, lo, hi, places) = series(&resource);
            let records = records("oura", "demo-3f2a", &resource, range);
            assert_eq!(records.len(), 4 * 24);
            for (record, (day, hour)) in
                records.iter().zip(range.days().flat_map(|d| (0..24u32).map(move |h| (d, h))))
            {
                let d = day.to_string();
                let at = Utc.from_utc_datetime(&day.and_time(NaiveTime::from_hms_opt(hour, 0, 0).unwrap()));
                let value = round(
                    value(&["oura", "demo-3f2a", resource.as_str(), &d, &hour.to_string()], lo, hi),
                    places,
                );
                assert_eq!(
                    record,
                    &json!({"timestamp": at, "value": value, "unit": unit}),
                    "{resource} {d} {hour}"
                );
            }
        }
    }
}
