//! Polar end to end on the embedded app, made real by `from_vars` with the platform's app and the
//! webhook's secret as the push token, pointed at the local fake: linked through the fake's
//! consent (the user registered with the client on the way), the history pulled and read back,
//! the webhook's PING and a signed delivery bringing the new day, and the removal of the
//! connection deregistering the user at Polar.
//!
//! The clock starts on 2026-11-22, inside the fixtures' days, so the history stops there and the
//! fixtures' 2026-11-23 exercise is new when the delivery's poll runs two days later.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use http::{Method, StatusCode};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::keys;
use wearlab_domain::pipeline::pull::{PollJob, poll};
use wearlab_domain::ports::ManualClock;
use wearlab_domain::ports::providers::OauthClient;
use wearlab_models::ConnectionStatus;
use wearlab_providers::fake::polar::{self as fake, Failure, FakePolar, USER_ID, WEBHOOK_EXERCISE};

use super::whoop_withings::host_vars;
use super::{
    Real, connection_of, consent_through, drain, link_through, linked_data_reads_as_fhir, real_stack,
    summaries,
};
use crate::linking::{path_of, query_param};

const WEBHOOK_SECRET: &str = "abe1f3ae-fd33-11e8-8eb2-f2801f1b9fd1";

fn polar_app() -> OauthClient {
    OauthClient { client_id: "wearlab-polar".into(), client_secret: Secret::new("polar-app-secret") }
}

/// Polar made real by its platform app, with the webhook's secret configured.
async fn real_polar() -> Real<FakePolar> {
    let fake = FakePolar::new(polar_app());
    let mut vars = host_vars("polar", &fake.start().await);
    vars.insert("WEARLAB_PROVIDER_POLAR_CLIENT_ID".into(), polar_app().client_id);
    vars.insert("WEARLAB_PROVIDER_POLAR_CLIENT_SECRET".into(), "polar-app-secret".into());
    vars.insert("WEARLAB_PROVIDER_POLAR_PUSH_TOKEN".into(), WEBHOOK_SECRET.into());
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap()));
    real_stack(fake, clock, |sim| wearlab_providers::from_vars(sim, |k| vars.get(k).cloned())).await
}

fn published(r: &Real<FakePolar>, event_type: &str) -> Vec<wearlab_domain::ports::EventEnvelope> {
    r.stack.bus.published().into_iter().filter(|e| e.event_type == event_type).collect()
}

async fn deliver(r: &Real<FakePolar>, request: &wearlab_domain::ports::providers::PushRequest) -> StatusCode {
    let headers: Vec<(&str, &str)> = request.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let body = String::from_utf8(request.body.clone()).unwrap();
    r.t.send_as(Method::POST, "/v2/provider_webhooks/polar", None, &headers, Some(&body)).await.status
}

/// Polar's daily activity names only its start in UTC: the day is the user's local one. In
/// Honolulu (UTC-10) the fixtures' 2026-11-21 08:15 UTC day starts on the evening of the 20th.
#[tokio::test]
async fn polar_activity_days_are_the_users_local_days() {
    let r = real_polar().await;
    let (user, _) = link_through(&r, "polar", "polar-hnl").await;
    let a =
        r.t.patch(&format!("/v2/user/{user}"), serde_json::json!({"fallback_time_zone": "Pacific/Honolulu"}))
            .await;
    assert!(a.status.is_success(), "{}", a.body);
    drain(&r).await;
    let activity = summaries(&r, "activity", &user).await;
    let days: Vec<(&str, f64)> = activity
        .iter()
        .map(|a| (a["calendar_date"].as_str().unwrap(), a["steps"].as_f64().unwrap()))
        .collect();
    assert_eq!(days, [("2026-11-20", 8823.0), ("2026-11-21", 6410.0)], "{activity:?}");
    assert!(activity.iter().all(|a| a["timezone"] == "Pacific/Honolulu"));
}

#[tokio::test]
async fn real_polar_links_registers_the_user_and_pulls_history() {
    let r = real_polar().await;
    let (user, oauth_url) = link_through(&r, "polar", "polar-1").await;
    assert_eq!(query_param(&oauth_url, "client_id").as_deref(), Some("wearlab-polar"));
    assert_eq!(query_param(&oauth_url, "scope").as_deref(), Some("accesslink.read_all"));
    let conn = connection_of(&r, &user, "polar").await;
    assert_eq!(conn.external_user_id, USER_ID.to_string(), "x_user_id of the token answer");
    assert_eq!(r.fake.registration(), (true, Some(USER_ID.to_string())));

    drain(&r).await;
    let sleep = summaries(&r, "sleep", &user).await;
    let dates: Vec<&str> = sleep.iter().filter_map(|s| s["calendar_date"].as_str()).collect();
    assert_eq!(dates, ["2026-11-21", "2026-11-22"], "{sleep:?}");
    let night = &sleep[0];
    assert_eq!((night["deep"].as_i64(), night["rem"].as_i64()), (Some(5400), Some(7200)));
    assert_eq!(night["duration"], 31230);
    assert_eq!(night["source"]["provider"], "polar");
    let workouts = summaries(&r, "workouts", &user).await;
    assert_eq!(workouts.len(), 2, "the history's exercises: {workouts:?}");
    let run = workouts.iter().find(|w| w["sport"] == "running").unwrap();
    assert_eq!(run["duration"], 3065, "PT51M5S");
    assert_eq!(run["distance"], 10123.4);
    let activity = summaries(&r, "activity", &user).await;
    let a = activity.iter().find(|a| a["calendar_date"] == "2026-11-21").unwrap();
    assert_eq!((a["steps"].as_f64(), a["distance"].as_f64()), (Some(8823.0), Some(4590.53)));
    let hr = r
        .t
        .get(&format!("/v2/timeseries/{user}/heartrate/grouped?start_date=2026-11-20&end_date=2026-11-20"))
        .await;
    assert_eq!(hr.status, StatusCode::OK, "{}", hr.body);
    assert!(hr.body.to_string().contains("63"), "{}", hr.body);
    for kind in ["sleep", "activity", "workouts", "heartrate", "hrv"] {
        assert!(!published(&r, &format!("historical.data.{kind}.created")).is_empty(), "{kind}");
    }
}

#[tokio::test]
async fn a_user_without_polars_consents_is_not_linked() {
    let r = real_polar().await;
    r.fake.withhold_consents();
    let (user, _, back) = consent_through(&r, "polar", "polar-2").await;
    let landed = r.t.send(Method::GET, &path_of(&back), None, None).await;
    let done = landed.headers.get("location").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert_eq!(query_param(&done, "state").as_deref(), Some("error"), "{done}");
    assert_eq!(query_param(&done, "error_type").as_deref(), Some("provider_credential_error"));
    assert!(query_param(&done, "error").unwrap_or_default().contains("consents"), "{done}");
    let key = keys::linking::connection(UserId::parse(&user).unwrap(), "polar");
    assert!(r.t.deps.table.get(&key).await.unwrap().is_none(), "no connection stored");
}

#[tokio::test]
async fn the_webhook_ping_and_a_signed_delivery_bring_the_new_exercise() {
    let r = real_polar().await;
    let (user, _) = link_through(&r, "polar", "polar-3").await;
    drain(&r).await;
    r.t.clock.advance(chrono::Duration::days(2));

    let ping = br#"{"event":"PING","timestamp":"2026-11-24T09:00:00Z"}"#;
    let unsigned = wearlab_domain::ports::providers::PushRequest {
        method: "POST".into(),
        body: ping.to_vec(),
        ..Default::default()
    };
    assert_eq!(deliver(&r, &unsigned).await, StatusCode::OK, "the ping is answered 200");

    let forged = fake::signed_push("not-the-webhook-secret", WEBHOOK_EXERCISE.as_bytes());
    assert_eq!(deliver(&r, &forged).await, StatusCode::UNAUTHORIZED);
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0, "nothing queued");

    let signed = fake::signed_push(WEBHOOK_SECRET, sent_now(&r).as_bytes());
    assert_eq!(deliver(&r, &signed).await, StatusCode::OK);
    drain(&r).await;
    let created = published(&r, "daily.data.workouts.created");
    assert_eq!(created.len(), 1, "the new exercise, and only it");
    assert_eq!(created[0].user_id.to_string(), user);
    assert!(created[0].data.to_string().contains("2026-11-23"), "{}", created[0].data);
}

/// The example delivery, as if Polar sent it now (its `timestamp` the clock's time).
fn sent_now(r: &Real<FakePolar>) -> String {
    let now = r.t.deps.now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    WEBHOOK_EXERCISE.replace("2026-11-23T14:22:24Z", &now)
}

/// A signed delivery is read once, within five minutes of its own `timestamp`: the same delivery
/// again (a retry, a replay) queues nothing, and one sent a week ago is refused.
#[tokio::test]
async fn a_polar_delivery_is_read_once_and_only_while_fresh() {
    let r = real_polar().await;
    link_through(&r, "polar", "polar-replay").await;
    drain(&r).await;
    r.t.clock.advance(chrono::Duration::days(2));

    let body = sent_now(&r);
    let signed = fake::signed_push(WEBHOOK_SECRET, body.as_bytes());
    assert_eq!(deliver(&r, &signed).await, StatusCode::OK);
    assert!(r.stack.run_pulls_once().await.unwrap() >= 1, "a poll queued");
    drain(&r).await;
    r.t.clock.advance(chrono::Duration::minutes(2));
    assert_eq!(deliver(&r, &signed).await, StatusCode::OK, "a repeated delivery is answered 200");
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0, "and queues nothing");

    // A week later the same signed delivery is refused.
    r.t.clock.advance(chrono::Duration::days(7));
    assert_eq!(deliver(&r, &signed).await, StatusCode::UNAUTHORIZED);
    let week_old = fake::signed_push(WEBHOOK_SECRET, WEBHOOK_EXERCISE.as_bytes());
    assert_eq!(deliver(&r, &week_old).await, StatusCode::UNAUTHORIZED);
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0, "nothing queued");
}

#[tokio::test]
async fn removing_a_polar_connection_deregisters_the_user_at_polar() {
    let r = real_polar().await;
    let (user, _) = link_through(&r, "polar", "polar-4").await;
    let a = r.t.delete(&format!("/v2/user/{user}/polar")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(r.fake.calls("deregister"), 1);
    assert!(!r.fake.registration().0, "DELETE /v3/users/{{user-id}}");
}

#[tokio::test]
async fn a_token_polar_refuses_ends_the_connection_as_there_is_no_refresh_token() {
    let r = real_polar().await;
    let (user, _) = link_through(&r, "polar", "polar-5").await;
    drain(&r).await;
    let job = PollJob {
        team_id: r.t.team,
        user_id: UserId::parse(&user).unwrap(),
        provider: "polar".into(),
        since: None,
    };
    r.fake.set_failure(Some(Failure::Unauthorized));
    poll(&r.t.deps, &job).await.unwrap();
    assert_eq!(connection_of(&r, &user, "polar").await.status, ConnectionStatus::Error);
    assert_eq!(published(&r, "provider.connection.error").len(), 1);
    assert_eq!(r.fake.calls("token"), 1, "the link's exchange only: nothing to refresh with");
}

/// Polar's exercises, nights and continuous heart rate (the fixtures of Polar's published
/// AccessLink document) read as FHIR Observations named after polar, kept for the FHIR validator
/// (`make fhir`).
#[tokio::test]
async fn polar_data_reads_as_fhir_observations() {
    let r = real_polar().await;
    linked_data_reads_as_fhir(&r, "polar", &["8867-4", "93832-4"]).await;
}
