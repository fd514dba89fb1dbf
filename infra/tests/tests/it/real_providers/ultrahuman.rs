//! Ultrahuman end to end on the embedded app, made real by `from_vars` with the platform's app and
//! pointed at the local fake: linked through the fake's consent (the user's id from `user_info`),
//! the history pulled one day a call and read back in Wearlab's units, `GET /v2/providers` listing
//! exactly what the adapter fills, pushes refused (Ultrahuman has none) and a poll bringing a new
//! day (the schedule polling it once a day), a refused access token refreshed with its rotated refresh token stored, and the removal
//! revoking the grant at Ultrahuman.

use std::sync::Arc;

use chrono::{Duration, NaiveDate, TimeZone, Utc};
use http::{Method, StatusCode};
use serde_json::json;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::pipeline::pull::{PollJob, poll, poll_all};
use wearlab_domain::ports::ManualClock;
use wearlab_domain::ports::providers::OauthClient;
use wearlab_models::{ConnectionStatus, Resource};
use wearlab_providers::fake::ultrahuman::{FakeUltrahuman, USER_ID};
use wearlab_providers::ultrahuman::{self, Ultrahuman};
use wearlab_providers::{Adapter, AppConfig};

use super::whoop_withings::host_vars;
use super::{Real, connection_of, drain, link_through, linked_data_reads_as_fhir, real_stack, summaries};
use crate::linking::query_param;

const APP_SECRET: &str = "ultrahuman-app-secret";

fn ultrahuman_app() -> OauthClient {
    OauthClient { client_id: "wearlab-ultrahuman".into(), client_secret: Secret::new(APP_SECRET) }
}

/// Ultrahuman made real by its platform app, the clock two days after the fixtures' days.
async fn real_ultrahuman() -> Real<FakeUltrahuman> {
    let fake = FakeUltrahuman::new(ultrahuman_app());
    let mut vars = host_vars("ultrahuman", &fake.start().await);
    vars.insert("WEARLAB_PROVIDER_ULTRAHUMAN_CLIENT_ID".into(), ultrahuman_app().client_id);
    vars.insert("WEARLAB_PROVIDER_ULTRAHUMAN_CLIENT_SECRET".into(), APP_SECRET.into());
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 25, 9, 0, 0).unwrap()));
    real_stack(fake, clock, |sim| wearlab_providers::from_vars(sim, |k| vars.get(k).cloned())).await
}

/// The user's Ultrahuman samples of `resource` on `start..=end` over the API, as
/// `(timestamp, value, unit)`.
async fn series(
    r: &Real<FakeUltrahuman>,
    user: &str,
    resource: &str,
    start: &str,
    end: &str,
) -> Vec<(String, f64, String)> {
    let path = format!("/v2/timeseries/{user}/{resource}/grouped?start_date={start}&end_date={end}");
    let a = r.t.get(&path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let groups = a.body["groups"]["ultrahuman"].as_array().cloned().unwrap_or_default();
    groups
        .iter()
        .flat_map(|g| g["data"].as_array().cloned().unwrap_or_default())
        .map(|s| {
            (
                s["timestamp"].as_str().unwrap().to_owned(),
                s["value"].as_f64().unwrap(),
                s["unit"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn poll_job(r: &Real<FakeUltrahuman>, user: &str) -> PollJob {
    PollJob {
        team_id: r.t.team,
        user_id: UserId::parse(user).unwrap(),
        provider: "ultrahuman".into(),
        since: None,
    }
}

#[tokio::test]
async fn real_ultrahuman_links_pulls_the_history_a_day_a_call_and_reads_it_back_in_wearlabs_units() {
    let r = real_ultrahuman().await;
    let (user, oauth_url) = link_through(&r, "ultrahuman", "ultrahuman-1").await;
    assert!(oauth_url.contains("/authorise?"), "{oauth_url}");
    assert_eq!(query_param(&oauth_url, "client_id").as_deref(), Some("wearlab-ultrahuman"));
    assert_eq!(query_param(&oauth_url, "scope").as_deref(), Some("profile ring_data"));
    let conn = connection_of(&r, &user, "ultrahuman").await;
    assert_eq!(conn.external_user_id, USER_ID, "user_info's user_id");
    assert_eq!(r.fake.calls("user_info"), 1);

    drain(&r).await;
    let sleep = summaries(&r, "sleep", &user).await;
    let nights: Vec<(&str, i64, i64, i64, f64)> = sleep
        .iter()
        .map(|s| {
            (
                s["calendar_date"].as_str().unwrap(),
                s["duration"].as_i64().unwrap(),
                s["deep"].as_i64().unwrap(),
                s["total"].as_i64().unwrap(),
                s["efficiency"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        nights,
        [("2026-11-21", 28800, 5400, 25200, 85.5), ("2026-11-22", 27000, 3240, 25200, 90.5)],
        "seconds in bed, deep and asleep, efficiency in percent"
    );
    assert!(sleep.iter().all(|s| s["type"] == "long_sleep" && s["source"]["provider"] == "ultrahuman"));
    let activity = summaries(&r, "activity", &user).await;
    let steps: Vec<(&str, f64)> = activity
        .iter()
        .map(|a| (a["calendar_date"].as_str().unwrap(), a["steps"].as_f64().unwrap()))
        .collect();
    assert_eq!(steps, [("2026-11-21", 370.0), ("2026-11-22", 380.0)]);

    let hr = series(&r, &user, "heartrate", "2026-11-21", "2026-11-21").await;
    assert_eq!(hr.len(), 5, "{hr:?}");
    assert_eq!(
        hr[4],
        ("2026-11-21T23:55:00Z".to_owned(), 58.0, "bpm".to_owned()),
        "from Ultrahuman's next day"
    );
    let temp = series(&r, &user, "body_temperature", "2026-11-21", "2026-11-22").await;
    assert!(temp.iter().all(|(_, v, unit)| unit == "°C" && (36.0..37.0).contains(v)), "{temp:?}");
    let hrv = series(&r, &user, "hrv", "2026-11-21", "2026-11-22").await;
    assert_eq!(hrv.len(), 4);
    assert!(hrv.iter().all(|(_, _, unit)| unit == "ms"));
    let vo2 = series(&r, &user, "vo2_max", "2026-11-21", "2026-11-22").await;
    assert_eq!(
        vo2,
        [
            ("2026-11-21T00:00:00Z".to_owned(), 41.5, "mL/kg/min".to_owned()),
            ("2026-11-22T00:00:00Z".to_owned(), 42.0, "mL/kg/min".to_owned())
        ]
    );
    let step_samples = series(&r, &user, "steps", "2026-11-21", "2026-11-22").await;
    assert_eq!(step_samples.iter().map(|(_, v, _)| v).sum::<f64>(), 750.0);

    // Every call asked for one day.
    let asked = r.fake.queries("metrics");
    assert!(!asked.is_empty());
    assert!(asked.iter().all(|q| q.len() == 1 && NaiveDate::parse_from_str(&q["date"], "%Y-%m-%d").is_ok()));
    let announced: Vec<String> = r
        .stack
        .bus
        .published()
        .into_iter()
        .map(|e| e.event_type)
        .filter(|t| t.starts_with("historical.data."))
        .collect();
    for resource in ["sleep", "activity", "heartrate", "hrv", "body_temperature", "steps", "vo2_max"] {
        assert!(
            announced.contains(&format!("historical.data.{resource}.created")),
            "{resource}: {announced:?}"
        );
    }
}

/// `GET /v2/providers` lists Ultrahuman as real with exactly the resources its adapter fills: not
/// the catalog's `blood_oxygen`, not `glucose`.
#[tokio::test]
async fn ultrahuman_is_listed_live_with_exactly_what_its_adapter_fills() {
    let r = real_ultrahuman().await;
    let listed = r.t.get("/v2/providers").await;
    assert_eq!(listed.status, StatusCode::OK);
    let entry = listed.body.as_array().unwrap().iter().find(|p| p["slug"] == "ultrahuman").unwrap().clone();
    assert_eq!(entry["availability"], "live");
    let adapter = Ultrahuman::new(AppConfig::from_vars(ultrahuman::SLUG, Ultrahuman::endpoints(), |_| None));
    let mut expected = adapter.resources().to_vec();
    expected.push(Resource::Connection);
    assert_eq!(entry["supported_resources"], json!(expected));
    for absent in ["blood_oxygen", "glucose"] {
        assert!(!entry["supported_resources"].to_string().contains(absent), "{absent}");
    }
}

#[tokio::test]
async fn ultrahuman_pushes_are_refused_and_a_poll_brings_the_new_day() {
    let r = real_ultrahuman().await;
    let (user, _) = link_through(&r, "ultrahuman", "ultrahuman-2").await;
    drain(&r).await;

    let a =
        r.t.send_as(Method::POST, "/v2/provider_webhooks/ultrahuman", None, &[], Some(r#"{"user_id":"x"}"#))
            .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
    assert!(a.body.to_string().contains("sends no push notifications"), "{}", a.body);
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0, "nothing queued");

    // The ring synced this morning's heart rate: the next poll reads it.
    let today = Utc.with_ymd_and_hms(2026, 11, 25, 8, 0, 0).unwrap().timestamp();
    r.fake.add_metric(
        "2026-11-25".parse().unwrap(),
        json!({"type": "hr", "object": {"values": [{"timestamp": today, "value": 61}]}}),
    );
    poll(&r.t.deps, &poll_job(&r, &user)).await.unwrap();
    let hr = series(&r, &user, "heartrate", "2026-11-25", "2026-11-25").await;
    assert_eq!(hr, [("2026-11-25T08:00:00Z".to_owned(), 61.0, "bpm".to_owned())]);
}

#[tokio::test]
async fn the_schedule_polls_an_ultrahuman_connection_once_a_day() {
    let r = real_ultrahuman().await;
    link_through(&r, "ultrahuman", "ultrahuman-daily").await;
    drain(&r).await;

    // Never polled since its history: due at the first scheduled run.
    assert_eq!(poll_all(&r.t.deps, r.t.queue()).await.unwrap(), 1);
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 1);
    // The schedule runs every 15 minutes; Ultrahuman's connection waits a day.
    r.t.clock.advance(Duration::minutes(15));
    assert_eq!(poll_all(&r.t.deps, r.t.queue()).await.unwrap(), 0);
    r.t.clock.advance(Duration::hours(23));
    assert_eq!(poll_all(&r.t.deps, r.t.queue()).await.unwrap(), 0);
    r.t.clock.advance(Duration::minutes(45));
    assert_eq!(poll_all(&r.t.deps, r.t.queue()).await.unwrap(), 1);
}

#[tokio::test]
async fn a_refused_token_is_refreshed_once_and_the_rotated_refresh_token_is_stored() {
    let r = real_ultrahuman().await;
    let (user, _) = link_through(&r, "ultrahuman", "ultrahuman-3").await;
    drain(&r).await;
    let before = connection_of(&r, &user, "ultrahuman").await.credentials(&r.t.deps).unwrap();

    r.fake.expire_access_tokens();
    poll(&r.t.deps, &poll_job(&r, &user)).await.unwrap();
    let refreshes: Vec<_> =
        r.fake.token_forms().into_iter().filter(|f| f["grant_type"] == "refresh_token").collect();
    assert_eq!(refreshes.len(), 1, "refreshed once");
    assert_eq!(refreshes[0]["client_id"], "wearlab-ultrahuman");
    assert_eq!(refreshes[0]["client_secret"], APP_SECRET);
    let after = connection_of(&r, &user, "ultrahuman").await;
    assert_eq!(after.status, ConnectionStatus::Connected);
    let creds = after.credentials(&r.t.deps).unwrap();
    assert_ne!(creds.refresh_token, before.refresh_token, "the rotated refresh token is kept");

    // The next refused token refreshes with the stored one, which Ultrahuman still takes.
    r.fake.expire_access_tokens();
    poll(&r.t.deps, &poll_job(&r, &user)).await.unwrap();
    assert_eq!(connection_of(&r, &user, "ultrahuman").await.status, ConnectionStatus::Connected);
}

#[tokio::test]
async fn removing_an_ultrahuman_connection_revokes_its_grant() {
    let r = real_ultrahuman().await;
    let (user, _) = link_through(&r, "ultrahuman", "ultrahuman-4").await;
    drain(&r).await;
    let creds = connection_of(&r, &user, "ultrahuman").await.credentials(&r.t.deps).unwrap();
    let a = r.t.delete(&format!("/v2/user/{user}/ultrahuman")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let revoked = r.fake.revoke_forms();
    assert_eq!(revoked.len(), 1);
    assert_eq!(Some(revoked[0]["token"].as_str()), creds.refresh_token.as_ref().map(Secret::expose));
    assert_eq!(revoked[0]["client_id"], "wearlab-ultrahuman");
    let key = wearlab_domain::keys::linking::connection(UserId::parse(&user).unwrap(), "ultrahuman");
    assert!(r.t.deps.table.get(&key).await.unwrap().is_none(), "the credentials are gone");
}

/// Ultrahuman's daily metrics (the fixtures of its published partner API reference) read as FHIR
/// Observations named after ultrahuman, kept for the FHIR validator (`make fhir`).
#[tokio::test]
async fn ultrahuman_data_reads_as_fhir_observations() {
    let r = real_ultrahuman().await;
    linked_data_reads_as_fhir(&r, "ultrahuman", &["8867-4", "93832-4"]).await;
}
