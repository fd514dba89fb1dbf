//! Every fixture is a request body in the shape the named SDK source builds: iOS
//! `tryVital/vital-ios` (`TaggedPayload` encoded with `convertToSnakeCase` keys and `.iso8601`
//! dates, `Sources/VitalCore/Core/Extensions/APIClient+Extensions.swift`; nil optionals left out;
//! computed properties such as `sourceType` not encoded; `data` is `SummaryData.payload`,
//! `Sources/VitalCore/Core/Client/Data Models/Base Models/ResourceData.swift`) and Android
//! `tryVital/vital-android` (`SummaryPayload` through Moshi: nulls left out, instants by
//! `Instant.toString()`, keys as `VitalClient/src/main/java/io/tryvital/client/services/data/
//! Summary.kt` names them).

use serde_json::{Value, json};
use uuid::Uuid;

use super::*;

fn user() -> UserId {
    UserId::from_uuid(Uuid::from_u128(0x5e1f_0000_0000_4000_8000_0000_0000_0001))
}

fn parse(resource: Resource, v: Value) -> Result<SummaryUpload, DomainError> {
    let body: UploadBody = serde_json::from_value(v).expect("an SDK body deserializes");
    SummaryUpload::parse(resource, user(), &body)
}

/// A daily iOS upload of `data` (`TaggedPayload(stage: .daily, ...)`).
fn ios(data: Value) -> Value {
    json!({"stage": "daily", "time_zone": "Europe/Berlin", "provider": "apple_health_kit", "data": data,
           "is_final_chunk": true})
}

/// A daily Android upload of `data` (`SummaryPayload`, no `is_final_chunk`).
fn android(data: Value) -> Value {
    json!({"stage": "daily", "provider": "health_connect", "time_zone": "America/New_York", "data": data})
}

/// The refusal's issues as (`data.0.day_summary.steps_sum`, message).
fn refusal(r: Result<SummaryUpload, DomainError>) -> Vec<(String, String)> {
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

/// The summaries of an upload as (resource, day, n, value) (an ECG's voltage series left out).
fn summaries(u: &SummaryUpload) -> Vec<(Resource, String, String, Value)> {
    u.entries
        .iter()
        .filter_map(|s| match &s.entry {
            Entry::Summary { resource, date, n, value } => {
                Some((resource.clone(), date.to_string(), n.clone(), value.clone()))
            }
            Entry::Series { resource: Resource::ElectrocardiogramVoltage, .. } => None,
            e => panic!("a summary, got {e:?}"),
        })
        .collect()
}

/// The one summary of `resource` in `u`.
fn one(u: &SummaryUpload, resource: Resource) -> (String, String, Value) {
    let mut of: Vec<_> = summaries(u).into_iter().filter(|(r, ..)| *r == resource).collect();
    assert_eq!(of.len(), 1, "one {resource} summary in {of:?}");
    let (_, day, n, value) = of.remove(0);
    (day, n, value)
}

/// iOS `ActivityPatch.Activity` (`Patches/ActivityPatch.swift`) as `HealthKitReads.swift` builds
/// it: the day summary's sums rounded down, the six sample lists empty.
fn ios_activity(date: &str, steps: i64) -> Value {
    json!({
        "day_summary": {
            "calendar_date": date, "active_energy_burned_sum": 512.0, "basal_energy_burned_sum": 1688.0,
            "steps_sum": steps, "floors_climbed_sum": 9, "distance_walking_running_sum": 6530.0,
            "max_heart_rate": 151, "min_heart_rate": 48, "avg_heart_rate": 74, "resting_heart_rate": 55,
            "exercise_time": 42, "wheelchair_use": false
        },
        "active_energy_burned": [], "basal_energy_burned": [], "steps": [], "floors_climbed": [],
        "distance_walking_running": [], "vo2_max": []
    })
}

#[test]
fn an_ios_activity_day_is_the_days_activity_summary_in_the_devices_zone() {
    let u = parse(Resource::Activity, ios(json!([ios_activity("2026-11-20", 10412)]))).unwrap();
    assert_eq!(u.envelope.provider, "apple_health_kit");
    let (day, n, v) = one(&u, Resource::Activity);
    assert_eq!((day.as_str(), n.as_str()), ("2026-11-20", "0"));
    assert_eq!(v["calendar_date"], "2026-11-20");
    assert_eq!(v["steps"], 10412.0);
    assert_eq!(v["calories_active"], 512.0);
    assert_eq!(v["calories_total"], 2200.0, "active + basal");
    assert_eq!(v["distance"], 6530.0);
    assert_eq!(v["floors_climbed"], 9.0);
    assert_eq!(v["timezone"], "Europe/Berlin");
    assert_eq!(v["timezone_offset"], 3600);
    assert_eq!(v["user_id"], user().to_string());
    assert_eq!(v["source"]["provider"], "apple_health_kit");
    assert_eq!(v["source"]["type"], "multiple_sources");
    // The value is the data API's own shape.
    serde_json::from_value::<wearlab_models::data::ActivitySummary>(v).unwrap();
}

#[test]
fn an_ios_activity_day_keeps_its_heart_rate_and_resting_heart_rate() {
    let u = parse(Resource::Activity, ios(json!([ios_activity("2026-11-20", 10412)]))).unwrap();
    let (_, _, v) = one(&u, Resource::Activity);
    assert_eq!(
        v["heart_rate"],
        json!({"avg_bpm": 74.0, "min_bpm": 48.0, "max_bpm": 151.0, "resting_bpm": 55.0})
    );
    // A day with only HealthKit's resting heart rate keeps it alone.
    let mut a = ios_activity("2026-11-21", 500);
    for k in ["max_heart_rate", "min_heart_rate", "avg_heart_rate"] {
        a["day_summary"].as_object_mut().unwrap().remove(k);
    }
    let u = parse(Resource::Activity, ios(json!([a]))).unwrap();
    let (_, _, v) = one(&u, Resource::Activity);
    assert_eq!(
        v["heart_rate"],
        json!({"avg_bpm": null, "min_bpm": null, "max_bpm": null, "resting_bpm": 55.0})
    );
}

#[test]
fn an_android_activity_day_reads_its_own_day_summary() {
    // Android `LocalActivity` with `ActivityDaySummary` (`services/data/Activity.kt`): no heart
    // rate, `exercise_time` a double; the sample lists sent empty here.
    let a = json!({
        "day_summary": {
            "calendar_date": "2026-11-20", "active_energy_burned_sum": 430.5,
            "basal_energy_burned_sum": 1650.0, "steps_sum": 8120, "distance_walking_running_sum": 5900.2,
            "floors_climbed_sum": 4, "exercise_time": 35.0
        },
        "active_energy_burned": [], "basal_energy_burned": [], "steps": [], "distance_walking_running": [],
        "vo2_max": [], "floors_climbed": []
    });
    let u = parse(Resource::Activity, android(json!([a]))).unwrap();
    let (day, _, v) = one(&u, Resource::Activity);
    assert_eq!(day, "2026-11-20");
    assert_eq!((v["steps"].as_f64(), v["calories_active"].as_f64()), (Some(8120.0), Some(430.5)));
    assert_eq!(v["timezone"], "America/New_York");
    assert_eq!(v["timezone_offset"], -5 * 3600);
    assert_eq!(v["source"]["provider"], "health_connect");
    assert_eq!(v["heart_rate"], Value::Null, "Android sends no heart rate with the day");
}

#[test]
fn an_activity_day_is_keyed_by_its_date_and_a_resend_replaces_it() {
    let first = parse(Resource::Activity, ios(json!([ios_activity("2026-11-20", 9000)]))).unwrap();
    let later = parse(Resource::Activity, ios(json!([ios_activity("2026-11-20", 10412)]))).unwrap();
    let (a, b) = (one(&first, Resource::Activity), one(&later, Resource::Activity));
    assert_eq!((&a.0, &a.1, &a.2["id"]), (&b.0, &b.1, &b.2["id"]), "same day, key and id");
    assert_ne!(a.2["steps"], b.2["steps"]);
    // The last three days re-covered in one upload, one of them twice: one entry a day.
    let u = parse(
        Resource::Activity,
        ios(json!([
            ios_activity("2026-11-19", 7000),
            ios_activity("2026-11-20", 9000),
            ios_activity("2026-11-20", 10412)
        ])),
    )
    .unwrap();
    let days: Vec<(String, f64)> =
        summaries(&u).into_iter().map(|(_, d, _, v)| (d, v["steps"].as_f64().unwrap())).collect();
    assert_eq!(days, [("2026-11-19".into(), 7000.0), ("2026-11-20".into(), 10412.0)]);
}

/// iOS `SleepPatch.Sleep` (`Patches/SleepPatch.swift`) from an Apple Watch: stage samples are
/// `LocalQuantitySample`s with unit `stage` and HealthKit's raw value (0 in bed, 2 awake, 3 core,
/// 4 deep, 5 REM).
fn ios_sleep(id: &str, end: &str) -> Value {
    let stage = |value: f64, start: &str, end: &str| {
        json!({"value": value, "start_date": start, "end_date": end,
               "source_bundle": "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11",
               "product_type": "Watch7,1", "unit": "stage", "metadata": {}})
    };
    json!({
        "id": id, "start_date": "2026-11-19T22:30:00Z", "end_date": end,
        "source_bundle": "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11", "product_type": "Watch7,1",
        "heart_rate_maximum": 71, "heart_rate_minimum": 47, "heart_rate_mean": 54, "hrv_mean_sdnn": 61.5,
        "respiratory_rate_mean": 14.2,
        "heart_rate": [], "heart_rate_variability": [], "respiratory_rate": [], "wrist_temperature": [],
        "sleep_stages": {
            "unspecified_sleep_samples": [],
            "awake_sleep_samples": [stage(2.0, "2026-11-20T02:00:00Z", "2026-11-20T02:10:00Z")],
            "deep_sleep_samples": [stage(4.0, "2026-11-19T22:40:00Z", "2026-11-19T23:40:00Z")],
            "light_sleep_samples": [
                stage(3.0, "2026-11-19T23:40:00Z", "2026-11-20T02:00:00Z"),
                stage(3.0, "2026-11-20T02:10:00Z", "2026-11-20T04:30:00Z")
            ],
            "rem_sleep_samples": [stage(5.0, "2026-11-20T04:30:00Z", "2026-11-20T05:30:00Z")],
            "in_bed_sleep_samples": [stage(0.0, "2026-11-19T22:30:00Z", "2026-11-20T05:30:00Z")],
            "unknown_sleep_samples": []
        },
        "metadata": {}
    })
}

#[test]
fn an_ios_sleep_with_stages_is_a_sleep_and_its_hypnogram() {
    let id = "6F1D2C3B-4A59-4E8F-9D10-A2B3C4D5E6F7";
    let u = parse(Resource::Sleep, ios(json!([ios_sleep(id, "2026-11-20T05:30:00Z")]))).unwrap();
    let (day, n, v) = one(&u, Resource::Sleep);
    // Ends at 06:30 in Berlin on the 20th.
    assert_eq!((day.as_str(), n.as_str()), ("2026-11-20", id));
    assert_eq!(v["bedtime_start"], "2026-11-19T22:30:00Z");
    assert_eq!(v["duration"], 7 * 3600);
    assert_eq!(
        (v["deep"].as_i64(), v["light"].as_i64(), v["rem"].as_i64()),
        (Some(3600), Some(280 * 60), Some(3600))
    );
    assert_eq!(v["awake"], 600);
    assert_eq!(v["total"], 400 * 60, "deep + light + rem; the in-bed span is no stage");
    assert_eq!(v["type"], "long_sleep");
    assert_eq!(v["hr_average"], 54.0);
    assert_eq!(v["source"]["type"], "watch");
    assert_eq!(v["source"]["app_id"], "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11");
    let eff = v["efficiency"].as_f64().unwrap();
    assert!((eff - 400.0 / 420.0 * 100.0).abs() < 1e-9, "{eff}");
    serde_json::from_value::<wearlab_models::data::SleepSummary>(v).unwrap();
    let (cday, cn, c) = one(&u, Resource::SleepCycle);
    assert_eq!((cday, cn), (day, n));
    assert_eq!(c["stage_type"], json!([1, 2, 4, 2, 3]));
    assert_eq!(c["stage_start_offset_second"], json!([600, 4200, 12600, 13200, 21600]));
    assert_eq!(c["stage_end_offset_second"], json!([4200, 12600, 13200, 21600, 25200]));
    serde_json::from_value::<wearlab_models::data::SleepCycleSummary>(c).unwrap();
}

#[test]
fn two_uploads_of_the_same_sleep_id_give_the_same_key_and_the_later_replaces_it() {
    let id = "6F1D2C3B-4A59-4E8F-9D10-A2B3C4D5E6F7";
    // iOS stitches slices into a session: the later upload of the session ends later.
    let first = parse(Resource::Sleep, ios(json!([ios_sleep(id, "2026-11-20T05:00:00Z")]))).unwrap();
    let later = parse(Resource::Sleep, ios(json!([ios_sleep(id, "2026-11-20T05:30:00Z")]))).unwrap();
    let (a, b) = (one(&first, Resource::Sleep), one(&later, Resource::Sleep));
    assert_eq!((&a.0, &a.1, &a.2["id"]), (&b.0, &b.1, &b.2["id"]));
    assert_ne!(a.2["duration"], b.2["duration"]);
    // Another session is another key.
    let other = parse(
        Resource::Sleep,
        ios(json!([ios_sleep("0A1B2C3D-0000-4000-8000-000000000001", "2026-11-20T05:30:00Z")])),
    )
    .unwrap();
    assert_ne!(one(&other, Resource::Sleep).1, a.1);
}

#[test]
fn an_android_sleep_reads_its_camel_case_stage_lists() {
    // Android `LocalSleep` (`Summary.kt`): `Stages` has no `@Json` names, so its lists keep their
    // Kotlin names; values deep 1, light 2, rem 3, awake 4, out of bed 5, unknown -1.
    let stage = |value: f64, start: &str, end: &str| {
        json!({"value": value, "unit": "stage", "start_date": start, "end_date": end,
               "source_bundle": "com.google.android.apps.fitness"})
    };
    let s = json!({
        "id": "b2d9f6a0-1c4e-4f3a-8e7d-5a6b7c8d9e0f",
        "start_date": "2026-11-20T04:00:00Z", "end_date": "2026-11-20T11:00:00.250Z",
        "source_bundle": "com.google.android.apps.fitness", "source_type": "watch",
        "heart_rate_maximum": 80, "heart_rate_minimum": 50, "heart_rate_mean": 58,
        "sleep_stages": {
            "awakeSleepSamples": [stage(4.0, "2026-11-20T06:00:00Z", "2026-11-20T06:15:00Z")],
            "deepSleepSamples": [stage(1.0, "2026-11-20T04:10:00Z", "2026-11-20T05:10:00Z")],
            "lightSleepSamples": [stage(2.0, "2026-11-20T05:10:00Z", "2026-11-20T06:00:00Z")],
            "remSleepSamples": [stage(3.0, "2026-11-20T06:15:00Z", "2026-11-20T07:15:00Z")],
            "outOfBedSleepSamples": [stage(5.0, "2026-11-20T07:15:00Z", "2026-11-20T07:20:00Z")],
            "unknownSleepSamples": [stage(-1.0, "2026-11-20T07:20:00Z", "2026-11-20T07:30:00Z")]
        },
        "wrist_temperature": [], "score": 81, "metadata": {"_DMO": "Pixel Watch 2"}
    });
    let u = parse(Resource::Sleep, android(json!([s]))).unwrap();
    let (day, n, v) = one(&u, Resource::Sleep);
    assert_eq!((day.as_str(), n.as_str()), ("2026-11-20", "b2d9f6a0-1c4e-4f3a-8e7d-5a6b7c8d9e0f"));
    assert_eq!(
        (v["deep"].as_i64(), v["light"].as_i64(), v["rem"].as_i64()),
        (Some(3600), Some(3000), Some(3600))
    );
    assert_eq!(v["awake"], 20 * 60, "awake and out of bed");
    assert_eq!(v["source"]["type"], "watch");
    assert_eq!(v["timezone"], "America/New_York");
    let (_, _, c) = one(&u, Resource::SleepCycle);
    assert_eq!(c["stage_type"], json!([1, 2, 4, 3, 4, -1]));
}

#[test]
fn a_sleep_without_stages_has_no_hypnogram() {
    let mut s = ios_sleep("6F1D2C3B-4A59-4E8F-9D10-A2B3C4D5E6F7", "2026-11-20T05:30:00Z");
    s["sleep_stages"] = json!({});
    let u = parse(Resource::Sleep, ios(json!([s]))).unwrap();
    let (_, _, v) = one(&u, Resource::Sleep);
    assert_eq!(v["total"], 0);
    assert!(v["efficiency"].is_null());
    assert!(summaries(&u).iter().all(|(r, ..)| *r == Resource::Sleep));
}

#[test]
fn an_ios_workout_keeps_its_zones_and_its_sport_becomes_a_slug() {
    // iOS `WorkoutPatch.Workout` (`Patches/WorkoutPatch.swift`): `heart_rate_zone1` .. 6 (the
    // snake-cased `heartRateZone1`), `heart_rate_zone_max_hr` 220 - age.
    let w = json!({
        "id": "9E8D7C6B-5A49-4382-9170-6F5E4D3C2B1A",
        "start_date": "2026-11-20T07:00:00Z", "end_date": "2026-11-20T07:45:00Z", "moving_time": 2610.0,
        "source_bundle": "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11", "product_type": "Watch7,1",
        "sport": "Traditional Strength Training", "calories": 310.5, "distance": 0.0,
        "heart_rate_maximum": 162, "heart_rate_minimum": 88, "heart_rate_mean": 128,
        "heart_rate_zone1": 60, "heart_rate_zone2": 300, "heart_rate_zone3": 900, "heart_rate_zone4": 1200,
        "heart_rate_zone5": 240, "heart_rate_zone6": 0, "heart_rate_zone_max_hr": 184.0,
        "heart_rate_zone_known_age": 36, "heart_rate": [], "respiratory_rate": [],
        "stream": {"components": {}}, "metadata": {"HKIndoorWorkout": "1"}
    });
    let running = json!({
        "id": "1E8D7C6B-5A49-4382-9170-6F5E4D3C2B1A",
        "start_date": "2026-11-20T17:00:00Z", "end_date": "2026-11-20T17:30:00Z", "moving_time": 1800.0,
        "source_bundle": "com.strava.stravaride", "sport": "Running", "calories": 350.0, "distance": 5000.0,
        "heart_rate": [], "respiratory_rate": [], "metadata": {}
    });
    let u = parse(Resource::Workouts, ios(json!([w, running]))).unwrap();
    let all = summaries(&u);
    let (_, day, n, v) = &all[0];
    assert_eq!((day.as_str(), n.as_str()), ("2026-11-20", "9E8D7C6B-5A49-4382-9170-6F5E4D3C2B1A"));
    assert_eq!(v["sport"], "strength_training");
    assert_eq!(v["hr_zones"], json!([60, 300, 900, 1200, 240, 0]));
    assert_eq!(v["max_hr"], 184.0);
    assert_eq!(v["average_hr"], 128.0);
    assert_eq!(v["duration"], 2700);
    assert_eq!(v["calories"], 310.5);
    assert_eq!(v["source"]["type"], "watch");
    serde_json::from_value::<wearlab_models::data::WorkoutSummary>(v.clone()).unwrap();
    let (_, _, _, r) = &all[1];
    assert_eq!((r["sport"].as_str(), r["distance"].as_f64()), (Some("running"), Some(5000.0)));
    assert!(r["hr_zones"].is_null(), "no zones sent");
    assert_eq!(
        (r["source"]["type"].as_str(), r["source"]["app_id"].as_str()),
        (Some("unknown"), Some("com.strava.stravaride"))
    );
}

#[test]
fn an_android_workout_reads_its_zone_names_and_health_connect_sport() {
    // Android `LocalWorkout` (`Summary.kt`) as `RecordProcessor.processWorkoutsFromRecords`
    // builds it: `EXERCISE_TYPE_INT_TO_STRING_MAP` names, else "workout"; no product type.
    let w = |id: &str, sport: &str| {
        json!({
            "id": id, "start_date": "2026-11-20T23:30:00Z", "end_date": "2026-11-21T00:10:00Z",
            "source_bundle": "com.samsung.android.wear.shealth", "source_type": "watch", "sport": sport,
            "calories": 280.0, "distance": 12000.0, "heart_rate_maximum": 150, "heart_rate_minimum": 90,
            "heart_rate_mean": 121, "heart_rate_zone_1": 0, "heart_rate_zone_2": 600, "heart_rate_zone_3": 1200,
            "heart_rate_zone_4": 600, "heart_rate_zone_5": 0, "heart_rate_zone_6": 0,
            "metadata": {"_DMO": "Galaxy Watch6", "_DMA": "Samsung", "_DTY": "watch"}
        })
    };
    let u = parse(Resource::Workouts, android(json!([w("a1", "biking"), w("a2", "workout")]))).unwrap();
    let all = summaries(&u);
    // 23:30 UTC is 18:30 in New York: the local day it starts on.
    assert_eq!((all[0].1.as_str(), all[0].2.as_str()), ("2026-11-20", "a1"));
    assert_eq!(all[0].3["sport"], "cycling");
    assert_eq!(all[0].3["hr_zones"], json!([0, 600, 1200, 600, 0, 0]));
    assert!(all[0].3["max_hr"].is_null());
    assert_eq!(all[0].3["source"]["type"], "watch");
    assert_eq!(all[1].3["sport"], "other");
}

#[test]
fn an_ios_body_upload_is_a_summary_per_day_in_each_days_zone() {
    // iOS `BodyPatch` (`Patches/BodyPatch.swift`): one object; `time_zones` an array of
    // [date, zone] pairs; body fat in % (0-100: `QuantityUnit` scales HealthKit's fraction).
    let sample = |value: f64, at: &str, unit: &str| {
        json!({"value": value, "start_date": at, "end_date": at, "source_bundle": "com.withings.wiScaleNG",
               "product_type": "iPhone15,2", "unit": unit, "metadata": {"HKTimeZone": "Asia/Tokyo"}})
    };
    let b = json!({
        "body_mass": [sample(72.4, "2026-11-19T22:30:00Z", "kg"), sample(72.1, "2026-11-20T23:00:00Z", "kg"),
                      sample(72.0, "2026-11-20T23:30:00Z", "kg")],
        "body_fat_percentage": [sample(21.5, "2026-11-19T22:30:00Z", "%")],
        "body_mass_index": [sample(23.1, "2026-11-19T22:30:00Z", "index")],
        "waist_circumference": [], "lean_body_mass": [],
        "time_zones": [["2026-11-20", "Asia/Tokyo"], ["2026-11-21", "Asia/Tokyo"]]
    });
    let u = parse(Resource::Body, ios(b)).unwrap();
    let days: Vec<(String, Value, Value, Value)> = summaries(&u)
        .into_iter()
        .map(|(_, d, _, v)| (d, v["weight"].clone(), v["fat"].clone(), v["timezone"].clone()))
        .collect();
    // 22:30 UTC is 07:30 the next day in Tokyo; of a day's weights, the last.
    assert_eq!(
        days,
        [
            ("2026-11-20".into(), json!(72.4), json!(21.5), json!("Asia/Tokyo")),
            ("2026-11-21".into(), json!(72.0), Value::Null, json!("Asia/Tokyo")),
        ]
    );
    let (_, _, n, v) = &summaries(&u)[0];
    assert_eq!(n, "0");
    assert_eq!(v["timezone_offset"], 9 * 3600);
    assert_eq!(v["source"]["app_id"], "com.withings.wiScaleNG");
    serde_json::from_value::<wearlab_models::data::BodySummary>(v.clone()).unwrap();
}

#[test]
fn an_android_body_upload_reads_body_fat_in_percent() {
    // Android `LocalBody` (`Summary.kt`): `SampleType.BodyFat` labels it `percent`; no time zones.
    let sample = |value: f64, unit: &str| {
        json!({"id": "f00d", "value": value, "unit": unit, "start_date": "2026-11-20T12:00:00Z",
               "end_date": "2026-11-20T12:00:00Z", "source_bundle": "com.fitbit.FitbitMobile", "type": "scale"})
    };
    let b = json!({"body_mass": [sample(80.2, "kg")], "body_fat_percentage": [sample(24.0, "percent")],
                   "body_mass_index": [], "lean_body_mass": [], "waist_circumference": []});
    let u = parse(Resource::Body, android(b)).unwrap();
    let (day, _, v) = one(&u, Resource::Body);
    assert_eq!(day, "2026-11-20");
    assert_eq!((v["weight"].as_f64(), v["fat"].as_f64()), (Some(80.2), Some(24.0)));
    assert_eq!(v["source"]["type"], "scale");
    assert_eq!(v["timezone"], "America/New_York");
}

fn profile_of(u: &SummaryUpload) -> Value {
    let [SourcedSeries { entry: Entry::Profile { value }, .. }] = u.entries.as_slice() else {
        panic!("one profile, got {:?}", u.entries)
    };
    value.clone()
}

#[test]
fn an_ios_profile_gives_height_in_meters_and_the_birth_year() {
    // iOS `ProfilePatch` (`Patches/ProfilePatch.swift`): height in whole centimetres.
    let p = json!({"biological_sex": "female", "date_of_birth": "1990-05-17T00:00:00Z", "height": 168,
                   "time_zone": "Europe/Berlin", "wheelchair_use": false});
    let u = parse(Resource::Profile, ios(p.clone())).unwrap();
    let v = profile_of(&u);
    assert_eq!((v["height"].as_f64(), v["birth_year"].as_i64()), (Some(1.68), Some(1990)));
    assert_eq!(v["source"]["provider"], "apple_health_kit");
    serde_json::from_value::<wearlab_models::data::ProfileSummary>(v.clone()).unwrap();
    // One profile per provider: a later one has the same id.
    let mut p2 = p;
    p2["height"] = json!(169);
    assert_eq!(profile_of(&parse(Resource::Profile, ios(p2)).unwrap())["id"], v["id"]);
}

#[test]
fn an_android_profile_without_a_height_has_none() {
    // Android `RecordProcessor.processProfileFromRecords`: `not_set`, no birth date, height 0
    // when Health Connect has none.
    let u = parse(Resource::Profile, android(json!({"biological_sex": "not_set", "height": 0}))).unwrap();
    let v = profile_of(&u);
    assert!(v["height"].is_null() && v["birth_year"].is_null(), "{v}");
}

#[test]
fn an_android_meal_is_one_meal_per_nutrition_record() {
    // Android `ManualMealCreation` / `HealthConnectRecordCollection` / `NutritionRecord`
    // (`services/data/Meal.kt`, `@AlwaysSerializeNulls`: every key sent, nulls included) as
    // `RecordProcessor.kt` fills it: energy in kcal, masses in grams.
    let mut record = serde_json::Map::new();
    for k in [
        "biotin",
        "caffeine",
        "calcium",
        "energy_from_fat",
        "chloride",
        "cholesterol",
        "chromium",
        "copper",
        "dietary_fiber",
        "folate",
        "folic_acid",
        "iodine",
        "iron",
        "magnesium",
        "manganese",
        "molybdenum",
        "monounsaturated_fat",
        "niacin",
        "pantothenic_acid",
        "phosphorus",
        "polyunsaturated_fat",
        "potassium",
        "riboflavin",
        "saturated_fat",
        "selenium",
        "sodium",
        "sugar",
        "thiamin",
        "trans_fat",
        "unsaturated_fat",
        "vitamin_a",
        "vitamin_b12",
        "vitamin_b6",
        "vitamin_c",
        "vitamin_d",
        "vitamin_e",
        "vitamin_k",
        "zinc",
    ] {
        record.insert(k.into(), Value::Null);
    }
    let fields = json!({
        "start_time": "2026-11-20T23:15:00Z", "start_zone_offset": "+02:00",
        "end_time": "2026-11-20T23:40:00Z", "end_zone_offset": "+02:00",
        "energy": 640.0, "protein": 32.5, "total_carbohydrate": 71.0, "total_fat": 22.0, "sodium": 0.9,
        "name": null, "meal_type": 3, "metadata": {}
    });
    record.extend(fields.as_object().unwrap().clone());
    let m = json!({"health_connect": {"source_bundle": "com.myfitnesspal.android", "nutrition_records": [record]}});
    let u = parse(Resource::Meal, android(json!([m]))).unwrap();
    let (day, n, v) = one(&u, Resource::Meal);
    // 23:15 UTC is 01:15 the next day at +02:00, the record's own offset.
    assert_eq!(day, "2026-11-21");
    assert_eq!(
        n,
        super::super::instant("2026-11-20T23:15:00Z").unwrap().timestamp().to_string(),
        "its start"
    );
    assert_eq!(v["name"], "Dinner");
    assert_eq!(v["energy"], 640.0);
    assert_eq!(v["macros"], json!({"carbs": 71.0, "protein": 32.5, "fats": 22.0}));
    assert_eq!(v["source"]["app_id"], "com.myfitnesspal.android");
    serde_json::from_value::<wearlab_models::data::MealSummary>(v).unwrap();
}

#[test]
fn ios_food_samples_of_one_app_are_a_daily_total() {
    // iOS `ManualMealCreation` / `HealthKitNutritionRawData` (`Patches/MealPatch.swift`): dietary
    // samples, energy in kcal, macronutrients in `gram`; absent lists left out.
    let s = |v: f64, at: &str, unit: &str| {
        json!({"value": v, "start_date": at, "end_date": at, "source_bundle": "com.lose-it.LoseIt",
               "product_type": "iPhone15,2", "unit": unit, "metadata": {}})
    };
    let m = json!({"healthkit": {
        "source_bundle": "com.lose-it.LoseIt",
        "energy_total": [s(420.0, "2026-11-20T07:30:00Z", "kcal"), s(610.0, "2026-11-20T12:30:00Z", "kcal")],
        "carbohydrates": [s(55.0, "2026-11-20T07:30:00Z", "gram")],
        "protein": [s(20.0, "2026-11-20T12:30:00Z", "gram")],
        "sodium": [s(800.0, "2026-11-20T12:30:00Z", "mg")]
    }});
    let u = parse(Resource::Meal, ios(json!([m]))).unwrap();
    let (day, _, v) = one(&u, Resource::Meal);
    assert_eq!(day, "2026-11-20");
    assert_eq!((v["name"].as_str(), v["energy"].as_f64()), (Some("Daily total"), Some(1030.0)));
    assert_eq!(v["macros"], json!({"carbs": 55.0, "protein": 20.0, "fats": null}));
}

#[test]
fn a_menstrual_cycle_is_keyed_by_its_periods_first_day() {
    // iOS `LocalMenstrualCycle` with `MenstrualCycle` (`Patches/LocalMenstrualCycle.swift`,
    // `Gets/MenstrualCycle.swift`): `period_end`/`cycle_end` null while running (`@NilAsNull`);
    // `source` {provider, type, app_id}.
    let cycle = |flow: &str| {
        json!([{
            "source_bundle": "com.apple.Health",
            "cycle": {
                "period_start": "2026-11-02", "period_end": "2026-11-06", "cycle_end": null,
                "menstrual_flow": [{"date": "2026-11-02", "flow": flow}, {"date": "2026-11-03", "flow": "medium"}],
                "cervical_mucus": [{"date": "2026-11-14", "quality": "egg_white"}],
                "intermenstrual_bleeding": [], "contraceptive": [{"date": "2026-11-02", "type": "oral"}],
                "detected_deviations": [], "ovulation_test": [{"date": "2026-11-15", "test_result": "luteinizing_hormone_surge"}],
                "home_pregnancy_test": [], "home_progesterone_test": [],
                "sexual_activity": [{"date": "2026-11-10", "protection_used": null}],
                "basal_body_temperature": [{"date": "2026-11-16", "value": 36.7}],
                "source": {"provider": "apple_health_kit", "type": "app", "app_id": "com.apple.Health"}
            }
        }])
    };
    let u = parse(Resource::MenstrualCycle, ios(cycle("heavy"))).unwrap();
    let (day, n, v) = one(&u, Resource::MenstrualCycle);
    assert_eq!((day.as_str(), n.as_str()), ("2026-11-02", "2026-11-02"));
    assert_eq!(v["period_end"], "2026-11-06");
    assert!(v["cycle_end"].is_null());
    assert_eq!(v["menstrual_flow"][0], json!({"date": "2026-11-02", "flow": "heavy"}));
    assert_eq!(v["contraceptive"][0]["type"], "oral");
    assert_eq!(v["ovulation_test"][0]["test_result"], "luteinizing_hormone_surge");
    assert_eq!(v["sexual_activity"][0], json!({"date": "2026-11-10", "protection_used": null}));
    assert_eq!(v["source"]["type"], "app");
    serde_json::from_value::<wearlab_models::data_phone::MenstrualCycleSummary>(v.clone()).unwrap();
    let again = parse(Resource::MenstrualCycle, ios(cycle("light"))).unwrap();
    let (_, n2, v2) = one(&again, Resource::MenstrualCycle);
    assert_eq!((n2, &v2["id"]), (n, &v["id"]));
}

#[test]
fn an_ecg_is_a_summary_keyed_by_its_id_and_its_voltages_a_timeseries() {
    // iOS `ManualElectrocardiogram` (`Patches/LocalElectrocardiogram.swift`), lead I in mV
    // (`HealthKitReads+Electrocardiogram.swift`).
    let e = json!([{
        "electrocardiogram": {
            "id": "C0FFEE00-1111-4222-8333-944455556666", "session_start": "2026-11-20T09:00:00Z",
            "session_end": "2026-11-20T09:00:30Z", "voltage_sample_count": 4, "heart_rate_mean": 66,
            "sampling_frequency_hz": 512.0, "classification": "sinus_rhythm", "algorithm_version": "2",
            "source_bundle": "com.apple.NanoHeartRhythm", "product_type": "Watch7,1", "device_model": "Watch",
            "metadata": {}
        },
        "voltage_data": {"session_start_offset_millisecond": [0, 2, 4, 6], "lead1": [0.12, null, -0.3, 0.1]}
    }]);
    let u = parse(Resource::Electrocardiogram, ios(e)).unwrap();
    let (day, n, v) = one(&u, Resource::Electrocardiogram);
    assert_eq!((day.as_str(), n.as_str()), ("2026-11-20", "C0FFEE00-1111-4222-8333-944455556666"));
    assert_eq!(v["classification"], "sinus_rhythm");
    assert!(v["inconclusive_cause"].is_null());
    assert_eq!((v["heart_rate_mean"].as_f64(), v["voltage_sample_count"].as_i64()), (Some(66.0), Some(4)));
    assert_eq!(v["timezone_offset"], 3600);
    assert!(v.get("voltage_data").is_none() && v.get("lead1").is_none());
    serde_json::from_value::<wearlab_models::data_phone::ElectrocardiogramSummary>(v).unwrap();
    // The voltages: one sample per value (the null left out), at the start plus its offset.
    let series: Vec<_> = u
        .entries
        .iter()
        .filter_map(|s| match &s.entry {
            Entry::Series { resource: Resource::ElectrocardiogramVoltage, date, samples } => {
                Some((date.to_string(), s.source.app_id.clone(), samples.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(series.len(), 1, "{series:?}");
    let (day, app, samples) = &series[0];
    assert_eq!(
        (day.as_str(), app.as_deref()),
        ("2026-11-20", Some("com.apple.NanoHeartRhythm")),
        "the ECG's source"
    );
    let got: Vec<_> = samples
        .iter()
        .map(|s| (s.timestamp.to_rfc3339(), s.value, s.unit.as_str(), s.timezone_offset))
        .collect();
    assert_eq!(
        got,
        [
            ("2026-11-20T09:00:00+00:00".to_owned(), 0.12, "mV", 3600),
            ("2026-11-20T09:00:00.004+00:00".to_owned(), -0.3, "mV", 3600),
            ("2026-11-20T09:00:00.006+00:00".to_owned(), 0.1, "mV", 3600),
        ]
    );
}

#[test]
fn bad_values_refuse_the_whole_upload_naming_every_field() {
    let mut a = ios_activity("2026-11-20", -5);
    a["day_summary"]["avg_heart_rate"] = json!(400);
    a["day_summary"]["calendar_date"] = json!("20/11/2026");
    let mut s = ios_sleep("6F1D2C3B-4A59-4E8F-9D10-A2B3C4D5E6F7", "2026-11-19T20:00:00Z");
    s["sleep_stages"]["deep_sleep_samples"][0]["start_date"] = json!("yesterday");
    assert_eq!(
        refusal(parse(Resource::Activity, ios(json!([ios_activity("2026-11-19", 1), a]))))
            .into_iter()
            .map(|(l, _)| l)
            .collect::<Vec<_>>(),
        [
            "data.1.day_summary.calendar_date",
            "data.1.day_summary.steps_sum",
            "data.1.day_summary.avg_heart_rate"
        ]
    );
    assert_eq!(
        refusal(parse(Resource::Sleep, ios(json!([s])))),
        [
            ("data.0.end_date".into(), "end_date must not be before start_date".into()),
            (
                "data.0.sleep_stages.deep_sleep_samples.0.start_date".into(),
                "Input should be a valid datetime".into()
            ),
        ]
    );
    let b = json!({"body_mass": [{"value": 70.0, "unit": "lb", "start_date": "2026-11-20T07:00:00Z",
                                  "end_date": "2026-11-20T07:00:00Z"}],
                   "body_fat_percentage": [{"value": 120.0, "unit": "percent", "start_date": "2026-11-20T07:00:00Z",
                                            "end_date": "2026-11-20T07:00:00Z"}],
                   "body_mass_index": [], "lean_body_mass": [], "waist_circumference": []});
    assert_eq!(
        refusal(parse(Resource::Body, android(b))).into_iter().map(|(l, _)| l).collect::<Vec<_>>(),
        ["data.body_mass.0.unit", "data.body_fat_percentage.0.value"]
    );
}

#[test]
fn wrong_shapes_are_refused_where_they_are() {
    assert_eq!(
        refusal(parse(Resource::Sleep, ios(json!({"id": "x"})))),
        [("data".into(), "Input should be a valid list".into())]
    );
    assert_eq!(
        refusal(parse(Resource::Profile, ios(json!([])))),
        [("data".into(), "Input should be an object".into())]
    );
    let w = json!([{"id": "a#b", "start_date": "2026-11-20T07:00:00Z", "end_date": "2026-11-20T07:30:00Z",
                    "calories": "lots"}]);
    assert_eq!(
        refusal(parse(Resource::Workouts, android(w))).into_iter().map(|(l, _)| l).collect::<Vec<_>>(),
        ["data.0.id", "data.0.sport", "data.0.calories"]
    );
    let p = json!({"biological_sex": "unknown", "height": 4000});
    assert_eq!(
        refusal(parse(Resource::Profile, ios(p))),
        [
            ("data.height".into(), "height must be a number from 0 to 300".into()),
            ("data.biological_sex".into(), "Input should be 'male', 'female', 'other', 'not_set'".into()),
        ]
    );
    let e = json!([{"electrocardiogram": {"id": "E1", "session_start": "2026-11-20T09:00:00Z",
                                          "session_end": "2026-11-20T09:00:30Z", "voltage_sample_count": 2,
                                          "source_bundle": "com.apple.NanoHeartRhythm"},
                    "voltage_data": {"session_start_offset_millisecond": [0, -2], "lead1": [0.1]}}]);
    assert_eq!(
        refusal(parse(Resource::Electrocardiogram, ios(e))).into_iter().map(|(l, _)| l).collect::<Vec<_>>(),
        ["data.0.voltage_data.session_start_offset_millisecond.1", "data.0.voltage_data.lead1"]
    );
}

#[test]
fn a_provider_that_is_not_an_sdk_provider_or_a_resource_that_is_no_summary_is_refused() {
    let mut v = ios(json!([ios_activity("2026-11-20", 1)]));
    v["provider"] = json!("oura");
    let issues = refusal(parse(Resource::Activity, v));
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].0, "provider");
    let issues = refusal(parse(Resource::Heartrate, ios(json!([]))));
    assert_eq!(issues, [("resource".into(), "heartrate is not a summary the SDKs upload".into())]);
    assert_eq!(sdk_summary("workouts"), Some(Resource::Workouts));
    assert_eq!(sdk_summary("heartrate"), None);
}

#[test]
fn an_empty_historical_chunk_is_valid() {
    let v = json!({"stage": "historical", "start_date": "2026-08-22T00:00:00Z", "end_date": "2026-11-20T10:00:00Z",
                   "time_zone": "Europe/Berlin", "provider": "apple_health_kit", "data": [], "is_final_chunk": true});
    let u = parse(Resource::Workouts, v).unwrap();
    assert!(u.entries.is_empty());
    assert!(matches!(u.envelope.stage, super::super::Stage::Historical { .. }));
}

#[test]
fn every_kind_keeps_its_key_when_a_later_upload_changes_a_value() {
    // (resource, upload, the same upload with one value changed)
    let workout = |calories: f64| {
        json!([{"id": "a1", "start_date": "2026-11-20T07:00:00Z", "end_date": "2026-11-20T07:30:00Z",
                "source_bundle": "com.google.android.apps.fitness", "sport": "running", "calories": calories}])
    };
    let body = |kg: f64| {
        json!({"body_mass": [{"value": kg, "unit": "kg", "start_date": "2026-11-20T07:00:00Z",
                              "end_date": "2026-11-20T07:00:00Z"}],
               "body_fat_percentage": [], "body_mass_index": [], "lean_body_mass": [], "waist_circumference": []})
    };
    let meal = |kcal: f64| {
        json!([{"health_connect": {"source_bundle": "com.myfitnesspal.android", "nutrition_records": [
            {"start_time": "2026-11-20T12:00:00Z", "end_time": "2026-11-20T12:20:00Z", "energy": kcal,
             "name": "Soup", "meal_type": 2, "metadata": {}}]}}])
    };
    let ecg = |hr: f64| {
        json!([{"electrocardiogram": {"id": "E1", "session_start": "2026-11-20T09:00:00Z",
                                      "session_end": "2026-11-20T09:00:30Z", "voltage_sample_count": 0,
                                      "heart_rate_mean": hr, "source_bundle": "com.apple.NanoHeartRhythm"},
                "voltage_data": {"session_start_offset_millisecond": [], "lead1": []}}])
    };
    let cases = [
        (Resource::Workouts, android(workout(200.0)), android(workout(250.0))),
        (Resource::Body, android(body(80.0)), android(body(79.5))),
        (Resource::Meal, android(meal(300.0)), android(meal(320.0))),
        (Resource::Electrocardiogram, ios(ecg(60.0)), ios(ecg(61.0))),
    ];
    for (resource, first, later) in cases {
        let (a, b) = (parse(resource.clone(), first).unwrap(), parse(resource.clone(), later).unwrap());
        let (a, b) = (one(&a, resource.clone()), one(&b, resource.clone()));
        assert_eq!((&a.0, &a.1, &a.2["id"]), (&b.0, &b.1, &b.2["id"]), "{resource}: same day, key and id");
        assert_ne!(a.2, b.2, "{resource}: the later value");
    }
}

#[test]
fn a_bad_meal_type_is_reported_once() {
    let m = json!([{"health_connect": {"source_bundle": "com.myfitnesspal.android", "nutrition_records": [
        {"start_time": "2026-11-20T12:00:00Z", "end_time": "2026-11-20T12:20:00Z", "energy": 300.0,
         "meal_type": -1, "metadata": {}}]}}]);
    assert_eq!(
        refusal(parse(Resource::Meal, android(m))),
        [(
            "data.0.health_connect.nutrition_records.0.meal_type".into(),
            "meal_type must be a number from 0 to 4".into()
        )]
    );
}
