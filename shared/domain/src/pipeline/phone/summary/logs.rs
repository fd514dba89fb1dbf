//! What the user logs or records now and then: meals, menstrual cycles, electrocardiograms.

use std::collections::BTreeMap;

use chrono::{DateTime, FixedOffset, NaiveDate};
use serde_json::Value;
use wearlab_models::data::{Macros, MealSummary, Sample};
use wearlab_models::data_phone::{
    BasalBodyTemperatureEntry, CervicalMucusEntry, ContraceptiveEntry, DetectedDeviationEntry,
    ElectrocardiogramSummary, IntermenstrualBleedingEntry, MenstrualCycleSummary, MenstrualFlowEntry,
    SexualActivityEntry, TestResultEntry,
};
use wearlab_models::{LocPart, Resource};

use super::fields::{self, Issues, Obj, at, refuse};
use super::{AT_LEAST_0, Cx, HEART_RATE};
use crate::pipeline::normalize::{record_id, source_of};
use crate::pipeline::phone::{SourcedSeries, days_of_source, source_type, zone_of};

/// What a meal holds: energy (kcal) and macronutrients (g).
#[derive(Default)]
struct Nutrients {
    energy: Option<f64>,
    carbs: Option<f64>,
    protein: Option<f64>,
    fats: Option<f64>,
}

fn add(to: &mut Option<f64>, v: f64) {
    *to = Some(to.unwrap_or(0.0) + v);
}

/// HealthKit's dietary lists kept in a meal, with the label the iOS SDK writes for each
/// (`QuantityUnit` in `Sources/VitalHealthKit/HealthKit/Models/CoreModels+Extensions.swift`:
/// dietaryEnergyConsumed `kcal`, the macronutrients `gram`).
const HEALTHKIT_NUTRIENTS: [(&str, &str); 4] =
    [("energy_total", "kcal"), ("carbohydrates", "gram"), ("protein", "gram"), ("fat_total", "gram")];

/// Health Connect's `MealType` (`androidx.health.connect.client.records.MealType`): 1 breakfast,
/// 2 lunch, 3 dinner, 4 snack, 0 unknown.
fn meal_name(meal_type: Option<f64>) -> &'static str {
    match meal_type.map(|t| t as i64) {
        Some(1) => "Breakfast",
        Some(2) => "Lunch",
        Some(3) => "Dinner",
        Some(4) => "Snack",
        _ => "Meal",
    }
}

/// A Health Connect zone offset as `ZoneOffset.toString()` writes it (`Z`, `+02:00`).
fn zone_offset(s: &str) -> Option<FixedOffset> {
    DateTime::parse_from_rfc3339(&format!("2000-01-01T00:00:00{s}")).ok().map(|t| *t.offset())
}

/// iOS `ManualMealCreation` (`{healthkit: HealthKitNutritionRawData}`: one app's dietary samples,
/// not grouped into meals) / Android `ManualMealCreation` (`{health_connect:
/// HealthConnectRecordCollection}`: one app's nutrition records), a list. A Health Connect record
/// is one meal, keyed by its start, dated by its own zone offset; HealthKit's samples of one app
/// are summed per local day into one meal named "Daily total", keyed by the app.
pub(super) fn meals(cx: &Cx, data: &Value, loc: Vec<LocPart>, issues: &mut Issues) -> Vec<SourcedSeries> {
    let mut out = Vec::new();
    for (loc, v) in fields::list(data, loc, issues) {
        let Some(m) = fields::object(v, loc, issues) else { continue };
        if let Some(hk) = m.object("healthkit", false, issues) {
            healthkit_meals(cx, &hk, issues, &mut out);
        }
        if let Some(hc) = m.object("health_connect", false, issues) {
            health_connect_meals(cx, &hc, issues, &mut out);
        }
        if m.get("healthkit").is_none() && m.get("health_connect").is_none() {
            refuse(issues, m.loc.clone(), "Input should have 'healthkit' or 'health_connect'", "missing");
        }
    }
    out
}

fn healthkit_meals(cx: &Cx, hk: &Obj, issues: &mut Issues, out: &mut Vec<SourcedSeries>) {
    let bundle = hk.text("source_bundle", true, issues);
    let mut days: BTreeMap<NaiveDate, Nutrients> = BTreeMap::new();
    for (key, v) in hk.o {
        if key == "source_bundle" || v.is_null() {
            continue;
        }
        let unit = HEALTHKIT_NUTRIENTS.iter().find(|(k, _)| k == key).map(|(_, u)| *u);
        for (loc, v) in hk.list(key, issues) {
            let Some(s) = fields::object(v, loc, issues) else { continue };
            let value = s.number_of("value", true, AT_LEAST_0, issues);
            let span = s.span("start_date", "end_date", issues);
            let sent = s.text("unit", true, issues);
            let (Some(unit), Some(sent)) = (unit, sent) else { continue };
            if sent != unit {
                refuse(issues, s.loc_of("unit"), format!("unit must be '{unit}' for {key}"), "value_error");
                continue;
            }
            let (Some(value), Some((start, _))) = (value, span) else { continue };
            let day = zone_of(s.o).as_ref().unwrap_or(&cx.tz).local_date(start);
            let n = days.entry(day).or_default();
            match key.as_str() {
                "energy_total" => add(&mut n.energy, value),
                "carbohydrates" => add(&mut n.carbs, value),
                "protein" => add(&mut n.protein, value),
                _ => add(&mut n.fats, value),
            }
        }
    }
    let Some(bundle) = bundle else { return };
    let source = source_of(cx.provider, Some(source_type(None, Some(bundle), None)), Some(bundle.to_owned()));
    let n = record_id(&["healthkit", bundle]);
    for (date, sums) in days {
        let meal = meal(cx, date, &n, "Daily total", sums, &source);
        out.push(cx.summary(Resource::Meal, date, &n, source.clone(), &meal));
    }
}

fn health_connect_meals(cx: &Cx, hc: &Obj, issues: &mut Issues, out: &mut Vec<SourcedSeries>) {
    let bundle = hc.text("source_bundle", true, issues);
    let source = source_of(cx.provider, Some(source_type(None, bundle, None)), bundle.map(str::to_owned));
    for (loc, v) in hc.list("nutrition_records", issues) {
        let Some(r) = fields::object(v, loc, issues) else { continue };
        let span = r.span("start_time", "end_time", issues);
        let offset = r.text("start_zone_offset", false, issues).and_then(|s| {
            let o = zone_offset(s);
            if o.is_none() {
                refuse(
                    issues,
                    r.loc_of("start_zone_offset"),
                    "Input should be a zone offset, e.g. +02:00",
                    "value_error",
                );
            }
            o
        });
        r.text("end_zone_offset", false, issues);
        let mut sums = Nutrients::default();
        for (key, value) in r.o {
            let nutrient = key != "meal_type" && value.is_number();
            if nutrient || matches!(key.as_str(), "energy" | "protein" | "total_carbohydrate" | "total_fat") {
                let Some(v) = r.number(key, AT_LEAST_0, issues) else { continue };
                match key.as_str() {
                    "energy" => sums.energy = Some(v),
                    "protein" => sums.protein = Some(v),
                    "total_carbohydrate" => sums.carbs = Some(v),
                    "total_fat" => sums.fats = Some(v),
                    _ => {}
                }
            }
        }
        let name = r.text("name", false, issues).filter(|n| !n.trim().is_empty());
        let meal_type = r.number("meal_type", 0.0..=4.0, issues);
        let Some((start, _)) = span else { continue };
        let date = match offset {
            Some(o) => start.with_timezone(&o).date_naive(),
            None => cx.tz.local_date(start),
        };
        let n = start.timestamp().to_string();
        let meal = meal(cx, date, &n, name.unwrap_or(meal_name(meal_type)), sums, &source);
        out.push(cx.summary(Resource::Meal, date, &n, source.clone(), &meal));
    }
}

fn meal(
    cx: &Cx,
    date: NaiveDate,
    n: &str,
    name: &str,
    sums: Nutrients,
    source: &wearlab_models::data::SourceContext,
) -> MealSummary {
    MealSummary {
        id: cx.id(&Resource::Meal, date, n),
        user_id: cx.user.as_uuid(),
        calendar_date: date,
        name: name.to_owned(),
        energy: sums.energy,
        macros: Macros { carbs: sums.carbs, protein: sums.protein, fats: sums.fats },
        timezone: cx.tz.name().to_owned(),
        source: source.clone(),
    }
}

/// The values each list of a cycle's days may hold: iOS `MenstrualCycle.swift`, Android
/// `MenstrualCycle.kt` (the same names).
const FLOWS: &[&str] = &["unspecified", "none", "light", "medium", "heavy"];
const MUCUS: &[&str] = &["dry", "sticky", "creamy", "watery", "egg_white"];
const CONTRACEPTIVES: &[&str] =
    &["unspecified", "implant", "injection", "iud", "intravaginal_ring", "oral", "patch"];
const DEVIATIONS: &[&str] = &[
    "persistent_intermenstrual_bleeding",
    "prolonged_menstrual_periods",
    "irregular_menstrual_cycles",
    "infrequent_menstrual_cycles",
];
const OVULATION_RESULTS: &[&str] =
    &["negative", "positive", "luteinizing_hormone_surge", "estrogen_surge", "indeterminate"];
const HOME_TEST_RESULTS: &[&str] = &["negative", "positive", "indeterminate"];

/// The entries of one of a cycle's lists, each read by `read` from its object (with its date).
fn days_of<T>(
    cycle: &Obj,
    key: &str,
    issues: &mut Issues,
    read: impl Fn(&Obj, NaiveDate, &mut Issues) -> Option<T>,
) -> Vec<T> {
    let mut out = Vec::new();
    for (loc, v) in cycle.list(key, issues) {
        let Some(e) = fields::object(v, loc, issues) else { continue };
        let date = e.date("date", true, issues);
        let entry = date.and_then(|d| read(&e, d, issues));
        out.extend(entry);
    }
    out
}

/// iOS / Android `LocalMenstrualCycle` (`{source_bundle, cycle}`), a list. A cycle is keyed by
/// its period's first day (`period_start`), which is also its day.
pub(super) fn menstrual_cycles(
    cx: &Cx,
    data: &Value,
    loc: Vec<LocPart>,
    issues: &mut Issues,
) -> Vec<SourcedSeries> {
    let mut out = Vec::new();
    for (loc, v) in fields::list(data, loc, issues) {
        let Some(m) = fields::object(v, loc, issues) else { continue };
        let bundle = m.text("source_bundle", true, issues);
        let Some(c) = m.object("cycle", true, issues) else { continue };
        let start = c.date("period_start", true, issues);
        let period_end = c.date("period_end", false, issues);
        let cycle_end = c.date("cycle_end", false, issues);
        for (end, key) in [(period_end, "period_end"), (cycle_end, "cycle_end")] {
            if let (Some(s), Some(e)) = (start, end)
                && e < s
            {
                refuse(
                    issues,
                    c.loc_of(key),
                    format!("{key} must not be before period_start"),
                    "value_error",
                );
            }
        }
        let sent_type = c.object("source", false, issues).and_then(|s| s.text("type", false, issues));
        let test = |allowed: &'static [&'static str]| {
            move |e: &Obj, date, issues: &mut Issues| {
                e.one_of("test_result", true, allowed, issues)
                    .map(|r| TestResultEntry { date, test_result: r.to_owned() })
            }
        };
        let summary_parts = (
            days_of(&c, "menstrual_flow", issues, |e, date, issues| {
                e.one_of("flow", true, FLOWS, issues).map(|f| MenstrualFlowEntry { date, flow: f.to_owned() })
            }),
            days_of(&c, "cervical_mucus", issues, |e, date, issues| {
                e.one_of("quality", true, MUCUS, issues)
                    .map(|q| CervicalMucusEntry { date, quality: q.to_owned() })
            }),
            days_of(&c, "intermenstrual_bleeding", issues, |_, date, _| {
                Some(IntermenstrualBleedingEntry { date })
            }),
            days_of(&c, "contraceptive", issues, |e, date, issues| {
                e.one_of("type", true, CONTRACEPTIVES, issues)
                    .map(|t| ContraceptiveEntry { date, contraceptive_type: t.to_owned() })
            }),
            days_of(&c, "detected_deviations", issues, |e, date, issues| {
                e.one_of("deviation", true, DEVIATIONS, issues)
                    .map(|d| DetectedDeviationEntry { date, deviation: d.to_owned() })
            }),
            days_of(&c, "ovulation_test", issues, test(OVULATION_RESULTS)),
            days_of(&c, "home_pregnancy_test", issues, test(HOME_TEST_RESULTS)),
            days_of(&c, "home_progesterone_test", issues, test(HOME_TEST_RESULTS)),
            days_of(&c, "sexual_activity", issues, |e, date, issues| {
                Some(SexualActivityEntry { date, protection_used: e.flag("protection_used", issues) })
            }),
            days_of(&c, "basal_body_temperature", issues, |e, date, issues| {
                e.number_of("value", true, 25.0..=45.0, issues)
                    .map(|value| BasalBodyTemperatureEntry { date, value })
            }),
        );
        let (Some(start), Some(bundle)) = (start, bundle) else { continue };
        let source =
            source_of(cx.provider, Some(source_type(sent_type, Some(bundle), None)), Some(bundle.to_owned()));
        let n = start.to_string();
        let (flow, mucus, bleeding, contraceptive, deviations, ovulation, pregnancy, progesterone, sex, bbt) =
            summary_parts;
        let summary = MenstrualCycleSummary {
            id: cx.id(&Resource::MenstrualCycle, start, &n),
            user_id: cx.user.as_uuid(),
            calendar_date: start,
            period_start: start,
            period_end,
            cycle_end,
            menstrual_flow: flow,
            cervical_mucus: mucus,
            intermenstrual_bleeding: bleeding,
            contraceptive,
            detected_deviations: deviations,
            ovulation_test: ovulation,
            home_pregnancy_test: pregnancy,
            home_progesterone_test: progesterone,
            sexual_activity: sex,
            basal_body_temperature: bbt,
            source: source.clone(),
        };
        out.push(cx.summary(Resource::MenstrualCycle, start, &n, source, &summary));
    }
    out
}

/// iOS `ManualElectrocardiogram` (`{electrocardiogram, voltage_data}`), a list. A recording is
/// keyed by its `id` (the HealthKit UUID); its day is the local day it starts on. The voltage
/// data (offsets in whole milliseconds from the start, one lead-I value in mV or `null` each:
/// `HealthKitReads+Electrocardiogram.swift` reads `voltUnit(with: .milli)`) is not part of the
/// summary: it is stored as the `electrocardiogram_voltage` timeseries of the same source, one
/// sample per value (a `null`, a moment the lead gave nothing, is left out).
pub(super) fn electrocardiograms(
    cx: &Cx,
    data: &Value,
    loc: Vec<LocPart>,
    issues: &mut Issues,
) -> Vec<SourcedSeries> {
    let mut out = Vec::new();
    for (loc, v) in fields::list(data, loc, issues) {
        let Some(m) = fields::object(v, loc, issues) else { continue };
        let volts = m.object("voltage_data", true, issues).and_then(|v| voltage(&v, issues));
        let Some(e) = m.object("electrocardiogram", true, issues) else { continue };
        let id = e.record_id("id", true, issues);
        let span = e.span("session_start", "session_end", issues);
        let count = e.number_of("voltage_sample_count", true, AT_LEAST_0, issues);
        let hr = e.number("heart_rate_mean", HEART_RATE, issues);
        let hz = e.number("sampling_frequency_hz", AT_LEAST_0, issues);
        let class = e.one_of(
            "classification",
            false,
            &["sinus_rhythm", "atrial_fibrillation", "inconclusive"],
            issues,
        );
        let cause = e.one_of(
            "inconclusive_cause",
            false,
            &["high_heart_rate", "low_heart_rate", "poor_reading"],
            issues,
        );
        let algorithm = e.text("algorithm_version", false, issues);
        e.text("device_model", false, issues);
        let source = cx.source(&e, "type", issues);
        let (Some(id), Some((start, end)), Some(count)) = (id, span, count) else { continue };
        let zone = zone_of(e.o).unwrap_or_else(|| cx.tz.clone());
        let date = zone.local_date(start);
        let summary = ElectrocardiogramSummary {
            id: cx.id(&Resource::Electrocardiogram, date, id),
            user_id: cx.user.as_uuid(),
            calendar_date: date,
            session_start: start,
            session_end: end,
            timezone: zone.name().to_owned(),
            timezone_offset: zone.offset_seconds_at(start),
            voltage_sample_count: count.round() as i64,
            heart_rate_mean: hr,
            sampling_frequency_hz: hz,
            classification: class.map(str::to_owned),
            inconclusive_cause: cause.map(str::to_owned),
            algorithm_version: algorithm.map(str::to_owned),
            source: source.clone(),
        };
        out.push(cx.summary(Resource::Electrocardiogram, date, id, source.clone(), &summary));
        let samples = volts.into_iter().flatten().filter_map(|(offset_ms, mv)| {
            let timestamp = start + chrono::Duration::milliseconds(offset_ms);
            let sample = Sample {
                timestamp,
                value: mv?,
                unit: "mV".into(),
                timezone_offset: zone.offset_seconds_at(timestamp),
                systolic: None,
                diastolic: None,
            };
            Some((Resource::ElectrocardiogramVoltage, zone.local_date(timestamp), source.clone(), sample))
        });
        out.extend(days_of_source(samples));
    }
    out
}

/// Reads an ECG's voltage lists into (milliseconds from the start, lead-I mV) pairs, reporting
/// the first bad element of each (a recording has thousands, so no location is built for the
/// good ones); `None` when they are not good.
fn voltage(v: &Obj, issues: &mut Issues) -> Option<Vec<(i64, Option<f64>)>> {
    let before = issues.len();
    let mut elements = |key: &str, good: fn(&Value) -> bool, msg: &str, kind: &str| -> usize {
        let Some(items) = v.get(key) else { return 0 };
        let Some(items) = items.as_array() else {
            refuse(issues, v.loc_of(key), "Input should be a valid list", "list_type");
            return 0;
        };
        if let Some(i) = items.iter().position(|x| !good(x)) {
            refuse(issues, at(&v.loc_of(key), i), msg, kind);
        }
        items.len()
    };
    let offsets = elements(
        "session_start_offset_millisecond",
        |x| x.as_u64().is_some_and(|ms| ms <= MAX_ECG_OFFSET_MS),
        "Input should be a whole number of milliseconds from 0 to 86400000",
        "int_type",
    );
    let leads = elements(
        "lead1",
        |x| x.is_null() || x.as_f64().is_some_and(f64::is_finite),
        "Input should be a number or null",
        "float_type",
    );
    if offsets != leads {
        refuse(
            issues,
            v.loc_of("lead1"),
            format!("lead1 must have one value per offset ({offsets} offsets, {leads} values)"),
            "value_error",
        );
    }
    if issues.len() > before {
        return None;
    }
    let list = |key: &str| v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let offsets = list("session_start_offset_millisecond").iter().filter_map(Value::as_i64);
    Some(offsets.zip(list("lead1").iter().map(Value::as_f64)).collect())
}

/// The latest a voltage sample may be after the recording's start: a day (a recording lasts
/// about 30 seconds; anything beyond a day is not a time within it).
const MAX_ECG_OFFSET_MS: u64 = 86_400_000;
