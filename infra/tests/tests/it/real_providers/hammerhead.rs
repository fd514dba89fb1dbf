//! Hammerhead end to end on the embedded app, made real by `from_vars` with the platform's app and
//! the webhook secret as the push token, pointed at the local fake: linked through OAuth (no
//! longer a password provider; the user named by the token answer), the activities and the
//! ride's FIT file read back, a signed webhook bringing the new ride while unsigned or forged ones
//! change nothing, and the removal of the connection deauthorising at Hammerhead.

use std::sync::Arc;

use chrono::{Duration, NaiveDate, TimeZone, Utc};
use http::{Method, StatusCode};
use serde_json::Value;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::ManualClock;
use wearlab_domain::ports::providers::{OauthClient, PushRequest};
use wearlab_providers::fake::hammerhead::{self as fake, FakeHammerhead, USER_ID, WEBHOOK_ACTIVITY};

use super::whoop_withings::host_vars;
use super::{Real, connection_of, drain, link_through, linked_data_reads_as_fhir, real_stack};
use crate::linking::query_param;

const WEBHOOK_SECRET: &str = "hammerhead-webhook-secret";
const PUSH_PATH: &str = "/v2/provider_webhooks/hammerhead";
/// The day of the fixtures' recorded ride (UTC; the test user's zone is Europe/Berlin).
const RIDE_DAY: &str = "2022-02-07";

fn hammerhead_app() -> OauthClient {
    OauthClient {
        client_id: "wearlab-hammerhead".into(),
        client_secret: Secret::new("hammerhead-app-secret"),
    }
}

fn ride_day() -> NaiveDate {
    RIDE_DAY.parse().unwrap()
}

async fn real_hammerhead_on(day: NaiveDate) -> Real<FakeHammerhead> {
    let fake = FakeHammerhead::new(hammerhead_app());
    let mut vars = host_vars("hammerhead", &fake.start().await);
    vars.insert("WEARLAB_PROVIDER_HAMMERHEAD_CLIENT_ID".into(), hammerhead_app().client_id);
    vars.insert("WEARLAB_PROVIDER_HAMMERHEAD_CLIENT_SECRET".into(), "hammerhead-app-secret".into());
    vars.insert("WEARLAB_PROVIDER_HAMMERHEAD_PUSH_TOKEN".into(), WEBHOOK_SECRET.into());
    let evening = Utc.from_utc_datetime(&day.and_hms_opt(20, 0, 0).unwrap());
    real_stack(fake, Arc::new(ManualClock::new(evening)), |sim| {
        wearlab_providers::from_vars(sim, |k| vars.get(k).cloned())
    })
    .await
}

fn events(r: &Real<FakeHammerhead>, event_type: &str) -> Vec<wearlab_domain::ports::EventEnvelope> {
    r.stack.bus.published().into_iter().filter(|e| e.event_type == event_type).collect()
}

fn around_the_ride() -> String {
    let (from, to) = (ride_day() - Duration::days(3), ride_day() + Duration::days(3));
    format!("start_date={from}&end_date={to}")
}

async fn workouts(r: &Real<FakeHammerhead>, user: &str) -> Vec<Value> {
    let a = r.t.get(&format!("/v2/summary/workouts/{user}?{}", around_the_ride())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["workouts"].as_array().unwrap().clone()
}

async fn timeseries(r: &Real<FakeHammerhead>, user: &str, resource: &str) -> Vec<Value> {
    let a = r.t.get(&format!("/v2/timeseries/{user}/{resource}/grouped?{}", around_the_ride())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let groups = a.body["groups"]["hammerhead"].as_array().cloned().unwrap_or_default();
    groups.iter().flat_map(|g| g["data"].as_array().cloned().unwrap_or_default()).collect()
}

async fn deliver(r: &Real<FakeHammerhead>, request: &PushRequest) -> StatusCode {
    let headers: Vec<(&str, &str)> = request.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let body = String::from_utf8(request.body.clone()).unwrap();
    r.t.send_as(Method::POST, PUSH_PATH, None, &headers, Some(&body)).await.status
}

#[tokio::test]
async fn hammerhead_links_by_oauth_and_pulls_the_rides_with_their_fit_files() {
    let r = real_hammerhead_on(ride_day() + Duration::days(2)).await;
    let (user, oauth_url) = link_through(&r, "hammerhead", "hammerhead-1").await;
    assert_eq!(query_param(&oauth_url, "client_id").as_deref(), Some("wearlab-hammerhead"));
    assert_eq!(query_param(&oauth_url, "scope").as_deref(), Some("activity:read"));
    assert_eq!(connection_of(&r, &user, "hammerhead").await.external_user_id, USER_ID, "the token's user_id");

    drain(&r).await;
    let workouts = workouts(&r, &user).await;
    assert_eq!(workouts.len(), 2, "{workouts:?}");
    let ride = workouts.iter().find(|w| w["calendar_date"] == RIDE_DAY).expect("the recorded ride");
    assert_eq!(ride["sport"], "cycling");
    assert_eq!(ride["distance"], 6873.6);
    assert_eq!(ride["duration"], 1072);
    assert_eq!(ride["time_start"], "2022-02-07T16:47:52Z");
    assert_eq!(ride["source"]["provider"], "hammerhead");
    let hr = timeseries(&r, &user, "heartrate").await;
    assert!(!hr.is_empty() && hr.iter().all(|s| s["unit"] == "bpm"));
    let stream = timeseries(&r, &user, "workout_stream").await;
    for unit in ["W", "rpm", "m/s"] {
        assert!(stream.iter().any(|s| s["unit"] == unit), "{unit}");
    }
    for kind in ["workouts", "heartrate", "distance", "workout_stream"] {
        assert!(!events(&r, &format!("historical.data.{kind}.created")).is_empty(), "{kind}");
    }

    // The password path is gone.
    let a = r.t.get("/v2/providers?source_type=password").await;
    assert!(!a.body.to_string().contains("\"hammerhead\""), "{}", a.body);
}

#[tokio::test]
async fn a_signed_webhook_brings_the_new_ride_and_an_unsigned_or_forged_one_changes_nothing() {
    let r = real_hammerhead_on(ride_day() - Duration::days(2)).await;
    let (user, _) = link_through(&r, "hammerhead", "hammerhead-2").await;
    drain(&r).await;
    assert!(workouts(&r, &user).await.iter().all(|w| w["calendar_date"] != RIDE_DAY), "not yet");
    r.t.clock.advance(Duration::days(3));

    let forged = fake::signed_push("not-the-secret", WEBHOOK_ACTIVITY.as_bytes());
    assert_eq!(deliver(&r, &forged).await, StatusCode::UNAUTHORIZED);
    let mut unsigned = fake::signed_push(WEBHOOK_SECRET, WEBHOOK_ACTIVITY.as_bytes());
    unsigned.headers.retain(|(k, _)| k != wearlab_providers::hammerhead::SIGNATURE_HEADER);
    assert_eq!(deliver(&r, &unsigned).await, StatusCode::UNAUTHORIZED);
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0, "a refused delivery queues nothing");

    let signed = fake::signed_push(WEBHOOK_SECRET, WEBHOOK_ACTIVITY.as_bytes());
    assert_eq!(deliver(&r, &signed).await, StatusCode::OK);
    drain(&r).await;
    let created = events(&r, "daily.data.workouts.created");
    assert_eq!(created.len(), 1, "the new ride, and only it: {created:?}");
    assert_eq!(created[0].user_id.to_string(), user);
    assert_eq!(created[0].data["calendar_date"], RIDE_DAY);
}

#[tokio::test]
async fn removing_a_hammerhead_connection_deauthorizes_at_hammerhead() {
    let r = real_hammerhead_on(ride_day() + Duration::days(2)).await;
    let (user, _) = link_through(&r, "hammerhead", "hammerhead-3").await;
    let a = r.t.delete(&format!("/v2/user/{user}/hammerhead")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(r.fake.calls("deauthorize"), 1, "POST /v1/auth/oauth/deauthorize");
}

/// Hammerhead's activities and their FIT files (the fixtures of Hammerhead's published reference)
/// read as FHIR Observations named after hammerhead, kept for the FHIR validator (`make fhir`).
#[tokio::test]
async fn hammerhead_data_reads_as_fhir_observations() {
    let r = real_hammerhead_on(ride_day()).await;
    linked_data_reads_as_fhir(&r, "hammerhead", &["8867-4"]).await;
}
