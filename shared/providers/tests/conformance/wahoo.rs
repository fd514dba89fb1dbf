//! Conformance of the wahoo adapter against its local fake.

use std::collections::HashMap;

use crate::{COUNTING_WAIT_SECS, Counting};
use chrono::{Duration, NaiveDate, Utc};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderAccount, ProviderError,
    PushOutcome,
};
use wearlab_models::Resource;
use wearlab_providers::fake::wahoo::{self as fake, Failure, FakeWahoo, USER_ID, WEBHOOK_WORKOUT_SUMMARY};
use wearlab_providers::wahoo::{self, AppMode, Wahoo};
use wearlab_providers::{Adapter, AppConfig};

const REDIRECT: &str = "https://wearlab.example/v2/link/provider/oauth/wahoo/callback";
/// The `webhook_token` of the app's settings at Wahoo, as the fixtures' delivery carries it.
const WEBHOOK_TOKEN: &str = "wahoo-webhook-token";

fn client() -> OauthClient {
    OauthClient { client_id: "wahoo-app".into(), client_secret: Secret::new("wahoo-app-secret") }
}

async fn setup() -> (FakeWahoo, Wahoo) {
    let fake = FakeWahoo::new(client());
    let endpoints = fake.start().await;
    let config = AppConfig {
        endpoints,
        platform_client: Some(client()),
        push_token: Some(Secret::new(WEBHOOK_TOKEN)),
    };
    (fake, Wahoo::new(config))
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

/// The fixtures' days (the recorded ride's, see the fixtures' README).
fn fixture_range() -> DateRange {
    DateRange { start: day(FIXTURE_FIRST_DAY), end: day(FIXTURE_LAST_DAY) }
}

const FIXTURE_FIRST_DAY: &str = "2022-02-06";
const FIXTURE_LAST_DAY: &str = "2022-02-08";
/// The recorded ride: the FIT file's first record, and the summary's `duration_total_accum` after.
const RIDE_START: &str = "2022-02-07T16:47:52Z";
const RIDE_END: &str = "2022-02-07T16:52:27Z";
/// The series of the ride's file (an indoor ride: no altitude).
const STREAM_UNITS: &[&str] = &["W", "rpm", "m/s"];

#[tokio::test]
async fn links_through_consent_and_a_query_string_token_request_naming_the_user() {
    let (fake, adapter) = setup().await;
    let request = AuthorizeRequest {
        client_id: client().client_id,
        redirect_uri: REDIRECT.into(),
        state: "state-1".into(),
    };
    let url = url::Url::parse(&adapter.authorize_url(&request).unwrap()).unwrap();
    let q: HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "wahoo-app");
    assert_eq!(q["scope"], "user_read workouts_read offline_data", "space-separated, as Wahoo wants");

    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(url.as_str()).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    let back: HashMap<_, _> = location.query_pairs().into_owned().collect();
    assert_eq!(back["state"], "state-1");

    let exchange = CodeExchange {
        code: Secret::new(back["code"].clone()),
        redirect_uri: REDIRECT.into(),
        client: client(),
    };
    let before = Utc::now();
    let linked = adapter.exchange_code(&exchange).await.unwrap();
    assert_eq!(linked.external_user_id, USER_ID.to_string(), "the id of GET /v1/user");
    assert!(linked.credentials.refresh_token.is_some());
    let expires = linked.credentials.expires_at.unwrap();
    assert!(expires >= before + Duration::hours(2) && expires <= Utc::now() + Duration::hours(2));
    let token_calls = fake.queries("token");
    assert_eq!(token_calls.len(), 1);
    assert_eq!(token_calls[0]["client"], "query", "the fields in the query string, as Wahoo documents");
    assert_eq!(fake.calls("user"), 1);

    // A code works once; another app's secret is refused.
    assert!(matches!(adapter.exchange_code(&exchange).await, Err(ProviderError::CredentialError(_))));
    let wrong = CodeExchange {
        client: OauthClient { client_id: "wahoo-app".into(), client_secret: Secret::new("wrong") },
        ..exchange
    };
    assert!(matches!(adapter.exchange_code(&wrong).await, Err(ProviderError::CredentialError(_))));
}

/// Wahoo's rotation: the old pair keeps working until the new access token is first used, then
/// it is revoked. Used at once, as the pipeline does, a user never holds more than two tokens.
#[tokio::test]
async fn a_refreshed_pair_replaces_the_old_one_at_its_first_use() {
    let (fake, adapter) = setup().await;
    let first = fake.account();
    let range = fixture_range();
    let second = ProviderAccount {
        external_user_id: first.external_user_id.clone(),
        credentials: adapter.refresh(&client(), &first.credentials).await.unwrap(),
    };
    assert_ne!(second.credentials.refresh_token, first.credentials.refresh_token, "a new pair");
    assert_eq!(fake.unrevoked_tokens(), 2);
    assert!(adapter.fetch(&first, &Resource::Profile, range, &NoLimit).await.is_ok(), "still live");
    assert!(adapter.fetch(&second, &Resource::Profile, range, &NoLimit).await.is_ok());
    assert_eq!(fake.unrevoked_tokens(), 1, "the first use revoked the old pair");
    assert_eq!(
        adapter.fetch(&first, &Resource::Profile, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    assert!(matches!(adapter.refresh(&client(), &first.credentials).await, Err(ProviderError::Revoked(_))));

    let mut current = second;
    for _ in 0..12 {
        current.credentials = adapter.refresh(&client(), &current.credentials).await.unwrap();
        adapter.fetch(&current, &Resource::Profile, range, &NoLimit).await.unwrap();
        assert_eq!(fake.unrevoked_tokens(), 1, "well under Wahoo's ten unrevoked tokens");
    }
    let refreshes = fake.queries("token");
    assert!(refreshes.iter().all(|q| q["grant_type"] == "refresh_token" && q["client"] == "query"));
}

#[tokio::test]
async fn fetches_every_resource_with_units() {
    let (fake, adapter) = setup().await;
    let account = fake.account();
    let today = Utc::now().date_naive();
    let mut got = HashMap::new();
    for resource in adapter.resources() {
        let range = if *resource == Resource::Body {
            DateRange { start: today, end: today }
        } else {
            fixture_range()
        };
        let fetched = adapter.fetch(&account, resource, range, &NoLimit).await.unwrap();
        assert_eq!(fetched.resource, *resource);
        got.insert(resource.clone(), fetched.records);
    }

    assert_eq!(got[&Resource::Profile], vec![json!({"height_m": 2.0, "birth_year": 1980})], "metres");
    assert_eq!(got[&Resource::Body], vec![json!({"date": today.to_string(), "weight_kg": 80.0})]);

    let workouts = &got[&Resource::Workouts];
    assert_eq!(workouts.len(), 2, "the workout without a summary is no record: {workouts:?}");
    let ride = workouts.iter().find(|w| w["time_start"] == RIDE_START).unwrap();
    assert_eq!(ride["sport"], "biking");
    assert_eq!(ride["distance_m"], 24909.71, "a decimal Wahoo writes as a string");
    assert_eq!(ride["calories"], 1500.0);
    assert_eq!(ride["average_hr"], 100.0);
    assert_eq!(ride["timezone"], "America/Denver");
    assert_eq!(ride["time_end"], RIDE_END, "start + duration_total_accum");

    // The ride's FIT file, decoded.
    let fit = wearlab_providers::fit::samples(fake::FIT_FILE).unwrap();
    let hr = &got[&Resource::Heartrate];
    assert_eq!(hr.len(), fit.iter().filter(|s| s.heart_rate.is_some()).count());
    assert!(!hr.is_empty());
    assert!(hr.iter().all(|r| r["unit"] == "bpm" && r["timezone"] == "America/Denver"));
    let distance = &got[&Resource::Distance];
    assert!(distance.iter().all(|r| r["unit"] == "m"));
    let covered: f64 = distance.iter().map(|r| r["value"].as_f64().unwrap()).sum();
    let last = fit.iter().filter_map(|s| s.distance).next_back().unwrap();
    assert!(
        (covered - last).abs() < 0.5,
        "the metres since each sample add up to the file's {last}: {covered}"
    );
    let stream = &got[&Resource::WorkoutStream];
    for unit in STREAM_UNITS {
        assert!(stream.iter().any(|r| r["unit"] == *unit), "{unit}");
    }
    assert_eq!(fake.calls("file"), 1, "the file read once for the three stream resources");
    assert_eq!(fake.calls("workouts"), 1, "one list for the workouts and the three stream resources");
    assert_eq!(fake.queries("workouts")[0]["per_page"], wahoo::PER_PAGE.to_string());
}

/// The list has no date filter and is newest first: it is read until a page reaches past the
/// window, not to its end.
#[tokio::test]
async fn the_workout_list_is_paged_until_past_the_window() {
    let (fake, adapter) = setup().await;
    fake.add_older_workouts(130);
    let account = fake.account();
    let workouts = adapter.fetch(&account, &Resource::Workouts, fixture_range(), &NoLimit).await.unwrap();
    assert_eq!(workouts.records.len(), 2);
    assert_eq!(fake.calls("workouts"), 1, "the first page already reaches past the window");

    let (fake, adapter) = setup().await;
    fake.add_older_workouts(130);
    let account = fake.account();
    let end = day(FIXTURE_LAST_DAY);
    let whole = DateRange { start: end - Duration::days(200), end };
    let workouts = adapter.fetch(&account, &Resource::Workouts, whole, &NoLimit).await.unwrap();
    assert_eq!(workouts.records.len(), 2 + 130);
    let pages: Vec<String> = fake.queries("workouts").iter().map(|q| q["page"].clone()).collect();
    assert_eq!(pages, ["1", "2", "3"], "133 workouts, 50 a page, to the list's total");
}

#[tokio::test]
async fn each_request_is_admitted_by_the_gate_and_a_refusal_ends_the_fetch() {
    let (fake, adapter) = setup().await;
    let account = fake.account();
    let gate = Counting::new();
    let fetch = |resource| adapter.fetch(&account, resource, fixture_range(), &gate);
    let (hr, distance, stream) = tokio::join!(
        fetch(&Resource::Heartrate),
        fetch(&Resource::Distance),
        fetch(&Resource::WorkoutStream)
    );
    assert!(!hr.unwrap().records.is_empty());
    assert!(!distance.unwrap().records.is_empty());
    assert!(!stream.unwrap().records.is_empty());
    assert_eq!(gate.admitted(), 2, "the list and the file, each admitted once");

    let (fake, adapter) = setup().await;
    let account = fake.account();
    let spent = Counting::with_budget(0);
    assert_eq!(
        adapter.fetch(&account, &Resource::Workouts, fixture_range(), &spent).await,
        Err(ProviderError::RateLimited { retry_after_secs: COUNTING_WAIT_SECS })
    );
    assert_eq!(fake.calls("workouts"), 0, "nothing sent");
}

#[tokio::test]
async fn answers_401_429_and_5xx_map_to_typed_errors() {
    let (fake, adapter) = setup().await;
    let account = fake.account();
    let range = fixture_range();
    fake.set_failure(Some(Failure::Unauthorized));
    assert_eq!(
        adapter.fetch(&account, &Resource::Workouts, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    fake.set_failure(Some(Failure::ServerError));
    assert!(matches!(
        adapter.fetch(&account, &Resource::Profile, range, &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    fake.set_failure(None);

    // Over the 5-minute window: Wahoo's X-RateLimit-Reset says how long to wait.
    fake.set_limits((250, 100, 1));
    adapter.fetch(&account, &Resource::Profile, range, &NoLimit).await.unwrap();
    match adapter.fetch(&account, &Resource::Profile, range, &NoLimit).await {
        Err(ProviderError::RateLimited { retry_after_secs }) => {
            assert!((1..=300).contains(&retry_after_secs))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_limits_are_the_app_modes() {
    let config = || AppConfig::from_vars("wahoo", Wahoo::endpoints(), |_| None);
    assert_eq!(Wahoo::new(config()).app_limits(), wahoo::SANDBOX_LIMITS, "a new app is a Sandbox app");
    assert_eq!(Wahoo::new(config()).mode(AppMode::Production).app_limits(), wahoo::PRODUCTION_LIMITS);
    assert_eq!(
        wahoo::SANDBOX_LIMITS.iter().map(|w| (w.requests, w.window_secs)).collect::<Vec<_>>(),
        [(25, 300), (100, 3_600), (250, 86_400)]
    );
    let adapter = Wahoo::new(config());
    assert_eq!(adapter.slug(), "wahoo");
    assert_eq!(Wahoo::endpoints().api, "https://api.wahooligan.com");
    assert_eq!(Wahoo::endpoints().token, "https://api.wahooligan.com/oauth/token");
}

#[test]
fn a_delivery_is_read_only_with_the_apps_webhook_token() {
    let adapter = Wahoo::new(AppConfig::from_vars("wahoo", Wahoo::endpoints(), |_| None));
    let example = fake::delivery(WEBHOOK_WORKOUT_SUMMARY);
    let Some(PushOutcome::Notices(notices)) = adapter.push_unsigned(Some(WEBHOOK_TOKEN), &example) else {
        panic!("read without an OAuth app")
    };
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].external_user_id, USER_ID.to_string());
    assert_eq!(
        notices[0].resources,
        [Resource::Workouts, Resource::WorkoutStream, Resource::Heartrate, Resource::Distance]
    );
    let ride_day = day(&RIDE_START[..10]);
    assert_eq!(
        notices[0].range,
        Some(DateRange { start: ride_day - Duration::days(1), end: ride_day + Duration::days(1) })
    );

    let refused = |token: Option<&str>, body: &str| {
        matches!(wahoo::read_push(token, &fake::delivery(body)), PushOutcome::Refused(_))
    };
    assert!(refused(Some("another-token"), WEBHOOK_WORKOUT_SUMMARY), "a wrong token");
    assert!(refused(None, WEBHOOK_WORKOUT_SUMMARY), "no token configured");
    let mut without: Value = serde_json::from_str(WEBHOOK_WORKOUT_SUMMARY).unwrap();
    without.as_object_mut().unwrap().remove("webhook_token");
    assert!(refused(Some(WEBHOOK_TOKEN), &without.to_string()), "no token in the body");
    assert!(refused(Some(WEBHOOK_TOKEN), "not json"));

    // The modelled copy's `event` is read as Wahoo's `event_type`.
    let mut event: Value = serde_json::from_str(WEBHOOK_WORKOUT_SUMMARY).unwrap();
    let kind = event.as_object_mut().unwrap().remove("event_type").unwrap();
    event["event"] = kind;
    assert!(matches!(wahoo::read_push(Some(WEBHOOK_TOKEN), &fake::delivery(&event.to_string())),
        PushOutcome::Notices(n) if n.len() == 1));
}

#[tokio::test]
async fn revoke_deletes_the_permissions_refreshing_an_expired_token_first() {
    let (fake, adapter) = setup().await;
    let account = fake.account();
    adapter.revoke(&client(), &account).await.unwrap();
    assert_eq!(fake.calls("permissions"), 1);
    assert_eq!(
        adapter.fetch(&account, &Resource::Profile, fixture_range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused),
        "every token is gone"
    );

    let (fake, adapter) = setup().await;
    let account = fake.account();
    fake.expire_access_tokens();
    adapter.revoke(&client(), &account).await.unwrap();
    assert_eq!(fake.calls("permissions"), 2, "refused, refreshed, deleted");
    assert_eq!(fake.queries("token").len(), 1);
}
