//! Conformance of the Polar adapter against its local fake.

use chrono::{Duration, NaiveDate, Utc};
use serde_json::json;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderError, PushOutcome, RateWindow,
};
use wearlab_models::Resource;
use wearlab_providers::fake::polar::{self as fake, Failure, FakePolar};
use wearlab_providers::polar::{self, Polar};
use wearlab_providers::{Adapter, AppConfig};

const REDIRECT: &str = "https://wearlab.example/v2/link/provider/oauth/polar/callback";
const WEBHOOK_SECRET: &str = "abe1f3ae-fd33-11e8-8eb2-f2801f1b9fd1";

fn client() -> OauthClient {
    OauthClient { client_id: "polar-app".into(), client_secret: Secret::new("polar-app-secret") }
}

async fn setup() -> (FakePolar, Polar) {
    let fake = FakePolar::new(client());
    let endpoints = fake.start().await;
    let config = AppConfig { endpoints, platform_client: Some(client()), push_token: None };
    (fake, Polar::new(config))
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

/// The fixtures' days.
fn fixture_range() -> DateRange {
    DateRange { start: day("2026-11-21"), end: day("2026-11-23") }
}

/// The consent page's code for `polar`'s authorize URL.
async fn consent(polar: &Polar) -> String {
    let request =
        AuthorizeRequest { client_id: client().client_id, redirect_uri: REDIRECT.into(), state: "s".into() };
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(polar.authorize_url(&request).unwrap()).send().await.unwrap();
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    location.query_pairs().find(|(k, _)| k == "code").unwrap().1.into_owned()
}

fn exchange(code: &str, client: OauthClient) -> CodeExchange {
    CodeExchange { code: Secret::new(code.to_owned()), redirect_uri: REDIRECT.into(), client }
}

#[tokio::test]
async fn links_with_basic_client_auth_and_registers_the_user() {
    let (fake, polar) = setup().await;
    let request = AuthorizeRequest {
        client_id: client().client_id,
        redirect_uri: REDIRECT.into(),
        state: "state-1".into(),
    };
    let url = url::Url::parse(&polar.authorize_url(&request).unwrap()).unwrap();
    let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "polar-app");
    assert_eq!(q["redirect_uri"], REDIRECT);
    assert_eq!(q["scope"], "accesslink.read_all");
    assert_eq!(q["state"], "state-1");

    let code = consent(&polar).await;
    let before = Utc::now();
    let linked = polar.exchange_code(&exchange(&code, client())).await.unwrap();
    assert_eq!(linked.external_user_id, "475", "x_user_id of the token answer");
    assert_eq!(linked.credentials.refresh_token, None, "Polar issues none");
    let expires = linked.credentials.expires_at.unwrap();
    assert!(expires >= before + Duration::seconds(fake::EXPIRES_IN), "about ten years");
    assert_eq!(fake.registration(), (true, Some("475".to_owned())), "registered with its Polar id");
    assert_eq!((fake.calls("token"), fake.calls("register")), (1, 1));

    // A code works once; a wrong secret is refused by Basic authentication.
    let again = polar.exchange_code(&exchange(&code, client())).await;
    assert!(matches!(again, Err(ProviderError::CredentialError(_))), "{again:?}");
    let code = consent(&polar).await;
    let wrong = OauthClient { client_id: "polar-app".into(), client_secret: Secret::new("wrong") };
    let refused = polar.exchange_code(&exchange(&code, wrong)).await;
    assert!(matches!(refused, Err(ProviderError::CredentialError(_))), "{refused:?}");
}

#[tokio::test]
async fn an_already_registered_user_links_again() {
    let (fake, polar) = setup().await;
    let _registered = fake.account();
    let code = consent(&polar).await;
    let linked = polar.exchange_code(&exchange(&code, client())).await.unwrap();
    assert_eq!(linked.external_user_id, "475");
    assert_eq!(fake.calls("register"), 1, "answered 409, which is success");
    assert!(polar.fetch(&linked, &Resource::Sleep, fixture_range(), &NoLimit).await.is_ok());
}

#[tokio::test]
async fn missing_consents_fail_the_link_clearly() {
    let (fake, polar) = setup().await;
    fake.withhold_consents();
    let code = consent(&polar).await;
    let linked = polar.exchange_code(&exchange(&code, client())).await;
    let Err(ProviderError::CredentialError(message)) = &linked else { panic!("{linked:?}") };
    assert!(message.contains("consents"), "{message}");
    assert_eq!(fake.registration(), (false, None));
}

#[tokio::test]
async fn refresh_is_revoked_as_polar_issues_no_refresh_token() {
    let (fake, polar) = setup().await;
    let account = fake.account();
    let refreshed = polar.refresh(&client(), &account.credentials).await;
    assert!(matches!(refreshed, Err(ProviderError::Revoked(_))), "{refreshed:?}");
    assert_eq!(fake.calls("token"), 0, "nothing to ask Polar");
}

#[tokio::test]
async fn fetches_every_resource_with_units_converted() {
    let (fake, polar) = setup().await;
    let account = fake.account();
    let today = Utc::now().date_naive();
    let mut got = std::collections::HashMap::new();
    for resource in polar.resources() {
        let range = match resource {
            // Polar keeps only the current weight, dated today.
            Resource::Body => DateRange { start: today - Duration::days(1), end: today },
            _ => fixture_range(),
        };
        let fetched = polar.fetch(&account, resource, range, &NoLimit).await.unwrap();
        assert_eq!(fetched.resource, *resource);
        got.insert(resource.clone(), fetched.records);
    }

    // Local start plus its offset (minutes) is UTC; the ISO 8601 duration gives the end.
    let w = &got[&Resource::Workouts];
    assert_eq!(w.len(), 3);
    assert_eq!(
        w[0],
        json!({"date": "2026-11-21", "time_start": "2026-11-21T07:40:02Z", "time_end": "2026-11-21T10:24:02Z",
            "sport": "other", "calories": 530.0, "distance_m": 1600.0, "average_hr": 129.0,
            "timezone": "Etc/GMT-3"})
    );
    assert_eq!(w[1]["time_start"], "2026-11-22T17:05:00Z");
    assert_eq!(w[1]["time_end"], "2026-11-22T17:56:05Z", "PT51M5S");
    assert_eq!(w[1]["sport"], "running");
    assert_eq!(w[1]["distance_m"], 10123.4);
    assert_eq!(w[1]["timezone"], "Etc/GMT-1");
    assert_eq!(w[2]["sport"], "cycling");

    assert_eq!(got[&Resource::Activity].len(), 3);
    assert_eq!(
        got[&Resource::Activity][0],
        json!({"time_start": "2026-11-21T08:15:30Z", "steps": 8823.0, "calories_total": 2500.0,
            "calories_active": 1500.0, "distance_m": 4590.53}),
        "Polar's OpenAPI document's start_time is UTC and names no zone: the pipeline dates it in the user's"
    );

    let sleep = &got[&Resource::Sleep];
    assert_eq!(sleep.len(), 2);
    assert_eq!(sleep[0]["date"], "2026-11-21");
    assert_eq!(sleep[0]["bedtime_start"], "2026-11-20T21:39:07Z");
    assert_eq!(sleep[0]["bedtime_stop"], "2026-11-21T06:19:37Z");
    assert_eq!(sleep[0]["duration_s"], 31230);
    assert_eq!((sleep[0]["deep_s"].as_i64(), sleep[0]["rem_s"].as_i64()), (Some(5400), Some(7200)));
    assert_eq!((sleep[0]["light_s"].as_i64(), sleep[0]["awake_s"].as_i64()), (Some(16200), Some(1000)));
    assert_eq!(sleep[0]["timezone"], "Etc/GMT-3");
    // The hypnogram's local "HH:MM" marks, from the start, across midnight.
    assert_eq!(
        sleep[1]["stages"],
        json!([
            {"stage": "awake", "start_offset_s": 0, "end_offset_s": 480},
            {"stage": "light", "start_offset_s": 480, "end_offset_s": 4800},
            {"stage": "deep", "start_offset_s": 4800, "end_offset_s": 9600},
            {"stage": "rem", "start_offset_s": 9600, "end_offset_s": 26400},
            {"stage": "awake", "start_offset_s": 26400, "end_offset_s": 27000},
        ])
    );
    assert_eq!(sleep[0]["stages"][0], json!({"stage": "light", "start_offset_s": 0, "end_offset_s": 653}));

    // Device-local sample times anchored with the offset of the day's (or nearest) sleep.
    assert_eq!(
        got[&Resource::Heartrate],
        vec![
            json!({"timestamp": "2026-11-20T21:02:08Z", "value": 63.0, "unit": "bpm", "timezone": "Etc/GMT-3"}),
            json!({"timestamp": "2026-11-20T21:07:08Z", "value": 62.0, "unit": "bpm", "timezone": "Etc/GMT-3"}),
            json!({"timestamp": "2026-11-23T09:00:00Z", "value": 71.0, "unit": "bpm", "timezone": "Etc/GMT-3"}),
            json!({"timestamp": "2026-11-23T09:05:00Z", "value": 122.0, "unit": "bpm", "timezone": "Etc/GMT-3"}),
        ]
    );
    assert_eq!(
        got[&Resource::Hrv],
        vec![
            json!({"timestamp": "2026-11-21T06:19:37Z", "value": 28.0, "unit": "ms", "timezone": "Etc/GMT-3"}),
            json!({"timestamp": "2026-11-23T12:00:00Z", "value": 41.0, "unit": "ms"}),
        ],
        "RMSSD at the end of the night's sleep, else noon UTC"
    );
    assert_eq!(got[&Resource::Profile], vec![json!({"height_cm": 175.0, "birth_year": 1990})]);
    assert_eq!(got[&Resource::Body], vec![json!({"date": today.to_string(), "weight_kg": 70.5})]);
    let past = polar.fetch(&account, &Resource::Body, fixture_range(), &NoLimit).await.unwrap();
    assert!(past.records.is_empty(), "the current weight is not written into past days");
}

#[tokio::test]
async fn long_ranges_are_asked_in_28_day_windows_no_older_than_365_days() {
    let (fake, polar) = setup().await;
    let account = fake.account();
    let today = Utc::now().date_naive();
    let range = DateRange { start: today - Duration::days(400), end: today };
    polar.fetch(&account, &Resource::Activity, range, &NoLimit).await.unwrap();
    let asked = fake.queries("activities");
    assert_eq!(asked.len(), 14, "366 days in windows of 28");
    assert_eq!(asked[0]["from"], (today - Duration::days(365)).to_string());
    assert_eq!(asked.last().unwrap()["to"], today.to_string());
    polar.fetch(&account, &Resource::Heartrate, range, &NoLimit).await.unwrap();
    assert_eq!(fake.queries("continuous-heart-rate").len(), 14);
}

#[tokio::test]
async fn ranges_older_than_polars_lists_cost_no_call() {
    let (fake, polar) = setup().await;
    let account = fake.account();
    let today = Utc::now().date_naive();
    let old = DateRange { start: today - Duration::days(90), end: today - Duration::days(60) };
    for resource in [Resource::Workouts, Resource::Sleep, Resource::Hrv] {
        assert!(polar.fetch(&account, &resource, old, &NoLimit).await.unwrap().records.is_empty());
    }
    let asked = ["exercises", "sleep", "nightly-recharge"].map(|r| fake.calls(r));
    assert_eq!(asked, [0, 0, 0], "the lists hold the last 28 or 30 days only");
    // Activity and heart rate take ranges: asked.
    polar.fetch(&account, &Resource::Activity, old, &NoLimit).await.unwrap();
    assert_eq!(fake.calls("activities"), 2);
}

#[tokio::test]
async fn answers_401_429_and_5xx_map_to_typed_errors() {
    let (fake, polar) = setup().await;
    let account = fake.account();
    let range = fixture_range();
    fake.set_failure(Some(Failure::Unauthorized));
    assert_eq!(
        polar.fetch(&account, &Resource::Sleep, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    fake.set_failure(Some(Failure::ServerError));
    assert!(matches!(
        polar.fetch(&account, &Resource::Workouts, range, &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    fake.set_failure(None);

    // Past the 15-minute budget Polar answers 429 with the seconds left in its window.
    fake.set_window_budget(1);
    assert!(polar.fetch(&account, &Resource::Workouts, range, &NoLimit).await.is_ok());
    let limited = polar.fetch(&account, &Resource::Workouts, range, &NoLimit).await;
    let Err(ProviderError::RateLimited { retry_after_secs }) = limited else { panic!("{limited:?}") };
    assert!((1..=900).contains(&retry_after_secs), "{retry_after_secs}");

    let other = polar.fetch(&account, &Resource::BloodOxygen, range, &NoLimit).await;
    assert!(matches!(other, Err(ProviderError::Unsupported(_))), "{other:?}");
}

#[test]
fn app_limits_are_polars_base_figures() {
    let polar = Polar::new(AppConfig::from_vars("polar", Polar::endpoints(), |_| None));
    assert_eq!(
        polar.app_limits(),
        &[
            RateWindow { requests: 500, window_secs: 900 },
            RateWindow { requests: 5_000, window_secs: 86_400 }
        ]
    );
    assert_eq!(polar.slug(), "polar");
    assert_eq!(Polar::endpoints().token, "https://polarremote.com/v2/oauth2/token");
}

#[test]
fn pushes_answer_the_ping_and_need_the_webhook_signature() {
    let polar = Polar::new(AppConfig::from_vars("polar", Polar::endpoints(), |_| None));
    let read = |request: &wearlab_domain::ports::providers::PushRequest| {
        polar.push(&client(), Some(WEBHOOK_SECRET), request)
    };
    let ping = br#"{"event":"PING","timestamp":"2018-05-15T14:22:24Z"}"#;
    let unsigned_ping = wearlab_domain::ports::providers::PushRequest {
        method: "POST".into(),
        body: ping.to_vec(),
        ..Default::default()
    };
    assert_eq!(read(&unsigned_ping), PushOutcome::Handshake { status: 200, body: None });
    assert_eq!(
        polar.push(&client(), None, &unsigned_ping),
        PushOutcome::Handshake { status: 200, body: None },
        "the ping comes before the secret exists"
    );

    let body = fake::WEBHOOK_EXERCISE.as_bytes();
    let good = fake::signed_push(WEBHOOK_SECRET, body);
    let PushOutcome::Notices(notices) = read(&good) else { panic!("refused") };
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].external_user_id, "475");
    assert_eq!(notices[0].resources, vec![Resource::Workouts]);
    assert_eq!(notices[0].range, Some(DateRange { start: day("2026-11-22"), end: day("2026-11-23") }));
    assert_eq!(polar.push_claimed_user(&good), None, "one webhook, the platform client's");

    let refused =
        |r: &wearlab_domain::ports::providers::PushRequest| matches!(read(r), PushOutcome::Refused(_));
    assert!(refused(&fake::signed_push("another-secret", body)), "bad signature");
    let mut upper = good.clone();
    upper.headers[1].1 = upper.headers[1].1.to_ascii_uppercase();
    assert!(!refused(&upper), "hex in either case");
    let mut tampered = good.clone();
    tampered.body = body.iter().map(|b| if *b == b'5' { b'6' } else { *b }).collect();
    assert!(refused(&tampered), "body changed after signing");
    let mut unsigned = good.clone();
    unsigned.headers.retain(|(k, _)| k != polar::SIGNATURE_HEADER);
    assert!(refused(&unsigned), "no signature");
    assert!(matches!(polar.push(&client(), None, &good), PushOutcome::Refused(_)), "no secret configured");
    let mut get = good.clone();
    get.method = "GET".into();
    assert!(refused(&get), "Polar only POSTs");

    let notice_of =
        |body: serde_json::Value| match read(&fake::signed_push(WEBHOOK_SECRET, body.to_string().as_bytes()))
        {
            PushOutcome::Notices(n) => n,
            other => panic!("{other:?}"),
        };
    let sleep = notice_of(json!({"event": "SLEEP", "user_id": 475, "date": "2019-12-31",
        "timestamp": "2018-05-15T14:22:24Z", "url": "https://www.polaraccesslink.com/v3/users/sleep/2019-12-31"}));
    assert_eq!(sleep[0].resources, vec![Resource::Sleep, Resource::Hrv]);
    assert_eq!(sleep[0].range, Some(DateRange { start: day("2019-12-30"), end: day("2019-12-31") }));
    let hr = notice_of(json!({"event": "CONTINUOUS_HEART_RATE", "user_id": 475, "date": "2022-09-30"}));
    assert_eq!(hr[0].resources, vec![Resource::Heartrate]);
    let info = notice_of(json!({"event": "PHYSICAL_INFORMATION", "user_id": 475}));
    assert_eq!(info[0].resources, vec![Resource::Profile, Resource::Body]);
    assert!(notice_of(json!({"event": "SLEEP_WISE_ALERTNESS", "user_id": 475})).is_empty(), "not mapped");
}

#[tokio::test]
async fn revoke_deregisters_the_user_at_polar() {
    let (fake, polar) = setup().await;
    let linked = fake.account();
    polar.revoke(&client(), &linked).await.unwrap();
    assert_eq!(fake.calls("deregister"), 1);
    assert!(!fake.registration().0, "deregistered");
    assert_eq!(
        polar.fetch(&linked, &Resource::Sleep, fixture_range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused),
        "deregistration revokes the token"
    );
    polar.revoke(&client(), &linked).await.unwrap();
    assert_eq!(fake.calls("deregister"), 2, "already gone: nothing left to revoke");
}

#[tokio::test]
async fn the_webhook_is_checked_and_reactivated_not_created() {
    let (fake, polar) = setup().await;
    let callback = "https://api.example/v2/provider_webhooks/polar";
    let missing = polar.ensure_subscriptions(&client(), callback, None).await;
    assert!(matches!(missing, Err(ProviderError::Unsupported(_))), "{missing:?}");
    assert_eq!(fake.calls("create-webhook"), 0, "its secret would be lost");

    // The operator's creation (docs/PROVIDERS.md): HTTP Basic, events and url.
    let endpoints = fake.start().await;
    let created = reqwest::Client::new()
        .post(format!("{}/v3/webhooks", endpoints.api))
        .basic_auth("polar-app", Some("polar-app-secret"))
        .header("content-type", "application/json")
        .body(json!({"events": polar::WEBHOOK_EVENTS, "url": callback}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: serde_json::Value = serde_json::from_str(&created.text().await.unwrap()).unwrap();
    assert!(created["data"]["signature_secret_key"].is_string());

    assert_eq!(polar.ensure_subscriptions(&client(), callback, None).await, Ok(0));
    fake.deactivate_webhook();
    assert_eq!(polar.ensure_subscriptions(&client(), callback, None).await, Ok(1));
    assert_eq!(fake.webhook().unwrap()["active"], true);
}
