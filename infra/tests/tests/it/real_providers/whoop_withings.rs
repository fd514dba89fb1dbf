//! WHOOP (linked through the team's own OAuth app) and Withings (the platform's app) end to end
//! on the embedded app, each made real by `from_vars` as a deployment does and pointed at its
//! local fake: linked with a link token through the fake's consent, the history pulled and read
//! back, and a push bringing a new day as a `daily.data.*` event. A WHOOP push is signed with the
//! secret of the team's app, which the push use case finds from the user the push names.
//!
//! The clock starts on 2026-11-22, inside the fixtures' days, so the history stops there and the
//! fixtures' 2026-11-23 records are new when the push's poll runs two days later.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::linking::oauth::{self, CallbackParams};
use wearlab_domain::ports::ManualClock;
use wearlab_domain::ports::providers::OauthClient;
use wearlab_models::ConnectionStatus;
use wearlab_providers::Endpoints;
use wearlab_providers::fake::whoop::{FakeWhoop, WEBHOOK_SLEEP_UPDATED};
use wearlab_providers::fake::withings::{Failure, FakeWithings};

use super::{
    Real, connection_of, consent_through, drain, fhir_observations, link_through, real_stack,
    resting_heart_rates, summaries,
};

const TEAM_WHOOP_SECRET: &str = "team-whoop-secret";

fn team_whoop_app() -> OauthClient {
    OauthClient { client_id: "team-whoop-app".into(), client_secret: Secret::new(TEAM_WHOOP_SECRET) }
}

fn withings_app() -> OauthClient {
    OauthClient { client_id: "wearlab-withings".into(), client_secret: Secret::new("withings-app-secret") }
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap()))
}

/// The variables pointing `slug` at a fake's `endpoints`.
pub(super) fn host_vars(slug: &str, endpoints: &Endpoints) -> HashMap<String, String> {
    let prefix = format!("WEARLAB_PROVIDER_{}_", slug.to_ascii_uppercase());
    HashMap::from([
        (format!("{prefix}AUTHORIZE_URL"), endpoints.authorize.clone()),
        (format!("{prefix}TOKEN_URL"), endpoints.token.clone()),
        (format!("{prefix}API_URL"), endpoints.api.clone()),
    ])
}

/// WHOOP made real by `WEARLAB_PROVIDER_WHOOP_V2_ENABLED` (no platform app), and the team's own
/// WHOOP app registered through the API.
async fn real_whoop() -> Real<FakeWhoop> {
    let fake = FakeWhoop::new(team_whoop_app());
    let mut vars = host_vars("whoop_v2", &fake.start().await);
    vars.insert("WEARLAB_PROVIDER_WHOOP_V2_ENABLED".into(), "true".into());
    let r =
        real_stack(fake, clock(), |sim| wearlab_providers::from_vars(sim, |k| vars.get(k).cloned())).await;
    let app = json!({"client_id": "team-whoop-app", "client_secret": TEAM_WHOOP_SECRET}).to_string();
    let a = r.t.send(Method::PUT, "/v2/team/oauth_app/whoop_v2", Some(&r.t.key), Some(&app)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    r
}

/// Withings made real by its platform app.
async fn real_withings() -> Real<FakeWithings> {
    let fake = FakeWithings::new(withings_app());
    let mut vars = host_vars("withings", &fake.start().await);
    vars.insert("WEARLAB_PROVIDER_WITHINGS_CLIENT_ID".into(), withings_app().client_id);
    vars.insert("WEARLAB_PROVIDER_WITHINGS_CLIENT_SECRET".into(), "withings-app-secret".into());
    real_stack(fake, clock(), |sim| wearlab_providers::from_vars(sim, |k| vars.get(k).cloned())).await
}

fn daily<F>(r: &Real<F>, event_type: &str) -> Vec<wearlab_domain::ports::EventEnvelope> {
    r.stack.bus.published().into_iter().filter(|e| e.event_type == event_type).collect()
}

#[tokio::test]
async fn real_whoop_links_through_the_teams_app_and_pulls_history() {
    let r = real_whoop().await;
    let (user, oauth_url) = link_through(&r, "whoop_v2", "whoop-1").await;
    assert_eq!(super::query_param(&oauth_url, "client_id").as_deref(), Some("team-whoop-app"));
    let conn = connection_of(&r, &user, "whoop_v2").await;
    assert_eq!(conn.external_user_id, wearlab_providers::fake::whoop::USER_ID.to_string());
    assert_eq!(conn.team_app_client_id.as_deref(), Some("team-whoop-app"));

    drain(&r).await;
    let sleep = summaries(&r, "sleep", &user).await;
    assert!(!sleep.is_empty(), "the history's sleeps");
    assert!(sleep.iter().all(|s| s["source"]["provider"] == "whoop_v2"), "{sleep:?}");
    assert!(sleep.iter().all(|s| s["calendar_date"].as_str() <= Some("2026-11-22")), "{sleep:?}");
    // The 21st holds the night and WHOOP's nap, each its own sleep with its type.
    let the_21st: Vec<(&str, &str)> = sleep
        .iter()
        .filter(|s| s["calendar_date"] == "2026-11-21")
        .map(|s| (s["type"].as_str().unwrap(), s["bedtime_start"].as_str().unwrap()))
        .collect();
    assert_eq!(
        the_21st,
        [("long_sleep", "2026-11-20T23:18:00Z"), ("acknowledged_nap", "2026-11-21T13:00:00Z")],
        "{sleep:?}"
    );
    assert!(!summaries(&r, "workouts", &user).await.is_empty());
    assert!(!daily(&r, "historical.data.sleep.created").is_empty());
}

#[tokio::test]
async fn a_whoop_push_signed_with_the_teams_secret_polls_and_announces_the_new_day() {
    let r = real_whoop().await;
    let (user, _) = link_through(&r, "whoop_v2", "whoop-2").await;
    drain(&r).await;
    r.t.clock.advance(chrono::Duration::days(2));

    let push = |secret: &'static str| {
        let request = wearlab_providers::fake::whoop::signed_push(
            secret,
            Utc::now().timestamp_millis(),
            WEBHOOK_SLEEP_UPDATED.as_bytes(),
        );
        let headers: Vec<(String, String)> = request.headers;
        let r = &r;
        async move {
            let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            r.t.send_as(
                Method::POST,
                "/v2/provider_webhooks/whoop_v2",
                None,
                &headers,
                Some(WEBHOOK_SLEEP_UPDATED),
            )
            .await
        }
    };
    // No push yet: every scheduled run polls the connection.
    assert_eq!(wearlab_domain::pipeline::pull::poll_all(&r.t.deps, r.t.queue()).await.unwrap(), 1);
    drain(&r).await;

    // Signed with another app's secret: refused, nothing queued.
    let a = push("someone-elses-secret").await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{}", a.body);
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0);

    let a = push(TEAM_WHOOP_SECRET).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    drain(&r).await;
    // The poll after the push fetched the days since the last poll: the workout of 2026-11-23
    // is new (that night's sleep is not scored yet, so it is not kept).
    let created = daily(&r, "daily.data.workouts.created");
    assert_eq!(created.len(), 1, "the new workout, and only it");
    assert_eq!(created[0].user_id.to_string(), user);
    assert!(created[0].data.to_string().contains("2026-11-23"), "{}", created[0].data);
    let daily_events =
        r.stack.bus.published().into_iter().filter(|e| e.event_type.starts_with("daily.")).count();
    assert_eq!(daily_events, 1, "nothing already pulled is announced again");

    // Its pushes arrive: the schedule polls the connection once a day as a safety net, not at
    // every 15-minute run.
    let scheduled = || wearlab_domain::pipeline::pull::poll_all(&r.t.deps, r.t.queue());
    r.t.clock.advance(chrono::Duration::minutes(15));
    assert_eq!(scheduled().await.unwrap(), 0);
    r.t.clock.advance(chrono::Duration::hours(24));
    assert_eq!(scheduled().await.unwrap(), 1);
}

#[tokio::test]
async fn real_withings_links_pulls_history_and_a_notification_brings_the_new_day() {
    let r = real_withings().await;
    let (user, oauth_url) = link_through(&r, "withings", "withings-1").await;
    assert_eq!(super::query_param(&oauth_url, "client_id").as_deref(), Some("wearlab-withings"));
    let conn = connection_of(&r, &user, "withings").await;
    assert_eq!(conn.external_user_id, wearlab_providers::fake::withings::USER_ID.to_string());
    assert!(r.fake.subscriptions().is_empty(), "no public URL here: Withings would refuse the callback");

    drain(&r).await;
    let activity = summaries(&r, "activity", &user).await;
    assert_eq!(activity.len(), 2, "the fixtures' days up to today: {activity:?}");
    assert!(activity.iter().all(|a| a["source"]["provider"] == "withings"), "{activity:?}");
    assert!(!summaries(&r, "sleep", &user).await.is_empty());
    assert!(!daily(&r, "historical.data.activity.created").is_empty());

    // Withings's reachability check, then its notification of new activity on 2026-11-23.
    r.t.clock.advance(chrono::Duration::days(2));
    let a = r.t.send(Method::HEAD, "/v2/provider_webhooks/withings", None, None).await;
    assert_eq!(a.status, StatusCode::OK);
    let start = Utc.with_ymd_and_hms(2026, 11, 23, 0, 0, 0).unwrap().timestamp();
    let body =
        format!("userid={}&appli=16&startdate={start}&enddate={}", conn.external_user_id, start + 86_399);
    let a = r.t.send_as(Method::POST, "/v2/provider_webhooks/withings", None, &[], Some(&body)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    drain(&r).await;
    let created = daily(&r, "daily.data.activity.created");
    assert_eq!(created.len(), 1, "the new day, and only it: {created:?}");
    assert_eq!(created[0].user_id.to_string(), user);
    assert_eq!(created[0].data["calendar_date"], "2026-11-23");
}

/// Withings's appli 46 `unlink`: a notice that is not signed, so a forged one (the tokens still
/// work) changes nothing; after a real unlink Withings refuses the tokens, and the poll the
/// notice starts ends the connection.
#[tokio::test]
async fn a_withings_unlink_notice_ends_the_connection_once_withings_refuses_its_tokens() {
    let r = real_withings().await;
    let (user, _) = link_through(&r, "withings", "withings-unlink").await;
    drain(&r).await;
    let conn = connection_of(&r, &user, "withings").await;
    let body = format!("userid={}&appli=46&action=unlink", conn.external_user_id);
    let notify = || r.t.send_as(Method::POST, "/v2/provider_webhooks/withings", None, &[], Some(&body));

    // The history is pulled within the pull throttles' windows, then polled.
    r.t.clock.advance(chrono::Duration::hours(1));
    drain(&r).await;
    let a = notify().await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    drain(&r).await;
    assert_eq!(connection_of(&r, &user, "withings").await.status, ConnectionStatus::Connected, "forged");

    // The user unlinked at Withings: its tokens are refused (status 401), the refresh too.
    r.fake.set_failure(Some(Failure::Status(401)));
    r.t.clock.advance(chrono::Duration::minutes(15));
    let a = notify().await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    drain(&r).await;
    assert_ne!(connection_of(&r, &user, "withings").await.status, ConnectionStatus::Connected);
}

/// A Withings link whose callback runs as link-api runs it with `WEARLAB_PUBLIC_URL` set to
/// `public_url`: the user, and where the browser is sent on.
async fn link_on_public_deployment(
    r: &Real<FakeWithings>,
    client_user_id: &str,
    public_url: &str,
) -> (String, String) {
    let (user, _, back) = consent_through(r, "withings", client_user_id).await;
    let params = CallbackParams {
        code: super::query_param(&back, "code"),
        state: super::query_param(&back, "state"),
        error: None,
        scope: None,
    };
    let out = oauth::callback(&r.t.deps, "withings", params, Some(public_url)).await.unwrap();
    (user, out.redirect_to.unwrap())
}

#[tokio::test]
async fn a_withings_link_subscribes_the_users_notifications_on_a_public_deployment() {
    let r = real_withings().await;
    let (user, done) = link_on_public_deployment(&r, "withings-2", "https://api.example/").await;
    assert!(done.contains("state=success"), "{done}");
    let subs = r.fake.subscriptions();
    let applis: Vec<&str> = subs.iter().map(|(_, appli)| appli.as_str()).collect();
    assert_eq!(applis, ["1", "2", "4", "16", "44", "46"]);
    assert!(
        subs.iter().all(|(url, _)| url == "https://api.example/v2/provider_webhooks/withings"),
        "{subs:?}"
    );
    assert_eq!(connection_of(&r, &user, "withings").await.status, ConnectionStatus::Connected);
}

#[tokio::test]
async fn a_failed_withings_subscription_leaves_the_link_standing() {
    let r = real_withings().await;
    // Withings refuses the subscription (its check of the callback URL failed, say).
    r.fake.refuse_subscriptions(2554);
    let (user, done) = link_on_public_deployment(&r, "withings-3", "https://api.example").await;
    assert!(done.contains("state=success"), "best effort: the link stands: {done}");
    assert_eq!(r.fake.calls("subscribe"), 1, "asked, refused, not retried in the callback");
    assert!(r.fake.subscriptions().is_empty());
    assert_eq!(connection_of(&r, &user, "withings").await.status, ConnectionStatus::Connected);
}

/// Two teams holding one WHOOP client id (apps registered before a client id was one team's;
/// the claim is removed here to make such a pair), each with a connection of the same WHOOP user:
/// a push signed with one team's secret polls that team's connection alone, and the other
/// team's genuine push is still accepted.
#[tokio::test]
async fn a_whoop_push_polls_only_the_team_whose_secret_signed_it() {
    use wearlab_domain::common::ids::UserId;
    use wearlab_domain::keys;
    use wearlab_domain::linking::connections::{self, NewConnection};
    use wearlab_domain::pipeline::push::{self, PushReply};
    use wearlab_domain::ports::Condition;

    let r = real_whoop().await;
    link_through(&r, "whoop_v2", "whoop-victim").await;
    drain(&r).await;

    let deps = &r.t.deps;
    let claim = keys::linking::oauth_client_claim("whoop_v2", "team-whoop-app");
    deps.table.delete(&claim, Condition::Exists).await.unwrap();
    let other = wearlab_domain::teams::create_team(deps, "Other team").await.unwrap().team_id;
    let other_key = wearlab_domain::teams::issue_key(deps, other, "test").await.unwrap().secret;
    let app = json!({"client_id": "team-whoop-app", "client_secret": "other-teams-secret"}).to_string();
    let a = r.t.send(Method::PUT, "/v2/team/oauth_app/whoop_v2", Some(&other_key), Some(&app)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let new_user =
        json!({"client_user_id": "whoop-other", "fallback_time_zone": "Europe/Berlin"}).to_string();
    let a = r.t.send(Method::POST, "/v2/user", Some(&other_key), Some(&new_user)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let other_user = UserId::parse(a.body["user_id"].as_str().unwrap()).unwrap();
    let new = NewConnection {
        provider: wearlab_domain::common::provider_catalog::catalog().get("whoop_v2").unwrap(),
        account: r.fake.account(),
        demo: false,
        token: None,
        extra_ops: vec![],
        team_app_client_id: Some("team-whoop-app".into()),
        import_op: None,
    };
    connections::commit(deps, other, other_user, new).await.unwrap();
    drain(&r).await;
    r.t.clock.advance(chrono::Duration::hours(1));

    for secret in ["other-teams-secret", TEAM_WHOOP_SECRET] {
        let request = wearlab_providers::fake::whoop::signed_push(
            secret,
            Utc::now().timestamp_millis(),
            WEBHOOK_SLEEP_UPDATED.as_bytes(),
        );
        let reply = push::receive(deps, r.t.queue(), "whoop_v2", &request).await;
        assert_eq!(
            reply.unwrap(),
            PushReply::Accepted { polls: 1 },
            "signed with {secret}: its team's connection"
        );
    }
}

/// Real Withings's and WHOOP's pulled timeseries (the fixtures of their published documents,
/// from the fakes; the fakes serve few) read as FHIR Observations named after each, and the
/// Bundles are kept for the validator whatever they hold.
#[tokio::test]
async fn withings_and_whoop_data_read_as_fhir_observations() {
    let withings = real_withings().await;
    let (user, _) = link_through(&withings, "withings", "withings-fhir").await;
    let found = fhir_observations(&withings, &user, "withings").await;
    assert!(!found.is_empty(), "Withings's measures and activity");
    let whoop = real_whoop().await;
    let (user, _) = link_through(&whoop, "whoop_v2", "whoop-fhir").await;
    let found = fhir_observations(&whoop, &user, "whoop_v2").await;
    assert!(!found.is_empty(), "WHOOP's recoveries and sleeps");
    // WHOOP's sleeps (the 21st's night and nap among them), each an Observation with its stages.
    let path =
        format!("/fhir/Observation?subject=Patient/{user}&code=93832-4&date=ge2026-11-18&date=le2026-11-24");
    let a = whoop.t.get(&path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    crate::fhir::keep(&a.body);
    let found: Vec<Value> =
        a.body["entry"].as_array().unwrap().iter().map(|e| e["resource"].clone()).collect();
    crate::fhir::assert_sleep_observations(&found, &summaries(&whoop, "sleep", &user).await, "whoop_v2");
    let starts: Vec<&str> = found.iter().map(|o| o["effectivePeriod"]["start"].as_str().unwrap()).collect();
    assert!(starts.contains(&"2026-11-21T13:00:00Z"), "the nap: {starts:?}");
}

/// WHOOP's recoveries' resting heart rates (the fixture's two scored ones) are the activity
/// summary's `heart_rate.resting_bpm` of the day their sleep ends on, read back over the data
/// API and as FHIR resting heart rate Observations named after WHOOP (kept for the validator).
#[tokio::test]
async fn whoop_resting_heart_rate_is_the_days_activity_and_a_fhir_observation() {
    let r = real_whoop().await;
    let (days, observed) = resting_heart_rates(&r, "whoop_v2", "whoop-resting").await;
    assert_eq!(
        days,
        [("2026-11-21".to_owned(), json!(51.2)), ("2026-11-22".to_owned(), json!(64.0))],
        "each recovery on the local day its sleep ends on"
    );
    assert_eq!(observed, [("2026-11-21".to_owned(), 51.2), ("2026-11-22".to_owned(), 64.0)]);
}

/// Withings's height measure (type 4, the fixture's group of 2026-01-05) is the body summary's
/// `height` of that day, read back over the data API and as a FHIR body height Observation in
/// centimetres; the profile keeps the last height, undated.
#[tokio::test]
async fn a_withings_height_is_the_days_body_and_a_fhir_observation() {
    let r = real_withings().await;
    // The fixture's height is from January: a year of history reaches it.
    let prefs = json!({"default_history_days": 90, "history_days": {"withings": 365}}).to_string();
    let a = r.t.send(Method::PUT, "/v2/team/data_pull_preferences", Some(&r.t.key), Some(&prefs)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let (user, _) = link_through(&r, "withings", "withings-height").await;
    drain(&r).await;
    let a = r.t.get(&format!("/v2/summary/body/{user}?start_date=2026-01-01&end_date=2026-01-31")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let body = a.body["body"].as_array().unwrap();
    assert_eq!(body.len(), 1, "{}", a.body);
    assert_eq!(body[0]["calendar_date"], "2026-01-05");
    assert_eq!(body[0]["height"], 1.78);
    assert_eq!(body[0]["weight"], Value::Null);
    // Days weighed without a height have none.
    assert!(summaries(&r, "body", &user).await.iter().all(|b| b["height"].is_null()));
    let profile = r.t.get(&format!("/v2/summary/profile/{user}")).await;
    assert_eq!(profile.body["height"], 1.78, "{}", profile.body);

    let path =
        format!("/fhir/Observation?subject=Patient/{user}&code=8302-2&date=ge2025-12-01&date=le2026-11-30");
    let a = r.t.get(&path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    crate::fhir::keep(&a.body);
    let found = a.body["entry"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{}", a.body);
    let o = &found[0]["resource"];
    assert_eq!(o["meta"]["profile"][0], "http://hl7.org/fhir/StructureDefinition/bodyheight");
    assert_eq!(o["meta"]["source"], "urn:wearlab:provider:withings");
    assert_eq!(o["effectiveDateTime"], "2026-01-05");
    assert_eq!(
        o["valueQuantity"],
        json!({"value": 178.0, "unit": "cm", "system": "http://unitsofmeasure.org", "code": "cm"})
    );
}
