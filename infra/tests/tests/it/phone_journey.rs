//! The whole phone journey through the HTTP API, as an app with the mobile SDK walks it, on the
//! embedded store and on DynamoDB (moto): the team's backend asks for a sign-in token, the SDK
//! exchanges it, then with the user's bearer token only (upper-case user ids, as iOS writes them)
//! connects Apple Health, reads its sync state, uploads a historical backfill in two gzipped
//! chunks (one resent), a sleep summary and an Open Wearables sync, and reads everything back;
//! the events are checked along the way. Bodies in the SDKs' shapes, as in `phone_uploads.rs`.

use std::io::Write;
use std::sync::Arc;

use flate2::Compression;
use flate2::write::GzEncoder;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::Deps;
use wearlab_embedded::MemoryBus;

use crate::helpers::{Answer, TestApp};
use crate::phone_auth::{as_user, signed_in};
use crate::phone_uploads::{ios_historical, ios_watch};

fn gzip(body: &Value) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(body.to_string().as_bytes()).unwrap();
    e.finish().unwrap()
}

/// A gzipped POST with the user's bearer token, as the SDKs send uploads.
async fn upload(t: &TestApp, path: &str, token: &str, body: &Value) -> Answer {
    let auth = format!("Bearer {token}");
    let headers = [
        ("authorization", auth.as_str()),
        ("content-encoding", "gzip"),
        ("content-type", "application/json"),
    ];
    t.send_bytes(Method::POST, path, None, &headers, Some(gzip(body))).await
}

/// iOS sleep summary of one night (`Sources/VitalCore/Core/Client/Data Models/Patches/SleepPatch.swift`):
/// stage samples with HealthKit's raw values, as `pipeline/phone/summary/tests.rs` has it.
fn ios_sleep() -> Value {
    let bundle = "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11";
    let stage = |value: f64, start: &str, end: &str| {
        json!({"value": value, "start_date": start, "end_date": end, "source_bundle": bundle,
               "product_type": "Watch7,1", "unit": "stage", "metadata": {}})
    };
    json!({
        "stage": "daily", "time_zone": "Europe/Berlin", "provider": "apple_health_kit", "is_final_chunk": true,
        "data": [{
            "id": "6F1D2C3B-4A59-4E8F-9D10-A2B3C4D5E6F7", "start_date": "2026-11-19T22:30:00Z",
            "end_date": "2026-11-20T05:30:00Z", "source_bundle": bundle, "product_type": "Watch7,1",
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
        }]
    })
}

/// An Open Wearables iOS SDK sync with one heart-rate record (`the-momentum/open_wearables_ios_sdk`
/// `Sources/OpenWearablesHealthSDK/Internal/Types.swift`, `_mapQuantityEfficient`).
fn open_wearables_sync() -> Value {
    json!({
        "provider": "apple", "sdkVersion": "0.9.0", "syncTimestamp": "2026-11-20T10:00:00Z",
        "data": {"records": [{
            "id": "0C4B6A2E-5D3F-4A1B-8E9C-7D6F5A4B3C2D", "type": "HKQuantityTypeIdentifierHeartRate",
            "startDate": "2026-11-20T09:30:00Z", "endDate": "2026-11-20T09:30:00Z", "zoneOffset": "+01:00",
            "source": {"appId": "com.apple.health.81A1B5B2", "bundleIdentifier": "com.apple.health.81A1B5B2",
                       "deviceName": "Apple Watch", "deviceManufacturer": "Apple Inc.", "deviceModel": "Watch",
                       "productType": "Watch7,1", "deviceType": "watch", "recordingMethod": "automatic"},
            "value": 66.0, "unit": "bpm", "parentId": null, "metadata": {}
        }], "sleep": [], "workouts": []}
    })
}

async fn the_phone_journey(t: TestApp) {
    let bus = Arc::new(MemoryBus::new());
    let deps = Deps { bus: bus.clone(), ..t.deps.clone() };
    let t = t.with_deps(deps);
    let user = t.create_user("phone-journey").await;
    let upper = user.to_uppercase();
    let (token, _) = signed_in(&t, &user).await;

    // Connect, before every sync: the second call announces nothing new.
    for _ in 0..2 {
        let body = json!({"user_id": upper, "granted_permissions": ["HKQuantityTypeIdentifierHeartRate"]})
            .to_string();
        let a =
            as_user(&t, Method::POST, "/v2/link/provider/manual/apple_health_kit", &token, Some(&body)).await;
        assert_eq!((a.status, &a.body), (StatusCode::OK, &json!({"success": true})));
    }
    let created: Vec<_> =
        bus.published().into_iter().filter(|e| e.event_type == "provider.connection.created").collect();
    assert_eq!(created.len(), 1);
    let a = as_user(
        &t,
        Method::POST,
        &format!("/v2/user/{upper}/sdk_sync_state/apple_health_kit"),
        &token,
        Some("{}"),
    )
    .await;
    assert_eq!((a.status, a.body["status"].as_str()), (StatusCode::OK, Some("active")), "{}", a.body);

    // A historical backfill in two chunks, the first sent twice (a timeout), the second final.
    let first = ios_historical(
        (0..30).map(|m| ios_watch(&format!("2026-11-20T08:{m:02}:00Z"), 60.0 + f64::from(m))).collect(),
        false,
    );
    let last = ios_historical(
        (30..60).map(|m| ios_watch(&format!("2026-11-20T08:{m:02}:00Z"), 60.0 + f64::from(m))).collect(),
        true,
    );
    let path = format!("/v2/timeseries/{upper}/heartrate");
    for body in [&first, &first, &last] {
        let a = upload(&t, &path, &token, body).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    }
    let historical: Vec<_> =
        bus.published().into_iter().filter(|e| e.event_type.starts_with("historical.data.")).collect();
    assert_eq!(historical.len(), 1, "one announcement after the final chunk");
    assert_eq!(historical[0].event_type, "historical.data.heartrate.created");
    assert!(
        bus.published().iter().all(|e| !e.event_type.starts_with("daily.data.heartrate")),
        "no daily events"
    );

    // A sleep summary of the daily stage, announced and read back with its source.
    let a = upload(&t, &format!("/v2/summary/sleep/{upper}"), &token, &ios_sleep()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let a = upload(&t, &format!("/v2/summary/sleep/{upper}"), &token, &ios_sleep()).await;
    assert_eq!((a.status, a.body["unchanged"].as_u64()), (StatusCode::OK, Some(2)), "a resend: {}", a.body);
    let sleeps = as_user(
        &t,
        Method::GET,
        &format!("/v2/summary/sleep/{user}?start_date=2026-11-19&end_date=2026-11-21"),
        &token,
        None,
    )
    .await;
    assert_eq!(sleeps.status, StatusCode::OK, "{}", sleeps.body);
    let sleep = &sleeps.body["sleep"][0];
    assert_eq!(
        (sleep["deep"].as_i64(), sleep["source"]["provider"].as_str()),
        (Some(3600), Some("apple_health_kit"))
    );
    assert_eq!(sleep["source"]["type"], "watch");
    let sleep_events =
        bus.published().into_iter().filter(|e| e.event_type == "daily.data.sleep.created").count();
    assert_eq!(sleep_events, 1);

    // The Open Wearables dialect on the same store.
    let a = upload(&t, &format!("/api/v1/sdk/users/{user}/sync"), &token, &open_wearables_sync()).await;
    assert_eq!((a.status, a.body["status_code"].as_u64()), (StatusCode::ACCEPTED, Some(202)), "{}", a.body);

    // Everything reads back: 60 points of the backfill and the Open Wearables one.
    let read = as_user(
        &t,
        Method::GET,
        &format!("/v2/timeseries/{user}/heartrate/grouped?start_date=2026-11-19&end_date=2026-11-21"),
        &token,
        None,
    )
    .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    let groups = read.body["groups"]["apple_health_kit"].as_array().cloned().unwrap_or_default();
    let values: Vec<f64> = groups
        .iter()
        .flat_map(|g| g["data"].as_array().unwrap().iter().map(|s| s["value"].as_f64().unwrap()))
        .collect();
    assert_eq!(values.len(), 61, "{groups:?}");
    assert!(values.contains(&119.0) && values.contains(&66.0));

    // Another team's key reaches none of this user's phone routes: not found, nothing stored.
    let foreign = t.other_team_key().await;
    for (path, body) in [
        (format!("/v2/user/{user}/sign_in_token"), None),
        (format!("/v2/timeseries/{user}/heartrate"), Some(last.to_string())),
        (format!("/v2/summary/sleep/{user}"), Some(ios_sleep().to_string())),
        (format!("/api/v1/users/{user}/token"), None),
        (format!("/api/v1/sdk/users/{user}/sync"), Some(open_wearables_sync().to_string())),
    ] {
        let a = t.send(Method::POST, &path, Some(&foreign), body.as_deref()).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{path}: {}", a.body);
    }

    // The token is this user's only: another user's upload is not found.
    let other = t.create_user("phone-journey-other").await;
    let a = upload(&t, &format!("/v2/timeseries/{other}/heartrate"), &token, &last).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phone_journey_on_embedded() {
    the_phone_journey(TestApp::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phone_journey_on_moto() {
    the_phone_journey(crate::users_on_dynamodb::on_moto().await.0).await;
}
