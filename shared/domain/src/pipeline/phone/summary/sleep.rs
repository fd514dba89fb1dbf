//! Sleep sessions: each a `sleep` summary and, when it has stages, its `sleep_cycle`
//! (hypnogram).

use chrono::{DateTime, Utc};
use serde_json::Value;
use wearlab_models::data::{SleepCycleSummary, SleepSummary};
use wearlab_models::{LocPart, Resource};

use super::fields::{self, Issues};
use super::{AT_LEAST_0, Cx, HEART_RATE};
use crate::pipeline::normalize::sleep_type;
use crate::pipeline::phone::{SourcedSeries, zone_of};

/// A sleep stage as the SDKs list it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    Deep,
    Light,
    Rem,
    Awake,
    /// Android: out of bed during the session; counted as awake.
    OutOfBed,
    /// iOS: HealthKit's `asleepUnspecified` (a device without stages): asleep, stage unknown.
    Unspecified,
    /// iOS: HealthKit's `inBed`, which spans the other stages: not a stage of its own.
    InBed,
    Unknown,
}

/// The stage lists by key: iOS `SleepPatch.Sleep.SleepStages` (snake-cased) and Android
/// `LocalSleep.Stages` (camelCase, no `@Json` names). The lists' `value` numbers differ by
/// platform (iOS HealthKit's raw values, Android 1 deep .. 5 out of bed, -1 unknown); the list
/// says the stage.
const STAGE_LISTS: [(&str, Stage); 13] = [
    ("deep_sleep_samples", Stage::Deep),
    ("light_sleep_samples", Stage::Light),
    ("rem_sleep_samples", Stage::Rem),
    ("awake_sleep_samples", Stage::Awake),
    ("unspecified_sleep_samples", Stage::Unspecified),
    ("in_bed_sleep_samples", Stage::InBed),
    ("unknown_sleep_samples", Stage::Unknown),
    ("deepSleepSamples", Stage::Deep),
    ("lightSleepSamples", Stage::Light),
    ("remSleepSamples", Stage::Rem),
    ("awakeSleepSamples", Stage::Awake),
    ("outOfBedSleepSamples", Stage::OutOfBed),
    ("unknownSleepSamples", Stage::Unknown),
];

impl Stage {
    /// The hypnogram's stage type (`SleepCycleSummary`: 1 deep, 2 light, 3 rem, 4 awake,
    /// -1 unknown); `None` for in bed.
    fn cycle_type(self) -> Option<i32> {
        match self {
            Stage::Deep => Some(1),
            Stage::Light => Some(2),
            Stage::Rem => Some(3),
            Stage::Awake | Stage::OutOfBed => Some(4),
            Stage::Unspecified | Stage::Unknown => Some(-1),
            Stage::InBed => None,
        }
    }
}

/// iOS `SleepPatch.Sleep` / Android `LocalSleep`, a list of sessions (never chunked). A session
/// is keyed by its `id`, else by its start; its day is the local day it ends on (in its own zone,
/// `HKTimeZone`, else the device's).
pub(super) fn sleeps(cx: &Cx, data: &Value, loc: Vec<LocPart>, issues: &mut Issues) -> Vec<SourcedSeries> {
    let mut out = Vec::new();
    for (loc, v) in fields::list(data, loc, issues) {
        let Some(s) = fields::object(v, loc, issues) else { continue };
        let id = s.record_id("id", false, issues);
        let span = s.span("start_date", "end_date", issues);
        let source = cx.source(&s, "source_type", issues);
        let hr_mean = s.number("heart_rate_mean", HEART_RATE, issues);
        for k in ["heart_rate_maximum", "heart_rate_minimum"] {
            s.number(k, HEART_RATE, issues);
        }
        s.number("hrv_mean_sdnn", AT_LEAST_0, issues);
        s.number("respiratory_rate_mean", 0.0..=100.0, issues);
        s.number("score", 0.0..=100.0, issues);
        for k in ["heart_rate", "heart_rate_variability", "respiratory_rate", "wrist_temperature"] {
            s.list(k, issues);
        }
        let mut stages: Vec<(Stage, DateTime<Utc>, DateTime<Utc>)> = Vec::new();
        if let Some(lists) = s.object("sleep_stages", false, issues) {
            for (key, stage) in STAGE_LISTS {
                for (loc, v) in lists.list(key, issues) {
                    let Some(sample) = fields::object(v, loc, issues) else { continue };
                    sample.number_of("value", true, -1.0..=10.0, issues);
                    if let Some((a, b)) = sample.span("start_date", "end_date", issues) {
                        stages.push((stage, a, b));
                    }
                }
            }
        }
        let Some((start, end)) = span else { continue };
        let zone = zone_of(s.o).unwrap_or_else(|| cx.tz.clone());
        let date = zone.local_date(end);
        let n = id.map_or_else(|| start.timestamp().to_string(), str::to_owned);
        stages.sort_by_key(|(_, a, _)| *a);
        let secs = |want: &[Stage]| -> i64 {
            stages.iter().filter(|(s, ..)| want.contains(s)).map(|(_, a, b)| (*b - *a).num_seconds()).sum()
        };
        let (deep, light, rem, awake) = (
            secs(&[Stage::Deep]),
            secs(&[Stage::Light, Stage::Unspecified]),
            secs(&[Stage::Rem]),
            secs(&[Stage::Awake, Stage::OutOfBed]),
        );
        let duration = (end - start).num_seconds();
        let total = deep + light + rem;
        let staged = stages.iter().any(|(s, ..)| *s != Stage::InBed);
        let summary = SleepSummary {
            id: cx.id(&Resource::Sleep, date, &n),
            user_id: cx.user.as_uuid(),
            calendar_date: date,
            bedtime_start: start,
            bedtime_stop: end,
            sleep_type: sleep_type(None, duration),
            timezone: zone.name().to_owned(),
            timezone_offset: zone.offset_seconds_at(start),
            duration,
            total,
            awake,
            light,
            rem,
            deep,
            efficiency: (staged && duration > 0).then(|| (total as f64 / duration as f64 * 100.0).min(100.0)),
            hr_average: hr_mean,
            source: source.clone(),
        };
        out.push(cx.summary(Resource::Sleep, date, &n, source.clone(), &summary));
        if !staged {
            continue;
        }
        let mut cycle = SleepCycleSummary {
            id: cx.id(&Resource::SleepCycle, date, &n),
            user_id: cx.user.as_uuid(),
            calendar_date: date,
            session_start: start,
            session_end: end,
            timezone: zone.name().to_owned(),
            timezone_offset: zone.offset_seconds_at(start),
            stage_start_offset_second: Vec::new(),
            stage_end_offset_second: Vec::new(),
            stage_type: Vec::new(),
            source: source.clone(),
        };
        for (stage, a, b) in &stages {
            let Some(t) = stage.cycle_type() else { continue };
            cycle.stage_start_offset_second.push((*a - start).num_seconds());
            cycle.stage_end_offset_second.push((*b - start).num_seconds());
            cycle.stage_type.push(t);
        }
        out.push(cx.summary(Resource::SleepCycle, date, &n, source, &cycle));
    }
    out
}
