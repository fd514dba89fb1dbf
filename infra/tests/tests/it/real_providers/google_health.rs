//! Google Health end to end on the embedded app, made real by `from_vars` with the platform's
//! OAuth client and the subscriber secret, pointed at the local fake: linked through Google's
//! consent with offline access, the history pulled and read back as summaries and timeseries,
//! the subscriber verification answered, a notification polling the new day, and a removal that
//! revokes the grant at Google's revocation endpoint.
//!
//! The clock starts on 2026-11-22, inside the fixtures' days.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::ManualClock;
use wearlab_domain::ports::providers::OauthClient;
use wearlab_providers::fake::google_health::{self as fake, GoogleHealthFake};
use wearlab_providers::google_health::GoogleHealth;
use wearlab_providers::{AppConfig, RealProviders, Route};

use super::{
    Real, TIGHT, Tight, connection_of, drain, link_through, linked_data_reads_as_fhir, real_stack,
    resting_heart_rates, summaries,
};

const PUSH_SECRET: &str = "Bearer gh-subscriber-secret";

fn app() -> OauthClient {
    OauthClient {
        client_id: "wearlab.apps.googleusercontent.com".into(),
        client_secret: Secret::new("gh-secret"),
    }
}

/// Google Health made real by its platform client and push secret.
async fn real_google_health() -> Real<GoogleHealthFake> {
    let fake = GoogleHealthFake::start(&app()).await;
    let e = fake.endpoints();
    let vars = HashMap::from([
        ("WEARLAB_PROVIDER_GOOGLE_HEALTH_AUTHORIZE_URL".to_owned(), e.authorize),
        ("WEARLAB_PROVIDER_GOOGLE_HEALTH_TOKEN_URL".to_owned(), e.token),
        ("WEARLAB_PROVIDER_GOOGLE_HEALTH_API_URL".to_owned(), e.api),
        ("WEARLAB_PROVIDER_GOOGLE_HEALTH_CLIENT_ID".to_owned(), app().client_id),
        ("WEARLAB_PROVIDER_GOOGLE_HEALTH_CLIENT_SECRET".to_owned(), "gh-secret".to_owned()),
        ("WEARLAB_PROVIDER_GOOGLE_HEALTH_PUSH_TOKEN".to_owned(), PUSH_SECRET.to_owned()),
        ("WEARLAB_PROVIDER_GOOGLE_HEALTH_REVOKE_URL".to_owned(), fake.urls().revoke),
        ("WEARLAB_PROVIDER_GOOGLE_HEALTH_SIGNING_KEYS_URL".to_owned(), fake.urls().signing_keys),
    ]);
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap()));
    real_stack(fake, clock, |sim| wearlab_providers::from_vars(sim, |k| vars.get(k).cloned())).await
}

/// A POST to the push endpoint; `signed`: with the fake's `X-HEALTHAPI-SIGNATURE` of `body`.
async fn webhook_as(
    r: &Real<GoogleHealthFake>,
    authorization: Option<&str>,
    signed: bool,
    body: &str,
) -> crate::helpers::Answer {
    let signature = r.fake.signature(body);
    let mut headers = vec![("content-type", "application/json")];
    if let Some(a) = authorization {
        headers.push(("authorization", a));
    }
    if signed {
        headers.push(("x-healthapi-signature", signature.as_str()));
    }
    r.t.send_as(Method::POST, "/v2/provider_webhooks/google_health", None, &headers, Some(body)).await
}

/// A POST signed as Google signs it.
async fn webhook(
    r: &Real<GoogleHealthFake>,
    authorization: Option<&str>,
    body: &str,
) -> crate::helpers::Answer {
    webhook_as(r, authorization, true, body).await
}

async fn samples(r: &Real<GoogleHealthFake>, user: &str, resource: &str, day: &str) -> Vec<Value> {
    let path = format!("/v2/timeseries/{user}/{resource}/grouped?start_date={day}&end_date={day}");
    let a = r.t.get(&path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["groups"]["google_health"][0]["data"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn real_google_health_links_offline_pulls_history_and_reads_it_back() {
    let r = real_google_health().await;
    let (user, oauth_url) = link_through(&r, "google_health", "gh-1").await;
    assert!(oauth_url.starts_with(&format!("{}/o/oauth2/v2/auth?", r.fake.base_url())), "{oauth_url}");
    let q = &r.fake.authorize_queries()[0];
    assert_eq!((q["access_type"].as_str(), q["prompt"].as_str()), ("offline", "consent"));
    assert_eq!(q["client_id"], app().client_id);
    let conn = connection_of(&r, &user, "google_health").await;
    assert_eq!(conn.external_user_id, fake::USER_ID);
    assert!(conn.credentials(&r.t.deps).unwrap().refresh_token.is_some());

    drain(&r).await;
    let sleep = summaries(&r, "sleep", &user).await;
    let sleeps: Vec<(&str, &str)> =
        sleep.iter().map(|s| (s["calendar_date"].as_str().unwrap(), s["type"].as_str().unwrap())).collect();
    assert_eq!(
        sleeps,
        [("2026-11-21", "long_sleep"), ("2026-11-21", "acknowledged_nap"), ("2026-11-22", "long_sleep")],
        "the nap of the 21st is its own sleep: {sleep:?}"
    );
    assert!(sleep.iter().all(|s| s["source"]["provider"] == "google_health"));
    assert_eq!(sleep[0]["deep"], 5400);
    let workouts = summaries(&r, "workouts", &user).await;
    assert_eq!(workouts.len(), 2, "{workouts:?}");
    let run = workouts.iter().find(|w| w["sport"] == "running").unwrap();
    assert_eq!((run["distance"].as_f64(), run["calories"].as_f64()), (Some(7420.0), Some(412.5)));
    let body = summaries(&r, "body", &user).await;
    assert_eq!(body[0]["calendar_date"], "2026-11-21");
    assert_eq!((body[0]["weight"].as_f64(), body[0]["fat"].as_f64()), (Some(72.3), Some(21.4)));

    let steps = samples(&r, &user, "steps", "2026-11-21").await;
    let counts: Vec<f64> = steps.iter().map(|s| s["value"].as_f64().unwrap()).collect();
    assert_eq!(counts, [1200.0, 850.0], "{steps:?}");
    let distance = samples(&r, &user, "distance", "2026-11-21").await;
    assert_eq!(distance[0]["value"], 850.0);
    assert_eq!(distance[0]["unit"], "m");
    assert_eq!(samples(&r, &user, "heartrate", "2026-11-21").await.len(), 2);
}

/// Google's daily resting heart rate (`daily-resting-heart-rate`, the fixture's two days) is
/// the activity summary's `heart_rate.resting_bpm` of its date, and a FHIR resting heart rate
/// Observation named after Google Health (kept for the validator).
#[tokio::test]
async fn google_health_resting_heart_rate_is_the_days_activity_and_a_fhir_observation() {
    let r = real_google_health().await;
    let (days, observed) = resting_heart_rates(&r, "google_health", "gh-resting").await;
    assert_eq!(days, [("2026-11-21".to_owned(), json!(61.0)), ("2026-11-22".to_owned(), json!(58.0))]);
    assert_eq!(observed, [("2026-11-21".to_owned(), 61.0), ("2026-11-22".to_owned(), 58.0)]);
}

#[tokio::test]
async fn the_subscriber_is_verified_and_a_notification_polls_the_new_day() {
    let r = real_google_health().await;
    let (user, _) = link_through(&r, "google_health", "gh-2").await;
    drain(&r).await;

    // Google's two verification POSTs: 201 with the secret, 401 without.
    let a = webhook(&r, Some(PUSH_SECRET), fake::VERIFICATION).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let a = webhook(&r, None, fake::VERIFICATION).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);

    r.t.clock.advance(chrono::Duration::days(2));
    r.fake.add_point(
        "steps",
        json!({"steps": {"interval": {"startTime": "2026-11-24T07:00:00Z", "startUtcOffset": "3600s",
            "endTime": "2026-11-24T07:15:00Z", "endUtcOffset": "3600s"}, "count": "4321"}}),
    );
    let mut body: Value = serde_json::from_str(fake::NOTIFICATION).unwrap();
    body["data"]["intervals"][0]["physicalTimeInterval"] =
        json!({"startTime": "2026-11-24T07:00:00Z", "endTime": "2026-11-24T07:15:00Z"});
    let body = body.to_string();

    // Without the secret, or with another: refused, nothing queued.
    assert_eq!(webhook(&r, None, &body).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(webhook(&r, Some("Bearer guess"), &body).await.status, StatusCode::UNAUTHORIZED);
    // With the secret but not signed by Google, or signed over another body: refused too.
    assert_eq!(webhook_as(&r, Some(PUSH_SECRET), false, &body).await.status, StatusCode::UNAUTHORIZED);
    let signature = r.fake.signature(&body);
    let headers = [("authorization", PUSH_SECRET), ("x-healthapi-signature", signature.as_str())];
    let other = body.replace("steps", "sleep");
    let a =
        r.t.send_as(Method::POST, "/v2/provider_webhooks/google_health", None, &headers, Some(&other)).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0);

    let a = webhook(&r, Some(PUSH_SECRET), &body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    drain(&r).await;
    let steps = samples(&r, &user, "steps", "2026-11-24").await;
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0]["value"], 4321.0);
    let announced: Vec<_> = r
        .stack
        .bus
        .published()
        .into_iter()
        .filter(|e| e.event_type.starts_with("daily.data.steps"))
        .collect();
    assert_eq!(announced.len(), 1, "the new day's steps, and only them");
    assert_eq!(announced[0].user_id.to_string(), user);
}

#[tokio::test]
async fn removing_a_google_health_connection_revokes_the_grant_at_google() {
    let r = real_google_health().await;
    let (user, _) = link_through(&r, "google_health", "gh-3").await;
    let conn = connection_of(&r, &user, "google_health").await;
    let refresh = conn.credentials(&r.t.deps).unwrap().refresh_token.unwrap().expose().to_owned();
    assert!(r.fake.revoked().is_empty());
    let a = r.t.delete(&format!("/v2/user/{user}/google_health")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(r.fake.revoked(), vec![refresh], "the connection's grant revoked at Google");
    let key = wearlab_domain::keys::linking::connection(
        wearlab_domain::common::ids::UserId::parse(&user).unwrap(),
        "google_health",
    );
    assert!(r.t.deps.table.get(&key).await.unwrap().is_none(), "the connection and its tokens are gone");
}

/// The fetches that reached the fake: every data call, except that a `body` fetch reads
/// `weight` and `body-fat` and counts once, as the throttle counts it.
fn fetches(fake: &GoogleHealthFake) -> usize {
    wearlab_providers::google_health::DATA_TYPES
        .iter()
        .filter(|(t, _)| *t != "body-fat")
        .map(|(t, _)| fake.calls(t))
        .sum()
}

#[tokio::test]
async fn the_published_limit_per_user_holds_across_the_users_connections() {
    let fake = GoogleHealthFake::start(&app()).await;
    fake.set_page_size(10_000);
    let config: AppConfig = fake.config(&app(), Some(PUSH_SECRET));
    let urls = fake.urls();
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap()));
    let r = real_stack(fake, clock, |sim| {
        let route = Route {
            adapter: Arc::new(Tight {
                inner: GoogleHealth::new(config.clone(), urls.clone()),
                app: &[],
                user: TIGHT,
            }),
            config,
        };
        Arc::new(RealProviders::new(sim, vec![route]))
    })
    .await;
    // Three fetches a minute per Google user, no app limit. Two Wearlab users linked to the
    // same Google user (the fake has one) share one window.
    let users = [
        link_through(&r, "google_health", "gh-4").await.0,
        link_through(&r, "google_health", "gh-5").await.0,
    ];
    let mut seen = fetches(&r.fake);
    let mut minutes = 0;
    while summaries(&r, "sleep", &users[0]).await.is_empty()
        || summaries(&r, "sleep", &users[1]).await.is_empty()
    {
        drain(&r).await;
        let now = fetches(&r.fake);
        assert!(now - seen <= 3, "{} fetches for one Google user in one minute", now - seen);
        seen = now;
        r.t.clock.advance(chrono::Duration::seconds(60));
        minutes += 1;
        assert!(minutes < 120, "the pulls did not finish");
    }
    assert!(minutes > 2, "the limit made the pulls wait ({minutes} minutes)");
}

/// One Google user linked by two teams, through the platform's app and through the second
/// team's own app: Google signs the notification for every app alike, so both connections are
/// polled, not only the first whose app checked it.
#[tokio::test]
async fn a_notification_polls_every_connection_of_the_google_user() {
    use wearlab_domain::common::ids::UserId;
    use wearlab_domain::linking::connections::{self, NewConnection};

    let r = real_google_health().await;
    let (user, _) = link_through(&r, "google_health", "gh-two-teams").await;
    drain(&r).await;

    let deps = &r.t.deps;
    let team2 = wearlab_domain::teams::create_team(deps, "Second team").await.unwrap().team_id;
    let key2 = wearlab_domain::teams::issue_key(deps, team2, "test").await.unwrap().secret;
    let app2 = json!({"client_id": "team2.apps.googleusercontent.com", "client_secret": "team2-secret"});
    let a =
        r.t.send(Method::PUT, "/v2/team/oauth_app/google_health", Some(&key2), Some(&app2.to_string())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let new_user = json!({"client_user_id": "gh-team2", "fallback_time_zone": "Europe/Berlin"});
    let a = r.t.send(Method::POST, "/v2/user", Some(&key2), Some(&new_user.to_string())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let user2 = UserId::parse(a.body["user_id"].as_str().unwrap()).unwrap();
    let provider = wearlab_domain::common::provider_catalog::catalog().get("google_health").unwrap();
    let new = NewConnection {
        provider,
        account: r.fake.account(),
        demo: false,
        token: None,
        extra_ops: vec![],
        team_app_client_id: Some("team2.apps.googleusercontent.com".into()),
        import_op: None,
    };
    connections::commit(deps, team2, user2, new).await.unwrap();
    drain(&r).await;

    r.t.clock.advance(chrono::Duration::hours(1));
    let request = r.fake.signed_push(Some(PUSH_SECRET), fake::NOTIFICATION);
    let reply =
        wearlab_domain::pipeline::push::receive(deps, r.t.queue(), "google_health", &request).await.unwrap();
    let polls = wearlab_domain::pipeline::push::PushReply::Accepted { polls: 2 };
    assert_eq!(reply, polls, "the connection of {user} and of {user2}");
}

/// Google Health's data points (the fixtures of its published reference) read as FHIR Observations
/// named after google_health, kept for the FHIR validator (`make fhir`).
#[tokio::test]
async fn google_health_data_reads_as_fhir_observations() {
    let r = real_google_health().await;
    linked_data_reads_as_fhir(&r, "google_health", &["93832-4", "8867-4", "29463-7", "41982-0"]).await;
}
