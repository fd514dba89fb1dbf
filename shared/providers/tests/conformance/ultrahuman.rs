//! Conformance of the Ultrahuman partner API adapter against its local fake.

use std::collections::HashMap;

use chrono::{Duration, NaiveDate, Utc};
use serde_json::json;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderError, PushOutcome, PushRequest,
};
use wearlab_models::Resource;
use wearlab_providers::fake::ultrahuman::{EXPIRES_IN, Failure, FakeUltrahuman, USER_ID};
use wearlab_providers::ultrahuman::{self, Ultrahuman};
use wearlab_providers::{Adapter, AppConfig};

use crate::{COUNTING_WAIT_SECS, Counting};

const REDIRECT: &str = "https://wearlab.example/v2/link/provider/oauth/ultrahuman/callback";

fn client() -> OauthClient {
    OauthClient { client_id: "ultrahuman-app".into(), client_secret: Secret::new("ultrahuman-app-secret") }
}

async fn setup() -> (FakeUltrahuman, Ultrahuman) {
    let fake = FakeUltrahuman::new(client());
    let endpoints = fake.start().await;
    let config = AppConfig { endpoints, platform_client: None, push_token: None };
    (fake, Ultrahuman::new(config))
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

fn range(start: &str, end: &str) -> DateRange {
    DateRange { start: day(start), end: day(end) }
}

/// The days the metrics endpoint was asked for, in order.
fn dates(fake: &FakeUltrahuman) -> Vec<String> {
    fake.queries("metrics").into_iter().map(|q| q["date"].clone()).collect()
}

#[tokio::test]
async fn links_through_consent_code_exchange_and_the_user_id_of_user_info() {
    let (fake, ultrahuman) = setup().await;
    let request = AuthorizeRequest {
        client_id: client().client_id,
        redirect_uri: REDIRECT.into(),
        state: "state-1".into(),
    };
    let url = url::Url::parse(&ultrahuman.authorize_url(&request).unwrap()).unwrap();
    assert_eq!(url.path(), "/authorise", "Ultrahuman's spelling");
    let q: HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "ultrahuman-app");
    assert_eq!(q["redirect_uri"], REDIRECT);
    assert_eq!(q["scope"], "profile ring_data");
    assert_eq!(q["state"], "state-1");

    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(url.as_str()).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(REDIRECT));
    let back: HashMap<_, _> = location.query_pairs().into_owned().collect();
    assert_eq!(back["state"], "state-1");

    let exchange = CodeExchange {
        code: Secret::new(back["code"].clone()),
        redirect_uri: REDIRECT.into(),
        client: client(),
    };
    let before = Utc::now();
    let linked = ultrahuman.exchange_code(&exchange).await.unwrap();
    assert_eq!(linked.external_user_id, USER_ID, "user_info's user_id");
    assert!(linked.credentials.refresh_token.is_some());
    let expires = linked.credentials.expires_at.unwrap();
    assert!(
        expires >= before + Duration::seconds(EXPIRES_IN)
            && expires <= Utc::now() + Duration::seconds(EXPIRES_IN),
        "the answer's expires_in is trusted"
    );
    assert_eq!((fake.calls("token"), fake.calls("user_info")), (1, 1));
    let form = &fake.token_forms()[0];
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["client_id"], "ultrahuman-app", "the client in the body");
    assert_eq!(form["client_secret"], "ultrahuman-app-secret");
    assert_eq!(form["redirect_uri"], REDIRECT);

    let again = ultrahuman.exchange_code(&exchange).await;
    assert!(matches!(again, Err(ProviderError::CredentialError(_))), "a code works once: {again:?}");
}

#[tokio::test]
async fn refresh_stores_the_rotated_refresh_token_and_a_spent_one_is_revoked() {
    let (fake, ultrahuman) = setup().await;
    let first = fake.account().credentials;
    let second = ultrahuman.refresh(&client(), &first).await.unwrap();
    assert_ne!(second.access_token, first.access_token);
    assert_ne!(second.refresh_token, first.refresh_token, "the new refresh token is kept");
    assert!(second.expires_at.is_some());
    let form = fake.token_forms().pop().unwrap();
    assert_eq!(form["grant_type"], "refresh_token");
    assert_eq!(form["client_secret"], "ultrahuman-app-secret");

    // The old refresh token was spent by the rotation: refused, which is `Revoked`.
    let reused = ultrahuman.refresh(&client(), &first).await;
    assert!(matches!(reused, Err(ProviderError::Revoked(_))), "{reused:?}");
    let third = ultrahuman.refresh(&client(), &second).await.unwrap();
    assert_ne!(third.refresh_token, second.refresh_token);
}

#[tokio::test]
async fn fetches_each_resource_with_its_unit_one_call_per_day_through_the_gate() {
    let (fake, ultrahuman) = setup().await;
    let account = fake.account();
    let fixtures = range("2026-11-21", "2026-11-23");

    let gate = Counting::new();
    let sleep = ultrahuman.fetch(&account, &Resource::Sleep, fixtures, &gate).await.unwrap();
    assert_eq!(sleep.resource, Resource::Sleep);
    assert_eq!(
        sleep.records,
        vec![
            json!({"date": "2026-11-21", "bedtime_start": "2026-11-20T22:30:00Z",
                "bedtime_stop": "2026-11-21T06:30:00Z", "duration_s": 28800, "deep_s": 5400, "rem_s": 7200,
                "light_s": 12600, "awake_s": 3600, "efficiency": 85.5}),
            json!({"date": "2026-11-22", "bedtime_start": "2026-11-21T22:45:00Z",
                "bedtime_stop": "2026-11-22T06:15:00Z", "duration_s": 27000, "deep_s": 3240, "rem_s": 6300,
                "light_s": 15660, "awake_s": 1800, "efficiency": 90.5}),
        ]
    );
    // Three days, three calls, each admitted by the gate first.
    assert_eq!(dates(&fake), ["2026-11-21", "2026-11-22", "2026-11-23"]);
    assert_eq!(gate.admitted(), 3);

    let fetch = |resource: Resource, r: DateRange| {
        let (ultrahuman, account) = (&ultrahuman, &account);
        async move { ultrahuman.fetch(account, &resource, r, &NoLimit).await.unwrap().records }
    };
    let hr = fetch(Resource::Heartrate, range("2026-11-21", "2026-11-21")).await;
    assert_eq!(
        hr,
        vec![
            json!({"timestamp": "2026-11-21T08:01:00Z", "value": 68.0, "unit": "bpm"}),
            json!({"timestamp": "2026-11-21T08:02:00Z", "value": 72.0, "unit": "bpm"}),
            json!({"timestamp": "2026-11-21T08:03:00Z", "value": 75.0, "unit": "bpm"}),
            json!({"timestamp": "2026-11-21T08:04:00Z", "value": 71.0, "unit": "bpm"}),
            json!({"timestamp": "2026-11-21T23:55:00Z", "value": 58.0, "unit": "bpm"}),
        ],
        "the 21st's UTC day, its last sample from Ultrahuman's next day"
    );
    // A day more on each side (20..22); the 21st's and 22nd's documents came with the sleep's calls.
    assert_eq!(dates(&fake)[3..], ["2026-11-20"]);

    let hrv = fetch(Resource::Hrv, fixtures).await;
    assert_eq!(hrv.len(), 4);
    assert!(hrv.iter().all(|s| s["unit"] == "ms"));
    let temp = fetch(Resource::BodyTemperature, fixtures).await;
    assert_eq!(temp[0], json!({"timestamp": "2026-11-21T08:01:00Z", "value": 36.6, "unit": "°C"}));
    let steps = fetch(Resource::Steps, fixtures).await;
    assert_eq!(steps.iter().map(|s| s["value"].as_f64().unwrap()).sum::<f64>(), 750.0);
    assert!(steps.iter().all(|s| s["unit"] == "count"));
    let activity = fetch(Resource::Activity, fixtures).await;
    assert_eq!(
        activity,
        vec![json!({"date": "2026-11-21", "steps": 370.0}), json!({"date": "2026-11-22", "steps": 380.0})]
    );
    let vo2 = fetch(Resource::Vo2Max, fixtures).await;
    assert_eq!(
        vo2,
        vec![
            json!({"timestamp": "2026-11-21T00:00:00Z", "value": 41.5, "unit": "mL/kg/min"}),
            json!({"timestamp": "2026-11-22T00:00:00Z", "value": 42.0, "unit": "mL/kg/min"}),
        ]
    );

    for unfilled in [Resource::Glucose, Resource::BloodOxygen, Resource::Workouts] {
        let before = fake.calls("metrics");
        let refused = ultrahuman.fetch(&account, &unfilled, fixtures, &NoLimit).await;
        assert!(matches!(refused, Err(ProviderError::Unsupported(_))), "{unfilled}: {refused:?}");
        assert_eq!(fake.calls("metrics"), before, "{unfilled}: nothing asked");
    }
    assert_eq!(
        ultrahuman.resources(),
        &[
            Resource::Sleep,
            Resource::Activity,
            Resource::Heartrate,
            Resource::Hrv,
            Resource::BodyTemperature,
            Resource::Steps,
            Resource::Vo2Max
        ]
    );
}

#[tokio::test]
async fn the_resources_of_one_poll_share_each_days_call_and_the_next_poll_asks_again() {
    let (fake, ultrahuman) = setup().await;
    let account = fake.account();
    let poll = || async {
        let mut records = 0;
        for resource in ultrahuman.resources() {
            let gate = Counting::new();
            records += ultrahuman
                .fetch(&account, resource, range("2026-11-21", "2026-11-22"), &gate)
                .await
                .unwrap()
                .records
                .len();
        }
        records
    };
    let first = poll().await;
    // Sleep asked the 21st and 22nd, the timeseries the 20th and 23rd besides: each day once.
    assert_eq!(dates(&fake), ["2026-11-21", "2026-11-22", "2026-11-20", "2026-11-23"]);
    // The next poll asks every day again (new data may have come), once each.
    fake.add_metric(
        day("2026-11-22"),
        json!({"type": "hr", "object": {"values": [{"timestamp": 1795339920, "value": 70}]}}),
    );
    let second = poll().await;
    assert_eq!(dates(&fake)[4..], ["2026-11-21", "2026-11-22", "2026-11-20", "2026-11-23"]);
    assert_eq!(second, first + 1, "the new heart rate sample is read");
}

#[tokio::test]
async fn a_history_of_n_days_is_n_calls_and_the_gate_stops_it_when_full() {
    let (fake, ultrahuman) = setup().await;
    let account = fake.account();
    let month = range("2026-10-25", "2026-11-23");
    let gate = Counting::new();
    let sleep = ultrahuman.fetch(&account, &Resource::Sleep, month, &gate).await.unwrap();
    assert_eq!(sleep.records.len(), 2);
    assert_eq!((fake.calls("metrics"), gate.admitted()), (30, 30));

    // A full window stops the fetch before the call it refuses.
    let gate = Counting::with_budget(4);
    let stopped = ultrahuman.fetch(&account, &Resource::Sleep, month, &gate).await;
    assert_eq!(stopped, Err(ProviderError::RateLimited { retry_after_secs: COUNTING_WAIT_SECS }));
    assert_eq!(fake.calls("metrics"), 34, "four more calls, no fifth");

    // Days after tomorrow are not asked for.
    let today = Utc::now().date_naive();
    let ahead = DateRange { start: today, end: today + Duration::days(10) };
    let before = fake.calls("metrics");
    ultrahuman.fetch(&account, &Resource::Sleep, ahead, &NoLimit).await.unwrap();
    assert_eq!(fake.calls("metrics") - before, 2, "today and tomorrow");
}

#[tokio::test]
async fn answers_401_429_and_5xx_map_to_typed_errors() {
    let (fake, ultrahuman) = setup().await;
    let account = fake.account();
    let r = range("2026-11-21", "2026-11-21");
    fake.set_failure(Some(Failure::Unauthorized));
    assert_eq!(
        ultrahuman.fetch(&account, &Resource::Sleep, r, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    fake.set_failure(Some(Failure::RateLimited { retry_after: Some(37) }));
    assert_eq!(
        ultrahuman.fetch(&account, &Resource::Sleep, r, &NoLimit).await,
        Err(ProviderError::RateLimited { retry_after_secs: 37 })
    );
    fake.set_failure(Some(Failure::RateLimited { retry_after: None }));
    assert_eq!(
        ultrahuman.fetch(&account, &Resource::Sleep, r, &NoLimit).await,
        Err(ProviderError::RateLimited {
            retry_after_secs: wearlab_providers::http::DEFAULT_RETRY_AFTER_SECS
        })
    );
    fake.set_failure(Some(Failure::ServerError));
    assert!(matches!(
        ultrahuman.fetch(&account, &Resource::Sleep, r, &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    fake.set_failure(None);
    assert!(ultrahuman.fetch(&account, &Resource::Sleep, r, &NoLimit).await.is_ok());
    fake.expire_access_tokens();
    assert_eq!(
        ultrahuman.fetch(&account, &Resource::Sleep, r, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
}

#[test]
fn no_limits_are_published_and_the_hosts_are_ultrahumans() {
    let ultrahuman =
        Ultrahuman::new(AppConfig::from_vars(ultrahuman::SLUG, Ultrahuman::endpoints(), |_| None));
    assert_eq!(ultrahuman.slug(), "ultrahuman");
    assert!(ultrahuman.app_limits().is_empty() && ultrahuman.user_limits().is_empty());
    let e = Ultrahuman::endpoints();
    assert_eq!(e.authorize, "https://auth.ultrahuman.com/authorise");
    assert_eq!(e.token, "https://partner.ultrahuman.com/api/partners/oauth/token");
    assert_eq!(e.api, "https://partner.ultrahuman.com/api/partners/v1");
    assert_eq!(ultrahuman.revoke_url(), "https://partner.ultrahuman.com/api/partners/oauth/revoke");
}

#[test]
fn ultrahuman_sends_no_push() {
    let ultrahuman =
        Ultrahuman::new(AppConfig::from_vars(ultrahuman::SLUG, Ultrahuman::endpoints(), |_| None));
    assert!(!ultrahuman.pushes());
    let request = PushRequest { method: "POST".into(), body: b"{}".to_vec(), ..Default::default() };
    assert!(matches!(ultrahuman.push(&client(), None, &request), PushOutcome::Refused(_)));
}

#[tokio::test]
async fn revoke_ends_the_grant_with_the_refresh_token_and_the_client_in_the_form() {
    let (fake, ultrahuman) = setup().await;
    let account = fake.account();
    ultrahuman.revoke(&client(), &account).await.unwrap();
    let form = fake.revoke_forms().pop().unwrap();
    assert_eq!(form["token"], account.credentials.refresh_token.as_ref().unwrap().expose());
    assert_eq!(form["client_id"], "ultrahuman-app");
    assert_eq!(form["client_secret"], "ultrahuman-app-secret");
    // The grant is gone: neither token works any more.
    let r = range("2026-11-21", "2026-11-21");
    assert_eq!(
        ultrahuman.fetch(&account, &Resource::Sleep, r, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    assert!(matches!(
        ultrahuman.refresh(&client(), &account.credentials).await,
        Err(ProviderError::Revoked(_))
    ));

    // Another app's secret is refused: the revoke fails, to be retried.
    let other = OauthClient { client_id: "ultrahuman-app".into(), client_secret: Secret::new("wrong") };
    assert!(ultrahuman.revoke(&other, &fake.account()).await.is_err());
}
