//! Workouts.

use serde_json::Value;
use wearlab_models::data::WorkoutSummary;
use wearlab_models::{LocPart, Resource};

use super::fields::{self, Issues};
use super::{AT_LEAST_0, Cx, HEART_RATE};
use crate::pipeline::phone::{SourcedSeries, zone_of};
use crate::pipeline::sport::sport_slug;

/// Sport names the SDKs send whose slug differs from the one Wearlab already uses for the same
/// sport (`sport_slug` of the name on the left): Health Connect's `biking`
/// (`ExerciseSessionRecord.EXERCISE_TYPE_INT_TO_STRING_MAP`) and HealthKit's "Traditional
/// Strength Training" are `cycling` and `strength_training`; Android's `workout` (an exercise
/// type Health Connect does not name, `RecordProcessor.kt`) and Health Connect's
/// `other_workout` are `other`.
const SPORT_ALIASES: [(&str, &str); 4] = [
    ("biking", "cycling"),
    ("traditional_strength_training", "strength_training"),
    ("workout", "other"),
    ("other_workout", "other"),
];

/// Wearlab's sport of a name an SDK sends: iOS `HKWorkoutActivityType.displayName`
/// (`Sources/VitalHealthKit/Extensions/HKWorkoutActivityType.swift`: "Running", "Other"),
/// Android the Health Connect string (`running`) or Samsung Health's lower-cased type name.
pub(super) fn sport(name: &str) -> String {
    let slug = sport_slug(name);
    match SPORT_ALIASES.iter().find(|(from, _)| *from == slug) {
        Some((_, to)) => (*to).to_owned(),
        None => slug,
    }
}

/// iOS `WorkoutPatch.Workout` / Android `LocalWorkout`, a list. A workout is keyed by its `id`,
/// else by its start; its day is the local day it starts on. The six heart-rate zones (seconds)
/// are iOS's `heart_rate_zone1` .. `heart_rate_zone6` and Android's `heart_rate_zone_1` ..
/// `heart_rate_zone_6`; iOS gives the maximum heart rate they were cut by
/// (`heart_rate_zone_max_hr`).
pub(super) fn workouts(cx: &Cx, data: &Value, loc: Vec<LocPart>, issues: &mut Issues) -> Vec<SourcedSeries> {
    let mut out = Vec::new();
    for (loc, v) in fields::list(data, loc, issues) {
        let Some(w) = fields::object(v, loc, issues) else { continue };
        let id = w.record_id("id", false, issues);
        let span = w.span("start_date", "end_date", issues);
        let source = cx.source(&w, "source_type", issues);
        let sport_name = w.text("sport", true, issues);
        let calories = w.number("calories", AT_LEAST_0, issues);
        let distance = w.number("distance", AT_LEAST_0, issues);
        let mean = w.number("heart_rate_mean", HEART_RATE, issues);
        for k in ["heart_rate_maximum", "heart_rate_minimum"] {
            w.number(k, HEART_RATE, issues);
        }
        for k in ["moving_time", "ascent_elevation", "descent_elevation"] {
            w.number(k, AT_LEAST_0, issues);
        }
        let max_hr = w.number("heart_rate_zone_max_hr", HEART_RATE, issues);
        w.number("heart_rate_zone_known_age", 0.0..=150.0, issues);
        let mut zones = [None; 6];
        for (i, zone) in zones.iter_mut().enumerate() {
            for key in [format!("heart_rate_zone{}", i + 1), format!("heart_rate_zone_{}", i + 1)] {
                if let Some(s) = w.number(&key, AT_LEAST_0, issues) {
                    *zone = Some(s.round() as i64);
                }
            }
        }
        for k in ["heart_rate", "respiratory_rate"] {
            w.list(k, issues);
        }
        if w.get("stream").is_some() {
            w.object("stream", false, issues);
        }
        let (Some((start, end)), Some(sport_name)) = (span, sport_name) else { continue };
        let zone = zone_of(w.o).unwrap_or_else(|| cx.tz.clone());
        let date = zone.local_date(start);
        let n = id.map_or_else(|| start.timestamp().to_string(), str::to_owned);
        let summary = WorkoutSummary {
            id: cx.id(&Resource::Workouts, date, &n),
            user_id: cx.user.as_uuid(),
            calendar_date: date,
            sport: sport(sport_name),
            time_start: start,
            time_end: end,
            timezone: zone.name().to_owned(),
            timezone_offset: zone.offset_seconds_at(start),
            duration: (end - start).num_seconds(),
            calories,
            distance,
            average_hr: mean,
            max_hr,
            hr_zones: zones
                .iter()
                .any(Option::is_some)
                .then(|| zones.iter().map(|z| z.unwrap_or(0)).collect()),
            source: source.clone(),
        };
        out.push(cx.summary(Resource::Workouts, date, &n, source, &summary));
    }
    out
}
