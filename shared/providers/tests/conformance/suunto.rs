//! Conformance of the Suunto adapter against its local fake.

use base64::Engine;
use chrono::{Duration, NaiveDate, Utc};
use serde_json::json;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::signing::hmac_sha256;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderError, PushOutcome, PushRequest,
    RateWindow,
};
use wearlab_models::Resource;
use wearlab_providers::fake::suunto::{self as fake, Failure, FakeSuunto};
use wearlab_providers::suunto::{self, Suunto};
use wearlab_providers::{Adapter, AppConfig};

use crate::Counting;

const REDIRECT: &str = "https://wearlab.example/v2/link/provider/oauth/suunto/callback";
const SUBSCRIPTION_KEY: &str = "suunto-subscription-key";
const NOTIFICATION_SECRET: &str = "suunto-notification-secret";

fn client() -> OauthClient {
    OauthClient { client_id: "suunto-app".into(), client_secret: Secret::new("suunto-app-secret") }
}

async fn setup() -> (FakeSuunto, Suunto) {
    let fake = FakeSuunto::new(client(), SUBSCRIPTION_KEY);
    let endpoints = fake.start().await;
    let config = AppConfig { endpoints, platform_client: Some(client()), push_token: None };
    (fake, Suunto::new(config).with_subscription_key(Some(SUBSCRIPTION_KEY.into())))
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

/// The fixtures' days.
fn fixture_range() -> DateRange {
    DateRange { start: day("2026-11-21"), end: day("2026-11-23") }
}

async fn consent(suunto: &Suunto) -> String {
    let request =
        AuthorizeRequest { client_id: client().client_id, redirect_uri: REDIRECT.into(), state: "s".into() };
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(suunto.authorize_url(&request).unwrap()).send().await.unwrap();
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    location.query_pairs().find(|(k, _)| k == "code").unwrap().1.into_owned()
}

fn exchange(code: &str, client: OauthClient) -> CodeExchange {
    CodeExchange { code: Secret::new(code.to_owned()), redirect_uri: REDIRECT.into(), client }
}

#[tokio::test]
async fn links_with_basic_client_auth_keyed_by_the_suunto_user() {
    let (fake, suunto) = setup().await;
    let request = AuthorizeRequest {
        client_id: client().client_id,
        redirect_uri: REDIRECT.into(),
        state: "state-1".into(),
    };
    let url = url::Url::parse(&suunto.authorize_url(&request).unwrap()).unwrap();
    assert_eq!(url.path(), "/oauth/authorize");
    let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "suunto-app");
    assert_eq!(q["redirect_uri"], REDIRECT);
    assert_eq!(q["state"], "state-1");
    assert!(!q.contains_key("scope"), "Suunto documents no scope");

    let code = consent(&suunto).await;
    let before = Utc::now();
    let linked = suunto.exchange_code(&exchange(&code, client())).await.unwrap();
    assert_eq!(linked.external_user_id, fake::USERNAME, "the token answer's user, the webhooks' username");
    assert!(linked.credentials.refresh_token.is_some());
    let expires = linked.credentials.expires_at.unwrap();
    assert!(expires >= before + Duration::seconds(fake::EXPIRES_IN), "{expires}");
    assert_eq!(fake.calls("token:authorization_code"), 1);
    assert!(suunto.fetch(&linked, &Resource::Workouts, fixture_range(), &NoLimit).await.is_ok());

    // A code works once; a wrong secret is refused by Basic authentication.
    let again = suunto.exchange_code(&exchange(&code, client())).await;
    assert!(matches!(again, Err(ProviderError::CredentialError(_))), "{again:?}");
    let code = consent(&suunto).await;
    let wrong = OauthClient { client_id: "suunto-app".into(), client_secret: Secret::new("wrong") };
    let refused = suunto.exchange_code(&exchange(&code, wrong)).await;
    assert!(matches!(refused, Err(ProviderError::CredentialError(_))), "{refused:?}");
}

#[tokio::test]
async fn refresh_stores_the_new_refresh_token_and_a_spent_one_is_revoked() {
    let (fake, suunto) = setup().await;
    let account = fake.account();
    let refreshed = suunto.refresh(&client(), &account.credentials).await.unwrap();
    assert_ne!(refreshed.refresh_token, account.credentials.refresh_token, "the new refresh token is kept");
    assert_ne!(refreshed.access_token, account.credentials.access_token);
    assert_eq!(fake.calls("token:refresh_token"), 1);
    let renewed = wearlab_domain::ports::providers::ProviderAccount {
        external_user_id: account.external_user_id.clone(),
        credentials: refreshed.clone(),
    };
    assert!(suunto.fetch(&renewed, &Resource::Sleep, fixture_range(), &NoLimit).await.is_ok());

    let spent = suunto.refresh(&client(), &account.credentials).await;
    assert!(matches!(spent, Err(ProviderError::Revoked(_))), "{spent:?}");
    let again = suunto.refresh(&client(), &refreshed).await.unwrap();
    assert!(again.refresh_token.is_some(), "a refreshed answer carries one again");
}

#[tokio::test]
async fn fetches_every_resource_with_units_converted() {
    let (fake, suunto) = setup().await;
    let account = fake.account();
    let gate = Counting::new();
    let mut got = std::collections::HashMap::new();
    for resource in suunto.resources() {
        let fetched = suunto.fetch(&account, resource, fixture_range(), &gate).await.unwrap();
        assert_eq!(fetched.resource, *resource);
        got.insert(resource.clone(), fetched.records);
    }
    let calls: u32 = ["workouts", "daily-activity-statistics", "sleep", "activity", "fit"]
        .iter()
        .map(|r| fake.calls(r))
        .sum();
    assert_eq!(gate.admitted(), calls as usize, "every data call admitted by the gate first");
    assert_eq!(fake.calls("activity"), 1, "the five activity-sample series share one call per span");
    assert_eq!(fake.calls("fit"), 3, "each workout's FIT export asked once");
    assert!(got[&Resource::WorkoutStream].is_empty(), "no workout of these days has a recording");

    // Epoch-ms start, stop (else start plus totalTime), the offset's zone and local day.
    let w = &got[&Resource::Workouts];
    assert_eq!(w.len(), 3);
    assert_eq!(
        w[0],
        json!({"date": "2026-11-21", "time_start": "2026-11-21T07:30:00Z", "time_end": "2026-11-21T08:15:10Z",
            "sport": "running", "calories": 512.0, "distance_m": 7420.3, "average_hr": 151.0,
            "timezone": "Etc/GMT-1"})
    );
    assert_eq!(w[1]["date"], "2026-11-22", "20:00 on the 22nd in UTC-5, the 23rd in UTC");
    assert_eq!(w[1]["timezone"], "Etc/GMT+5");
    assert_eq!(w[1]["sport"], "cycling");
    assert_eq!(
        w[2],
        json!({"date": "2026-11-23", "time_start": "2026-11-23T12:20:00Z", "time_end": "2026-11-23T13:20:00Z",
            "sport": "cross_country_skiing", "calories": 500.0, "distance_m": 10000.0, "average_hr": 145.0,
            "timezone": "Etc/GMT-2"}),
        "Suunto's webhook example workout: no stopTime, totalTime 3600 s"
    );

    assert_eq!(
        got[&Resource::Activity],
        vec![
            json!({"date": "2026-11-22", "steps": 4617.0, "calories_active": 153.102}),
            json!({"date": "2026-11-23", "steps": 9210.0, "calories_active": 250.0}),
        ],
        "energy in J as kcal; a day of null values is no day"
    );

    let sleep = &got[&Resource::Sleep];
    assert_eq!(sleep.len(), 4);
    assert_eq!(
        sleep[0],
        json!({"date": "2026-11-21", "bedtime_start": "2026-11-20T20:50:00Z", "bedtime_stop": "2026-11-21T04:41:00Z",
            "duration_s": 28260, "deep_s": 5400, "light_s": 15600, "rem_s": 6000, "awake_s": 1260,
            "hr_average": 52.0, "timezone": "Etc/GMT-2"})
    );
    assert_eq!(sleep[2]["type"], "acknowledged_nap");
    assert_eq!(sleep[2]["duration_s"], 1800);
    assert!(sleep[1].get("type").is_none(), "a night is typed by its length");

    let values = |r: Resource| -> Vec<(String, f64, String)> {
        got[&r]
            .iter()
            .map(|s| {
                (
                    s["timestamp"].as_str().unwrap().to_owned(),
                    s["value"].as_f64().unwrap(),
                    s["unit"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let hr = values(Resource::Heartrate);
    assert_eq!(hr.len(), 5);
    assert_eq!(hr[0], ("2026-11-21T06:00:00Z".into(), 62.0, "bpm".into()));
    assert_eq!(hr[4], ("2026-11-23T07:00:00Z".into(), 122.0, "bpm".into()));
    let steps: Vec<f64> = values(Resource::Steps).into_iter().map(|s| s.1).collect();
    assert_eq!(steps, [120.0, 860.0, 0.0, 1310.0, 2050.0]);
    let kcal: Vec<f64> = values(Resource::CaloriesActive).into_iter().map(|s| s.1).collect();
    assert_eq!(kcal, [10.0, 30.0, 5.0, 50.0, 80.0], "J / 4184");
    assert!(values(Resource::CaloriesActive).iter().all(|s| s.2 == "kcal"));
    let spo2 = values(Resource::BloodOxygen);
    assert_eq!(spo2.iter().map(|s| s.1).collect::<Vec<_>>(), [97.0, 95.0, 96.0], "0-1 as %");
    assert!(spo2.iter().all(|s| s.2 == "%"));
    let hrv = values(Resource::Hrv);
    assert_eq!(hrv.iter().map(|s| s.1).collect::<Vec<_>>(), [45.0, 38.0], "RMSSD ms; a 0 is no reading");
    assert!(hrv.iter().all(|s| s.2 == "ms"));
}

#[tokio::test]
async fn workouts_are_paged_by_limit_and_offset_within_since_and_until() {
    let (fake, suunto) = setup().await;
    let suunto = suunto.with_page_size(1);
    let account = fake.account();
    let fetched = suunto.fetch(&account, &Resource::Workouts, fixture_range(), &NoLimit).await.unwrap();
    assert_eq!(fetched.records.len(), 3);
    let asked = fake.queries("workouts");
    let offsets: Vec<&str> = asked.iter().map(|q| q["offset"].as_str()).collect();
    assert_eq!(offsets, ["0", "1", "2", "3"], "until a short page");
    assert!(asked.iter().all(|q| q["limit"] == "1"));
    // The days either side, in epoch milliseconds.
    assert_eq!(asked[0]["since"], "1795132800000", "2026-11-20T00:00:00Z");
    assert_eq!(asked[0]["until"], "1795564799999", "2026-11-24T23:59:59.999Z");
}

#[tokio::test]
async fn long_ranges_are_asked_in_28_day_spans() {
    let (fake, suunto) = setup().await;
    let account = fake.account();
    let today = Utc::now().date_naive();
    let range = DateRange { start: today - Duration::days(59), end: today };
    suunto.fetch(&account, &Resource::Heartrate, range, &NoLimit).await.unwrap();
    let asked = fake.queries("activity");
    assert_eq!(asked.len(), 3, "61 days with the day before, in spans of 28");
    suunto.fetch(&account, &Resource::Activity, range, &NoLimit).await.unwrap();
    let asked = fake.queries("daily-activity-statistics");
    assert_eq!(asked.len(), 3);
    assert_eq!(asked[0]["startdate"], format!("{}T00:00:00", range.start));
    assert_eq!(asked[2]["enddate"], format!("{today}T23:59:59"));
}

#[tokio::test]
async fn answers_401_429_5xx_and_an_error_in_a_200_map_to_typed_errors() {
    let (fake, suunto) = setup().await;
    let account = fake.account();
    let range = fixture_range();
    fake.set_failure(Some(Failure::Unauthorized));
    assert_eq!(
        suunto.fetch(&account, &Resource::Sleep, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    fake.set_failure(Some(Failure::ServerError));
    assert!(matches!(
        suunto.fetch(&account, &Resource::Workouts, range, &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    fake.set_failure(Some(Failure::RateLimited));
    assert_eq!(
        suunto.fetch(&account, &Resource::Heartrate, range, &NoLimit).await,
        Err(ProviderError::RateLimited { retry_after_secs: 7 })
    );
    fake.set_failure(Some(Failure::ErrorInBody));
    let in_body = suunto.fetch(&account, &Resource::Workouts, range, &NoLimit).await;
    assert_eq!(in_body, Err(ProviderError::Api("suunto answered error E1001".into())), "a 200 is not data");
    fake.set_failure(None);

    // A full window stops the fetch before the request leaves.
    let before = fake.calls("sleep");
    let full = suunto.fetch(&account, &Resource::Sleep, range, &Counting::with_budget(0)).await;
    assert_eq!(full, Err(ProviderError::RateLimited { retry_after_secs: crate::COUNTING_WAIT_SECS }));
    assert_eq!(fake.calls("sleep"), before);

    let other = suunto.fetch(&account, &Resource::Body, range, &NoLimit).await;
    assert!(matches!(other, Err(ProviderError::Unsupported(_))), "{other:?}");

    // Without the subscription key nothing is sent.
    let endpoints = fake.start().await;
    let keyless = Suunto::new(AppConfig { endpoints, platform_client: Some(client()), push_token: None });
    let refused = keyless.fetch(&account, &Resource::Workouts, range, &NoLimit).await;
    let Err(ProviderError::Api(message)) = &refused else { panic!("{refused:?}") };
    assert!(message.contains(suunto::SUBSCRIPTION_KEY_VAR), "{message}");
    assert!(!message.contains(SUBSCRIPTION_KEY));
    let wrong_key = Suunto::new(AppConfig {
        endpoints: fake.start().await,
        platform_client: Some(client()),
        push_token: None,
    })
    .with_subscription_key(Some("another-key".into()));
    assert_eq!(
        wrong_key.fetch(&account, &Resource::Workouts, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused),
        "the fake refuses a call without the deployment's key"
    );
}

#[test]
fn app_limits_are_wearlabs_choice_as_suunto_publishes_none() {
    let suunto = Suunto::new(AppConfig::from_vars("suunto", Suunto::endpoints(), |_| None));
    assert_eq!(suunto.app_limits(), &[RateWindow { requests: 120, window_secs: 60 }]);
    assert_eq!(suunto.slug(), "suunto");
    assert_eq!(Suunto::endpoints().token, "https://cloudapi-oauth.suunto.com/oauth/token");
    assert_eq!(Suunto::endpoints().api, "https://cloudapi.suunto.com");
}

#[test]
fn notifications_need_the_notification_secrets_signature() {
    let suunto = Suunto::new(AppConfig::from_vars("suunto", Suunto::endpoints(), |_| None));
    let read = |request: &PushRequest| suunto.push(&client(), Some(NOTIFICATION_SECRET), request);
    let body = fake::WEBHOOK_WORKOUT_CREATED.as_bytes();
    let good = fake::signed_push(NOTIFICATION_SECRET, body);
    let PushOutcome::Notices(notices) = read(&good) else { panic!("refused") };
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].external_user_id, fake::USERNAME);
    assert_eq!(
        notices[0].resources,
        vec![Resource::Workouts, Resource::WorkoutStream],
        "the workout and its stream"
    );
    assert_eq!(
        notices[0].range,
        Some(DateRange { start: day("2026-11-22"), end: day("2026-11-24") }),
        "the inline workout's day, and a day either side"
    );

    let mut b64 = good.clone();
    b64.headers[1].1 =
        base64::engine::general_purpose::STANDARD.encode(hmac_sha256(NOTIFICATION_SECRET.as_bytes(), body));
    assert!(matches!(read(&b64), PushOutcome::Notices(_)), "base64 as well as hex");
    let mut upper = good.clone();
    upper.headers[1].1 = upper.headers[1].1.to_ascii_uppercase();
    assert!(matches!(read(&upper), PushOutcome::Notices(_)), "hex in either case");

    let refused = |r: &PushRequest| matches!(read(r), PushOutcome::Refused(_));
    assert!(refused(&fake::signed_push("another-secret", body)), "bad signature");
    let mut tampered = good.clone();
    tampered.body = fake::WEBHOOK_WORKOUT_CREATED.replace("johndoe123", "janedoe456").into_bytes();
    assert!(refused(&tampered), "body changed after signing");
    let mut unsigned = good.clone();
    unsigned.headers.retain(|(k, _)| k != suunto::SIGNATURE_HEADER);
    assert!(refused(&unsigned), "no signature");
    assert!(matches!(suunto.push(&client(), None, &good), PushOutcome::Refused(_)), "no secret configured");
    let mut get = good.clone();
    get.method = "GET".into();
    assert!(refused(&get), "Suunto only POSTs");

    let sleep = fake::signed_push(NOTIFICATION_SECRET, fake::WEBHOOK_SLEEP_CREATED.as_bytes());
    let PushOutcome::Notices(notices) = read(&sleep) else { panic!("refused") };
    assert_eq!(notices[0].resources, vec![Resource::Sleep]);
    assert_eq!(notices[0].range, Some(DateRange { start: day("2026-11-21"), end: day("2026-11-24") }));

    let notice_of = |body: serde_json::Value| match read(&fake::signed_push(
        NOTIFICATION_SECRET,
        body.to_string().as_bytes(),
    )) {
        PushOutcome::Notices(n) => n,
        other => panic!("{other:?}"),
    };
    let activity = notice_of(json!({"type": "SUUNTO_247_ACTIVITY_CREATED", "username": "johndoe123",
        "samples": [{"timestamp": "2026-11-23T09:00:00.000+02:00", "entryData": {"HR": 122}}]}));
    assert_eq!(
        activity[0].resources,
        vec![
            Resource::Activity,
            Resource::Heartrate,
            Resource::Steps,
            Resource::CaloriesActive,
            Resource::BloodOxygen,
            Resource::Hrv
        ]
    );
    assert!(
        notice_of(json!({"type": "SUUNTO_247_RECOVERY_CREATED", "username": "johndoe123", "samples": []}))
            .is_empty()
    );
    assert!(notice_of(json!({"type": "ROUTE_CREATED", "username": "johndoe123"})).is_empty(), "not mapped");
    let anonymous = fake::signed_push(NOTIFICATION_SECRET, br#"{"type":"WORKOUT_CREATED"}"#);
    assert!(refused(&anonymous), "a notification names its user");
}

#[tokio::test]
async fn revoke_deauthorizes_and_refreshes_an_expired_token_first() {
    let (fake, suunto) = setup().await;
    let linked = fake.account();
    suunto.revoke(&client(), &linked).await.unwrap();
    assert_eq!(fake.calls("deauthorize"), 1);
    assert_eq!(fake.queries("deauthorize")[0]["client_id"], "suunto-app");
    assert_eq!(
        suunto.fetch(&linked, &Resource::Sleep, fixture_range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused),
        "the access is gone"
    );
    // Nothing left to revoke: the refused token, then the refused refresh, count as done.
    suunto.revoke(&client(), &linked).await.unwrap();
    assert_eq!(fake.calls("token:refresh_token"), 1);

    // An expired access token is refreshed, then the access deauthorised.
    let other = fake.account();
    fake.expire_access_tokens();
    suunto.revoke(&client(), &other).await.unwrap();
    assert_eq!(fake.calls("token:refresh_token"), 2);
    assert_eq!(fake.calls("deauthorize"), 4);
}

#[tokio::test]
async fn a_workouts_stream_is_read_from_its_fit_export() {
    let (fake, suunto) = setup().await;
    let account = fake.account();
    let ride = DateRange { start: day("2022-02-07"), end: day("2022-02-07") };
    let rows = suunto.fetch(&account, &Resource::WorkoutStream, ride, &NoLimit).await.unwrap().records;
    // The fake answers the export only with the bearer token and the subscription key.
    assert_eq!(fake.calls("fit"), 1, "the one workout of the day, by its workoutKey");
    let units: std::collections::BTreeSet<&str> = rows.iter().filter_map(|r| r["unit"].as_str()).collect();
    assert_eq!(
        units,
        ["W", "m/s", "rpm"].into_iter().collect(),
        "power, speed and cadence; the file has no altitude"
    );
    assert!(rows.iter().all(|r| r["timezone"] == "Etc/UTC" && r["value"].is_number()));
    assert_eq!(rows.first().unwrap()["timestamp"], "2022-02-07T16:47:52Z");

    // Read once: the workouts of a second resource of the same round reuse the decoded file.
    suunto.fetch(&account, &Resource::WorkoutStream, ride, &NoLimit).await.unwrap();
    assert_eq!(fake.calls("fit"), 1);
}
