//! Wahoo end to end on the embedded app, made real by `from_vars` with the platform's app and the
//! app's webhook token as the push token, pointed at the local fake: linked through the fake's
//! consent (the user named by `GET /v1/user`), the history's workouts and the ride's FIT file read
//! back, an expired token refreshed once with the old pair revoked at its first use, the
//! `workout_summary` webhook refused without the app's token and bringing the new ride with it,
//! and the removal of the connection deleting Wearlab's permissions at Wahoo.
//!
//! The clock starts the day before the fixtures' recorded ride, so the history stops short of it
//! and the ride is new when the webhook's poll runs two days later.

use std::sync::Arc;

use chrono::{Duration, NaiveDate, TimeZone, Utc};
use http::{Method, StatusCode};
use serde_json::Value;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::pipeline::pull::{PollJob, poll};
use wearlab_domain::ports::ManualClock;
use wearlab_domain::ports::providers::OauthClient;
use wearlab_models::ConnectionStatus;
use wearlab_providers::fake::wahoo::{FakeWahoo, USER_ID, WEBHOOK_WORKOUT_SUMMARY};

use super::whoop_withings::host_vars;
use super::{Real, connection_of, drain, link_through, linked_data_reads_as_fhir, real_stack};
use crate::linking::query_param;

const WEBHOOK_TOKEN: &str = "wahoo-webhook-token";
const PUSH_PATH: &str = "/v2/provider_webhooks/wahoo";
/// The local day of the fixtures' recorded ride (America/Denver).
const RIDE_DAY: &str = "2022-02-07";

fn wahoo_app() -> OauthClient {
    OauthClient { client_id: "wearlab-wahoo".into(), client_secret: Secret::new("wahoo-app-secret") }
}

fn ride_day() -> NaiveDate {
    RIDE_DAY.parse().unwrap()
}

/// Wahoo made real by its platform app, with the webhook token configured; the clock at 20:00 UTC
/// of `day`.
async fn real_wahoo_on(day: NaiveDate) -> Real<FakeWahoo> {
    let fake = FakeWahoo::new(wahoo_app());
    let mut vars = host_vars("wahoo", &fake.start().await);
    vars.insert("WEARLAB_PROVIDER_WAHOO_CLIENT_ID".into(), wahoo_app().client_id);
    vars.insert("WEARLAB_PROVIDER_WAHOO_CLIENT_SECRET".into(), "wahoo-app-secret".into());
    vars.insert("WEARLAB_PROVIDER_WAHOO_PUSH_TOKEN".into(), WEBHOOK_TOKEN.into());
    vars.insert("WEARLAB_PROVIDER_WAHOO_APP_MODE".into(), "production".into());
    let evening = Utc.from_utc_datetime(&day.and_hms_opt(20, 0, 0).unwrap());
    let clock = Arc::new(ManualClock::new(evening));
    real_stack(fake, clock, |sim| wearlab_providers::from_vars(sim, |k| vars.get(k).cloned())).await
}

fn events(r: &Real<FakeWahoo>, event_type: &str) -> Vec<wearlab_domain::ports::EventEnvelope> {
    r.stack.bus.published().into_iter().filter(|e| e.event_type == event_type).collect()
}

fn around_the_ride() -> String {
    let (from, to) = (ride_day() - Duration::days(3), ride_day() + Duration::days(3));
    format!("start_date={from}&end_date={to}")
}

async fn workouts(r: &Real<FakeWahoo>, user: &str) -> Vec<Value> {
    let a = r.t.get(&format!("/v2/summary/workouts/{user}?{}", around_the_ride())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["workouts"].as_array().unwrap().clone()
}

async fn timeseries(r: &Real<FakeWahoo>, user: &str, resource: &str) -> Vec<Value> {
    let a = r.t.get(&format!("/v2/timeseries/{user}/{resource}/grouped?{}", around_the_ride())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let groups = a.body["groups"]["wahoo"].as_array().cloned().unwrap_or_default();
    groups.iter().flat_map(|g| g["data"].as_array().cloned().unwrap_or_default()).collect()
}

async fn deliver(r: &Real<FakeWahoo>, body: &str) -> StatusCode {
    let headers = [("content-type", "application/json")];
    r.t.send_as(Method::POST, PUSH_PATH, None, &headers, Some(body)).await.status
}

#[tokio::test]
async fn real_wahoo_links_and_pulls_the_workouts_and_the_rides_fit_file() {
    let r = real_wahoo_on(ride_day() + Duration::days(2)).await;
    let (user, oauth_url) = link_through(&r, "wahoo", "wahoo-1").await;
    assert_eq!(query_param(&oauth_url, "client_id").as_deref(), Some("wearlab-wahoo"));
    assert_eq!(query_param(&oauth_url, "scope").as_deref(), Some("user_read workouts_read offline_data"));
    let conn = connection_of(&r, &user, "wahoo").await;
    assert_eq!(conn.external_user_id, USER_ID.to_string(), "the id of GET /v1/user");

    drain(&r).await;
    let workouts = workouts(&r, &user).await;
    assert_eq!(workouts.len(), 2, "the summarised workouts: {workouts:?}");
    let ride = workouts.iter().find(|w| w["calendar_date"] == RIDE_DAY).expect("the recorded ride");
    assert_eq!(ride["sport"], "biking");
    assert_eq!(ride["distance"], 24909.71, "metres, written by Wahoo as a string");
    assert_eq!(ride["calories"], 1500.0);
    assert_eq!(ride["average_hr"], 100.0);
    assert_eq!(ride["timezone"], "America/Denver");
    assert_eq!(ride["source"]["provider"], "wahoo");

    let hr = timeseries(&r, &user, "heartrate").await;
    assert!(!hr.is_empty());
    assert!(hr.iter().all(|s| s["unit"] == "bpm"));
    let stream = timeseries(&r, &user, "workout_stream").await;
    for unit in ["W", "rpm", "m/s"] {
        assert!(stream.iter().any(|s| s["unit"] == unit), "{unit}: the ride's {unit} samples");
    }
    assert!(!timeseries(&r, &user, "distance").await.is_empty());
    assert_eq!(r.fake.calls("file"), 1, "the ride's file read once for the three stream resources");
    for kind in ["workouts", "heartrate", "distance", "workout_stream"] {
        assert!(!events(&r, &format!("historical.data.{kind}.created")).is_empty(), "{kind}");
    }
}

#[tokio::test]
async fn the_workout_summary_webhook_needs_the_apps_token_and_brings_the_new_ride() {
    let r = real_wahoo_on(ride_day() - Duration::days(1)).await;
    let (user, _) = link_through(&r, "wahoo", "wahoo-2").await;
    drain(&r).await;
    assert!(workouts(&r, &user).await.iter().all(|w| w["calendar_date"] != RIDE_DAY), "not yet");
    r.t.clock.advance(Duration::days(2));

    let mut wrong: Value = serde_json::from_str(WEBHOOK_WORKOUT_SUMMARY).unwrap();
    wrong["webhook_token"] = "not-the-apps-token".into();
    assert_eq!(deliver(&r, &wrong.to_string()).await, StatusCode::UNAUTHORIZED);
    let mut without = wrong.clone();
    without.as_object_mut().unwrap().remove("webhook_token");
    assert_eq!(deliver(&r, &without.to_string()).await, StatusCode::UNAUTHORIZED);
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0, "a refused delivery queues nothing");
    assert!(events(&r, "daily.data.workouts.created").is_empty());

    assert_eq!(deliver(&r, WEBHOOK_WORKOUT_SUMMARY).await, StatusCode::OK);
    drain(&r).await;
    let created = events(&r, "daily.data.workouts.created");
    assert_eq!(created.len(), 1, "the new ride, and only it: {created:?}");
    assert_eq!(created[0].user_id.to_string(), user);
    assert_eq!(created[0].data["calendar_date"], RIDE_DAY);
    assert!(!events(&r, "daily.data.heartrate.created").is_empty(), "the ride's FIT file too");
}

/// Access tokens last two hours: a refused one is refreshed once, and the new token's first use
/// revokes the old pair at Wahoo, so the user holds one token, far from Wahoo's ten.
#[tokio::test]
async fn a_refused_token_is_refreshed_once_and_the_old_pair_dies_at_the_new_ones_first_use() {
    let r = real_wahoo_on(ride_day() + Duration::days(2)).await;
    let (user, _) = link_through(&r, "wahoo", "wahoo-3").await;
    drain(&r).await;
    let before = connection_of(&r, &user, "wahoo").await.credentials(&r.t.deps).unwrap();
    r.fake.expire_access_tokens();
    let job = PollJob {
        team_id: r.t.team,
        user_id: UserId::parse(&user).unwrap(),
        provider: "wahoo".into(),
        since: None,
    };
    poll(&r.t.deps, &job).await.unwrap();
    let conn = connection_of(&r, &user, "wahoo").await;
    assert_eq!(conn.status, ConnectionStatus::Connected);
    let after = conn.credentials(&r.t.deps).unwrap();
    assert_ne!(after.refresh_token, before.refresh_token, "the new pair is stored");
    let grants: Vec<String> = r.fake.queries("token").iter().map(|q| q["grant_type"].clone()).collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
    assert_eq!(r.fake.unrevoked_tokens(), 1, "the old pair revoked once the new token was used");
}

#[tokio::test]
async fn removing_a_wahoo_connection_deletes_the_permissions_at_wahoo() {
    let r = real_wahoo_on(ride_day() + Duration::days(2)).await;
    let (user, _) = link_through(&r, "wahoo", "wahoo-4").await;
    let a = r.t.delete(&format!("/v2/user/{user}/wahoo")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(r.fake.calls("permissions"), 1, "DELETE /v1/permissions");
    assert_eq!(r.fake.unrevoked_tokens(), 0);
}

/// Wahoo's workouts and the ride's FIT file (the fixtures of Wahoo's published reference) read as
/// FHIR Observations named after wahoo, kept for the FHIR validator (`make fhir`).
#[tokio::test]
async fn wahoo_data_reads_as_fhir_observations() {
    let r = real_wahoo_on(ride_day()).await;
    linked_data_reads_as_fhir(&r, "wahoo", &["8867-4"]).await;
}
