//! Suunto end to end on the embedded app, made real by `from_vars` with the platform's app, the
//! API Zone subscription key and the notification secret as the push token, pointed at the local
//! fake: linked through the fake's consent (keyed by Suunto's `user`), the history pulled and read
//! back in Wearlab's units (a recorded workout's stream from its FIT export), signed notifications answered before any call to Suunto and their
//! polls bringing the new days, a refused token refreshed with the rotated refresh token stored,
//! and the removal of the connection deauthorising Wearlab at Suunto.
//!
//! The clock starts on 2026-11-22, inside the fixtures' days, so the history stops there and the
//! fixtures' 2026-11-23 workout and night are new when a notification's poll runs two days later.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::pipeline::pull::{PollJob, poll};
use wearlab_domain::ports::ManualClock;
use wearlab_domain::ports::providers::{OauthClient, PushRequest};
use wearlab_models::{ConnectionStatus, Resource};
use wearlab_providers::fake::suunto::{
    self as fake, FakeSuunto, USERNAME, WEBHOOK_SLEEP_CREATED, WEBHOOK_WORKOUT_CREATED,
};
use wearlab_providers::suunto::SUBSCRIPTION_KEY_VAR;

use super::whoop_withings::host_vars;
use super::{Real, connection_of, drain, link_through, linked_data_reads_as_fhir, real_stack, summaries};
use crate::linking::query_param;

const SUBSCRIPTION_KEY: &str = "suunto-subscription-key";
const NOTIFICATION_SECRET: &str = "suunto-notification-secret";

fn suunto_app() -> OauthClient {
    OauthClient { client_id: "wearlab-suunto".into(), client_secret: Secret::new("suunto-app-secret") }
}

/// Suunto made real by its platform app, with the subscription key and the notification secret.
async fn real_suunto() -> Real<FakeSuunto> {
    real_suunto_at(Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap()).await
}

async fn real_suunto_at(now: chrono::DateTime<Utc>) -> Real<FakeSuunto> {
    let fake = FakeSuunto::new(suunto_app(), SUBSCRIPTION_KEY);
    let mut vars = host_vars("suunto", &fake.start().await);
    vars.insert("WEARLAB_PROVIDER_SUUNTO_CLIENT_ID".into(), suunto_app().client_id);
    vars.insert("WEARLAB_PROVIDER_SUUNTO_CLIENT_SECRET".into(), "suunto-app-secret".into());
    vars.insert("WEARLAB_PROVIDER_SUUNTO_PUSH_TOKEN".into(), NOTIFICATION_SECRET.into());
    vars.insert(SUBSCRIPTION_KEY_VAR.into(), SUBSCRIPTION_KEY.into());
    let clock = Arc::new(ManualClock::new(now));
    real_stack(fake, clock, |sim| wearlab_providers::from_vars(sim, |k| vars.get(k).cloned())).await
}

fn published(r: &Real<FakeSuunto>, event_type: &str) -> Vec<wearlab_domain::ports::EventEnvelope> {
    r.stack.bus.published().into_iter().filter(|e| e.event_type == event_type).collect()
}

async fn deliver(r: &Real<FakeSuunto>, request: &PushRequest) -> StatusCode {
    let headers: Vec<(&str, &str)> = request.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let body = String::from_utf8(request.body.clone()).unwrap();
    r.t.send_as(Method::POST, "/v2/provider_webhooks/suunto", None, &headers, Some(&body)).await.status
}

/// The samples of `resource` read back: (timestamp, value, unit).
async fn timeseries(r: &Real<FakeSuunto>, user: &str, resource: &str) -> Vec<(String, f64, String)> {
    let path = format!("/v2/timeseries/{user}/{resource}/grouped?start_date=2026-11-18&end_date=2026-11-24");
    let a = r.t.get(&path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let groups = a.body["groups"]["suunto"].as_array().cloned().unwrap_or_default();
    groups
        .iter()
        .flat_map(|g| g["data"].as_array().cloned().unwrap_or_default())
        .map(|s: Value| {
            let t = s["timestamp"].as_str().unwrap_or_default().to_owned();
            (t, s["value"].as_f64().unwrap(), s["unit"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// Every data call the fake got.
fn data_calls(r: &Real<FakeSuunto>) -> u32 {
    ["workouts", "daily-activity-statistics", "sleep", "activity"].iter().map(|k| r.fake.calls(k)).sum()
}

#[tokio::test]
async fn real_suunto_links_by_its_user_and_pulls_history_in_wearlabs_units() {
    let r = real_suunto().await;
    let (user, oauth_url) = link_through(&r, "suunto", "suunto-1").await;
    assert_eq!(query_param(&oauth_url, "client_id").as_deref(), Some("wearlab-suunto"));
    assert_eq!(query_param(&oauth_url, "scope"), None, "Suunto documents no scope");
    let conn = connection_of(&r, &user, "suunto").await;
    assert_eq!(conn.external_user_id, USERNAME, "the token answer's user");

    let listed = r.t.get("/v2/providers").await;
    let entry = listed.body.as_array().unwrap().iter().find(|p| p["slug"] == "suunto").unwrap().clone();
    assert_eq!(
        entry["supported_resources"],
        json!([
            Resource::Activity,
            Resource::Sleep,
            Resource::Workouts,
            Resource::Heartrate,
            Resource::Steps,
            Resource::CaloriesActive,
            Resource::BloodOxygen,
            Resource::Hrv,
            Resource::WorkoutStream,
            Resource::Connection
        ]),
        "exactly what the adapter fills"
    );
    assert_eq!(entry["availability"], "live");

    drain(&r).await;
    let sleep = summaries(&r, "sleep", &user).await;
    let nights: Vec<(&str, &str)> =
        sleep.iter().map(|s| (s["calendar_date"].as_str().unwrap(), s["type"].as_str().unwrap())).collect();
    assert_eq!(
        nights,
        [("2026-11-21", "long_sleep"), ("2026-11-22", "long_sleep"), ("2026-11-22", "acknowledged_nap")],
        "{sleep:?}"
    );
    let night = &sleep[0];
    assert_eq!(
        (night["deep"].as_i64(), night["light"].as_i64(), night["rem"].as_i64()),
        (Some(5400), Some(15600), Some(6000))
    );
    assert_eq!((night["duration"].as_i64(), night["awake"].as_i64()), (Some(28260), Some(1260)));
    assert_eq!(night["source"]["provider"], "suunto");

    let workouts = summaries(&r, "workouts", &user).await;
    assert_eq!(workouts.len(), 2, "the history's workouts: {workouts:?}");
    let run = workouts.iter().find(|w| w["sport"] == "running").unwrap();
    assert_eq!((run["duration"].as_i64(), run["distance"].as_f64()), (Some(2710), Some(7420.3)));
    assert_eq!((run["calories"].as_f64(), run["average_hr"].as_f64()), (Some(512.0), Some(151.0)));
    let ride = workouts.iter().find(|w| w["sport"] == "cycling").unwrap();
    assert_eq!(ride["calendar_date"], "2026-11-22", "the local day in UTC-5");

    let activity = summaries(&r, "activity", &user).await;
    let a = activity.iter().find(|a| a["calendar_date"] == "2026-11-22").unwrap();
    assert_eq!((a["steps"].as_f64(), a["calories_active"].as_f64()), (Some(4617.0), Some(153.102)));

    let hr = timeseries(&r, &user, "heartrate").await;
    assert_eq!(hr.iter().map(|s| s.1).collect::<Vec<_>>(), [62.0, 75.0, 48.0, 88.0], "{hr:?}");
    assert!(hr.iter().all(|s| s.2 == "bpm"));
    let spo2 = timeseries(&r, &user, "blood_oxygen").await;
    assert_eq!(spo2.iter().map(|s| (s.1, s.2.as_str())).collect::<Vec<_>>(), [(97.0, "%"), (95.0, "%")]);
    let kcal = timeseries(&r, &user, "calories_active").await;
    assert_eq!(kcal.iter().map(|s| (s.1, s.2.as_str())).collect::<Vec<_>>()[0], (10.0, "kcal"));
    let steps = timeseries(&r, &user, "steps").await;
    assert_eq!(steps.iter().map(|s| s.1).sum::<f64>(), 120.0 + 860.0 + 1310.0);
    let hrv = timeseries(&r, &user, "hrv").await;
    assert_eq!(hrv.iter().map(|s| (s.1, s.2.as_str())).collect::<Vec<_>>(), [(45.0, "ms")]);
    for kind in
        ["sleep", "activity", "workouts", "heartrate", "steps", "calories_active", "blood_oxygen", "hrv"]
    {
        assert!(!published(&r, &format!("historical.data.{kind}.created")).is_empty(), "{kind}");
    }
}

#[tokio::test]
async fn a_recorded_workouts_stream_comes_from_its_fit_export_in_wearlabs_units() {
    // The evening of the fixtures' recorded ride (the FIT file's own day).
    let r = real_suunto_at(Utc.with_ymd_and_hms(2022, 2, 7, 20, 0, 0).unwrap()).await;
    let (user, _) = link_through(&r, "suunto", "suunto-fit").await;
    drain(&r).await;
    let range = "start_date=2022-02-04&end_date=2022-02-10";
    let a = r.t.get(&format!("/v2/summary/workouts/{user}?{range}")).await;
    let workouts = a.body["workouts"].as_array().cloned().unwrap_or_default();
    assert_eq!(workouts.len(), 1, "{}", a.body);
    assert_eq!(workouts[0]["sport"], "indoor_cycling");
    assert_eq!(workouts[0]["time_start"], "2022-02-07T16:47:52Z");

    let a = r.t.get(&format!("/v2/timeseries/{user}/workout_stream/grouped?{range}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let samples: Vec<Value> = a.body["groups"]["suunto"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["data"].as_array().cloned().unwrap_or_default())
        .collect();
    for unit in ["W", "rpm", "m/s"] {
        assert!(samples.iter().any(|s| s["unit"] == unit), "{unit}: {samples:?}");
    }
    assert!(samples.iter().all(|s| s["timestamp"].as_str().is_some_and(|t| t.starts_with("2022-02-07T1"))));
    assert!(!published(&r, "historical.data.workout_stream.created").is_empty());
    // One export read for the one recorded workout, with the key and the subscription key.
    assert_eq!(r.fake.calls("fit"), 1);
}

#[tokio::test]
async fn a_signed_notification_is_answered_at_once_and_its_poll_brings_the_new_workout() {
    let r = real_suunto().await;
    let (user, _) = link_through(&r, "suunto", "suunto-2").await;
    drain(&r).await;
    r.t.clock.advance(chrono::Duration::days(2));
    let before = data_calls(&r);

    // Refused notifications change nothing: nothing queued.
    let body = WEBHOOK_WORKOUT_CREATED.as_bytes();
    let forged = fake::signed_push("not-the-notification-secret", body);
    assert_eq!(deliver(&r, &forged).await, StatusCode::UNAUTHORIZED);
    let mut unsigned = fake::signed_push(NOTIFICATION_SECRET, body);
    unsigned.headers.retain(|(k, _)| k != wearlab_providers::suunto::SIGNATURE_HEADER);
    assert_eq!(deliver(&r, &unsigned).await, StatusCode::UNAUTHORIZED);
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0, "nothing queued");
    assert!(published(&r, "daily.data.workouts.created").is_empty());

    // A signed one is answered before Suunto is called: its data is fetched by the queued poll.
    let sent = std::time::Instant::now();
    assert_eq!(deliver(&r, &fake::signed_push(NOTIFICATION_SECRET, body)).await, StatusCode::OK);
    let answered = sent.elapsed();
    assert!(answered < std::time::Duration::from_secs(2), "Suunto waits 2 s: answered in {answered:?}");
    assert_eq!(data_calls(&r), before, "no call to Suunto inside the request");
    drain(&r).await;
    let created = published(&r, "daily.data.workouts.created");
    assert_eq!(created.len(), 1, "the new workout, and only it");
    assert_eq!(created[0].user_id.to_string(), user);
    assert_eq!(created[0].data["calendar_date"], "2026-11-23");
    assert_eq!(created[0].data["sport"], "cross_country_skiing");
}

#[tokio::test]
async fn a_signed_sleep_notification_brings_the_new_night() {
    let r = real_suunto().await;
    let (user, _) = link_through(&r, "suunto", "suunto-3").await;
    drain(&r).await;
    r.t.clock.advance(chrono::Duration::days(2));
    let signed = fake::signed_push(NOTIFICATION_SECRET, WEBHOOK_SLEEP_CREATED.as_bytes());
    assert_eq!(deliver(&r, &signed).await, StatusCode::OK);
    drain(&r).await;
    let created = published(&r, "daily.data.sleep.created");
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0].data["calendar_date"], "2026-11-23");
    assert_eq!(created[0].user_id.to_string(), user);
}

#[tokio::test]
async fn a_refused_token_is_refreshed_and_the_new_refresh_token_kept() {
    let r = real_suunto().await;
    let (user, _) = link_through(&r, "suunto", "suunto-4").await;
    drain(&r).await;
    let before = connection_of(&r, &user, "suunto").await.credentials(&r.t.deps).unwrap();
    r.fake.expire_access_tokens();
    let job = PollJob {
        team_id: r.t.team,
        user_id: UserId::parse(&user).unwrap(),
        provider: "suunto".into(),
        since: None,
    };
    poll(&r.t.deps, &job).await.unwrap();
    assert_eq!(r.fake.calls("token:refresh_token"), 1);
    let conn = connection_of(&r, &user, "suunto").await;
    assert_eq!(conn.status, ConnectionStatus::Connected);
    let after = conn.credentials(&r.t.deps).unwrap();
    assert_ne!(after.refresh_token, before.refresh_token, "the rotated refresh token is stored");
    assert!(published(&r, "provider.connection.error").is_empty());
}

#[tokio::test]
async fn removing_a_suunto_connection_deauthorizes_wearlab_at_suunto() {
    let r = real_suunto().await;
    let (user, _) = link_through(&r, "suunto", "suunto-5").await;
    let a = r.t.delete(&format!("/v2/user/{user}/suunto")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(r.fake.calls("deauthorize"), 1);
    assert_eq!(r.fake.queries("deauthorize")[0]["client_id"], "wearlab-suunto");
}

/// Suunto's workouts, daily activity and nights (the fixtures of Suunto's published API Zone
/// document) read as FHIR Observations named after suunto, kept for the FHIR validator (`make
/// fhir`).
#[tokio::test]
async fn suunto_data_reads_as_fhir_observations() {
    let r = real_suunto().await;
    linked_data_reads_as_fhir(&r, "suunto", &["8867-4", "55423-8", "93832-4"]).await;
}
