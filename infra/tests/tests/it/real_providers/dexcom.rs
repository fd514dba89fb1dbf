//! Dexcom v3 end to end on the embedded app, made real by `from_vars` as a deployment does: one
//! variable (`WEARLAB_PROVIDER_DEXCOM_V3_API_URL`) points the consent page, token endpoint and
//! data at the local fake, as it chooses Dexcom's sandbox or a region in production. Linked
//! through the team's own app, the glucose history pulled and read back in Dexcom's unit, a
//! later reading brought by a poll (Dexcom has no push), and the removal revoking nothing at
//! Dexcom (it has no revoke endpoint).

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::pipeline::pull::{PollJob, poll};
use wearlab_domain::ports::ManualClock;
use wearlab_domain::ports::providers::OauthClient;
use wearlab_models::ConnectionStatus;
use wearlab_providers::fake::dexcom::{FakeDexcom, USER_ID};

use super::{Real, connection_of, drain, link_through, real_stack};

const TEAM_DEXCOM_SECRET: &str = "team-dexcom-secret";

fn team_dexcom_app() -> OauthClient {
    OauthClient { client_id: "team-dexcom-app".into(), client_secret: Secret::new(TEAM_DEXCOM_SECRET) }
}

/// Dexcom made real by `WEARLAB_PROVIDER_DEXCOM_V3_ENABLED` (it is `team_oauth`: no platform app)
/// on the fake's host, and the team's own Dexcom app registered through the API. The clock is
/// two days after the fixtures' readings.
async fn real_dexcom() -> (Real<FakeDexcom>, String) {
    let fake = FakeDexcom::new(team_dexcom_app());
    let host = fake.start().await.api;
    let vars = [
        ("WEARLAB_PROVIDER_DEXCOM_V3_API_URL", host.clone()),
        ("WEARLAB_PROVIDER_DEXCOM_V3_ENABLED", "true".to_owned()),
    ];
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 25, 9, 0, 0).unwrap()));
    let r = real_stack(fake, clock, |sim| {
        wearlab_providers::from_vars(sim, |k| {
            vars.iter().find(|(name, _)| *name == k).map(|(_, v)| v.clone())
        })
    })
    .await;
    let app = json!({"client_id": "team-dexcom-app", "client_secret": TEAM_DEXCOM_SECRET}).to_string();
    let a = r.t.send(Method::PUT, "/v2/team/oauth_app/dexcom_v3", Some(&r.t.key), Some(&app)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    (r, host)
}

/// The user's Dexcom glucose samples of `start..=end` over the API.
async fn glucose(r: &Real<FakeDexcom>, user: &str, start: &str, end: &str) -> Vec<Value> {
    let a =
        r.t.get(&format!("/v2/timeseries/{user}/glucose/grouped?start_date={start}&end_date={end}")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["groups"]["dexcom_v3"]
        .as_array()
        .map(|groups| groups.iter().flat_map(|g| g["data"].as_array().cloned().unwrap_or_default()).collect())
        .unwrap_or_default()
}

/// A poll of the user's Dexcom connection, as the scheduler queues one.
async fn poll_user(r: &Real<FakeDexcom>, user: &str) {
    let job = PollJob {
        team_id: r.t.team,
        user_id: UserId::parse(user).unwrap(),
        provider: "dexcom_v3".into(),
        since: None,
    };
    poll(&r.t.deps, &job).await.unwrap();
}

/// A reading Dexcom received after the history was pulled.
fn later_egv(id: &str, at: &str, value: f64, unit: &str) -> Value {
    json!({"recordId": id, "systemTime": at, "displayTime": at, "value": value, "unit": unit,
        "status": "ok", "trend": "flat"})
}

#[tokio::test]
async fn real_dexcom_links_on_the_configured_host_and_pulls_glucose_in_its_unit() {
    let (r, host) = real_dexcom().await;
    let (user, oauth_url) = link_through(&r, "dexcom_v3", "dexcom-1").await;
    assert!(oauth_url.starts_with(&format!("{host}/v2/oauth2/login?")), "{oauth_url}");
    assert_eq!(super::query_param(&oauth_url, "client_id").as_deref(), Some("team-dexcom-app"));
    assert_eq!(super::query_param(&oauth_url, "scope").as_deref(), Some("offline_access"));
    let conn = connection_of(&r, &user, "dexcom_v3").await;
    assert_eq!(conn.external_user_id, USER_ID, "dataRange's userId");
    assert_eq!(conn.team_app_client_id.as_deref(), Some("team-dexcom-app"));

    drain(&r).await;
    let samples = glucose(&r, &user, "2026-11-21", "2026-11-23").await;
    let read: Vec<(&str, f64, &str)> = samples
        .iter()
        .map(|s| {
            (s["timestamp"].as_str().unwrap(), s["value"].as_f64().unwrap(), s["unit"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        read,
        [
            ("2026-11-21T07:55:00Z", 138.0, "mg/dL"),
            ("2026-11-21T08:00:00Z", 135.0, "unknown"),
            ("2026-11-21T08:05:00Z", 142.0, "mg/dL"),
            ("2026-11-22T12:00:00Z", 96.0, "mg/dL"),
            ("2026-11-22T12:05:00Z", 101.0, "mg/dL"),
            ("2026-11-23T06:30:00Z", 65.0, "mg/dL"),
            ("2026-11-23T06:35:00Z", 70.0, "mg/dL"),
        ],
        "Dexcom's readings in Dexcom's unit; the one of unit `unknown` kept with its unit stated"
    );
    assert!(
        r.stack.bus.published().iter().any(|e| e.event_type == "historical.data.glucose.created"),
        "the history is announced"
    );
    // The history's long chunks were cut to the user's data (dataRange) before asking for
    // readings, a week at most per call.
    assert!(r.fake.calls("dataRange") >= 2, "once for the user id, then for the history");
    let days = |q: &std::collections::HashMap<String, String>, k: &str| {
        chrono::NaiveDateTime::parse_from_str(&q[k], "%Y-%m-%dT%H:%M:%S").unwrap()
    };
    assert!(
        r.fake
            .queries("egvs")
            .iter()
            .all(|q| days(q, "endDate") - days(q, "startDate") <= chrono::Duration::days(7))
    );
}

#[tokio::test]
async fn dexcom_pushes_are_refused_and_a_poll_brings_a_new_reading() {
    let (r, _) = real_dexcom().await;
    let (user, _) = link_through(&r, "dexcom_v3", "dexcom-2").await;
    drain(&r).await;

    // Dexcom has no webhooks: whatever arrives is refused as such, and nothing is queued.
    let a =
        r.t.send_as(Method::POST, "/v2/provider_webhooks/dexcom_v3", None, &[], Some(r#"{"userId":"x"}"#))
            .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
    assert!(a.body.to_string().contains("sends no push notifications"), "{}", a.body);
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0);

    // A reading uploaded later is fetched by the next poll.
    r.fake.add_egv(later_egv("new-1", "2026-11-25T08:55:00", 112.0, "mg/dL"));
    poll_user(&r, &user).await;
    let today = glucose(&r, &user, "2026-11-25", "2026-11-25").await;
    assert_eq!(today.len(), 1, "{today:?}");
    assert_eq!((today[0]["value"].as_f64(), today[0]["unit"].as_str()), (Some(112.0), Some("mg/dL")));
    assert_eq!(connection_of(&r, &user, "dexcom_v3").await.status, ConnectionStatus::Connected);
}

#[tokio::test]
async fn removing_a_dexcom_connection_calls_nothing_at_dexcom() {
    let (r, _) = real_dexcom().await;
    let (user, _) = link_through(&r, "dexcom_v3", "dexcom-3").await;
    drain(&r).await;
    let before = r.fake.total_calls();
    let a = r.t.delete(&format!("/v2/user/{user}/dexcom_v3")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(r.fake.total_calls(), before, "Dexcom has no revoke endpoint");
    let key = wearlab_domain::keys::linking::connection(UserId::parse(&user).unwrap(), "dexcom_v3");
    assert!(r.t.deps.table.get(&key).await.unwrap().is_none(), "the credentials are gone");
}

#[tokio::test]
async fn a_refused_dexcom_token_is_refreshed_with_the_teams_app_and_the_poll_goes_on() {
    let (r, _) = real_dexcom().await;
    let (user, _) = link_through(&r, "dexcom_v3", "dexcom-4").await;
    drain(&r).await;
    // Dexcom's access tokens last two hours; it refuses this one early.
    r.fake.expire_access_tokens();
    r.fake.add_egv(later_egv("new-2", "2026-11-25T08:50:00", 6.1, "mmol/L"));
    poll_user(&r, &user).await;
    let refresh =
        r.fake.token_forms().into_iter().filter(|f| f["grant_type"] == "refresh_token").collect::<Vec<_>>();
    assert_eq!(refresh.len(), 1);
    assert_eq!(refresh[0]["client_id"], "team-dexcom-app", "the app that issued the credentials");
    assert_eq!(refresh[0]["client_secret"], TEAM_DEXCOM_SECRET);
    assert_eq!(connection_of(&r, &user, "dexcom_v3").await.status, ConnectionStatus::Connected);
    let today = glucose(&r, &user, "2026-11-25", "2026-11-25").await;
    assert_eq!(today.len(), 1, "{today:?}");
    assert_eq!((today[0]["value"].as_f64(), today[0]["unit"].as_str()), (Some(6.1 * 18.0182), Some("mg/dL")));
}

/// Real Dexcom's readings (its published API's examples, from the fake) read as FHIR glucose
/// Observations in mg/dL, each kept for the FHIR validator (`make fhir`).
#[tokio::test]
async fn dexcom_glucose_reads_as_fhir_observations() {
    let (r, _) = real_dexcom().await;
    let (user, _) = link_through(&r, "dexcom_v3", "dexcom-fhir").await;
    drain(&r).await;
    let path =
        format!("/fhir/Observation?subject=Patient/{user}&code=2339-0&date=ge2026-11-21&date=le2026-11-23");
    let a = r.t.get(&path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    crate::fhir::keep(&a.body);
    let entries = a.body["entry"].as_array().unwrap();
    assert!(!entries.is_empty(), "{}", a.body);
    for e in entries {
        let o = &e["resource"];
        assert_eq!(o["valueQuantity"]["code"], "mg/dL", "{o}");
        assert_eq!(o["meta"]["source"], "urn:wearlab:provider:dexcom_v3", "{o}");
    }
}
