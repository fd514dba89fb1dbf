//! What the mobile SDKs upload (`POST /v2/timeseries/{user_id}/{resource}`), read into Wearlab's
//! samples: the envelope every upload carries, and a timeseries upload's samples in Wearlab's
//! units ([`units`]), each with its source, grouped per resource, source and local day as
//! [`Entry::Series`] (the shape the pipeline's store takes).
//!
//! The shapes are the SDKs' own (public sources): iOS `tryVital/vital-ios`
//! `Sources/VitalCore/Core/Client/Data Models/Patches/TaggedPayload.swift` (the envelope, written
//! with `convertToSnakeCase` keys and ISO 8601 dates), `.../Patches/QuantitySample.swift`,
//! `.../Patches/BloodPressureSample.swift`, `.../Patches/SourceType.swift`; Android
//! `tryVital/vital-android` `VitalClient/src/main/java/io/tryvital/client/services/data/Timeseries.kt`
//! (`TimeseriesPayload`, no `is_final_chunk`) and `.../data/Summary.kt` (`LocalQuantitySample`,
//! `LocalBloodPressureSample`). `docs/MOBILE.md`, "Uploads: timeseries", explains the choices.
//!
//! One bad sample refuses the whole upload, with every offending field's location
//! (`data.3.value`): the SDKs commit a sync's anchor only after a 2xx and ignore the answer's
//! body, so samples dropped from an accepted upload would be lost without anyone seeing why.

pub mod open_wearables;
pub mod summary;
mod units;

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};
use wearlab_models::data::{Sample, SourceContext};
use wearlab_models::{LocPart, Resource, ValidationIssue};

use super::normalize::{Entry, source_of};
use crate::common::error::{DomainError, issue};
use crate::common::ids::TimeZoneId;
use crate::common::provider_catalog::catalog;

/// An upload's body as the SDKs write it; [`UploadEnvelope::parse`] and
/// [`TimeseriesUpload::parse`] read it.
#[derive(Debug, Clone, Deserialize)]
pub struct UploadBody {
    pub stage: String,
    #[serde(default)]
    pub start_date: Option<String>,
    #[serde(default)]
    pub end_date: Option<String>,
    pub time_zone: String,
    pub provider: String,
    pub data: Value,
    #[serde(default)]
    pub is_final_chunk: Option<bool>,
}

/// Which sync an upload belongs to.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// New data since the last sync.
    Daily,
    /// A chunk of the first sync's backfill: the whole window, the same in every chunk.
    Historical { start: DateTime<Utc>, end: DateTime<Utc> },
}

/// What every upload says besides its data.
#[derive(Debug, Clone, PartialEq)]
pub struct UploadEnvelope {
    pub stage: Stage,
    /// The device's time zone.
    pub time_zone: TimeZoneId,
    /// An SDK provider of the catalog (`apple_health_kit`, `health_connect`, the BLE devices ...).
    pub provider: String,
    /// Whether this is the stage's last chunk for the resource; Android never says (one POST a
    /// resource), so absent is true.
    pub is_final_chunk: bool,
}

impl UploadEnvelope {
    /// Checks every envelope field of `body`, adding what is wrong to `issues`.
    fn read(body: &UploadBody, issues: &mut Vec<ValidationIssue>) -> Option<Self> {
        let mut date = |field: &str, text: &Option<String>| match text.as_deref().map(instant) {
            Some(Some(t)) => Some(t),
            Some(None) => {
                issues.push(issue(&[field], "Input should be a valid datetime", "datetime_parsing"));
                None
            }
            None => None,
        };
        let (start, end) = (date("start_date", &body.start_date), date("end_date", &body.end_date));
        let stage = match body.stage.as_str() {
            "daily" => {
                for (field, given) in [("start_date", &body.start_date), ("end_date", &body.end_date)] {
                    if given.is_some() {
                        issues.push(issue(
                            &[field],
                            format!("{field} is sent only with stage 'historical'"),
                            "value_error",
                        ));
                    }
                }
                Some(Stage::Daily)
            }
            "historical" => match (start, end, &body.start_date, &body.end_date) {
                (Some(start), Some(end), ..) if end < start => {
                    issues.push(issue(
                        &["end_date"],
                        "end_date must not be before start_date",
                        "value_error",
                    ));
                    None
                }
                (Some(start), Some(end), ..) => Some(Stage::Historical { start, end }),
                (_, _, s, e) => {
                    for (field, given) in [("start_date", s), ("end_date", e)] {
                        if given.is_none() {
                            issues.push(issue(&[field], "Field required with stage 'historical'", "missing"));
                        }
                    }
                    None
                }
            },
            _ => {
                issues.push(issue(&["stage"], "Input should be 'daily' or 'historical'", "enum"));
                None
            }
        };
        let time_zone = TimeZoneId::parse(&body.time_zone);
        if time_zone.is_none() {
            issues.push(issue(
                &["time_zone"],
                "time_zone must be an IANA time zone identifier, e.g. Europe/London",
                "value_error",
            ));
        }
        let provider = catalog().sdk(&body.provider).ok();
        if provider.is_none() {
            issues.push(issue(
                &["provider"],
                format!("provider must be one of {}", catalog().sdk_slugs().join(", ")),
                "enum",
            ));
        }
        Some(Self {
            stage: stage?,
            time_zone: time_zone?,
            provider: provider?.slug.clone(),
            is_final_chunk: body.is_final_chunk.unwrap_or(true),
        })
    }

    /// The envelope of `body`, every field checked.
    pub fn parse(body: &UploadBody) -> Result<Self, DomainError> {
        let mut issues = Vec::new();
        match Self::read(body, &mut issues) {
            Some(e) if issues.is_empty() => Ok(e),
            _ => Err(DomainError::Validation(issues)),
        }
    }
}

/// The timeseries the SDKs upload, by the path name they use: the same as Wearlab's resource but
/// `heartrate_variability` (`hrv`) and `temperature` (`body_temperature`). iOS
/// `Sources/VitalCore/Core/Client/Data Models/Base Models/ResourceData.swift` (`TimeSeriesData`
/// names); Android `Timeseries.kt` (`IngestibleTimeseriesResource`) sends a subset.
pub fn sdk_timeseries(path: &str) -> Option<Resource> {
    match path {
        "heartrate_variability" => Some(Resource::Hrv),
        "temperature" => Some(Resource::BodyTemperature),
        "hrv" | "body_temperature" => None,
        _ => Resource::known(path).filter(|r| SDK_TIMESERIES.contains(r)),
    }
}

/// Wearlab's resources of the SDKs' timeseries.
const SDK_TIMESERIES: [Resource; 33] = [
    Resource::Glucose,
    Resource::BloodOxygen,
    Resource::BloodPressure,
    Resource::Heartrate,
    Resource::Hrv,
    Resource::Water,
    Resource::Caffeine,
    Resource::MindfulnessMinutes,
    Resource::RespiratoryRate,
    Resource::CaloriesActive,
    Resource::CaloriesBasal,
    Resource::Distance,
    Resource::FloorsClimbed,
    Resource::Steps,
    Resource::Vo2Max,
    Resource::BodyTemperature,
    Resource::AfibBurden,
    Resource::HeartRateAlert,
    Resource::StandHour,
    Resource::StandDuration,
    Resource::SleepApneaAlert,
    Resource::SleepBreathingDisturbance,
    Resource::WheelchairPush,
    Resource::ForcedExpiratoryVolume1,
    Resource::ForcedVitalCapacity,
    Resource::PeakExpiratoryFlowRate,
    Resource::InhalerUsage,
    Resource::Fall,
    Resource::UvExposure,
    Resource::DaylightExposure,
    Resource::Handwashing,
    Resource::BasalBodyTemperature,
    Resource::HeartRateRecoveryOneMinute,
];

/// The kind of source of a sample: its `type` when it names one, else what its app and device
/// say, by the iOS SDK's rule (`SourceType.infer` in `.../Patches/SourceType.swift`, which also
/// re-infers a sent `unknown`): Apple's Health app is `app`; Apple's own collectors
/// (`com.apple.health.*`) are `watch` or `phone` by the device's product type; anything else
/// `unknown`. Android sends a `type` whenever Health Connect names a device or a manual entry.
pub fn source_type(sent: Option<&str>, bundle: Option<&str>, product_type: Option<&str>) -> String {
    match (sent, bundle) {
        (Some(t), _) if !t.is_empty() && t != "unknown" => t.to_owned(),
        (_, Some("com.apple.Health")) => "app".into(),
        (_, Some(b)) if b.starts_with("com.apple.health.") => {
            let product = product_type.unwrap_or("").to_lowercase();
            match () {
                _ if product.starts_with("watch") => "watch".into(),
                _ if product.starts_with("iphone") => "phone".into(),
                _ => "unknown".into(),
            }
        }
        _ => "unknown".into(),
    }
}

/// Most characters of a sample's source `type`.
pub const MAX_SOURCE_TYPE: usize = 64;

/// Whether `t` may be a source type: 1 to [`MAX_SOURCE_TYPE`] of `a-z`, `0-9` and `_`.
pub fn is_source_type(t: &str) -> bool {
    (1..=MAX_SOURCE_TYPE).contains(&t.len())
        && t.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Which heart-rate variability a provider's `hrv` samples measure: HealthKit gives only SDNN
/// (`HKQuantityTypeIdentifierHeartRateVariabilitySDNN`, which the iOS SDK labels `rmssd`); Health
/// Connect and Samsung Health give RMSSD, as every other provider of Wearlab does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HrvMeasure {
    Sdnn,
    Rmssd,
}

pub fn hrv_measure(source: &SourceContext) -> HrvMeasure {
    if source.provider == "apple_health_kit" { HrvMeasure::Sdnn } else { HrvMeasure::Rmssd }
}

/// What names one point of a timeseries: a later value of the same point replaces the earlier
/// (the upstream API's documented primary key: resource, provider, source type, timestamp).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PointKey {
    pub resource: Resource,
    pub provider: String,
    pub source_type: String,
    pub timestamp: DateTime<Utc>,
}

pub fn point_key(resource: &Resource, source: &SourceContext, timestamp: DateTime<Utc>) -> PointKey {
    PointKey {
        resource: resource.clone(),
        provider: source.provider.clone(),
        source_type: source.source_type.clone(),
        timestamp,
    }
}

/// A day of one source's samples of one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct SourcedSeries {
    pub source: SourceContext,
    /// An [`Entry::Series`], dated by the samples' local day.
    pub entry: Entry,
}

/// One blood pressure reading (mmHg), kept whole: stored as a `blood_pressure` sample whose
/// `value` and `systolic` are the systolic pressure and `diastolic` the diastolic
/// ([`TimeseriesUpload::blood_pressure_series`]). Its pulse, when the cuff gave one, is a
/// `heartrate` sample of the same source.
#[derive(Debug, Clone, PartialEq)]
pub struct BloodPressureReading {
    pub source: SourceContext,
    pub date: NaiveDate,
    pub timestamp: DateTime<Utc>,
    pub timezone_offset: i32,
    pub systolic: f64,
    pub diastolic: f64,
}

/// A timeseries upload read into Wearlab's samples.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeseriesUpload {
    pub envelope: UploadEnvelope,
    /// The resource uploaded.
    pub resource: Resource,
    /// Per resource, source and local day, sorted by time; of points with the same
    /// [`PointKey`], the upload's last.
    pub series: Vec<SourcedSeries>,
    /// The readings of a `blood_pressure` upload (empty for any other).
    pub blood_pressure: Vec<BloodPressureReading>,
}

/// What one [`SourcedSeries`] holds the samples of: resource, local day, source type, app.
type DayOfSource = (Resource, NaiveDate, String, Option<String>);

/// One sample as read, in Wearlab's unit.
struct Point {
    resource: Resource,
    source: SourceContext,
    tz: Option<TimeZoneId>,
    timestamp: DateTime<Utc>,
    value: f64,
    unit: &'static str,
}

impl TimeseriesUpload {
    /// Reads an upload of `resource` (see [`sdk_timeseries`] for the SDKs' path names). Every
    /// offending field of the envelope and of every sample is reported at once.
    pub fn parse(resource: Resource, body: &UploadBody) -> Result<Self, DomainError> {
        let mut issues = Vec::new();
        if !SDK_TIMESERIES.contains(&resource) {
            issues.push(issue(
                &["resource"],
                format!("{resource} is not a timeseries the SDKs upload"),
                "enum",
            ));
        }
        let envelope = UploadEnvelope::read(body, &mut issues);
        let provider = envelope.as_ref().map_or(body.provider.as_str(), |e| e.provider.as_str());
        let Some(samples) = body.data.as_array() else {
            issues.push(issue(&["data"], "Input should be a valid list", "list_type"));
            return Err(DomainError::Validation(issues));
        };
        let mut points = Vec::new();
        let mut pressures = Vec::new();
        for (i, sample) in samples.iter().enumerate() {
            let loc = vec![LocPart::from("data"), LocPart::from(i)];
            if resource != Resource::BloodPressure {
                points.extend(quantity(&resource, provider, sample, loc, &mut issues));
                continue;
            }
            let part =
                |name: &str, resource: &Resource, required: bool, issues: &mut Vec<ValidationIssue>| {
                    let mut loc = loc.clone();
                    loc.push(name.into());
                    match sample.get(name).filter(|v| !v.is_null()) {
                        Some(v) => quantity(resource, provider, v, loc, issues),
                        None => {
                            if required {
                                issues.push(ValidationIssue {
                                    loc,
                                    msg: "Field required".into(),
                                    kind: "missing".into(),
                                });
                            }
                            None
                        }
                    }
                };
            let sys = part("systolic", &resource, true, &mut issues);
            let dia = part("diastolic", &resource, true, &mut issues);
            let pulse = part("pulse", &Resource::Heartrate, false, &mut issues);
            if let (Some(sys), Some(dia)) = (sys, dia) {
                points.extend(pulse);
                pressures.push((sys, dia.value));
            }
        }
        let Some(envelope) = envelope.filter(|_| issues.is_empty()) else {
            return Err(DomainError::Validation(issues));
        };
        let tz = |p: &Point| p.tz.clone().unwrap_or_else(|| envelope.time_zone.clone());
        let blood_pressure = latest(pressures, |(sys, _)| point_key(&resource, &sys.source, sys.timestamp))
            .into_iter()
            .map(|(sys, diastolic)| {
                let zone = tz(&sys);
                BloodPressureReading {
                    date: zone.local_date(sys.timestamp),
                    timezone_offset: zone.offset_seconds_at(sys.timestamp),
                    source: sys.source,
                    timestamp: sys.timestamp,
                    systolic: sys.value,
                    diastolic,
                }
            })
            .collect();
        let series = days_of_source(
            latest(points, |p| point_key(&p.resource, &p.source, p.timestamp)).into_iter().map(|p| {
                let zone = tz(&p);
                let sample = Sample {
                    timestamp: p.timestamp,
                    value: p.value,
                    unit: p.unit.to_owned(),
                    timezone_offset: zone.offset_seconds_at(p.timestamp),
                    systolic: None,
                    diastolic: None,
                };
                (p.resource, zone.local_date(p.timestamp), p.source, sample)
            }),
        );
        Ok(Self { envelope, resource, series, blood_pressure })
    }
}

impl TimeseriesUpload {
    /// Everything the upload stores: its blood pressure readings ([`Self::blood_pressure_series`])
    /// and its other samples, as days of one source.
    pub fn into_entries(self) -> Vec<SourcedSeries> {
        let mut entries = self.blood_pressure_series();
        entries.extend(self.series);
        entries
    }

    /// The blood pressure readings as days of samples (per local day, source type and app,
    /// sorted by time), as [`TimeseriesUpload::series`] holds the other samples: `value` and
    /// `systolic` the systolic pressure, `diastolic` the diastolic, in mmHg.
    pub fn blood_pressure_series(&self) -> Vec<SourcedSeries> {
        days_of_source(self.blood_pressure.iter().map(|r| {
            let sample = Sample {
                timestamp: r.timestamp,
                value: r.systolic,
                unit: "mmHg".into(),
                timezone_offset: r.timezone_offset,
                systolic: Some(r.systolic),
                diastolic: Some(r.diastolic),
            };
            (Resource::BloodPressure, r.date, r.source.clone(), sample)
        }))
    }
}

/// Samples, each with its resource, local day and source, as days of one source: per
/// resource, local day, source type and app, sorted by time (the shape the store merges).
pub(crate) fn days_of_source(
    samples: impl IntoIterator<Item = (Resource, NaiveDate, SourceContext, Sample)>,
) -> Vec<SourcedSeries> {
    let mut days: BTreeMap<DayOfSource, (SourceContext, Vec<Sample>)> = BTreeMap::new();
    for (resource, date, source, sample) in samples {
        let day = (resource, date, source.source_type.clone(), source.app_id.clone());
        days.entry(day).or_insert_with(|| (source, Vec::new())).1.push(sample);
    }
    days.into_iter()
        .map(|((resource, date, ..), (source, mut samples))| {
            samples.sort_by_key(|s| s.timestamp);
            SourcedSeries { source, entry: Entry::Series { resource, date, samples } }
        })
        .collect()
}

/// Of the items with the same key, the last one, in the order the items came.
fn latest<T>(items: Vec<T>, key: impl Fn(&T) -> PointKey) -> Vec<T> {
    let last: HashMap<PointKey, usize> = items.iter().enumerate().map(|(i, t)| (key(t), i)).collect();
    items.into_iter().enumerate().filter(|(i, t)| last.get(&key(t)) == Some(i)).map(|(_, t)| t).collect()
}

/// An RFC 3339 instant (iOS writes `2026-11-20T08:00:00Z`, Android adds a fraction when it has
/// one).
fn instant(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc))
}

/// Reads one quantity sample at `loc`, adding what is wrong with it to `issues`.
fn quantity(
    resource: &Resource,
    provider: &str,
    v: &Value,
    loc: Vec<LocPart>,
    issues: &mut Vec<ValidationIssue>,
) -> Option<Point> {
    let mut refuse = |field: Option<&str>, msg: String, kind: &str| {
        let mut loc = loc.clone();
        loc.extend(field.map(LocPart::from));
        issues.push(ValidationIssue { loc, msg, kind: kind.into() });
    };
    let Some(o) = v.as_object() else {
        refuse(None, "Input should be an object".into(), "dict_type");
        return None;
    };
    let value = o.get("value").and_then(Value::as_f64);
    if value.is_none() {
        refuse(Some("value"), "Input should be a number".into(), "float_type");
    }
    let unit = o.get("unit").and_then(Value::as_str);
    if unit.is_none() {
        refuse(Some("unit"), "Input should be a string".into(), "string_type");
    }
    let mut time = |field: &str| {
        let t = o.get(field).and_then(Value::as_str).and_then(instant);
        if t.is_none() {
            refuse(Some(field), "Input should be a valid datetime".into(), "datetime_parsing");
        }
        t
    };
    let (start, end) = (time("start_date"), time("end_date"));
    if let (Some(s), Some(e)) = (start, end)
        && e < s
    {
        refuse(Some("end_date"), "end_date must not be before start_date".into(), "value_error");
    }
    let text = |k: &str, refuse: &mut dyn FnMut(Option<&str>, String, &str)| match o.get(k) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => {
            refuse(Some(k), "Input should be a string".into(), "string_type");
            None
        }
    };
    let (bundle, product, sent_type) =
        (text("source_bundle", &mut refuse), text("product_type", &mut refuse), text("type", &mut refuse));
    // The source type names the stored day (`keys::pipeline::series_of_source`): the SDKs'
    // types are lower-case words (`watch`, `multiple_sources`, `fingerprick`, `cuff`).
    let sent_type = match sent_type {
        Some(t) if !t.is_empty() && !is_source_type(t) => {
            refuse(
                Some("type"),
                format!("type must be at most {MAX_SOURCE_TYPE} of a-z, 0-9 and _"),
                "value_error",
            );
            None
        }
        t => t,
    };
    let converted = match (value, unit) {
        (Some(value), Some(unit)) => match units::convert(resource, unit, value) {
            Ok(c) => Some(c),
            Err(units::Refused::Unit(msg)) => {
                refuse(Some("unit"), msg, "value_error");
                None
            }
            Err(units::Refused::Value(msg)) => {
                refuse(Some("value"), msg, "value_error");
                None
            }
        },
        _ => None,
    };
    let ((value, unit), timestamp) = (converted?, start?);
    end?;
    Some(Point {
        resource: resource.clone(),
        source: source_of(provider, Some(source_type(sent_type, bundle, product)), bundle.map(str::to_owned)),
        tz: zone_of(o),
        timestamp,
        value,
        unit,
    })
}

/// The sample's own time zone, when HealthKit recorded one: `HKTimeZone`, the key
/// `HKMetadataKeyTimeZone` names, which the iOS SDK passes on in `metadata` (`sampleMetadata` in
/// `CoreModels+Extensions.swift`) and itself dates body samples by (`HealthKitReads+Body.swift`).
fn zone_of(sample: &Map<String, Value>) -> Option<TimeZoneId> {
    sample.get("metadata")?.get("HKTimeZone")?.as_str().and_then(TimeZoneId::parse)
}

#[cfg(test)]
mod tests;
