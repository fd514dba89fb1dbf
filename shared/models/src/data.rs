//! Ingested data as the read API and data events speak it: summaries (activity, sleep,
//! sleep_cycle, workouts, body, meal, profile) and grouped timeseries samples, each with its
//! `source` context.
//!
//! Units: durations in seconds, distances and heights in meters, energy in kcal, mass in kg,
//! glucose in mg/dL (whatever unit the source gave: [`GLUCOSE_MG_DL_PER_MMOL_L`]).

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// mg/dL in one mmol/L of glucose, by which every source's mmol/L reading becomes Wearlab's
/// unit: the factor the iOS SDK's Libre reader divides by (`tryVital/vital-ios`,
/// `Sources/VitalDevices/NFC/Glucose.swift`) and the Open Wearables backend multiplies by. Other
/// published factors are within 0.02 % of it (HealthKit's molar mass 180.156 g/mol gives
/// 18.0156; the BLE meters' `1 mg/dL = 0.0555 mmol/L` gives 18.018).
pub const GLUCOSE_MG_DL_PER_MMOL_L: f64 = 18.0182;

/// Where a summary or a group of samples comes from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SourceContext {
    /// The provider's slug (details from GET /v2/providers).
    pub provider: String,
    /// Kind of source (non-exhaustive): `unknown`, `app`, `watch`, `ring`, `phone`, `scale`, ...
    #[serde(rename = "type")]
    pub source_type: String,
    /// The app that recorded the data, when the provider names one.
    #[schema(required = true)]
    pub app_id: Option<String>,
    /// Deprecated: use the providers endpoint.
    #[schema(deprecated)]
    pub name: String,
    /// Deprecated: use the providers endpoint.
    #[schema(required = true, deprecated)]
    pub logo: Option<String>,
    /// Deprecated: same as `provider`.
    #[schema(deprecated)]
    pub slug: String,
}

/// One day's activity.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ActivitySummary {
    pub id: String,
    pub user_id: Uuid,
    pub calendar_date: NaiveDate,
    /// kcal.
    #[schema(required = true)]
    pub calories_total: Option<f64>,
    /// kcal.
    #[schema(required = true)]
    pub calories_active: Option<f64>,
    #[schema(required = true)]
    pub steps: Option<f64>,
    /// Meters.
    #[schema(required = true)]
    pub distance: Option<f64>,
    #[schema(required = true)]
    pub floors_climbed: Option<f64>,
    /// Seconds of low-intensity activity.
    #[schema(required = true)]
    pub low: Option<f64>,
    /// Seconds of high-intensity activity.
    #[schema(required = true)]
    pub high: Option<f64>,
    /// The day's heart rate (beats per minute), null when the source gives none of it.
    #[serde(default)]
    #[schema(required = true)]
    pub heart_rate: Option<DayHeartRate>,
    /// IANA time zone of the day.
    pub timezone: String,
    /// Seconds east of UTC at the start of the day.
    pub timezone_offset: i32,
    pub source: SourceContext,
}

/// A day's heart rate in beats per minute, each value null when the source gives none: the
/// average, lowest and highest of the day, and the resting heart rate the source computed for
/// the day.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct DayHeartRate {
    #[schema(required = true)]
    pub avg_bpm: Option<f64>,
    #[schema(required = true)]
    pub min_bpm: Option<f64>,
    #[schema(required = true)]
    pub max_bpm: Option<f64>,
    #[schema(required = true)]
    pub resting_bpm: Option<f64>,
}

impl DayHeartRate {
    /// The day's heart rate, or `None` when no value is known.
    pub fn of(
        avg_bpm: Option<f64>,
        min_bpm: Option<f64>,
        max_bpm: Option<f64>,
        resting_bpm: Option<f64>,
    ) -> Option<Self> {
        let hr = Self { avg_bpm, min_bpm, max_bpm, resting_bpm };
        (hr != Self::default()).then_some(hr)
    }
}

crate::open_enum!(
    /// What kind of sleep a session is, with the values and meanings of the upstream API's sleep
    /// `type` (Junction's `SleepType`, non-exhaustive, as published in its Python client `vital`
    /// 2.1.569 on PyPI, `vital/types/sleep_type.py`): `long_sleep` at least 3 hours,
    /// `short_sleep` under 3 hours, `acknowledged_nap` a nap (typically under 3 hours),
    /// `unknown` a session still being recorded.
    SleepType {
        LongSleep => "long_sleep",
        ShortSleep => "short_sleep",
        AcknowledgedNap => "acknowledged_nap",
        Unknown => "unknown",
    }
);

/// One sleep session. A day can hold several (a night and a nap): each is its own summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SleepSummary {
    pub id: String,
    pub user_id: Uuid,
    pub calendar_date: NaiveDate,
    pub bedtime_start: DateTime<Utc>,
    pub bedtime_stop: DateTime<Utc>,
    /// `long_sleep` (at least 3 hours), `short_sleep` (under 3 hours), `acknowledged_nap` (a
    /// sleep the provider marks as a nap), `unknown` (still being recorded).
    #[serde(rename = "type")]
    pub sleep_type: SleepType,
    pub timezone: String,
    pub timezone_offset: i32,
    /// Seconds in bed.
    pub duration: i64,
    /// Seconds asleep (light + deep + rem).
    pub total: i64,
    pub awake: i64,
    pub light: i64,
    pub rem: i64,
    pub deep: i64,
    /// Percent of the time in bed asleep.
    #[schema(required = true)]
    pub efficiency: Option<f64>,
    /// Beats per minute.
    #[schema(required = true)]
    pub hr_average: Option<f64>,
    pub source: SourceContext,
}

/// The hypnogram of one sleep session: stage `i` lasts from `stage_start_offset_second[i]` to
/// `stage_end_offset_second[i]` after `session_start`. Stage types: 1 deep, 2 light, 3 rem,
/// 4 awake, -1 unknown.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SleepCycleSummary {
    pub id: String,
    pub user_id: Uuid,
    pub calendar_date: NaiveDate,
    pub session_start: DateTime<Utc>,
    pub session_end: DateTime<Utc>,
    pub timezone: String,
    pub timezone_offset: i32,
    pub stage_start_offset_second: Vec<i64>,
    pub stage_end_offset_second: Vec<i64>,
    pub stage_type: Vec<i32>,
    pub source: SourceContext,
}

/// One workout.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct WorkoutSummary {
    pub id: String,
    pub user_id: Uuid,
    pub calendar_date: NaiveDate,
    /// Sport slug, e.g. `running`.
    pub sport: String,
    pub time_start: DateTime<Utc>,
    pub time_end: DateTime<Utc>,
    pub timezone: String,
    pub timezone_offset: i32,
    /// Seconds.
    pub duration: i64,
    /// kcal.
    #[schema(required = true)]
    pub calories: Option<f64>,
    /// Meters.
    #[schema(required = true)]
    pub distance: Option<f64>,
    #[schema(required = true)]
    pub average_hr: Option<f64>,
    /// Maximum heart rate used for the zones: 220 - age.
    #[schema(required = true)]
    pub max_hr: Option<f64>,
    /// Seconds in each of six zones by percent of the maximum heart rate (<50, 50-60, 60-70,
    /// 70-80, 80-90, >=90); null when no age is known. Estimated from the average heart rate
    /// when the provider gives no heart-rate stream.
    #[schema(required = true)]
    pub hr_zones: Option<Vec<i64>>,
    pub source: SourceContext,
}

/// Body measurements of one day.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct BodySummary {
    pub id: String,
    pub user_id: Uuid,
    pub calendar_date: NaiveDate,
    /// kg.
    #[schema(required = true)]
    pub weight: Option<f64>,
    /// Percent.
    #[schema(required = true)]
    pub fat: Option<f64>,
    /// Meters: a height measured that day (the provider's undated height stays in the profile).
    #[serde(default)]
    #[schema(required = true)]
    pub height: Option<f64>,
    pub timezone: String,
    pub timezone_offset: i32,
    pub source: SourceContext,
}

/// Macronutrients in grams.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct Macros {
    #[schema(required = true)]
    pub carbs: Option<f64>,
    #[schema(required = true)]
    pub protein: Option<f64>,
    #[schema(required = true)]
    pub fats: Option<f64>,
}

/// A meal (or a day's total, when the provider gives only that).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct MealSummary {
    pub id: String,
    pub user_id: Uuid,
    pub calendar_date: NaiveDate,
    pub name: String,
    /// kcal.
    #[schema(required = true)]
    pub energy: Option<f64>,
    pub macros: Macros,
    pub timezone: String,
    pub source: SourceContext,
}

/// The user's profile at a provider.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ProfileSummary {
    pub id: String,
    pub user_id: Uuid,
    /// Meters.
    #[schema(required = true)]
    pub height: Option<f64>,
    #[schema(required = true)]
    pub birth_year: Option<i32>,
    pub source: SourceContext,
}

/// Query of the profile endpoint.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProfileQuery {
    /// The profile from this provider (slug); default: the first provider with one, by slug.
    #[serde(default)]
    pub provider: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ActivityResponse {
    pub activity: Vec<ActivitySummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SleepResponse {
    pub sleep: Vec<SleepSummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SleepCycleResponse {
    pub sleep_cycle: Vec<SleepCycleSummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct WorkoutsResponse {
    pub workouts: Vec<WorkoutSummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct BodyResponse {
    pub body: Vec<BodySummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct MealResponse {
    pub meals: Vec<MealSummary>,
}

/// One timeseries sample.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct Sample {
    pub timestamp: DateTime<Utc>,
    pub value: f64,
    /// e.g. `bpm`, `count`, `kcal`, `kg`, `mmol/L`, `%`, `ms`, `m`.
    pub unit: String,
    /// Seconds east of UTC at the sample.
    pub timezone_offset: i32,
    /// `blood_pressure` only: the systolic pressure, the same as `value` (mmHg).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub systolic: Option<f64>,
    /// `blood_pressure` only: the diastolic pressure (mmHg).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diastolic: Option<f64>,
}

/// Samples of one source.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SampleGroup {
    pub source: SourceContext,
    pub data: Vec<Sample>,
}

/// `GET /v2/timeseries/{user_id}/{resource}/grouped`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct GroupedTimeseries {
    /// Sample groups by provider slug.
    pub groups: BTreeMap<String, Vec<SampleGroup>>,
    /// Pass back to get the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// Query of the summary endpoints.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SummaryQuery {
    /// First day, `YYYY-mm-dd`.
    pub start_date: String,
    /// Last day (inclusive), `YYYY-mm-dd`; default today.
    #[serde(default)]
    pub end_date: Option<String>,
    /// Only this provider's data (slug).
    #[serde(default)]
    pub provider: Option<String>,
}

/// Query of the grouped timeseries endpoint.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TimeseriesQuery {
    /// First day, `YYYY-mm-dd`.
    pub start_date: String,
    /// Last day (inclusive), `YYYY-mm-dd`; default today.
    #[serde(default)]
    pub end_date: Option<String>,
    /// From the previous page.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// The team's data pull preferences (team self-service).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct DataPullPreferences {
    /// Days of history a new connection pulls, for providers not listed below (1 to 365;
    /// default 90).
    #[serde(default = "default_history_days")]
    pub default_history_days: u32,
    /// Days of history per provider slug (1 to 365).
    #[serde(default)]
    pub history_days: BTreeMap<String, u32>,
    /// Also send the deprecated `*.timeseries.hypnogram.*` events (default false); the
    /// sleep_cycle summary and its events replace them.
    #[serde(default)]
    pub hypnogram_events: bool,
}

fn default_history_days() -> u32 {
    90
}

impl Default for DataPullPreferences {
    fn default() -> Self {
        Self {
            default_history_days: default_history_days(),
            history_days: BTreeMap::new(),
            hypnogram_events: false,
        }
    }
}

/// The answer to POST /v2/user/historical_pull/{user_id}/{provider}: the pull is queued and
/// starts under the team's throttle for the provider; each resource announces itself with
/// `historical.data.<resource>.created` when done.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct HistoricalPullStarted {
    pub user_id: Uuid,
    pub provider: String,
    /// Names the pull in logs and support requests.
    pub pull_id: String,
}

/// Payload of `historical.data.<resource>.created`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct HistoricalPullCompleted {
    pub user_id: Uuid,
    pub start_date: NaiveDate,
    pub end_date: NaiveDate,
    pub provider: String,
}
