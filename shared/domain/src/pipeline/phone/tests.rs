//! Every fixture is a request body in the shape the named SDK source builds: iOS
//! `tryVital/vital-ios` (`TaggedPayload` encoded with `convertToSnakeCase` keys and `.iso8601`
//! dates, `Sources/VitalCore/Core/Extensions/APIClient+Extensions.swift`; nil optionals left out)
//! and Android `tryVital/vital-android` (`TimeseriesPayload` through Moshi, which leaves out nulls
//! and writes instants with `Instant.toString()`,
//! `VitalClient/src/main/java/io/tryvital/client/utils/InstantJsonAdapter.kt`).

use serde_json::json;

use super::*;

fn body(v: Value) -> UploadBody {
    serde_json::from_value(v).expect("an SDK body deserializes")
}

fn parse(path: &str, v: Value) -> Result<TimeseriesUpload, DomainError> {
    TimeseriesUpload::parse(sdk_timeseries(path).expect("an SDK path"), &body(v))
}

/// The refusal's issues as (`data.3.value`, message).
fn refusal(r: Result<TimeseriesUpload, DomainError>) -> Vec<(String, String)> {
    let Err(DomainError::Validation(issues)) = r else { panic!("expected a refusal, got {r:?}") };
    issues
        .into_iter()
        .map(|i| {
            let loc: Vec<String> = i
                .loc
                .iter()
                .map(|p| match p {
                    LocPart::Index(n) => n.to_string(),
                    LocPart::Key(k) => k.clone(),
                })
                .collect();
            (loc.join("."), i.msg)
        })
        .collect()
}

/// A series as (source type, app, day, samples as (timestamp, value, unit, offset)).
type Row<'a> = (&'a str, Option<&'a str>, String, Vec<(String, f64, &'a str, i32)>);

fn series(u: &TimeseriesUpload) -> Vec<Row<'_>> {
    u.series
        .iter()
        .map(|s| {
            let Entry::Series { date, samples, .. } = &s.entry else { panic!("a series") };
            let samples = samples
                .iter()
                .map(|x| (x.timestamp.to_rfc3339(), x.value, x.unit.as_str(), x.timezone_offset));
            (s.source.source_type.as_str(), s.source.app_id.as_deref(), date.to_string(), samples.collect())
        })
        .collect()
}

/// iOS `TimeSeriesData.heartRate`: HealthKit samples from `LocalQuantitySample(_:unit:)`
/// (`Sources/VitalHealthKit/HealthKit/Models/CoreModels+Extensions.swift`: `type` nil, the
/// source revision's bundle and product type, device keys in `metadata`).
fn ios_heartrate() -> Value {
    let watch = |at: &str, bpm: f64| {
        json!({
            "value": bpm, "start_date": at, "end_date": at,
            "source_bundle": "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11",
            "product_type": "Watch7,1", "unit": "bpm",
            "metadata": {"_DMO": "Watch", "_DMA": "Apple Inc.", "_DHV": "Watch7,1", "_DSV": "11.1"}
        })
    };
    json!({
        "stage": "daily", "time_zone": "Europe/Berlin", "provider": "apple_health_kit",
        "data": [watch("2026-11-20T22:58:00Z", 62.0), watch("2026-11-20T23:30:00Z", 58.0)],
        "is_final_chunk": true
    })
}

#[test]
fn an_ios_heart_rate_from_a_watch_is_a_watch_sample_on_its_local_day() {
    let u = parse("heartrate", ios_heartrate()).unwrap();
    assert_eq!(u.resource, Resource::Heartrate);
    assert_eq!(u.envelope.stage, Stage::Daily);
    assert_eq!(u.envelope.provider, "apple_health_kit");
    let app = Some("com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11");
    // 23:30 UTC is 00:30 the next day in Berlin (UTC+1 in November).
    assert_eq!(
        series(&u),
        [
            (
                "watch",
                app,
                "2026-11-20".into(),
                vec![("2026-11-20T22:58:00+00:00".into(), 62.0, "bpm", 3600)]
            ),
            (
                "watch",
                app,
                "2026-11-21".into(),
                vec![("2026-11-20T23:30:00+00:00".into(), 58.0, "bpm", 3600)]
            ),
        ]
    );
    assert_eq!(u.series[0].source.provider, "apple_health_kit");
    assert!(u.blood_pressure.is_empty());
}

#[test]
fn an_android_heart_rate_keeps_its_type_and_package_and_is_final_when_it_does_not_say() {
    // Android `RecordProcessor.mapHearthRate` through `quantitySample` (`VitalHealthConnect/src/
    // main/java/io/tryvital/vitalhealthconnect/model/HCQuantitySample.kt`): the record's id, its
    // package, the type of its device; no product type; no `is_final_chunk` in `TimeseriesPayload`.
    let v = json!({
        "stage": "daily", "provider": "health_connect", "time_zone": "America/New_York",
        "data": [{
            "id": "3f1c9b52-7d0e-4e59-9a53-0b6f2d8e4c17", "value": 71.0, "unit": "bpm",
            "start_date": "2026-11-20T14:00:00Z", "end_date": "2026-11-20T14:00:04.500Z",
            "source_bundle": "com.google.android.apps.fitness", "type": "watch",
            "metadata": {"_DMO": "Pixel Watch 2", "_DMA": "Google", "_DTY": "watch"}
        }]
    });
    let u = parse("heartrate", v).unwrap();
    assert!(u.envelope.is_final_chunk);
    assert_eq!(
        series(&u),
        [(
            "watch",
            Some("com.google.android.apps.fitness"),
            "2026-11-20".into(),
            vec![("2026-11-20T14:00:00+00:00".into(), 71.0, "bpm", -5 * 3600)]
        )]
    );
}

#[test]
fn ios_glucose_in_mmol_per_liter_is_stored_in_mg_per_deciliter() {
    // iOS `TimeSeriesData.glucose` from HealthKit: `QuantityUnit` reads bloodGlucose in mmol/L.
    let v = json!({
        "stage": "daily", "time_zone": "Europe/London", "provider": "apple_health_kit",
        "data": [{
            "value": 5.55, "start_date": "2026-11-20T07:05:00Z", "end_date": "2026-11-20T07:05:00Z",
            "source_bundle": "com.dexcom.G7", "product_type": "iPhone15,2", "unit": "mmol/L",
            "metadata": {"HKWasUserEntered": "0"}
        }],
        "is_final_chunk": true
    });
    let u = parse("glucose", v).unwrap();
    let s = series(&u);
    assert_eq!((s[0].0, s[0].1), ("unknown", Some("com.dexcom.G7")), "a third-party app's bundle");
    let (_, value, unit, _) = s[0].3[0];
    assert_eq!(unit, "mg/dL");
    assert!((value - 100.0).abs() < 0.01, "5.55 mmol/L is 100 mg/dL, got {value}");
}

#[test]
fn a_ble_glucose_meter_reading_is_a_fingerprick_in_mg_per_deciliter() {
    // iOS `GlucoseMeter1808.swift` (Accu-Chek, Contour): `type: .fingerprick`, `unit: .glucose`
    // (mmol/L), no bundle, product type or metadata; posted daily by `PostSamples.swift`.
    let v = json!({
        "stage": "daily", "time_zone": "Europe/Berlin", "provider": "accuchek_ble",
        "data": [{"value": 6.2, "start_date": "2026-11-20T06:45:00Z", "end_date": "2026-11-20T06:45:00Z",
                  "type": "fingerprick", "unit": "mmol/L"}],
        "is_final_chunk": true
    });
    let u = parse("glucose", v).unwrap();
    let s = series(&u);
    assert_eq!((s[0].0, s[0].1), ("fingerprick", None));
    assert!((s[0].3[0].1 - 111.71).abs() < 0.01, "6.2 mmol/L is 111.71 mg/dL, got {}", s[0].3[0].1);
    assert_eq!(s[0].3[0].2, "mg/dL");
    assert_eq!(u.series[0].source.provider, "accuchek_ble");
}

#[test]
fn android_active_calories_labelled_kilojoules_are_read_as_kilocalories() {
    // Android hourly totals (`RecordAggregator.kt`: `SourceType.MultipleSources`, no metadata
    // record, so no id or package and an empty `metadata`), `SampleType.ActiveCaloriesBurned`
    // labelled "kJ" while the value is `inKilocalories`.
    let v = json!({
        "stage": "daily", "provider": "health_connect", "time_zone": "Europe/Paris",
        "data": [{"value": 35.2, "unit": "kJ", "start_date": "2026-11-20T13:00:00Z",
                  "end_date": "2026-11-20T14:00:00Z", "type": "multiple_sources", "metadata": {}}]
    });
    let u = parse("calories_active", v).unwrap();
    assert_eq!(
        series(&u),
        [(
            "multiple_sources",
            None,
            "2026-11-20".into(),
            vec![("2026-11-20T13:00:00+00:00".into(), 35.2, "kcal", 3600)]
        )]
    );
}

#[test]
fn a_cuffs_blood_pressure_is_kept_whole_and_its_pulse_is_a_heart_rate() {
    // iOS `BloodPressureReader1810.swift` (Omron, Beurer): systolic, diastolic and pulse samples
    // of `type: .cuff`, posted daily to `blood_pressure` by `PostSamples.swift`.
    let cuff = |value: f64, unit: &str| {
        json!({"value": value, "start_date": "2026-11-20T07:30:00Z", "end_date": "2026-11-20T07:30:00Z",
               "type": "cuff", "unit": unit})
    };
    let v = json!({
        "stage": "daily", "time_zone": "Europe/Berlin", "provider": "omron_ble",
        "data": [
            {"systolic": cuff(128.0, "mmHg"), "diastolic": cuff(82.0, "mmHg"), "pulse": cuff(64.0, "bpm")},
            {"systolic": cuff(131.0, "mmHg"), "diastolic": cuff(85.0, "mmHg")}
        ],
        "is_final_chunk": true
    });
    let u = parse("blood_pressure", v).unwrap();
    // Both readings are the same point (same cuff, same second): the later one is kept.
    assert_eq!(u.blood_pressure.len(), 1);
    let bp = &u.blood_pressure[0];
    assert_eq!((bp.systolic, bp.diastolic), (131.0, 85.0));
    assert_eq!((bp.source.provider.as_str(), bp.source.source_type.as_str()), ("omron_ble", "cuff"));
    assert_eq!((bp.date.to_string(), bp.timezone_offset), ("2026-11-20".into(), 3600));
    let Entry::Series { resource, samples, .. } = &u.series[0].entry else { panic!() };
    assert_eq!((resource, samples[0].value, samples[0].unit.as_str()), (&Resource::Heartrate, 64.0, "bpm"));
    assert_eq!(u.series[0].source.source_type, "cuff");
}

#[test]
fn a_historical_chunk_carries_its_window_and_says_whether_it_is_the_last() {
    let mut v = ios_heartrate();
    v["stage"] = json!("historical");
    v["start_date"] = json!("2026-08-22T00:00:00Z");
    v["end_date"] = json!("2026-11-20T09:12:44Z");
    v["is_final_chunk"] = json!(false);
    let u = parse("heartrate", v).unwrap();
    let window = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
    assert_eq!(
        u.envelope.stage,
        Stage::Historical { start: window("2026-08-22T00:00:00Z"), end: window("2026-11-20T09:12:44Z") }
    );
    assert!(!u.envelope.is_final_chunk);
    // Android's one historical POST (no `is_final_chunk`, instants with a fraction).
    let v = json!({
        "stage": "historical", "provider": "health_connect", "time_zone": "Europe/Berlin",
        "start_date": "2026-10-21T09:12:44.318Z", "end_date": "2026-11-20T09:12:44.318Z", "data": []
    });
    let u = parse("heartrate_variability", v).unwrap();
    assert!(u.envelope.is_final_chunk);
    assert_eq!(u.resource, Resource::Hrv);
    assert!(u.series.is_empty());
}

#[test]
fn the_sdks_path_names_map_to_wearlabs_resources() {
    assert_eq!(sdk_timeseries("heartrate_variability"), Some(Resource::Hrv));
    assert_eq!(sdk_timeseries("temperature"), Some(Resource::BodyTemperature));
    assert_eq!(sdk_timeseries("heart_rate_recovery_one_minute"), Some(Resource::HeartRateRecoveryOneMinute));
    assert_eq!(sdk_timeseries("hrv"), None, "the SDKs never send Wearlab's own name");
    assert_eq!(sdk_timeseries("sleep"), None, "a summary");
}

#[test]
fn the_source_type_is_the_sent_one_else_the_ios_sdks_inference() {
    let apple = Some("com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11");
    assert_eq!(source_type(None, Some("com.apple.Health"), None), "app");
    assert_eq!(source_type(None, apple, Some("Watch7,1")), "watch");
    assert_eq!(source_type(None, apple, Some("iPhone15,2")), "phone");
    assert_eq!(source_type(None, apple, None), "unknown");
    assert_eq!(source_type(Some("unknown"), apple, Some("Watch7,1")), "watch", "a sent unknown is inferred");
    assert_eq!(source_type(Some("manual_scan"), None, None), "manual_scan");
    assert_eq!(source_type(None, Some("com.google.android.apps.fitness"), None), "unknown");
}

#[test]
fn hrv_from_healthkit_is_sdnn_and_from_health_connect_rmssd() {
    let sdnn = parse("heartrate_variability", {
        let mut v = ios_heartrate();
        v["data"][0]["unit"] = json!("rmssd");
        v["data"][1]["unit"] = json!("rmssd");
        v
    })
    .unwrap();
    let Entry::Series { samples, .. } = &sdnn.series[0].entry else { panic!() };
    assert_eq!((samples[0].value, samples[0].unit.as_str()), (62.0, "ms"));
    assert_eq!(hrv_measure(&sdnn.series[0].source), HrvMeasure::Sdnn);
    assert_eq!(hrv_measure(&source_of("health_connect", None, None)), HrvMeasure::Rmssd);
}

#[test]
fn a_sample_dated_in_its_own_healthkit_time_zone_takes_that_zones_day() {
    let mut v = ios_heartrate();
    v["data"][0]["metadata"]["HKTimeZone"] = json!("America/Los_Angeles");
    let u = parse("heartrate", v).unwrap();
    let s = series(&u);
    assert_eq!((s[0].2.as_str(), s[0].3[0].3), ("2026-11-20", -8 * 3600));
    assert_eq!(
        (s[1].2.as_str(), s[1].3[0].3),
        ("2026-11-21", 3600),
        "the other sample keeps the upload's zone"
    );
}

#[test]
fn two_points_differing_only_in_value_have_one_key_and_the_later_wins() {
    let t = "2026-11-20T08:00:00Z".parse::<DateTime<Utc>>().unwrap();
    let src = source_of("apple_health_kit", Some("watch".into()), Some("com.apple.health.A".into()));
    let first = Sample {
        timestamp: t,
        value: 61.0,
        unit: "bpm".into(),
        timezone_offset: 0,
        systolic: None,
        diastolic: None,
    };
    let second = Sample { value: 64.0, ..first.clone() };
    assert_eq!(
        point_key(&Resource::Heartrate, &src, first.timestamp),
        point_key(&Resource::Heartrate, &src, second.timestamp)
    );
    let phone = source_of("apple_health_kit", Some("phone".into()), None);
    assert_ne!(point_key(&Resource::Heartrate, &src, t), point_key(&Resource::Heartrate, &phone, t));

    let mut v = ios_heartrate();
    v["data"][1]["start_date"] = v["data"][0]["start_date"].clone();
    v["data"][1]["end_date"] = v["data"][0]["end_date"].clone();
    let u = parse("heartrate", v).unwrap();
    let s = series(&u);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].3.iter().map(|x| x.1).collect::<Vec<_>>(), [58.0], "the upload's later value");
}

#[test]
fn a_provider_that_is_not_an_sdk_provider_is_refused_naming_the_field() {
    for provider in ["oura", "onetouch_ble_x"] {
        let mut v = ios_heartrate();
        v["provider"] = json!(provider);
        let got = refusal(parse("heartrate", v));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "provider");
        assert!(got[0].1.contains("apple_health_kit") && got[0].1.contains("freestyle_libre_ble"), "{got:?}");
        assert!(!got[0].1.contains("oura"));
    }
}

#[test]
fn a_bad_stage_a_bad_zone_and_misplaced_dates_are_refused_together() {
    let mut v = ios_heartrate();
    v["stage"] = json!("weekly");
    v["time_zone"] = json!("Mars/Olympus_Mons");
    assert_eq!(
        refusal(parse("heartrate", v)),
        [
            ("stage".into(), "Input should be 'daily' or 'historical'".into()),
            ("time_zone".into(), "time_zone must be an IANA time zone identifier, e.g. Europe/London".into()),
        ]
    );
    let mut v = ios_heartrate();
    v["start_date"] = json!("2026-11-01T00:00:00Z");
    assert_eq!(refusal(parse("heartrate", v))[0].0, "start_date");
    let mut v = ios_heartrate();
    v["stage"] = json!("historical");
    let got: Vec<String> = refusal(parse("heartrate", v)).into_iter().map(|(loc, _)| loc).collect();
    assert_eq!(got, ["start_date", "end_date"]);
}

#[test]
fn out_of_range_values_refuse_the_upload_listing_every_sample() {
    let mut v = ios_heartrate();
    v["data"][1]["value"] = json!(-3.0);
    assert_eq!(
        refusal(parse("heartrate", v)),
        [("data.1.value".into(), "value must be a number of at least 0".into())]
    );

    let mut v = ios_heartrate();
    v["data"][0]["value"] = json!("NaN");
    v["data"][1]["unit"] = json!("beats");
    let got: Vec<String> = refusal(parse("heartrate", v)).into_iter().map(|(loc, _)| loc).collect();
    assert_eq!(got, ["data.0.value", "data.1.unit"]);

    let mut v = ios_heartrate();
    v["data"][0]["unit"] = json!("mg/dL");
    v["data"][0]["value"] = json!(2400.0);
    assert_eq!(
        refusal(parse("glucose", v))[0],
        ("data.0.value".into(), "value must be at most 2000 mg/dL".into())
    );

    let mut v = ios_heartrate();
    v["data"][1]["unit"] = json!("%");
    v["data"][1]["value"] = json!(101.0);
    let got = refusal(parse("blood_oxygen", v));
    // The first sample's `bpm` is no unit of blood oxygen: both samples are named.
    assert_eq!(got.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>(), ["data.0.unit", "data.1.value"]);
}

#[test]
fn a_blood_pressure_without_its_diastolic_is_refused_at_it() {
    let v = json!({
        "stage": "daily", "time_zone": "Europe/Berlin", "provider": "beurer_ble",
        "data": [{"systolic": {"value": 120.0, "start_date": "2026-11-20T07:30:00Z",
                               "end_date": "2026-11-20T07:30:00Z", "type": "cuff", "unit": "mmHg"}}],
        "is_final_chunk": true
    });
    assert_eq!(refusal(parse("blood_pressure", v)), [("data.0.diastolic".into(), "Field required".into())]);
}
