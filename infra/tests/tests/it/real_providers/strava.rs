//! Strava end to end on the embedded app, made real by `from_vars` as a deployment does
//! (`WEARLAB_PROVIDER_STRAVA_ENABLED`, a push verify token) and linked through the team's own
//! Strava app against the local fake: the consent's granted scopes kept and respected, the
//! history's activities and streams read back, a push about a new activity bringing it as a
//! `daily.data.*` event, a deauthorisation ending the connection, and deregistration
//! deauthorising at Strava.
//!
//! The clock starts on 2026-11-22, inside the fixtures' days, so the history stops there and the
//! fixtures' 2026-11-23 activity is new when the push's poll runs two days later.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::common::ids::UserId;
use wearlab_domain::pipeline::pull::{PollJob, poll};
use wearlab_domain::ports::ManualClock;
use wearlab_models::ConnectionStatus;
use wearlab_providers::fake::strava::{
    ATHLETE_ID, FakeStrava, WEBHOOK_ACTIVITY_CREATE, WEBHOOK_ATHLETE_DEAUTHORIZE,
};

use super::{Real, connection_of, drain, link_through, linked_data_reads_as_fhir, real_stack, summaries};

const TEAM_STRAVA_SECRET: &str = "team-strava-secret";
const VERIFY_TOKEN: &str = "strava-verify-token";
const PUSH_PATH: &str = "/v2/provider_webhooks/strava";

/// Strava made real for teams' own apps, pointed at a fresh fake, and the team's app
/// registered through the API.
async fn real_strava() -> Real<FakeStrava> {
    let client = wearlab_domain::ports::providers::OauthClient {
        client_id: "team-strava-app".into(),
        client_secret: wearlab_domain::common::crypto::Secret::new(TEAM_STRAVA_SECRET),
    };
    let fake = FakeStrava::new(client);
    let endpoints = fake.start().await;
    let vars = HashMap::from([
        ("WEARLAB_PROVIDER_STRAVA_AUTHORIZE_URL".to_owned(), endpoints.authorize),
        ("WEARLAB_PROVIDER_STRAVA_TOKEN_URL".to_owned(), endpoints.token),
        ("WEARLAB_PROVIDER_STRAVA_API_URL".to_owned(), endpoints.api),
        ("WEARLAB_PROVIDER_STRAVA_ENABLED".to_owned(), "true".to_owned()),
        ("WEARLAB_PROVIDER_STRAVA_PUSH_TOKEN".to_owned(), VERIFY_TOKEN.to_owned()),
    ]);
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap()));
    let r = real_stack(fake, clock, |sim| wearlab_providers::from_vars(sim, |k| vars.get(k).cloned())).await;
    let app = json!({"client_id": "team-strava-app", "client_secret": TEAM_STRAVA_SECRET}).to_string();
    let a = r.t.send(Method::PUT, "/v2/team/oauth_app/strava", Some(&r.t.key), Some(&app)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    r
}

async fn timeseries(r: &Real<FakeStrava>, user: &str, resource: &str) -> Vec<Value> {
    let path = format!("/v2/timeseries/{user}/{resource}/grouped?start_date=2026-11-18&end_date=2026-11-24");
    let a = r.t.get(&path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let groups = a.body["groups"]["strava"].as_array().cloned().unwrap_or_default();
    groups.iter().flat_map(|g| g["data"].as_array().cloned().unwrap_or_default()).collect()
}

fn events(r: &Real<FakeStrava>, event_type: &str) -> Vec<wearlab_domain::ports::EventEnvelope> {
    r.stack.bus.published().into_iter().filter(|e| e.event_type == event_type).collect()
}

async fn push(r: &Real<FakeStrava>, body: &str) -> crate::helpers::Answer {
    let headers = [("content-type", "application/json")];
    r.t.send_as(Method::POST, PUSH_PATH, None, &headers, Some(body)).await
}

#[tokio::test]
async fn real_strava_links_through_the_teams_app_and_pulls_activities_and_streams() {
    let r = real_strava().await;
    let (user, oauth_url) = link_through(&r, "strava", "strava-1").await;
    assert_eq!(super::query_param(&oauth_url, "client_id").as_deref(), Some("team-strava-app"));
    assert_eq!(super::query_param(&oauth_url, "scope").as_deref(), Some("read,activity:read_all"));
    let conn = connection_of(&r, &user, "strava").await;
    assert_eq!(conn.external_user_id, ATHLETE_ID.to_string(), "the athlete of the token answer");
    assert_eq!(conn.team_app_client_id.as_deref(), Some("team-strava-app"));
    let scopes = conn.credentials(&r.t.deps).unwrap().scopes;
    assert_eq!(scopes, ["read", "activity:read_all"], "the scopes the callback said were granted");

    drain(&r).await;
    // The stream resources share each chunk's activity list and each activity's streams with
    // the workouts: 10 lists and 3 streams calls (24 and 9 when each resource asked for itself).
    assert_eq!((r.fake.calls("activities"), r.fake.calls("streams")), (10, 3));
    let workouts = summaries(&r, "workouts", &user).await;
    assert_eq!(workouts.len(), 4, "the activities up to today, the private hike too: {workouts:?}");
    assert!(workouts.iter().all(|w| w["source"]["provider"] == "strava"), "{workouts:?}");
    let ride =
        workouts.iter().find(|w| w["sport"] == "mountain_bike_ride" && w["calendar_date"] == "2026-11-21");
    let ride = ride.expect("the Bondcliff ride");
    assert_eq!(ride["distance"], 23676.5);
    assert_eq!(ride["duration"], 5400);
    assert_eq!(ride["average_hr"], 152.4);
    assert_eq!(ride["timezone"], "America/Los_Angeles");
    assert_eq!(ride["calories"], 1080.0, "the summary's kilojoules of work");

    let hr = timeseries(&r, &user, "heartrate").await;
    assert_eq!(hr.len(), 36, "three recorded activities of 12 samples");
    assert!(hr.iter().all(|s| s["unit"] == "bpm"));
    let distance = timeseries(&r, &user, "distance").await;
    let covered: f64 = distance.iter().map(|s| s["value"].as_f64().unwrap()).sum();
    assert!((covered - 3.0 * 49.5).abs() < 1e-6, "{covered}");
    let stream = timeseries(&r, &user, "workout_stream").await;
    assert_eq!(stream.iter().filter(|s| s["unit"] == "W").count(), 24, "two rides with power");
    assert_eq!(stream.iter().filter(|s| s["unit"] == "rpm").count(), 36);
    for kind in ["workouts", "heartrate", "distance", "workout_stream"] {
        assert!(!events(&r, &format!("historical.data.{kind}.created")).is_empty(), "{kind}");
    }
}

#[tokio::test]
async fn the_granted_scopes_are_respected() {
    let r = real_strava().await;
    r.fake.grant_only("read,activity:read");
    let (public_only, _) = link_through(&r, "strava", "strava-2").await;
    r.fake.grant_only("read");
    let (no_activities, _) = link_through(&r, "strava", "strava-3").await;
    // A team starts one Strava pull per 15 minutes (`throttle::policy_for`): the second user's
    // history waits for the next window.
    drain(&r).await;
    r.t.clock.advance(chrono::Duration::minutes(16));
    drain(&r).await;

    let workouts = summaries(&r, "workouts", &public_only).await;
    assert_eq!(workouts.len(), 3, "the private hike is not read: {workouts:?}");
    assert!(workouts.iter().all(|w| w["sport"] != "hike"));

    // Without an activity scope nothing of the activities is pulled; the link stands.
    assert!(summaries(&r, "workouts", &no_activities).await.is_empty());
    assert!(timeseries(&r, &no_activities, "heartrate").await.is_empty());
    assert_eq!(connection_of(&r, &no_activities, "strava").await.status, ConnectionStatus::Connected);
    assert!(events(&r, "provider.connection.error").is_empty());
}

#[tokio::test]
async fn the_handshake_and_a_new_activity_push_bring_the_new_day() {
    let r = real_strava().await;
    let (user, _) = link_through(&r, "strava", "strava-4").await;
    drain(&r).await;

    let handshake = |token: &str| {
        format!(
            "{PUSH_PATH}?hub.mode=subscribe&hub.challenge=15f7d1a91c1f40f8a748fd134752feb3&hub.verify_token={token}"
        )
    };
    let a = r.t.send(Method::GET, &handshake(VERIFY_TOKEN), None, None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body, json!({"hub.challenge": "15f7d1a91c1f40f8a748fd134752feb3"}));
    let a = r.t.send(Method::GET, &handshake("wrong"), None, None).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{}", a.body);

    r.t.clock.advance(chrono::Duration::days(2));
    let a = push(&r, WEBHOOK_ACTIVITY_CREATE).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    drain(&r).await;
    let created = events(&r, "daily.data.workouts.created");
    assert_eq!(created.len(), 1, "the new activity, and only it: {created:?}");
    assert_eq!(created[0].user_id.to_string(), user);
    assert_eq!(created[0].data["calendar_date"], "2026-11-23");
    assert!(!events(&r, "daily.data.heartrate.created").is_empty(), "its heart-rate stream");
}

/// Strava signs no event, so a deauthorisation is confirmed with Strava first: while the
/// athlete's tokens still refresh, the event is someone else's and changes nothing.
#[tokio::test]
async fn a_forged_deauthorisation_leaves_the_connection_linked() {
    let r = real_strava().await;
    let (user, _) = link_through(&r, "strava", "strava-forged").await;
    drain(&r).await;

    let a = push(&r, WEBHOOK_ATHLETE_DEAUTHORIZE).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let conn = connection_of(&r, &user, "strava").await;
    assert_eq!(conn.status, ConnectionStatus::Connected, "{:?}", conn.error_details);
    assert!(events(&r, "provider.connection.error").is_empty());
}

#[tokio::test]
async fn a_deauthorisation_from_strava_ends_the_connection_and_tells_the_team() {
    let r = real_strava().await;
    let (user, _) = link_through(&r, "strava", "strava-5").await;
    drain(&r).await;

    // The athlete deauthorised Wearlab at Strava: its tokens no longer work, then Strava tells.
    r.fake.deauthorize_athlete();
    let a = push(&r, WEBHOOK_ATHLETE_DEAUTHORIZE).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let conn = connection_of(&r, &user, "strava").await;
    assert_eq!(conn.status, ConnectionStatus::Error);
    assert_eq!(conn.error_details.as_ref().map(|e| e.error_type.as_str()), Some("user_deauthorized"));
    let errors = events(&r, "provider.connection.error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].user_id.to_string(), user);
    assert_eq!(errors[0].data["error_type"], "user_deauthorized");
    assert_eq!(errors[0].data["provider"]["slug"], "strava");

    let listed = r.t.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert_eq!(listed.body["providers"][0]["status"], "error", "{}", listed.body);

    // Strava retries: the same notice again changes nothing. No poll reaches Strava any more.
    let a = push(&r, WEBHOOK_ATHLETE_DEAUTHORIZE).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(events(&r, "provider.connection.error").len(), 1);
    let calls = r.fake.calls("activities");
    let job = PollJob {
        team_id: r.t.team,
        user_id: UserId::parse(&user).unwrap(),
        provider: "strava".into(),
        since: None,
    };
    poll(&r.t.deps, &job).await.unwrap();
    drain(&r).await;
    assert_eq!(r.fake.calls("activities"), calls);
}

#[tokio::test]
async fn removing_a_strava_connection_deauthorizes_at_strava() {
    let r = real_strava().await;
    let (user, _) = link_through(&r, "strava", "strava-6").await;
    let a = r.t.delete(&format!("/v2/user/{user}/strava")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(r.fake.calls("deauthorize"), 1);
}

/// Strava's activities and their streams (the fixtures of Strava's published API reference) read as
/// FHIR Observations named after strava, kept for the FHIR validator (`make fhir`).
#[tokio::test]
async fn strava_data_reads_as_fhir_observations() {
    let r = real_strava().await;
    linked_data_reads_as_fhir(&r, "strava", &["8867-4"]).await;
}
