//! Conformance of the hammerhead adapter against its local fake.

use std::collections::HashMap;

use crate::{COUNTING_WAIT_SECS, Counting};
use chrono::NaiveDate;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderError, PushOutcome,
};
use wearlab_models::Resource;
use wearlab_providers::fake::hammerhead::{self as fake, Failure, FakeHammerhead, USER_ID, WEBHOOK_ACTIVITY};
use wearlab_providers::hammerhead::{self, Hammerhead};
use wearlab_providers::{Adapter, AppConfig};

const REDIRECT: &str = "https://wearlab.example/v2/link/provider/oauth/hammerhead/callback";
const WEBHOOK_SECRET: &str = "hammerhead-webhook-secret";

fn client() -> OauthClient {
    OauthClient { client_id: "hammerhead-app".into(), client_secret: Secret::new("hammerhead-app-secret") }
}

async fn setup() -> (FakeHammerhead, Hammerhead) {
    let fake = FakeHammerhead::new(client());
    let endpoints = fake.start().await;
    let config = AppConfig {
        endpoints,
        platform_client: Some(client()),
        push_token: Some(Secret::new(WEBHOOK_SECRET)),
    };
    (fake, Hammerhead::new(config))
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

/// The fixtures' days.
fn fixture_range() -> DateRange {
    DateRange { start: day("2022-02-06"), end: day("2022-02-07") }
}

#[tokio::test]
async fn links_through_consent_and_code_exchange_naming_the_user() {
    let (fake, adapter) = setup().await;
    let request = AuthorizeRequest {
        client_id: client().client_id,
        redirect_uri: REDIRECT.into(),
        state: "state-1".into(),
    };
    let url = url::Url::parse(&adapter.authorize_url(&request).unwrap()).unwrap();
    assert!(url.path().ends_with("/v1/auth/oauth/authorize"), "{url}");
    let q: HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["scope"], "activity:read");
    assert_eq!(q["state"], "state-1");

    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(url.as_str()).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    let back: HashMap<_, _> = location.query_pairs().into_owned().collect();
    let exchange = CodeExchange {
        code: Secret::new(back["code"].clone()),
        redirect_uri: REDIRECT.into(),
        client: client(),
    };
    let linked = adapter.exchange_code(&exchange).await.unwrap();
    assert_eq!(linked.external_user_id, USER_ID, "the token answer's user_id");
    assert!(linked.credentials.refresh_token.is_some());
    assert_eq!(fake.calls("token"), 1);
    assert!(matches!(adapter.exchange_code(&exchange).await, Err(ProviderError::CredentialError(_))));

    // Each refresh token works once; the new one is kept.
    let fresh = adapter.refresh(&client(), &linked.credentials).await.unwrap();
    assert_ne!(fresh.refresh_token, linked.credentials.refresh_token);
    assert!(matches!(adapter.refresh(&client(), &linked.credentials).await, Err(ProviderError::Revoked(_))));
}

#[tokio::test]
async fn fetches_the_activities_and_their_fit_files_with_units() {
    let (fake, adapter) = setup().await;
    let account = fake.account();
    let mut got = HashMap::new();
    for resource in adapter.resources() {
        let fetched = adapter.fetch(&account, resource, fixture_range(), &NoLimit).await.unwrap();
        got.insert(resource.clone(), fetched.records);
    }
    let workouts = &got[&Resource::Workouts];
    assert_eq!(workouts.len(), 2, "{workouts:?}");
    let ride = workouts.iter().find(|w| w["distance_m"] == 6873.6).unwrap();
    assert_eq!(ride["time_start"], "2022-02-07T16:47:52Z", "when the recording starts");
    assert_eq!(ride["time_end"], "2022-02-07T17:05:44Z", "+ duration (s)");
    assert_eq!(ride["sport"], "cycling", "the file's session");
    assert!(ride["average_hr"].as_f64().is_some_and(|hr| (60.0..200.0).contains(&hr)));
    assert!(ride.get("date").is_none(), "dated by the pipeline in the user's zone");
    let other = workouts.iter().find(|w| w["distance_m"] == 30125.4).unwrap();
    assert_eq!(other["time_start"], "2022-02-06T16:30:00Z", "no file: its createdAt");
    assert_eq!(other["sport"], "other");

    let fit = wearlab_providers::fit::samples(fake::FIT_FILE).unwrap();
    assert_eq!(got[&Resource::Heartrate].len(), fit.len());
    assert!(got[&Resource::Heartrate].iter().all(|r| r["unit"] == "bpm" && r.get("timezone").is_none()));
    let covered: f64 = got[&Resource::Distance].iter().map(|r| r["value"].as_f64().unwrap()).sum();
    assert!((covered - 6873.6).abs() < 0.5, "{covered}");
    for unit in ["W", "rpm", "m/s"] {
        assert!(got[&Resource::WorkoutStream].iter().any(|r| r["unit"] == unit), "{unit}");
    }
    assert_eq!(fake.calls("activities"), 1, "one list for the four resources");
    assert_eq!(fake.calls("file"), 2, "each activity's file asked once (one has none)");
    let list = &fake.queries("activities")[0];
    assert_eq!((list["perPage"].as_str(), list["startDate"].as_str()), ("100", "2022-02-05"));
}

#[tokio::test]
async fn each_request_is_admitted_and_errors_are_typed() {
    let (fake, adapter) = setup().await;
    let account = fake.account();
    let gate = Counting::new();
    adapter.fetch(&account, &Resource::Heartrate, fixture_range(), &gate).await.unwrap();
    assert_eq!(gate.admitted(), 3, "the list and two files");
    let spent = Counting::with_budget(0);
    assert_eq!(
        Hammerhead::new(AppConfig::from_vars("hammerhead", Hammerhead::endpoints(), |_| None))
            .fetch(&account, &Resource::Workouts, fixture_range(), &spent)
            .await,
        Err(ProviderError::RateLimited { retry_after_secs: COUNTING_WAIT_SECS })
    );

    let (fake, adapter) = setup().await;
    let account = fake.account();
    fake.set_failure(Some(Failure::Unauthorized));
    assert_eq!(
        adapter.fetch(&account, &Resource::Workouts, fixture_range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    fake.set_failure(Some(Failure::TooManyRequests));
    assert!(matches!(
        adapter.fetch(&account, &Resource::Workouts, fixture_range(), &NoLimit).await,
        Err(ProviderError::RateLimited { .. })
    ));
    fake.set_failure(Some(Failure::ServerError));
    assert!(matches!(
        adapter.fetch(&account, &Resource::Workouts, fixture_range(), &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    assert!(matches!(
        adapter.fetch(&account, &Resource::Sleep, fixture_range(), &NoLimit).await,
        Err(ProviderError::Unsupported(_))
    ));
}

#[test]
fn a_delivery_needs_the_webhook_secrets_signature() {
    let adapter = Hammerhead::new(AppConfig::from_vars("hammerhead", Hammerhead::endpoints(), |_| None));
    let signed = fake::signed_push(WEBHOOK_SECRET, WEBHOOK_ACTIVITY.as_bytes());
    let PushOutcome::Notices(notices) = adapter.push(&client(), Some(WEBHOOK_SECRET), &signed) else {
        panic!("a signed delivery is read")
    };
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].external_user_id, USER_ID);
    assert_eq!(notices[0].resources, adapter.resources());

    let refused = |o: PushOutcome| matches!(o, PushOutcome::Refused(_));
    let forged = fake::signed_push("another-secret", WEBHOOK_ACTIVITY.as_bytes());
    assert!(refused(adapter.push(&client(), Some(WEBHOOK_SECRET), &forged)));
    let mut unsigned = signed.clone();
    unsigned.headers.retain(|(k, _)| k != hammerhead::SIGNATURE_HEADER);
    assert!(refused(adapter.push(&client(), Some(WEBHOOK_SECRET), &unsigned)));
    assert!(refused(adapter.push(&client(), None, &signed)), "no secret configured");
    let mut prefixed = signed.clone();
    for (k, v) in &mut prefixed.headers {
        if k == hammerhead::SIGNATURE_HEADER {
            *v = format!("sha256={v}");
        }
    }
    assert!(!refused(adapter.push(&client(), Some(WEBHOOK_SECRET), &prefixed)), "a prefix is stripped");
}

#[tokio::test]
async fn revoke_deauthorizes_refreshing_an_expired_token_first() {
    let (fake, adapter) = setup().await;
    let account = fake.account();
    adapter.revoke(&client(), &account).await.unwrap();
    assert_eq!(fake.calls("deauthorize"), 1);
    assert_eq!(
        adapter.fetch(&account, &Resource::Workouts, fixture_range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );

    let (fake, adapter) = setup().await;
    let account = fake.account();
    fake.expire_access_tokens();
    adapter.revoke(&client(), &account).await.unwrap();
    assert_eq!(fake.calls("deauthorize"), 2, "refused, refreshed, deauthorised");
    assert_eq!(fake.calls("token"), 1);
}
