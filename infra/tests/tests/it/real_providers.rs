//! Real providers end to end on the embedded app: the Oura adapter pointed at the local Oura
//! fake (`wearlab_providers::fake::oura`), linked through the HTTP API with a link token and the
//! fake's consent, its history pulled and read back, its tokens refreshed once for many workers.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::keys;
use wearlab_domain::linking::connections::ConnectionRecord;
use wearlab_domain::linking::tokens::LINK_TOKEN_HEADER;
use wearlab_domain::pipeline::pull::{PollJob, poll};
use wearlab_domain::ports::ManualClock;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, FetchedResource, OauthClient, ProviderAccount,
    ProviderCredentials, ProviderError, PushOutcome, PushRequest, RateWindow, RequestGate,
};
use wearlab_domain::ports::{Condition, Item, to_body};
use wearlab_local::LocalStack;
use wearlab_models::Resource;
use wearlab_providers::fake::oura::{OuraFake, USER_ID};
use wearlab_providers::oura::Oura;
use wearlab_providers::{Adapter, RealProviders, Route};

use crate::helpers::TestApp;
use crate::linking::{link_token, path_of, query_param};

mod dexcom;
mod google_health;
mod hammerhead;
mod polar;
mod strava;
mod suunto;
mod ultrahuman;
mod wahoo;
mod whoop_withings;

const PUSH_TOKEN: &str = "oura-push-token";

/// The embedded app with real adapters in front of the simulator, and the provider's fake.
struct Real<F = OuraFake> {
    t: TestApp,
    stack: LocalStack,
    fake: F,
}

/// The embedded app on `clock` whose `Providers` port is `providers` (over the simulator).
async fn real_stack<F>(
    fake: F,
    clock: Arc<ManualClock>,
    providers: impl FnOnce(
        Arc<dyn wearlab_domain::ports::providers::Providers>,
    ) -> Arc<dyn wearlab_domain::ports::providers::Providers>,
) -> Real<F> {
    let stack = LocalStack::in_memory_with(clock.clone(), providers);
    let t = TestApp::on(stack.deps.clone(), clock).await.with_queue(Arc::new(stack.queue.clone()));
    Real { t: TestApp { stack: Some(stack.clone()), ..t }, stack, fake }
}

fn app() -> OauthClient {
    OauthClient { client_id: "wearlab-oura".into(), client_secret: Secret::new("oura-app-secret") }
}

/// The embedded app with Oura real (pointed at a fresh fake), the clock a few days after the
/// fixtures' days.
async fn real_oura() -> Real {
    real_oura_with(|oura| Arc::new(oura)).await
}

/// [`real_oura`] with the adapter wrapped by `adapter`.
async fn real_oura_with(adapter: impl FnOnce(Oura) -> Arc<dyn Adapter>) -> Real {
    let fake = OuraFake::start(&app()).await;
    let config = fake.config(&app(), Some(PUSH_TOKEN));
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 25, 9, 0, 0).unwrap()));
    real_stack(fake, clock, |sim| {
        let route = Route { adapter: adapter(Oura::new(config.clone())), config };
        Arc::new(RealProviders::new(sim, vec![route]))
    })
    .await
}

async fn drain<F>(r: &Real<F>) {
    for _ in 0..50 {
        if r.stack.run_pulls_once().await.unwrap() == 0 {
            return;
        }
    }
}

/// A user linked to Oura: link token, `oauth_url`, the fake's consent (it redirects straight
/// back with a code), Wearlab's callback.
async fn linked_user(r: &Real, client_user_id: &str) -> String {
    let (user, oauth_url) = link_through(r, "oura", client_user_id).await;
    assert!(oauth_url.starts_with(&format!("{}/oauth/authorize?", r.fake.base_url())), "{oauth_url}");
    assert_eq!(query_param(&oauth_url, "client_id").unwrap(), "wearlab-oura");
    assert_eq!(query_param(&oauth_url, "scope").unwrap(), "personal daily heartrate workout spo2Daily");
    user
}

/// A new user linked to `provider` through the HTTP API: link token, `oauth_url`, the fake's
/// consent (it redirects straight back with a code), Wearlab's callback, which must succeed.
/// Returns the user and the consent URL.
async fn link_through<F>(r: &Real<F>, provider: &str, client_user_id: &str) -> (String, String) {
    let (user, oauth_url, back) = consent_through(r, provider, client_user_id).await;
    let landed = r.t.send(Method::GET, &path_of(&back), None, None).await;
    let done = landed.headers.get("location").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert_eq!(query_param(&done, "state").as_deref(), Some("success"), "{done}: {}", landed.body);
    assert_eq!(query_param(&done, "provider").as_deref(), Some(provider));
    (user, oauth_url)
}

/// [`link_through`] up to the provider's consent: the user, the consent URL, and the callback
/// URL the consent sends the browser back to (not followed yet).
async fn consent_through<F>(r: &Real<F>, provider: &str, client_user_id: &str) -> (String, String, String) {
    let a = r
        .t
        .post("/v2/user", json!({"client_user_id": client_user_id, "fallback_time_zone": "Europe/Berlin"}))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let user = a.body["user_id"].as_str().unwrap().to_owned();
    let tk = link_token(&r.t, &user, json!({"redirect_url": "https://app.example/done"})).await;
    let path = format!("/v2/link/provider/oauth/{provider}");
    let a = r.t.send_with(Method::GET, &path, &[(LINK_TOKEN_HEADER, &tk)], None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let oauth_url = a.body["oauth_url"].as_str().unwrap().to_owned();

    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let consent = browser.get(&oauth_url).send().await.unwrap();
    assert_eq!(consent.status().as_u16(), 302);
    let back = consent.headers()["location"].to_str().unwrap().to_owned();
    assert!(back.contains(&format!("/v2/link/provider/oauth/{provider}/callback?")), "{back}");
    (user, oauth_url, back)
}

async fn connection(r: &Real, user: &str) -> ConnectionRecord {
    connection_of(r, user, "oura").await
}

async fn connection_of<F>(r: &Real<F>, user: &str, provider: &str) -> ConnectionRecord {
    let key = keys::linking::connection(UserId::parse(user).unwrap(), provider);
    r.t.deps.table.get(&key).await.unwrap().unwrap().decode().unwrap()
}

/// Marks the stored access token expired (the adapter dates expiries by the real clock, the
/// stack by its manual one), returning the credentials.
async fn expire_credentials(r: &Real, user: &str) -> ProviderCredentials {
    let conn = connection(r, user).await;
    let mut creds = conn.credentials(&r.t.deps).unwrap();
    creds.expires_at = Some(r.t.deps.now() - chrono::Duration::hours(1));
    let key = conn.key();
    let item = r.t.deps.table.get(&key).await.unwrap().unwrap();
    let mut next = conn.clone();
    next.set_credentials(&r.t.deps, &creds);
    let mut put = Item::new(key, to_body(&next));
    put.version = item.version + 1;
    r.t.deps.table.put(put, Condition::VersionIs(item.version)).await.unwrap();
    creds
}

async fn summaries<F>(r: &Real<F>, kind: &str, user: &str) -> Vec<Value> {
    let a = r.t.get(&format!("/v2/summary/{kind}/{user}?start_date=2026-11-18&end_date=2026-11-24")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body[kind].as_array().unwrap().clone()
}

#[tokio::test]
async fn real_oura_links_pulls_history_and_reads_it_back() {
    let r = real_oura().await;
    let user = linked_user(&r, "oura-1").await;
    assert_eq!(r.fake.calls("token:authorization_code"), 1);
    let conn = connection(&r, &user).await;
    assert_eq!(conn.external_user_id, USER_ID, "the user id from personal_info");
    let created: Vec<_> = r
        .stack
        .bus
        .published()
        .into_iter()
        .filter(|e| e.event_type == "provider.connection.created")
        .collect();
    assert_eq!(created.len(), 1);

    drain(&r).await;
    let sleep = summaries(&r, "sleep", &user).await;
    assert_eq!(sleep.len(), 4, "three nights and a nap");
    let s = sleep.iter().find(|s| s["calendar_date"] == "2026-11-20" && s["type"] == "long_sleep").unwrap();
    assert_eq!(
        (s["deep"].as_i64(), s["rem"].as_i64(), s["light"].as_i64()),
        (Some(5400), Some(7200), Some(14400))
    );
    assert_eq!(s["awake"], 1800);
    assert_eq!(s["duration"], 28800);
    assert_eq!(s["source"]["provider"], "oura");
    let activity = summaries(&r, "activity", &user).await;
    let a = activity.iter().find(|a| a["calendar_date"] == "2026-11-20").unwrap();
    assert_eq!(a["steps"], 9421.0);
    assert!(a["distance"].is_null(), "Oura's equivalent_walking_distance is no distance travelled");
    assert_eq!(a["low"], 17820.0, "seconds, as Oura gave them");
    let workouts = summaries(&r, "workouts", &user).await;
    assert_eq!(workouts.len(), 2);
    let hr = r
        .t
        .get(&format!("/v2/timeseries/{user}/heartrate/grouped?start_date=2026-11-20&end_date=2026-11-20"))
        .await;
    assert_eq!(hr.status, StatusCode::OK, "{}", hr.body);
    assert!(hr.body.to_string().contains("122"), "{}", hr.body);

    let historical: Vec<String> = r
        .stack
        .bus
        .published()
        .into_iter()
        .map(|e| e.event_type)
        .filter(|t| t.starts_with("historical.data."))
        .collect();
    for r in ["sleep", "activity", "workouts", "heartrate"] {
        assert!(historical.contains(&format!("historical.data.{r}.created")), "{r}: {historical:?}");
    }
}

/// GET /v2/providers and the user's connections offer exactly what the adapter fills, and the
/// historical pull announces exactly those resources (sleep with its sleep cycle).
#[tokio::test]
async fn a_real_provider_offers_exactly_the_resources_its_adapter_fills() {
    let r = real_oura().await;
    let filled = Oura::new(r.fake.config(&app(), None)).resources();
    let listed = r.t.get("/v2/providers").await;
    assert_eq!(listed.status, StatusCode::OK);
    let oura = listed.body.as_array().unwrap().iter().find(|p| p["slug"] == "oura").unwrap().clone();
    let mut expected = filled.to_vec();
    expected.push(Resource::Connection);
    assert_eq!(oura["supported_resources"], json!(expected));
    assert!(!oura["supported_resources"].to_string().contains("stress_level"), "not filled by the adapter");

    let user = linked_user(&r, "oura-resources").await;
    let connections = r.t.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(connections.status, StatusCode::OK, "{}", connections.body);
    let availability = connections.body["providers"][0]["resource_availability"].as_object().unwrap();
    let mut offered: Vec<&str> = availability.keys().map(String::as_str).collect();
    offered.sort_unstable();
    let mut sorted: Vec<&str> = filled.iter().map(Resource::as_str).collect();
    sorted.sort_unstable();
    assert_eq!(offered, sorted);

    drain(&r).await;
    let mut announced: Vec<String> = r
        .stack
        .bus
        .published()
        .into_iter()
        .filter_map(|e| {
            e.event_type.strip_prefix("historical.data.")?.strip_suffix(".created").map(str::to_owned)
        })
        .collect();
    announced.sort();
    let mut produced: Vec<String> = filled
        .iter()
        .flat_map(wearlab_domain::pipeline::normalize::produced)
        .map(|r| r.to_string())
        .collect();
    produced.sort();
    assert_eq!(announced, produced);
}

#[tokio::test]
async fn ten_workers_on_an_expired_rotating_token_refresh_it_once() {
    let r = real_oura().await;
    let user = linked_user(&r, "oura-2").await;
    drain(&r).await;
    let before = expire_credentials(&r, &user).await;
    let job = PollJob {
        team_id: r.t.team,
        user_id: UserId::parse(&user).unwrap(),
        provider: "oura".into(),
        since: None,
    };
    let polls = (0..10).map(|_| {
        let (deps, job) = (r.t.deps.clone(), job.clone());
        tokio::spawn(async move { poll(&deps, &job).await })
    });
    for done in futures::future::join_all(polls).await {
        done.unwrap().unwrap();
    }
    assert_eq!(r.fake.calls("token:refresh_token"), 1, "exactly one refresh reached Oura");
    let after = connection(&r, &user).await;
    assert_eq!(after.status, wearlab_models::ConnectionStatus::Connected);
    let creds = after.credentials(&r.t.deps).unwrap();
    assert_ne!(creds.refresh_token, before.refresh_token, "the rotated refresh token is kept");
    assert!(
        !r.stack.bus.published().iter().any(|e| e.event_type == "provider.connection.error"),
        "no worker used the spent refresh token"
    );
}

#[tokio::test]
async fn a_refused_access_token_is_refreshed_once_and_a_dead_refresh_token_ends_the_connection() {
    let r = real_oura().await;
    let user = linked_user(&r, "oura-3").await;
    drain(&r).await;
    let job = PollJob {
        team_id: r.t.team,
        user_id: UserId::parse(&user).unwrap(),
        provider: "oura".into(),
        since: None,
    };
    // Oura refuses the access token before its expiry: refreshed, and the poll goes on.
    r.fake.expire_access_tokens();
    poll(&r.t.deps, &job).await.unwrap();
    assert_eq!(r.fake.calls("token:refresh_token"), 1);
    assert_eq!(connection(&r, &user).await.status, wearlab_models::ConnectionStatus::Connected);

    // Someone spent the refresh token elsewhere: Oura answers invalid_grant.
    let creds = connection(&r, &user).await.credentials(&r.t.deps).unwrap();
    let adapter = Oura::new(r.fake.config(&app(), None));
    adapter.refresh(&app(), &creds).await.unwrap();
    r.fake.expire_access_tokens();
    poll(&r.t.deps, &job).await.unwrap();
    let conn = connection(&r, &user).await;
    assert_eq!(conn.status, wearlab_models::ConnectionStatus::Error);
    let errors: Vec<_> =
        r.stack.bus.published().into_iter().filter(|e| e.event_type == "provider.connection.error").collect();
    assert_eq!(errors.len(), 1);
    // No more pulls for it.
    let calls = r.fake.calls("sleep");
    poll(&r.t.deps, &job).await.unwrap();
    assert_eq!(r.fake.calls("sleep"), calls);
}

/// An Oura sleep period of `day` in the shape of `PublicModifiedSleepModel` (as the fixture's),
/// of `minutes` in bed from `start`, of Oura's `kind` (`long_sleep`, `late_nap`, ...).
fn oura_sleep(id: &str, day: &str, kind: &str, start: &str, minutes: i64) -> Value {
    let begin = chrono::DateTime::parse_from_rfc3339(start).unwrap();
    let end = (begin + chrono::Duration::minutes(minutes)).to_rfc3339();
    let secs = minutes * 60;
    json!({"id": id, "meta": {"updated_at": end, "version": 1}, "average_breath": 14.5,
        "average_heart_rate": 57.0, "average_hrv": 45, "awake_time": 300, "bedtime_end": end,
        "bedtime_start": start, "day": day, "deep_sleep_duration": 0, "efficiency": 90,
        "heart_rate": null, "hrv": null, "latency": 120, "light_sleep_duration": secs - 300,
        "low_battery_alert": false, "lowest_heart_rate": 50, "movement_30_sec": "11",
        "period": 0, "readiness_score_delta": 0, "rem_sleep_duration": 0, "restless_periods": 2,
        "sleep_phase_5_min": "42", "sleep_score_delta": 0, "time_in_bed": secs,
        "total_sleep_duration": secs - 300, "type": kind})
}

/// The data events published so far of `event_type`, with their summaries.
fn data_events<F>(r: &Real<F>, event_type: &str) -> Vec<Value> {
    r.stack.bus.published().into_iter().filter(|e| e.event_type == event_type).map(|e| e.data).collect()
}

#[tokio::test]
async fn a_nap_is_its_own_sleep_with_its_type_and_a_poll_of_unchanged_days_announces_nothing() {
    let r = real_oura().await;
    let user = linked_user(&r, "oura-naps").await;
    drain(&r).await;

    // The history: the 20th holds Oura's long_sleep and a late_nap, each served with its type.
    let sleep = summaries(&r, "sleep", &user).await;
    assert_eq!(sleep.len(), 4, "{sleep:?}");
    let day = |sleep: &[Value], date: &str| -> Vec<(String, String)> {
        sleep
            .iter()
            .filter(|s| s["calendar_date"] == date)
            .map(|s| {
                (s["type"].as_str().unwrap().to_owned(), s["bedtime_start"].as_str().unwrap().to_owned())
            })
            .collect()
    };
    assert_eq!(
        day(&sleep, "2026-11-20"),
        [
            ("long_sleep".to_owned(), "2026-11-19T22:04:00Z".to_owned()),
            ("acknowledged_nap".to_owned(), "2026-11-20T14:00:00Z".to_owned()),
        ]
    );
    let ids: std::collections::HashSet<_> = sleep.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 4, "each sleep has its own id");

    let job = PollJob {
        team_id: r.t.team,
        user_id: UserId::parse(&user).unwrap(),
        provider: "oura".into(),
        since: None,
    };
    let announced =
        |r: &Real| r.stack.bus.published().into_iter().filter(|e| e.event_type.starts_with("daily.")).count();

    // A new night: announced once.
    r.fake.add_document(
        "sleep",
        oura_sleep("slp-25", "2026-11-25", "long_sleep", "2026-11-24T23:00:00+01:00", 480),
    );
    poll(&r.t.deps, &job).await.unwrap();
    let created = data_events(&r, "daily.data.sleep.created");
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0]["type"], "long_sleep");
    let night_id = created[0]["id"].clone();

    // A late nap Oura counts to the same day (it ended after 6 pm the evening before): announced
    // as a new sleep; the night it joins is unchanged, so it is not announced again.
    r.fake.add_document(
        "sleep",
        oura_sleep("slp-25-nap", "2026-11-25", "late_nap", "2026-11-24T19:30:00+01:00", 40),
    );
    let before = announced(&r);
    poll(&r.t.deps, &job).await.unwrap();
    let created = data_events(&r, "daily.data.sleep.created");
    assert_eq!(created.len(), 2, "{created:?}");
    assert_eq!(
        (created[1]["type"].as_str(), created[1]["duration"].as_i64()),
        (Some("acknowledged_nap"), Some(2400))
    );
    assert_ne!(created[1]["id"], night_id);
    assert!(data_events(&r, "daily.data.sleep.updated").is_empty(), "the night did not change");
    assert_eq!(announced(&r) - before, 2, "the nap's sleep and its sleep cycle, nothing else");

    // Nothing changed at Oura: a poll announces nothing.
    let before = announced(&r);
    poll(&r.t.deps, &job).await.unwrap();
    assert_eq!(announced(&r), before);

    let a = r.t.get(&format!("/v2/summary/sleep/{user}?start_date=2026-11-25&end_date=2026-11-25")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(
        day(a.body["sleep"].as_array().unwrap(), "2026-11-25"),
        [
            ("long_sleep".to_owned(), "2026-11-24T22:00:00Z".to_owned()),
            ("acknowledged_nap".to_owned(), "2026-11-24T18:30:00Z".to_owned()),
        ],
        "both sleeps of the day, each with its type, the day's main sleep first"
    );
}

async fn push(r: &Real, body: &str, timestamp: i64, secret: &str) -> crate::helpers::Answer {
    let signature = wearlab_providers::oura::sign(secret, &timestamp.to_string(), body.as_bytes());
    let ts = timestamp.to_string();
    let headers = [("x-oura-timestamp", ts.as_str()), ("x-oura-signature", signature.as_str())];
    r.t.send_as(Method::POST, "/v2/provider_webhooks/oura", None, &headers, Some(body)).await
}

#[tokio::test]
async fn a_signed_oura_push_polls_the_connection_and_announces_the_new_day() {
    let r = real_oura().await;
    let user = linked_user(&r, "oura-4").await;
    drain(&r).await;

    // Oura's handshake when subscribing: the verification token must match.
    let a =
        r.t.send(
            Method::GET,
            &format!("/v2/provider_webhooks/oura?verification_token={PUSH_TOKEN}&challenge=ch-1"),
            None,
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body, json!({"challenge": "ch-1"}));
    let a = r
        .t
        .send(Method::GET, "/v2/provider_webhooks/oura?verification_token=wrong&challenge=ch-1", None, None)
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);

    r.fake.add_document(
        "daily_activity",
        json!({"id": "act-2026-11-25", "day": "2026-11-25", "steps": 4321, "active_calories": 150,
            "total_calories": 1900, "equivalent_walking_distance": 3100, "low_activity_time": 3600,
            "high_activity_time": 0, "medium_activity_time": 600, "timestamp": "2026-11-25T04:00:00+01:00"}),
    );
    let body = json!({"event_type": "create", "data_type": "daily_activity", "object_id": "act-2026-11-25",
        "event_time": "2026-11-25T08:00:00+00:00", "user_id": USER_ID})
    .to_string();
    let now = Utc::now().timestamp();

    // Refused pushes change nothing: no poll is queued.
    let a = push(&r, &body, now, "not-the-app-secret").await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{}", a.body);
    let a = r.t.send_as(Method::POST, "/v2/provider_webhooks/oura", None, &[], Some(&body)).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "unsigned");
    let a = push(&r, &body, now - 3600, "oura-app-secret").await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "stale");
    assert_eq!(r.stack.run_pulls_once().await.unwrap(), 0);
    assert!(!r.stack.bus.published().iter().any(|e| e.event_type.starts_with("daily.")));

    let a = push(&r, &body, now, "oura-app-secret").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    drain(&r).await;
    let daily: Vec<_> = r
        .stack
        .bus
        .published()
        .into_iter()
        .filter(|e| e.event_type == "daily.data.activity.created")
        .collect();
    assert_eq!(daily.len(), 1, "the new day, and only it");
    assert_eq!(daily[0].data["calendar_date"], "2026-11-25");
    assert_eq!(daily[0].data["steps"], 4321.0);
    assert_eq!(daily[0].user_id.to_string(), user);
}

#[tokio::test]
async fn a_rate_limited_pull_waits_for_the_providers_reset_while_others_go_on() {
    let r = real_oura().await;
    let first = linked_user(&r, "oura-5").await;
    // Oura's next answer is a 429 with Retry-After: 7.
    r.fake.fail_next(429, 1);
    drain(&r).await;
    assert!(summaries(&r, "sleep", &first).await.is_empty(), "waiting for Oura's reset");
    assert_eq!(connection(&r, &first).await.status, wearlab_models::ConnectionStatus::Connected);

    // Another user's pull is not held up by the waiting one.
    let second = linked_user(&r, "oura-6").await;
    drain(&r).await;
    assert_eq!(summaries(&r, "sleep", &second).await.len(), 4);
    assert!(summaries(&r, "sleep", &first).await.is_empty());

    // After the reset the first pull resumes and completes (not failed, not dead-lettered).
    r.t.clock.advance(chrono::Duration::seconds(8));
    drain(&r).await;
    assert_eq!(summaries(&r, "sleep", &first).await.len(), 4);
    let completed = r
        .stack
        .bus
        .published()
        .into_iter()
        .filter(|e| e.event_type == "historical.data.sleep.created" && e.user_id.to_string() == first)
        .count();
    assert_eq!(completed, 1);
}

#[tokio::test]
async fn oura_push_subscriptions_are_kept_by_the_sweep_at_most_hourly() {
    let r = real_oura().await;
    let maintain =
        || wearlab_domain::linking::subscriptions::maintain_subscriptions(&r.t.deps, "https://api.example");
    assert!(maintain().await.unwrap());
    let subs = r.fake.subscriptions();
    assert_eq!(subs.len(), 10);
    assert!(subs.iter().all(|s| s["callback_url"] == "https://api.example/v2/provider_webhooks/oura"));
    // Within the hour (any instance): not looked at again.
    assert!(!maintain().await.unwrap());
    assert_eq!(r.fake.calls("subscription:list"), 1);
    // An hour on, expiring ones are renewed.
    r.fake.expire_subscriptions(Utc::now() + chrono::Duration::days(2));
    r.t.clock.advance(chrono::Duration::hours(1));
    assert!(maintain().await.unwrap());
    assert_eq!(r.fake.calls("subscription:renew"), 10);
    assert_eq!(r.fake.subscriptions().len(), 10);
}

/// A real adapter with tighter published limits than its own (`app` for the OAuth app, `user`
/// for one provider user), so that they can be seen holding without thousands of calls.
struct Tight<A> {
    inner: A,
    app: &'static [RateWindow],
    user: &'static [RateWindow],
}

/// Three requests a minute.
const TIGHT: &[RateWindow] = &[RateWindow { requests: 3, window_secs: 60 }];

#[async_trait::async_trait]
impl<A: Adapter> Adapter for Tight<A> {
    fn api(&self) -> &wearlab_providers::Api {
        self.inner.api()
    }
    fn slug(&self) -> &'static str {
        self.inner.slug()
    }
    fn resources(&self) -> &'static [Resource] {
        self.inner.resources()
    }
    fn app_limits(&self) -> &'static [RateWindow] {
        self.app
    }
    fn user_limits(&self) -> &'static [RateWindow] {
        self.user
    }
    fn authorize_url(&self, request: &AuthorizeRequest) -> Result<String, ProviderError> {
        self.inner.authorize_url(request)
    }
    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        self.inner.exchange_code(exchange).await
    }
    async fn refresh(
        &self,
        c: &OauthClient,
        creds: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        self.inner.refresh(c, creds).await
    }
    async fn fetch(
        &self,
        a: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        self.inner.fetch(a, resource, range, gate).await
    }
    async fn revoke(&self, c: &OauthClient, a: &ProviderAccount) -> Result<(), ProviderError> {
        self.inner.revoke(c, a).await
    }
    fn push(&self, c: &OauthClient, token: Option<&str>, request: &PushRequest) -> PushOutcome {
        self.inner.push(c, token, request)
    }
}

/// Every data call the fake got.
fn data_calls(fake: &OuraFake) -> usize {
    ["personal_info", "daily_activity", "sleep", "workout", "heartrate", "daily_spo2", "daily_readiness"]
        .iter()
        .map(|k| fake.calls(k))
        .sum()
}

#[tokio::test]
async fn the_apps_published_limit_holds_across_its_users() {
    let r = real_oura_with(|oura| Arc::new(Tight { inner: oura, app: TIGHT, user: &[] })).await;
    r.fake.set_page_size(1000);
    let users = [linked_user(&r, "oura-7").await, linked_user(&r, "oura-8").await];
    let linking_calls = data_calls(&r.fake);
    let mut seen = linking_calls;
    let mut minutes = 0;
    // Each minute at most three fetches reach Oura, whichever user they are for.
    while summaries(&r, "sleep", &users[0]).await.is_empty()
        || summaries(&r, "sleep", &users[1]).await.is_empty()
    {
        drain(&r).await;
        let now = data_calls(&r.fake);
        assert!(now - seen <= 3, "{} calls in one minute", now - seen);
        seen = now;
        r.t.clock.advance(chrono::Duration::seconds(60));
        minutes += 1;
        assert!(minutes < 60, "the pulls did not finish");
    }
    assert!(minutes > 2, "the limit made the pulls wait ({minutes} minutes)");
    assert_eq!(connection(&r, &users[0]).await.status, wearlab_models::ConnectionStatus::Connected);
}

/// Every page a fetch asks for counts against the app's limit, before it is sent: with one
/// document a page, the fetches of a pull need more requests than a window holds, so the window
/// fills between two pages of a fetch, which stops `RateLimited`, and the pull waits for the
/// next window. Counting one per fetch let three fetches send all their pages at once.
#[tokio::test]
async fn every_page_counts_against_the_apps_limit_and_a_full_window_stops_a_fetch() {
    let r = real_oura_with(|oura| Arc::new(Tight { inner: oura, app: TIGHT, user: &[] })).await;
    let user = linked_user(&r, "oura-10").await;
    // The pull's first chunks hold the fixtures' days.
    let a = r.t.patch(&format!("/v2/user/{user}"), json!({"ingestion_start": "2026-11-18"})).await;
    assert!(a.status.is_success(), "{}", a.body);
    r.fake.set_page_size(1);
    let mut seen = data_calls(&r.fake);
    drain(&r).await;
    assert_eq!(data_calls(&r.fake) - seen, 3, "the window's three requests, pages included");
    assert!(summaries(&r, "sleep", &user).await.is_empty(), "sleep's pages go past the window");
    seen = data_calls(&r.fake);
    // Pages Oura answers whole: each fetch is one request again, and the pull goes on, three
    // requests a minute.
    r.fake.set_page_size(1000);
    let mut minutes = 0;
    while summaries(&r, "sleep", &user).await.is_empty() {
        r.t.clock.advance(chrono::Duration::seconds(60));
        drain(&r).await;
        let now = data_calls(&r.fake);
        assert!(now - seen <= 3, "{} calls in one minute", now - seen);
        seen = now;
        minutes += 1;
        assert!(minutes < 60, "the pull did not finish");
    }
    assert_eq!(connection(&r, &user).await.status, wearlab_models::ConnectionStatus::Connected);
}

#[tokio::test]
async fn removing_an_oura_connection_revokes_the_token_at_oura() {
    let r = real_oura().await;
    let user = linked_user(&r, "oura-9").await;
    let a = r.t.delete(&format!("/v2/user/{user}/oura")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(r.fake.calls("revoke"), 1);
}

/// The user's Observations as FHIR answers them (the first 100, of the two years to the clock's day), each
/// named after `provider` in `meta.source`; the Bundle is kept for the FHIR validator
/// (`make fhir`). A provider's fixtures are small, so the first page holds them all.
async fn fhir_observations<F>(r: &Real<F>, user: &str, provider: &str) -> Vec<Value> {
    drain(r).await;
    let today = wearlab_domain::ports::Clock::now(&*r.t.clock).date_naive();
    let from = today - chrono::Duration::days(730);
    let path = format!("/fhir/Observation?subject=Patient/{user}&date=ge{from}&date=le{today}&_count=100");
    let a = r.t.get(&path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    crate::fhir::keep(&a.body);
    let found: Vec<Value> =
        a.body["entry"].as_array().into_iter().flatten().map(|e| e["resource"].clone()).collect();
    let source = format!("urn:wearlab:provider:{provider}");
    assert!(found.iter().all(|o| o["meta"]["source"] == source.as_str()), "{}", a.body);
    found
}

/// A user linked to `provider` through the API (client user id `<provider>-fhir`), whose data
/// read as FHIR Observations (see [`fhir_observations`]) hold at least one of each of `codes`.
async fn linked_data_reads_as_fhir<F>(r: &Real<F>, provider: &str, codes: &[&str]) {
    let (user, _) = link_through(r, provider, &format!("{provider}-fhir")).await;
    let found = fhir_codes(&fhir_observations(r, &user, provider).await);
    for code in codes {
        assert!(found.contains(*code), "{provider}: {code} among {found:?}");
    }
}

/// A user linked to `provider` (as `client_user_id`) with its history pulled: its activity
/// days' `heart_rate.resting_bpm` over the data API, as `(day, value)`, and its FHIR resting
/// heart rate Observations (40443-4) of 2026-11-18 to 2026-11-24, as `(day, bpm)`, each asserted
/// named after `provider` and kept for the validator (`make fhir`).
async fn resting_heart_rates<F>(
    r: &Real<F>,
    provider: &str,
    client_user_id: &str,
) -> (Vec<(String, Value)>, Vec<(String, f64)>) {
    let (user, _) = link_through(r, provider, client_user_id).await;
    drain(r).await;
    let days = summaries(r, "activity", &user)
        .await
        .iter()
        .map(|d| (d["calendar_date"].as_str().unwrap().to_owned(), d["heart_rate"]["resting_bpm"].clone()))
        .collect();
    let path =
        format!("/fhir/Observation?subject=Patient/{user}&code=40443-4&date=ge2026-11-18&date=le2026-11-24");
    let a = r.t.get(&path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    crate::fhir::keep(&a.body);
    let source = format!("urn:wearlab:provider:{provider}");
    let observed = a.body["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let o = &e["resource"];
            assert_eq!(o["meta"]["source"], source.as_str());
            (
                o["effectiveDateTime"].as_str().unwrap().to_owned(),
                o["valueQuantity"]["value"].as_f64().unwrap(),
            )
        })
        .collect();
    (days, observed)
}

/// The codes of `observations` (their first coding each).
fn fhir_codes(observations: &[Value]) -> std::collections::BTreeSet<String> {
    observations.iter().filter_map(|o| o["code"]["coding"][0]["code"].as_str().map(str::to_owned)).collect()
}

/// Real Oura's data, pulled from its fake (the fixtures of Oura's published OpenAPI document),
/// reads as FHIR Observations named after Oura, each kept for the FHIR validator (`make fhir`).
#[tokio::test]
async fn oura_data_reads_as_fhir_observations() {
    let r = real_oura().await;
    let user = linked_user(&r, "oura-fhir").await;
    let found = fhir_observations(&r, &user, "oura").await;
    assert!(fhir_codes(&found).contains("8867-4"), "Oura's heart rate: {:?}", fhir_codes(&found));
    // Oura's sleeps (three nights and a nap), each an Observation with its stages.
    let a =
        r.t.get(&format!(
            "/fhir/Observation?subject=Patient/{user}&code=93832-4&date=ge2026-11-18&date=le2026-11-24"
        ))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    crate::fhir::keep(&a.body);
    let found: Vec<Value> =
        a.body["entry"].as_array().unwrap().iter().map(|e| e["resource"].clone()).collect();
    let sleep = summaries(&r, "sleep", &user).await;
    crate::fhir::assert_sleep_observations(&found, &sleep, "oura");
    let s = sleep.iter().find(|s| s["calendar_date"] == "2026-11-20" && s["type"] == "long_sleep").unwrap();
    let night = found.iter().find(|o| o["effectivePeriod"]["start"] == s["bedtime_start"]);
    let stages: Vec<f64> = night.expect("the night of the 20th")["component"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["valueQuantity"]["value"].as_f64().unwrap())
        .collect();
    assert_eq!(stages, vec![240.0, 90.0, 120.0, 30.0], "Oura's light, deep, REM and awake, in minutes");
}
