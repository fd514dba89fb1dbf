//! The mobile SDKs' summary uploads (`POST /v2/summary/{resource}/{user_id}`) read back through
//! the data API (`GET /v2/summary/{resource}/{user_id}`, and the electrocardiogram's voltages
//! through `GET /v2/timeseries/{user_id}/electrocardiogram_voltage/grouped`) with the right
//! values, units and source, announced once and recorded in the audit log with the credential
//! that made them, on the embedded store and on DynamoDB (moto).
//!
//! Every body is in the shape the iOS SDK builds (`tryVital/vital-ios`, `TaggedPayload` with
//! snake-case keys and ISO 8601 dates; the records of
//! `Sources/VitalCore/Core/Client/Data Models/Patches/`), as in
//! `shared/domain/src/pipeline/phone/summary/tests.rs`, which names the file of each.

use std::sync::Arc;

use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::Deps;
use wearlab_embedded::MemoryBus;

use crate::helpers::{Answer, TestApp};
use crate::phone_auth::{as_user, signed_in};

/// iOS `TaggedPayload` of the daily stage, from a phone in Berlin.
fn ios_daily(data: Value) -> Value {
    json!({"stage": "daily", "time_zone": "Europe/Berlin", "provider": "apple_health_kit",
           "data": data, "is_final_chunk": true})
}

/// `ActivityPatch.Activity` as `HealthKitReads.swift` builds it (the sample lists empty).
fn activity() -> Value {
    json!([{
        "day_summary": {
            "calendar_date": "2026-11-20", "active_energy_burned_sum": 512.0, "basal_energy_burned_sum": 1688.0,
            "steps_sum": 10412, "floors_climbed_sum": 9, "distance_walking_running_sum": 6530.0,
            "max_heart_rate": 151, "min_heart_rate": 48, "avg_heart_rate": 74, "resting_heart_rate": 55,
            "exercise_time": 42, "wheelchair_use": false
        },
        "active_energy_burned": [], "basal_energy_burned": [], "steps": [], "floors_climbed": [],
        "distance_walking_running": [], "vo2_max": []
    }])
}

/// `WorkoutPatch.Workout` of an Apple Watch (`heart_rate_zone1` .. 6 snake-cased).
fn workouts() -> Value {
    json!([{
        "id": "9E8D7C6B-5A49-4382-9170-6F5E4D3C2B1A",
        "start_date": "2026-11-20T07:00:00Z", "end_date": "2026-11-20T07:45:00Z", "moving_time": 2610.0,
        "source_bundle": "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11", "product_type": "Watch7,1",
        "sport": "Running", "calories": 410.5, "distance": 7200.0,
        "heart_rate_maximum": 171, "heart_rate_minimum": 92, "heart_rate_mean": 148,
        "heart_rate_zone1": 60, "heart_rate_zone2": 300, "heart_rate_zone3": 900, "heart_rate_zone4": 1200,
        "heart_rate_zone5": 240, "heart_rate_zone6": 0, "heart_rate_zone_max_hr": 184.0,
        "heart_rate_zone_known_age": 36, "heart_rate": [], "respiratory_rate": [],
        "stream": {"components": {}}, "metadata": {}
    }])
}

/// `ProfilePatch`: height in whole centimetres.
fn profile() -> Value {
    json!({"biological_sex": "female", "date_of_birth": "1990-05-17T00:00:00Z", "height": 168,
           "time_zone": "Europe/Berlin", "wheelchair_use": false})
}

/// `ManualMealCreation` of HealthKit's dietary samples (`MealPatch.swift`): energy in kcal,
/// macronutrients in `gram`.
fn meal() -> Value {
    let s = |v: f64, at: &str, unit: &str| {
        json!({"value": v, "start_date": at, "end_date": at, "source_bundle": "com.lose-it.LoseIt",
               "product_type": "iPhone15,2", "unit": unit, "metadata": {}})
    };
    json!([{"healthkit": {
        "source_bundle": "com.lose-it.LoseIt",
        "energy_total": [s(420.0, "2026-11-20T07:30:00Z", "kcal"), s(610.0, "2026-11-20T12:30:00Z", "kcal")],
        "carbohydrates": [s(55.0, "2026-11-20T07:30:00Z", "gram")],
        "protein": [s(20.0, "2026-11-20T12:30:00Z", "gram")]
    }}])
}

/// `LocalMenstrualCycle` with its `MenstrualCycle` (`LocalMenstrualCycle.swift`,
/// `Gets/MenstrualCycle.swift`).
fn menstrual_cycle() -> Value {
    json!([{
        "source_bundle": "com.apple.Health",
        "cycle": {
            "period_start": "2026-11-02", "period_end": "2026-11-06", "cycle_end": null,
            "menstrual_flow": [{"date": "2026-11-02", "flow": "heavy"}, {"date": "2026-11-03", "flow": "medium"}],
            "cervical_mucus": [], "intermenstrual_bleeding": [], "contraceptive": [],
            "detected_deviations": [], "ovulation_test": [{"date": "2026-11-15", "test_result": "negative"}],
            "home_pregnancy_test": [], "home_progesterone_test": [], "sexual_activity": [],
            "basal_body_temperature": [{"date": "2026-11-16", "value": 36.7}],
            "source": {"provider": "apple_health_kit", "type": "app", "app_id": "com.apple.Health"}
        }
    }])
}

/// `ManualElectrocardiogram` (`LocalElectrocardiogram.swift`): lead I in mV
/// (`HealthKitReads+Electrocardiogram.swift`), offsets in whole milliseconds.
fn electrocardiogram() -> Value {
    json!([{
        "electrocardiogram": {
            "id": "C0FFEE00-1111-4222-8333-944455556666", "session_start": "2026-11-20T09:00:00Z",
            "session_end": "2026-11-20T09:00:30Z", "voltage_sample_count": 5, "heart_rate_mean": 66,
            "sampling_frequency_hz": 512.0, "classification": "sinus_rhythm", "algorithm_version": "2",
            "source_bundle": "com.apple.NanoHeartRhythm", "product_type": "Watch7,1", "device_model": "Watch",
            "metadata": {}
        },
        "voltage_data": {"session_start_offset_millisecond": [0, 1, 3, 5, 7],
                         "lead1": [0.12, 0.31, null, -0.2, 0.05]}
    }])
}

/// A body of the SDK's `data`.
type Data = fn() -> Value;

/// Each summary the iOS SDK uploads, by its path name.
const SUMMARIES: [(&str, Data); 6] = [
    ("activity", activity),
    ("workouts", workouts),
    ("profile", profile),
    ("meal", meal),
    ("menstrual_cycle", menstrual_cycle),
    ("electrocardiogram", electrocardiogram),
];

/// The app with a bus of its own, so that the events are read the same way on both adapters.
fn with_bus(t: TestApp) -> (TestApp, Arc<MemoryBus>) {
    let bus = Arc::new(MemoryBus::new());
    let deps = Deps { bus: bus.clone(), ..t.deps.clone() };
    (t.with_deps(deps), bus)
}

fn data_events(bus: &MemoryBus) -> Vec<String> {
    let mut out: Vec<_> =
        bus.published().into_iter().map(|e| e.event_type).filter(|t| t.contains(".data.")).collect();
    out.sort();
    out
}

async fn read(t: &TestApp, resource: &str, user: &str, since: &str) -> Value {
    let a = t.get(&format!("/v2/summary/{resource}/{user}?start_date={since}&end_date=2026-11-21")).await;
    assert_eq!(a.status, StatusCode::OK, "{resource}: {}", a.body);
    a.body
}

/// Each summary the iOS SDK uploads is stored once, announced once (a resend changes nothing)
/// and read back with its values in Wearlab's units and its source.
async fn every_summary_reads_back_with_its_units_and_source(t: TestApp) {
    let (t, bus) = with_bus(t);
    let user = t.create_user("phone-summaries").await;
    for round in 0..2 {
        for (resource, body) in SUMMARIES {
            let a = t.post(&format!("/v2/summary/{resource}/{user}"), ios_daily(body())).await;
            assert_eq!(a.status, StatusCode::OK, "{resource}: {}", a.body);
            if round == 1 {
                assert_eq!(a.body["created"], 0, "a resend of {resource} stores nothing: {}", a.body);
            }
        }
    }
    assert_eq!(
        data_events(&bus),
        [
            "daily.data.activity.created",
            "daily.data.electrocardiogram.created",
            "daily.data.electrocardiogram_voltage.created",
            "daily.data.meal.created",
            "daily.data.menstrual_cycle.created",
            "daily.data.profile.created",
            "daily.data.workouts.created",
        ],
        "each once, the resend announcing nothing"
    );

    let day = &read(&t, "activity", &user, "2026-11-19").await["activity"][0];
    assert_eq!(day["calendar_date"], "2026-11-20");
    assert_eq!((day["steps"].as_f64(), day["calories_total"].as_f64()), (Some(10412.0), Some(2200.0)));
    assert_eq!((day["distance"].as_f64(), day["timezone_offset"].as_i64()), (Some(6530.0), Some(3600)));
    assert_eq!(
        (day["source"]["provider"].as_str(), day["source"]["type"].as_str()),
        (Some("apple_health_kit"), Some("multiple_sources"))
    );

    let w = &read(&t, "workouts", &user, "2026-11-19").await["workouts"][0];
    assert_eq!((w["sport"].as_str(), w["duration"].as_i64()), (Some("running"), Some(2700)));
    assert_eq!((w["distance"].as_f64(), w["calories"].as_f64()), (Some(7200.0), Some(410.5)));
    assert_eq!((w["average_hr"].as_f64(), w["max_hr"].as_f64()), (Some(148.0), Some(184.0)));
    assert_eq!(w["hr_zones"], json!([60, 300, 900, 1200, 240, 0]));
    assert_eq!(w["source"]["type"], "watch");

    let a = t.get(&format!("/v2/summary/profile/{user}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!((a.body["height"].as_f64(), a.body["birth_year"].as_i64()), (Some(1.68), Some(1990)));
    assert_eq!(a.body["source"]["provider"], "apple_health_kit");

    let m = &read(&t, "meal", &user, "2026-11-19").await["meals"][0];
    assert_eq!((m["energy"].as_f64(), m["name"].as_str()), (Some(1030.0), Some("Daily total")));
    assert_eq!(m["macros"], json!({"carbs": 55.0, "protein": 20.0, "fats": null}));
    assert_eq!(m["source"]["app_id"], "com.lose-it.LoseIt");

    let c = &read(&t, "menstrual_cycle", &user, "2026-11-01").await["menstrual_cycle"];
    assert_eq!(c.as_array().map(Vec::len), Some(1), "{c}");
    let c = &c[0];
    assert_eq!(
        (c["period_start"].as_str(), c["period_end"].as_str()),
        (Some("2026-11-02"), Some("2026-11-06"))
    );
    assert!(c["cycle_end"].is_null());
    assert_eq!(c["menstrual_flow"][0], json!({"date": "2026-11-02", "flow": "heavy"}));
    assert_eq!(c["basal_body_temperature"][0], json!({"date": "2026-11-16", "value": 36.7}));
    assert_eq!(c["source"]["type"], "app");

    let e = &read(&t, "electrocardiogram", &user, "2026-11-19").await["electrocardiogram"][0];
    assert_eq!(
        (e["classification"].as_str(), e["voltage_sample_count"].as_i64()),
        (Some("sinus_rhythm"), Some(5))
    );
    assert_eq!(
        (e["heart_rate_mean"].as_f64(), e["sampling_frequency_hz"].as_f64()),
        (Some(66.0), Some(512.0))
    );
    assert_eq!(e["session_start"], "2026-11-20T09:00:00Z");
    assert_eq!(e["source"]["app_id"], "com.apple.NanoHeartRhythm");
    let a = t
        .get(&format!(
            "/v2/timeseries/{user}/electrocardiogram_voltage/grouped?start_date=2026-11-20&end_date=2026-11-20"
        ))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let groups = a.body["groups"]["apple_health_kit"].as_array().cloned().unwrap_or_default();
    assert_eq!(groups.len(), 1, "{}", a.body);
    let samples: Vec<_> = groups[0]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (s["timestamp"].as_str().unwrap().to_owned(), s["value"].as_f64().unwrap(), s["unit"].clone())
        })
        .collect();
    assert_eq!(
        samples,
        [
            ("2026-11-20T09:00:00Z".to_owned(), 0.12, json!("mV")),
            ("2026-11-20T09:00:00.001Z".to_owned(), 0.31, json!("mV")),
            ("2026-11-20T09:00:00.005Z".to_owned(), -0.2, json!("mV")),
            ("2026-11-20T09:00:00.007Z".to_owned(), 0.05, json!("mV")),
        ],
        "one sample per value at the start plus its offset; the null left out"
    );
}

/// The new read routes refuse as every summary read does: no credential 401, an unknown user
/// or another user's token 404, a bad date 422.
async fn the_phone_only_summaries_refuse_as_every_read(t: TestApp) {
    let user = t.create_user("phone-summaries-refusals").await;
    let other = t.create_user("phone-summaries-other").await;
    let (token, _) = signed_in(&t, &other).await;
    for resource in ["menstrual_cycle", "electrocardiogram"] {
        let path = format!("/v2/summary/{resource}/{user}?start_date=2026-11-01&end_date=2026-11-21");
        assert_eq!(t.send(Method::GET, &path, None, None).await.status, StatusCode::UNAUTHORIZED);
        let a = as_user(&t, Method::GET, &path, &token, None).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "another user's token: {}", a.body);
        let unknown = uuid::Uuid::new_v4();
        let a = t
            .get(&format!("/v2/summary/{resource}/{unknown}?start_date=2026-11-01&end_date=2026-11-21"))
            .await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
        let a =
            t.get(&format!("/v2/summary/{resource}/{user}?start_date=yesterday&end_date=2026-11-21")).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
        assert_eq!(crate::helpers::error_locs(&a.body), [vec!["query".to_owned(), "start_date".to_owned()]]);
        // Its own user's token reads it (nothing stored yet: an empty list).
        let own = format!("/v2/summary/{resource}/{other}?start_date=2026-11-01&end_date=2026-11-21");
        let a = as_user(&t, Method::GET, &own, &token, None).await;
        assert_eq!((a.status, &a.body[resource]), (StatusCode::OK, &json!([])), "{}", a.body);
    }
}

/// What the user's own app reads and uploads with its token is on the team's audit log as
/// `user_token`; what the team's backend does, with its key's id.
async fn the_users_own_reads_and_uploads_are_audited(t: TestApp) {
    let user = t.create_user("phone-audited").await;
    let (token, _) = signed_in(&t, &user).await;
    let body = ios_daily(activity()).to_string();
    let a = as_user(&t, Method::POST, &format!("/v2/summary/activity/{user}"), &token, Some(&body)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    t.clock.advance(Duration::seconds(1));
    let read = format!("/v2/summary/activity/{user}?start_date=2026-11-20&end_date=2026-11-20");
    let a: Answer = as_user(&t, Method::GET, &read, &token, None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    t.clock.advance(Duration::seconds(1));
    assert_eq!(t.get(&read).await.status, StatusCode::OK);
    // Not health data: no entry.
    let a = as_user(
        &t,
        Method::POST,
        &format!("/v2/user/{user}/sdk_sync_state/apple_health_kit"),
        &token,
        Some("{}"),
    )
    .await;
    assert!(a.status.is_success(), "{} {}", a.status, a.body);

    let a = t.get(&format!("/v2/team/audit_log?user_id={user}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let seen: Vec<_> = a.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["key_id"].as_str().unwrap().to_owned(),
                e["method"].as_str().unwrap().to_owned(),
                e["route"].as_str().unwrap().to_owned(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect();
    let team_key = seen[0].0.clone();
    assert_ne!(team_key, "user_token");
    assert_eq!(
        seen,
        [
            (team_key, "GET".into(), "/v2/summary/activity/{user_id}".into(), 200),
            ("user_token".into(), "GET".into(), "/v2/summary/activity/{user_id}".into(), 200),
            ("user_token".into(), "POST".into(), "/v2/summary/activity/{user_id}".into(), 200),
        ],
        "newest first"
    );
}

crate::helpers::on_both_adapters!(
    every_summary_reads_back_with_its_units_and_source,
    the_phone_only_summaries_refuse_as_every_read,
    the_users_own_reads_and_uploads_are_audited,
);
