//! Summaries only phones give: the menstrual cycle (Apple Health, Health Connect) and the
//! electrocardiogram (Apple Watch), in the shape the upstream API reads them back (its mobile
//! SDKs decode the cycle with the same fields they upload: `tryVital/vital-ios`
//! `Sources/VitalCore/Core/Client/Data Models/Gets/MenstrualCycle.swift`, `tryVital/vital-android`
//! `VitalClient/src/main/java/io/tryvital/client/services/data/MenstrualCycle.kt`; the ECG's fields
//! are those of iOS `.../Data Models/Patches/LocalElectrocardiogram.swift`).

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::data::SourceContext;

/// A day's menstrual flow: `unspecified`, `none`, `light`, `medium`, `heavy`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct MenstrualFlowEntry {
    pub date: NaiveDate,
    pub flow: String,
}

/// A day's cervical mucus: `dry`, `sticky`, `creamy`, `watery`, `egg_white`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct CervicalMucusEntry {
    pub date: NaiveDate,
    pub quality: String,
}

/// A day with intermenstrual bleeding.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct IntermenstrualBleedingEntry {
    pub date: NaiveDate,
}

/// A day's contraceptive: `unspecified`, `implant`, `injection`, `iud`, `intravaginal_ring`,
/// `oral`, `patch`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ContraceptiveEntry {
    pub date: NaiveDate,
    #[serde(rename = "type")]
    pub contraceptive_type: String,
}

/// A deviation the phone detected: `persistent_intermenstrual_bleeding`,
/// `prolonged_menstrual_periods`, `irregular_menstrual_cycles`, `infrequent_menstrual_cycles`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct DetectedDeviationEntry {
    pub date: NaiveDate,
    pub deviation: String,
}

/// A test's result: `negative`, `positive`, `indeterminate`, and for ovulation tests also
/// `luteinizing_hormone_surge`, `estrogen_surge`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct TestResultEntry {
    pub date: NaiveDate,
    pub test_result: String,
}

/// A day with sexual activity; whether protection was used, when recorded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SexualActivityEntry {
    pub date: NaiveDate,
    #[schema(required = true)]
    pub protection_used: Option<bool>,
}

/// A day's basal body temperature, in °C.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct BasalBodyTemperatureEntry {
    pub date: NaiveDate,
    pub value: f64,
}

/// One menstrual cycle: from the first day of a period to the day before the next one
/// (`cycle_end`, null while the cycle runs), with what was logged on its days.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct MenstrualCycleSummary {
    pub id: String,
    pub user_id: Uuid,
    /// The period's first day.
    pub calendar_date: NaiveDate,
    pub period_start: NaiveDate,
    /// The period's last day; null while it lasts.
    #[schema(required = true)]
    pub period_end: Option<NaiveDate>,
    /// The cycle's last day; null while it runs.
    #[schema(required = true)]
    pub cycle_end: Option<NaiveDate>,
    pub menstrual_flow: Vec<MenstrualFlowEntry>,
    pub cervical_mucus: Vec<CervicalMucusEntry>,
    pub intermenstrual_bleeding: Vec<IntermenstrualBleedingEntry>,
    pub contraceptive: Vec<ContraceptiveEntry>,
    pub detected_deviations: Vec<DetectedDeviationEntry>,
    pub ovulation_test: Vec<TestResultEntry>,
    pub home_pregnancy_test: Vec<TestResultEntry>,
    pub home_progesterone_test: Vec<TestResultEntry>,
    pub sexual_activity: Vec<SexualActivityEntry>,
    pub basal_body_temperature: Vec<BasalBodyTemperatureEntry>,
    pub source: SourceContext,
}

/// One electrocardiogram recording (a single-lead ECG of about 30 seconds). Its voltage samples
/// are not part of the summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ElectrocardiogramSummary {
    pub id: String,
    pub user_id: Uuid,
    pub calendar_date: NaiveDate,
    pub session_start: DateTime<Utc>,
    pub session_end: DateTime<Utc>,
    pub timezone: String,
    /// Seconds east of UTC at the start.
    pub timezone_offset: i32,
    /// How many voltage samples the recording has.
    pub voltage_sample_count: i64,
    /// Beats per minute.
    #[schema(required = true)]
    pub heart_rate_mean: Option<f64>,
    /// Hz.
    #[schema(required = true)]
    pub sampling_frequency_hz: Option<f64>,
    /// The device's reading: `sinus_rhythm`, `atrial_fibrillation`, `inconclusive`; null when
    /// it gave none.
    #[schema(required = true)]
    pub classification: Option<String>,
    /// Why an `inconclusive` reading is: `high_heart_rate`, `low_heart_rate`, `poor_reading`;
    /// null otherwise or when unknown.
    #[schema(required = true)]
    pub inconclusive_cause: Option<String>,
    /// The version of the device's classification algorithm.
    #[schema(required = true)]
    pub algorithm_version: Option<String>,
    pub source: SourceContext,
}

/// `GET /v2/summary/menstrual_cycle/{user_id}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct MenstrualCycleResponse {
    pub menstrual_cycle: Vec<MenstrualCycleSummary>,
}

/// `GET /v2/summary/electrocardiogram/{user_id}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ElectrocardiogramResponse {
    pub electrocardiogram: Vec<ElectrocardiogramSummary>,
}
