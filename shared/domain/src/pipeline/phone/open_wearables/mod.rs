//! The Open Wearables mobile SDKs' sync body (`POST /api/v1/sdk/users/{user_id}/sync`), read into
//! the same timeseries uploads the Junction SDKs send ([`TimeseriesUpload`]), so that both
//! dialects share one parse, one set of units, one store, one deduplication and one set of events.
//!
//! Shapes, public sources (MIT): the body is `SyncRequest` of `the-momentum/open-wearables`
//! `backend/app/schemas/providers/mobile_sdk/sync_request.py` (`provider`, `sdkVersion`,
//! `syncTimestamp`, `data: {records, sleep, workouts}`; a record is `{id, parentId, type,
//! startDate, endDate, zoneOffset, source, value, unit, metadata}`); the record types are
//! HealthKit identifiers or Health Connect names (`backend/app/constants/series_types/sdk/metric_types.py`);
//! the iOS SDK writes each type's value in one unit (`the-momentum/open_wearables_ios_sdk`
//! `Sources/OpenWearablesHealthSDK/Internal/Types.swift`, `_defaultUnit`: `bpm`, `ms`, `Cal` for
//! kilocalories, `m`, `degC`, `breaths/min`, `mg/dL`, `mmHg`, `L` of water, oxygen saturation
//! already times 100).
//!
//! Sleep slices and workouts come in through the Junction SDKs' summary parse
//! ([`SummaryUpload::parse`]): the slices of a night are stitched into a session as the Open
//! Wearables backend does ([`sleep`]), and each session and each workout is written as the iOS
//! Junction SDK's summary record ([`workouts`]), so that both dialects share one summary parse,
//! one set of units, one store and one deduplication.
//!
//! As the Open Wearables backend does, a record of a type Wearlab keeps no timeseries of, or one
//! whose value cannot be read, is skipped alone (counted in [`OpenWearablesSync::skipped`]), and
//! so is a sleep slice or a workout that cannot be read; a body that is not the documented shape
//! is refused whole (docs/MOBILE.md, "The Open Wearables dialect").

mod sleep;
mod workouts;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use wearlab_models::{Resource, ValidationIssue};

use super::summary::SummaryUpload;
use super::{TimeseriesUpload, UploadBody};
use crate::common::error::{DomainError, issue};
use crate::common::ids::UserId;

/// A sync body as the Open Wearables SDKs send it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncBody {
    pub provider: String,
    #[serde(default)]
    pub sdk_version: Option<String>,
    #[serde(default)]
    pub data: SyncData,
}

#[derive(Debug, Default, Deserialize)]
pub struct SyncData {
    #[serde(default)]
    pub records: Vec<Value>,
    #[serde(default)]
    pub sleep: Vec<Value>,
    #[serde(default)]
    pub workouts: Vec<Value>,
}

/// A sync body read into Wearlab's uploads.
#[derive(Debug)]
pub struct OpenWearablesSync {
    /// The SDK provider of the catalog the body's `provider` names.
    pub provider: &'static str,
    /// One upload per resource, in the daily stage (the dialect has no historical stage).
    pub uploads: Vec<TimeseriesUpload>,
    /// The sleep sessions stitched from the body's slices (with their hypnograms) and its
    /// workouts, as the Junction SDKs' summary uploads; one upload per resource and zone.
    pub summaries: Vec<SummaryUpload>,
    /// Records, sleep slices and workouts not kept.
    pub skipped: usize,
}

/// The catalog's SDK provider of an Open Wearables `provider` (`apple`, `samsung`, `google`).
pub fn provider(name: &str) -> Option<&'static str> {
    match name {
        "apple" => Some("apple_health_kit"),
        "samsung" => Some("samsung_health"),
        "google" => Some("health_connect"),
        _ => None,
    }
}

/// How a record type becomes a Junction timeseries sample: Wearlab's resource, and the unit
/// label the Junction SDKs write for the unit the Open Wearables SDK sent (with a factor).
fn reading(kind: &str, unit: &str) -> Option<(Resource, &'static str, f64)> {
    use Resource as R;
    let resource = match kind {
        "HKQuantityTypeIdentifierHeartRate" | "HEART_RATE" => R::Heartrate,
        "HKQuantityTypeIdentifierHeartRateVariabilitySDNN" | "HEART_RATE_VARIABILITY" => R::Hrv,
        "HKQuantityTypeIdentifierOxygenSaturation" | "OXYGEN_SATURATION" => R::BloodOxygen,
        "HKQuantityTypeIdentifierBloodGlucose" | "BLOOD_GLUCOSE" => R::Glucose,
        "HKQuantityTypeIdentifierRespiratoryRate" | "RESPIRATORY_RATE" => R::RespiratoryRate,
        "HKQuantityTypeIdentifierBodyTemperature" | "BODY_TEMPERATURE" => R::BodyTemperature,
        "HKQuantityTypeIdentifierBasalBodyTemperature" => R::BasalBodyTemperature,
        "HKQuantityTypeIdentifierVO2Max" | "VO2_MAX" => R::Vo2Max,
        "HKQuantityTypeIdentifierStepCount" | "STEP_COUNT" => R::Steps,
        "HKQuantityTypeIdentifierActiveEnergyBurned" | "ACTIVE_CALORIES_BURNED" => R::CaloriesActive,
        "HKQuantityTypeIdentifierBasalEnergyBurned" => R::CaloriesBasal,
        "HKQuantityTypeIdentifierFlightsClimbed" | "FLOORS_CLIMBED" => R::FloorsClimbed,
        "HKQuantityTypeIdentifierDistanceWalkingRunning" | "DISTANCE" => R::Distance,
        "HKQuantityTypeIdentifierDietaryWater" | "HYDRATION" => R::Water,
        "HKQuantityTypeIdentifierForcedVitalCapacity" => R::ForcedVitalCapacity,
        "HKQuantityTypeIdentifierForcedExpiratoryVolume1" => R::ForcedExpiratoryVolume1,
        "HKQuantityTypeIdentifierHeartRateRecoveryOneMinute" => R::HeartRateRecoveryOneMinute,
        "HKQuantityTypeIdentifierBloodPressureSystolic"
        | "HKQuantityTypeIdentifierBloodPressureDiastolic"
        | "BLOOD_PRESSURE_SYSTOLIC"
        | "BLOOD_PRESSURE_DIASTOLIC" => R::BloodPressure,
        _ => return None,
    };
    let (label, factor) = match (&resource, unit) {
        (R::Heartrate | R::HeartRateRecoveryOneMinute, "bpm" | "count/min") => ("bpm", 1.0),
        (R::RespiratoryRate, "breaths/min" | "bpm" | "count/min") => ("bpm", 1.0),
        (R::Hrv, "ms") => ("ms", 1.0),
        (R::BloodOxygen, "%") => ("%", 1.0),
        (R::Glucose, "mg/dL") => ("mg/dL", 1.0),
        (R::Glucose, "mmol/L") => ("mmol/L", 1.0),
        (R::BodyTemperature | R::BasalBodyTemperature, "degC" | "°C") => ("°C", 1.0),
        (R::Vo2Max, "mL/kg/min" | "ml/kg/min") => ("mL/kg/min", 1.0),
        (R::Steps | R::FloorsClimbed, "count") => ("count", 1.0),
        (R::CaloriesActive | R::CaloriesBasal, "Cal" | "kcal") => ("kcal", 1.0),
        (R::Distance, "m") => ("m", 1.0),
        (R::Water, "L") => ("mL", 1000.0),
        (R::Water, "mL" | "ml") => ("mL", 1.0),
        (R::ForcedVitalCapacity | R::ForcedExpiratoryVolume1, "L") => ("L", 1.0),
        (R::BloodPressure, "mmHg") => ("mmHg", 1.0),
        _ => return None,
    };
    Some((resource, label, factor))
}

/// The Junction source type of an Open Wearables source (`deviceType`, `recordingMethod`), as
/// the Junction docs name them: a manual entry is `app`.
fn source_type(source: &Map<String, Value>) -> Option<&'static str> {
    let text = |k: &str| source.get(k).and_then(Value::as_str);
    if text("recordingMethod") == Some("manual") {
        return Some("app");
    }
    Some(match text("deviceType")? {
        "phone" => "phone",
        "watch" | "fitness_band" => "watch",
        "ring" => "ring",
        "scale" => "scale",
        "chest_strap" => "chest_strap",
        _ => return None,
    })
}

/// A whole-hour offset (`+01:00`) as the IANA zone of that fixed offset (`Etc/GMT-1`: the
/// `Etc` zones' signs are inverted); any other offset as UTC.
fn zone_of_offset(offset: &str) -> String {
    let hours =
        offset.strip_suffix(":00").and_then(|h| h.parse::<i32>().ok()).filter(|h| (-12..=14).contains(h));
    match hours {
        Some(0) | None => "UTC".into(),
        Some(h) => format!("Etc/GMT{:+}", -h),
    }
}

/// The Junction fields of a record's `source`: its app (`source_bundle`: `bundleIdentifier`,
/// else `appId`), its device (`product_type`: `productType`, else `deviceModel`) and, at
/// `type_key` (`type` in a quantity sample, `source_type` in a summary), its kind of source
/// ([`source_type`]).
fn source_fields(record: &Map<String, Value>, type_key: &str) -> Map<String, Value> {
    let empty = Map::new();
    let source = record.get("source").and_then(Value::as_object).unwrap_or(&empty);
    let text = |k: &str| source.get(k).and_then(Value::as_str);
    let mut s = Map::new();
    if let Some(bundle) = text("bundleIdentifier").or(text("appId")) {
        s.insert("source_bundle".into(), json!(bundle));
    }
    if let Some(product) = text("productType").or(text("deviceModel")) {
        s.insert("product_type".into(), json!(product));
    }
    if let Some(kind) = source_type(source) {
        s.insert(type_key.into(), json!(kind));
    }
    s
}

/// A daily upload of `data` as the Junction SDKs send it, from the device zone `zone`.
fn daily(provider: &str, zone: &str, data: Vec<Value>) -> UploadBody {
    UploadBody {
        stage: "daily".into(),
        start_date: None,
        end_date: None,
        time_zone: zone.to_owned(),
        provider: provider.into(),
        data: Value::Array(data),
        is_final_chunk: None,
    }
}

/// A sleep session or a workout written in the iOS Junction SDK's summary shape.
struct Written {
    /// The device's zone (the upload's `time_zone`), from the record's `zoneOffset`.
    zone: String,
    record: Value,
    /// How many of the body's entries (slices, workouts) it was written from.
    entries: usize,
}

/// The summary uploads of `resource` from `written` records, one per zone. A record the
/// summary parse refuses is skipped alone, its entries counted in `skipped`.
fn summary_uploads(
    resource: &Resource,
    user: UserId,
    provider: &str,
    written: Vec<Written>,
    skipped: &mut usize,
) -> Result<Vec<SummaryUpload>, DomainError> {
    let mut by_zone: BTreeMap<String, Vec<Written>> = BTreeMap::new();
    for w in written {
        by_zone.entry(w.zone.clone()).or_default().push(w);
    }
    let mut out = Vec::with_capacity(by_zone.len());
    for (zone, written) in by_zone {
        let upload =
            |data: Vec<Value>| SummaryUpload::parse(resource.clone(), user, &daily(provider, &zone, data));
        if let Ok(u) = upload(written.iter().map(|w| w.record.clone()).collect()) {
            out.push(u);
            continue;
        }
        // One record the parse refuses: keep the others, each checked alone.
        let mut good = Vec::new();
        for w in written {
            if upload(vec![w.record.clone()]).is_ok() {
                good.push(w.record);
            } else {
                *skipped += w.entries;
            }
        }
        if !good.is_empty() {
            out.push(upload(good).map_err(refusal)?);
        }
    }
    Ok(out)
}

/// An Open Wearables time (`startDate`, `endDate`: ISO 8601 with an offset) at `key`.
fn instant(o: &Map<String, Value>, key: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let text = o.get(key)?.as_str()?;
    chrono::DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&chrono::Utc))
}

/// A time as the iOS Junction SDK writes it (`2026-11-20T07:00:00Z`).
fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// One record as a Junction quantity sample (`{value, unit, start_date, end_date,
/// source_bundle, product_type, type, metadata}`), with its resource; `None` when Wearlab keeps
/// no timeseries of its type or its unit is not one the dialect's SDKs write.
fn sample(record: &Map<String, Value>) -> Option<(Resource, String, Value)> {
    let text = |k: &str| record.get(k).and_then(Value::as_str);
    let (resource, unit, factor) = reading(text("type")?, text("unit")?)?;
    let value = record.get("value").and_then(Value::as_f64)? * factor;
    let mut s = Map::new();
    s.insert("value".into(), json!(value));
    s.insert("unit".into(), json!(unit));
    s.insert("start_date".into(), json!(text("startDate")?));
    s.insert("end_date".into(), json!(text("endDate")?));
    s.extend(source_fields(record, "type"));
    if let Some(zone) = record.get("metadata").and_then(|m| m.get("HKTimeZone")) {
        s.insert("metadata".into(), json!({ "HKTimeZone": zone }));
    }
    let zone = zone_of_offset(text("zoneOffset").unwrap_or("+00:00"));
    Some((resource, zone, Value::Object(s)))
}

/// A blood pressure reading's key: its correlation (`parentId`) when sent, else its start and app.
fn reading_key(record: &Map<String, Value>) -> String {
    let text = |k: &str| record.get(k).and_then(Value::as_str).unwrap_or("");
    match text("parentId") {
        "" => {
            let app = record.get("source").and_then(|s| s.get("appId")).and_then(Value::as_str).unwrap_or("");
            format!("{}#{app}", text("startDate"))
        }
        parent => parent.to_owned(),
    }
}

impl OpenWearablesSync {
    /// Reads `user`'s sync body: an unknown `provider` or a body of the wrong shape is refused;
    /// records, sleep slices and workouts Wearlab cannot keep are skipped alone.
    pub fn parse(user: UserId, body: &Value) -> Result<Self, DomainError> {
        let body: SyncBody = serde_json::from_value(body.clone()).map_err(|e| {
            // The body as a whole: no one field is named (the web layer says where it was).
            DomainError::Validation(vec![issue(
                &[],
                format!("not an Open Wearables sync body: {e}"),
                "model_type",
            )])
        })?;
        let Some(provider) = provider(&body.provider) else {
            return Err(DomainError::Validation(vec![issue(
                &["provider"],
                "provider must be one of apple, samsung, google",
                "enum",
            )]));
        };
        let mut skipped = 0;
        // Per resource and zone: the samples, in the order sent.
        let mut groups: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
        // Blood pressure halves by reading, until both are there.
        let mut pressure: BTreeMap<String, (String, Map<String, Value>)> = BTreeMap::new();
        for record in &body.data.records {
            let Some(record) = record.as_object() else {
                skipped += 1;
                continue;
            };
            let Some((resource, zone, sample)) = sample(record) else {
                skipped += 1;
                continue;
            };
            if resource != Resource::BloodPressure {
                groups.entry((resource.to_string(), zone)).or_default().push(sample);
                continue;
            }
            let half = match record.get("type").and_then(Value::as_str) {
                Some(t) if t.ends_with("Systolic") || t.ends_with("SYSTOLIC") => "systolic",
                _ => "diastolic",
            };
            let (_, reading) = pressure.entry(reading_key(record)).or_insert_with(|| (zone, Map::new()));
            reading.insert(half.into(), sample);
        }
        for (zone, reading) in pressure.into_values() {
            match (reading.get("systolic"), reading.get("diastolic")) {
                (Some(_), Some(_)) => groups
                    .entry((Resource::BloodPressure.to_string(), zone))
                    .or_default()
                    .push(Value::Object(reading)),
                _ => skipped += reading.len(),
            }
        }
        let mut uploads = Vec::with_capacity(groups.len());
        for ((resource, zone), samples) in groups {
            let resource = Resource::known(&resource).expect("a resource of the table above");
            let upload =
                |data: Vec<Value>| TimeseriesUpload::parse(resource.clone(), &daily(provider, &zone, data));
            match upload(samples.clone()) {
                Ok(u) => uploads.push(u),
                // One sample the parse refuses: keep the others, each checked alone.
                Err(_) => {
                    let good: Vec<Value> =
                        samples.into_iter().filter(|s| upload(vec![s.clone()]).is_ok()).collect();
                    skipped += usize::from(good.is_empty());
                    if !good.is_empty() {
                        uploads.push(upload(good).map_err(refusal)?);
                    }
                }
            }
        }
        let (sessions, dropped) = sleep::sessions(&body.data.sleep);
        skipped += dropped;
        let mut summaries = summary_uploads(&Resource::Sleep, user, provider, sessions, &mut skipped)?;
        let (written, dropped) = workouts::workouts(&body.data.workouts);
        skipped += dropped;
        summaries.extend(summary_uploads(&Resource::Workouts, user, provider, written, &mut skipped)?);
        Ok(Self { provider, uploads, summaries, skipped })
    }
}

/// Samples that each parse alone parse together; a refusal here is a bug, said as one.
fn refusal(e: DomainError) -> DomainError {
    match e {
        DomainError::Validation(issues) => DomainError::Validation(
            issues.into_iter().map(|i| ValidationIssue { msg: format!("record {}", i.msg), ..i }).collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::normalize::Entry;

    pub(super) fn user() -> UserId {
        UserId::from_uuid(uuid::Uuid::from_u128(0x0e11_0000_0000_4000_8000_0000_0000_0001))
    }

    /// The source of the schema's example (`SyncRequest.Config.json_schema_extra` of
    /// `the-momentum/open-wearables` `backend/app/schemas/providers/mobile_sdk/sync_request.py`):
    /// Samsung Health on a Galaxy Watch7.
    pub(super) fn samsung_source() -> Value {
        json!({
            "appId": "com.sec.android.app.shealth",
            "deviceId": "R9ZW30ABC12",
            "deviceName": "Galaxy Watch7",
            "deviceManufacturer": "Samsung",
            "deviceModel": "SM-R960",
            "deviceType": "watch",
            "recordingMethod": null
        })
    }

    /// A source as the iOS SDK's `_mapSource` writes it
    /// (`the-momentum/open_wearables_ios_sdk` `Sources/OpenWearablesHealthSDK/Internal/Types.swift`).
    pub(super) fn ios_source() -> Value {
        json!({
            "appId": "com.apple.health.81A1B5B2",
            "name": "Apple Watch",
            "deviceId": null,
            "deviceName": "Apple Watch",
            "deviceManufacturer": "Apple Inc.",
            "deviceModel": "Watch7,1",
            "deviceType": "watch",
            "recordingMethod": null,
            "operatingSystemVersion": {"majorVersion": 11, "minorVersion": 1, "patchVersion": 0}
        })
    }

    /// A sync body of `provider` with `sleep` slices and `workouts` (`SyncRequest`).
    pub(super) fn body(provider: &str, sleep: Vec<Value>, workouts: Vec<Value>) -> Value {
        json!({
            "provider": provider,
            "sdkVersion": "0.1.0",
            "syncTimestamp": "2026-02-24T10:00:00Z",
            "data": {"records": [], "sleep": sleep, "workouts": workouts}
        })
    }

    /// The summaries of `resource` read, as (day, n, value), in the order of the uploads.
    pub(super) fn summaries_of(
        parsed: &OpenWearablesSync,
        resource: &Resource,
    ) -> Vec<(String, String, Value)> {
        parsed
            .summaries
            .iter()
            .flat_map(|u| &u.entries)
            .filter_map(|s| match &s.entry {
                Entry::Summary { resource: r, date, n, value } if r == resource => {
                    Some((date.to_string(), n.clone(), value.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// A record as `_mapQuantityEfficient` of the iOS SDK writes it
    /// (`Sources/OpenWearablesHealthSDK/Internal/Types.swift`), with the source of `_mapSource`.
    fn ios(kind: &str, value: f64, unit: &str, at: &str) -> Value {
        json!({
            "id": "5B7D3C1E-2F4A-4E8B-9C6D-1A2B3C4D5E6F",
            "type": kind,
            "startDate": at,
            "endDate": at,
            "zoneOffset": "+01:00",
            "source": {
                "appId": "com.apple.health.81A1B5B2",
                "bundleIdentifier": "com.apple.health.81A1B5B2",
                "deviceName": "Apple Watch",
                "deviceManufacturer": "Apple Inc.",
                "deviceModel": "Watch",
                "productType": "Watch7,1",
                "deviceType": "watch",
                "recordingMethod": "automatic"
            },
            "value": value,
            "unit": unit,
            "parentId": null,
            "metadata": {}
        })
    }

    fn sync(records: Vec<Value>) -> Value {
        json!({
            "provider": "apple",
            "sdkVersion": "0.9.0",
            "syncTimestamp": "2026-11-20T09:00:00Z",
            "data": { "records": records, "sleep": [], "workouts": [] }
        })
    }

    fn values(u: &TimeseriesUpload) -> Vec<(String, f64, String, String)> {
        u.series
            .iter()
            .flat_map(|s| {
                let Entry::Series { samples, .. } = &s.entry else { panic!("a series") };
                samples.iter().map(move |x| {
                    (x.timestamp.to_rfc3339(), x.value, x.unit.clone(), s.source.source_type.clone())
                })
            })
            .collect()
    }

    #[test]
    fn ios_records_become_the_same_uploads_as_the_junction_sdks_send() {
        let parsed = OpenWearablesSync::parse(
            user(),
            &sync(vec![
                ios("HKQuantityTypeIdentifierHeartRate", 61.0, "bpm", "2026-11-20T07:00:00Z"),
                ios("HKQuantityTypeIdentifierBloodGlucose", 99.0, "mg/dL", "2026-11-20T07:05:00Z"),
                ios("HKQuantityTypeIdentifierDietaryWater", 0.25, "L", "2026-11-20T07:10:00Z"),
                ios("HKQuantityTypeIdentifierActiveEnergyBurned", 12.5, "Cal", "2026-11-20T07:15:00Z"),
                ios("HKQuantityTypeIdentifierWalkingSpeed", 1.3, "m/s", "2026-11-20T07:20:00Z"),
            ]),
        )
        .unwrap();
        assert_eq!(parsed.provider, "apple_health_kit");
        assert_eq!(parsed.skipped, 1, "walking speed has no timeseries in Wearlab");
        let by: BTreeMap<String, Vec<(String, f64, String, String)>> =
            parsed.uploads.iter().map(|u| (u.resource.to_string(), values(u))).collect();
        let one = |r: &str| by[r][0].clone();
        assert_eq!(
            one("heartrate"),
            ("2026-11-20T07:00:00+00:00".into(), 61.0, "bpm".into(), "watch".into())
        );
        assert_eq!(one("glucose").1, 99.0);
        assert_eq!((one("water").1, one("water").2), (250.0, "mL".into()));
        assert_eq!((one("calories_active").1, one("calories_active").2), (12.5, "kcal".into()));
        let Entry::Series { date, samples, .. } = &parsed.uploads[0].series[0].entry else { panic!() };
        assert_eq!((date.to_string(), samples[0].timezone_offset), ("2026-11-20".into(), 3600));
        assert_eq!(parsed.uploads[0].series[0].source.app_id.as_deref(), Some("com.apple.health.81A1B5B2"));
    }

    #[test]
    fn the_halves_of_a_blood_pressure_reading_become_one_reading() {
        let mut sys = ios("BLOOD_PRESSURE_SYSTOLIC", 122.0, "mmHg", "2026-02-24T08:30:00Z");
        let mut dia = ios("BLOOD_PRESSURE_DIASTOLIC", 81.0, "mmHg", "2026-02-24T08:30:00Z");
        sys["parentId"] = json!("abc-xyz-123");
        dia["parentId"] = json!("abc-xyz-123");
        let lone = ios("BLOOD_PRESSURE_SYSTOLIC", 130.0, "mmHg", "2026-02-24T09:30:00Z");
        let mut body = sync(vec![sys, dia, lone]);
        body["provider"] = json!("samsung");
        let parsed = OpenWearablesSync::parse(user(), &body).unwrap();
        assert_eq!((parsed.provider, parsed.skipped), ("samsung_health", 1));
        let bp = &parsed.uploads[0].blood_pressure;
        assert_eq!((bp.len(), bp[0].systolic, bp[0].diastolic), (1, 122.0, 81.0));
    }

    #[test]
    fn a_bad_record_is_skipped_alone_and_a_bad_body_refused_whole() {
        let parsed = OpenWearablesSync::parse(
            user(),
            &sync(vec![
                ios("HKQuantityTypeIdentifierHeartRate", 61.0, "bpm", "2026-11-20T07:00:00Z"),
                ios("HKQuantityTypeIdentifierHeartRate", -5.0, "bpm", "2026-11-20T07:01:00Z"),
            ]),
        )
        .unwrap();
        assert_eq!((parsed.uploads.len(), values(&parsed.uploads[0]).len()), (1, 1));
        let mut body = sync(vec![]);
        body["provider"] = json!("oura");
        assert!(matches!(OpenWearablesSync::parse(user(), &body), Err(DomainError::Validation(_))));
        assert!(matches!(
            OpenWearablesSync::parse(user(), &json!({"provider": "apple", "data": {"records": 3}})),
            Err(DomainError::Validation(_))
        ));
    }

    #[test]
    fn whole_hour_offsets_are_fixed_offset_zones() {
        assert_eq!(zone_of_offset("+01:00"), "Etc/GMT-1");
        assert_eq!(zone_of_offset("-05:00"), "Etc/GMT+5");
        assert_eq!(zone_of_offset("+00:00"), "UTC");
        assert_eq!(zone_of_offset("+05:30"), "UTC");
    }
}
