//! Conformance of the Dexcom v3 adapter against its local fake.

use std::collections::HashMap;

use chrono::{Duration, NaiveDate, NaiveDateTime, Utc};
use serde_json::json;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderError, PushOutcome, PushRequest,
    RateWindow,
};
use wearlab_models::Resource;
use wearlab_providers::dexcom::{self, Dexcom};
use wearlab_providers::fake::dexcom::{Failure, FakeDexcom, USER_ID};
use wearlab_providers::{Adapter, AppConfig};

const REDIRECT: &str = "https://wearlab.example/v2/link/provider/oauth/dexcom_v3/callback";

fn client() -> OauthClient {
    OauthClient { client_id: "dexcom-app".into(), client_secret: Secret::new("dexcom-app-secret") }
}

async fn setup() -> (FakeDexcom, Dexcom) {
    let fake = FakeDexcom::new(client());
    let endpoints = fake.start().await;
    let config = AppConfig { endpoints, platform_client: None, push_token: None };
    (fake, Dexcom::new(config))
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

/// The fixtures' days.
fn fixture_range() -> DateRange {
    DateRange { start: day("2026-11-21"), end: day("2026-11-23") }
}

fn instant(q: &HashMap<String, String>, k: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(&q[k], "%Y-%m-%dT%H:%M:%S").unwrap()
}

#[tokio::test]
async fn links_through_consent_code_exchange_and_the_user_id_of_data_range() {
    let (fake, dexcom) = setup().await;
    let request = AuthorizeRequest {
        client_id: client().client_id,
        redirect_uri: REDIRECT.into(),
        state: "state-1".into(),
    };
    let url = url::Url::parse(&dexcom.authorize_url(&request).unwrap()).unwrap();
    assert_eq!(url.path(), "/v2/oauth2/login");
    let q: HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "dexcom-app");
    assert_eq!(q["redirect_uri"], REDIRECT);
    assert_eq!(q["scope"], "offline_access");
    assert_eq!(q["state"], "state-1");

    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(url.as_str()).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(REDIRECT));
    let back: HashMap<_, _> = location.query_pairs().into_owned().collect();
    assert_eq!(back["state"], "state-1");

    let exchange = |redirect_uri: &str| CodeExchange {
        code: Secret::new(back["code"].clone()),
        redirect_uri: redirect_uri.into(),
        client: client(),
    };
    // The exchange repeats the consent's callback; another one is refused.
    let wrong = dexcom.exchange_code(&exchange("https://elsewhere.example/cb")).await;
    assert!(matches!(wrong, Err(ProviderError::CredentialError(_))), "{wrong:?}");

    let before = Utc::now();
    let linked = dexcom.exchange_code(&exchange(REDIRECT)).await.unwrap();
    assert_eq!(linked.external_user_id, USER_ID, "the userId of dataRange");
    assert!(linked.credentials.refresh_token.is_some());
    let expires = linked.credentials.expires_at.unwrap();
    assert!(expires >= before + Duration::seconds(7200) && expires <= Utc::now() + Duration::seconds(7200));
    assert_eq!((fake.calls("token"), fake.calls("dataRange")), (2, 1));
    // Client credentials and the callback in the body, as Dexcom's token form has them.
    let form = &fake.token_forms()[1];
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["client_id"], "dexcom-app");
    assert_eq!(form["client_secret"], "dexcom-app-secret");
    assert_eq!(form["redirect_uri"], REDIRECT);

    // A code works once.
    let again = dexcom.exchange_code(&exchange(REDIRECT)).await;
    assert!(matches!(again, Err(ProviderError::CredentialError(_))), "{again:?}");
}

#[tokio::test]
async fn refresh_keeps_the_latest_refresh_token_and_a_refused_one_is_revoked() {
    let (fake, dexcom) = setup().await;
    let dexcom = dexcom.with_public_url(Some("https://wearlab.example/".into()));
    let first = fake.account().credentials;
    let second = dexcom.refresh(&client(), &first).await.unwrap();
    assert_ne!(second.access_token, first.access_token);
    assert_ne!(second.refresh_token, first.refresh_token, "the one returned is kept");
    let form = fake.token_forms().pop().unwrap();
    assert_eq!(form["grant_type"], "refresh_token");
    assert_eq!(form["redirect_uri"], REDIRECT, "the link's callback, rebuilt from the public URL");
    assert_eq!(form["client_secret"], "dexcom-app-secret");

    // The fake spends a refresh token on use: a spent one is refused, which is `Revoked`.
    let reused = dexcom.refresh(&client(), &first).await;
    assert!(matches!(reused, Err(ProviderError::Revoked(_))), "{reused:?}");
    let wrong_app = OauthClient { client_id: "dexcom-app".into(), client_secret: Secret::new("wrong") };
    assert!(matches!(dexcom.refresh(&wrong_app, &second).await, Err(ProviderError::Revoked(_))));

    // No new refresh token in the answer: the old one is kept.
    fake.stop_rotating();
    let third = dexcom.refresh(&client(), &second).await.unwrap();
    assert_eq!(third.refresh_token, second.refresh_token);
    assert_ne!(third.access_token, second.access_token);
    assert_eq!(fake.calls("token"), 4);
}

#[tokio::test]
async fn fetches_glucose_in_the_apis_unit_over_windows_of_a_week() {
    let (fake, dexcom) = setup().await;
    let account = fake.account();
    assert_eq!(dexcom.resources(), &[Resource::Glucose]);
    let fetched = dexcom.fetch(&account, &Resource::Glucose, fixture_range(), &NoLimit).await.unwrap();
    assert_eq!(fetched.resource, Resource::Glucose);
    // The fixture's readings, oldest first, in mg/dL as Dexcom gave them; the example's reading
    // whose unit is `unknown` is kept, with its unit stated.
    assert_eq!(
        fetched.records,
        vec![
            json!({"timestamp": "2026-11-21T07:55:00+00:00", "value": 138.0, "unit": "mg/dL"}),
            json!({"timestamp": "2026-11-21T08:00:00+00:00", "value": 135.0, "unit": "unknown"}),
            json!({"timestamp": "2026-11-21T08:05:00+00:00", "value": 142.0, "unit": "mg/dL"}),
            json!({"timestamp": "2026-11-22T12:00:00+00:00", "value": 96.0, "unit": "mg/dL"}),
            json!({"timestamp": "2026-11-22T12:05:00+00:00", "value": 101.0, "unit": "mg/dL"}),
            json!({"timestamp": "2026-11-23T06:30:00+00:00", "value": 65.0, "unit": "mg/dL"}),
            json!({"timestamp": "2026-11-23T06:35:00+00:00", "value": 70.0, "unit": "mg/dL"}),
        ]
    );
    // Three days: one call, no dataRange.
    let q = fake.queries("egvs");
    assert_eq!(q.len(), 1);
    assert_eq!(q[0]["startDate"], "2026-11-21T00:00:00");
    assert_eq!(q[0]["endDate"], "2026-11-24T00:00:00");
    assert_eq!(fake.calls("dataRange"), 0);

    // Readings before the fixture's, one in mmol/L (read in mg/dL), one on a window's bound.
    let egv = |id: &str, at: &str, value: f64, unit: &str| {
        json!({"recordId": id, "systemTime": at, "displayTime": at, "value": value, "unit": unit,
            "status": "ok", "trend": "flat"})
    };
    fake.add_egv(egv("early", "2026-11-10T12:00:00", 180.0, "mg/dL"));
    fake.add_egv(egv("bound", "2026-11-17T12:00:00", 110.0, "mg/dL"));
    fake.add_egv(egv("mmol", "2026-11-24T00:00:00", 7.9, "mmol/L"));
    let longer = DateRange { start: day("2026-10-01"), end: day("2026-12-31") };
    let fetched = dexcom.fetch(&account, &Resource::Glucose, longer, &NoLimit).await.unwrap();
    assert_eq!(fetched.records.len(), 10, "{:?}", fetched.records);
    assert_eq!(fetched.records[0]["timestamp"], "2026-11-10T12:00:00+00:00");
    assert_eq!(
        fetched.records[1],
        json!({"timestamp": "2026-11-17T12:00:00+00:00", "value": 110.0, "unit": "mg/dL"})
    );
    assert_eq!(
        fetched.records[9],
        json!({"timestamp": "2026-11-24T00:00:00+00:00", "value": 7.9 * 18.0182, "unit": "mg/dL"})
    );
    // A long range: cut to the user's data (dataRange), then windows of at most a week that
    // cover it without a gap (the reading on the bound came twice and is kept once).
    assert_eq!(fake.calls("dataRange"), 1);
    let q = &fake.queries("egvs")[1..];
    assert_eq!(q.len(), 2);
    assert_eq!(q[0]["startDate"], "2026-11-10T12:00:00");
    assert_eq!(q[0]["endDate"], "2026-11-17T12:00:00");
    assert_eq!(q[1]["startDate"], "2026-11-17T12:00:00");
    assert_eq!(q[1]["endDate"], "2026-11-24T00:00:01");
    assert!(q.iter().all(|w| instant(w, "endDate") - instant(w, "startDate") <= Duration::days(7)));

    assert!(matches!(
        dexcom.fetch(&account, &Resource::Device, fixture_range(), &NoLimit).await,
        Err(ProviderError::Unsupported(_))
    ));
    assert!(matches!(
        dexcom.fetch(&account, &Resource::Heartrate, fixture_range(), &NoLimit).await,
        Err(ProviderError::Unsupported(_))
    ));
}

#[tokio::test]
async fn answers_401_429_and_5xx_map_to_typed_errors() {
    let (fake, dexcom) = setup().await;
    let account = fake.account();
    let range = fixture_range();
    fake.set_failure(Some(Failure::Unauthorized));
    assert_eq!(
        dexcom.fetch(&account, &Resource::Glucose, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    fake.set_failure(Some(Failure::RateLimited { retry_after: Some(37) }));
    assert_eq!(
        dexcom.fetch(&account, &Resource::Glucose, range, &NoLimit).await,
        Err(ProviderError::RateLimited { retry_after_secs: 37 })
    );
    fake.set_failure(Some(Failure::ServerError));
    assert!(matches!(
        dexcom.fetch(&account, &Resource::Glucose, range, &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    fake.set_failure(None);
    assert!(dexcom.fetch(&account, &Resource::Glucose, range, &NoLimit).await.is_ok());

    // Past the app's hourly calls Dexcom answers 429 without saying when: the default wait.
    fake.set_hourly_limit(1);
    assert!(dexcom.fetch(&account, &Resource::Glucose, range, &NoLimit).await.is_ok());
    assert_eq!(
        dexcom.fetch(&account, &Resource::Glucose, range, &NoLimit).await,
        Err(ProviderError::RateLimited {
            retry_after_secs: wearlab_providers::http::DEFAULT_RETRY_AFTER_SECS
        })
    );

    fake.set_hourly_limit(100);
    fake.expire_access_tokens();
    assert_eq!(
        dexcom.fetch(&account, &Resource::Glucose, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
}

#[test]
fn app_limits_are_dexcoms_published_ones() {
    let dexcom = Dexcom::new(AppConfig::from_vars(dexcom::SLUG, Dexcom::endpoints(), |_| None));
    assert_eq!(dexcom.app_limits(), &[RateWindow { requests: 60_000, window_secs: 3600 }]);
    assert_eq!(dexcom.slug(), "dexcom_v3");
}

#[test]
fn the_sandbox_is_configuration() {
    let vars = |k: &str| match k {
        "WEARLAB_PROVIDER_DEXCOM_V3_API_URL" => Some("https://sandbox-api.dexcom.com".to_owned()),
        _ => None,
    };
    let config = AppConfig::from_vars(dexcom::SLUG, Dexcom::endpoints_from(vars), vars);
    assert_eq!(config.endpoints.authorize, "https://sandbox-api.dexcom.com/v2/oauth2/login");
    assert_eq!(config.endpoints.token, "https://sandbox-api.dexcom.com/v2/oauth2/token");
    assert_eq!(config.endpoints.api, "https://sandbox-api.dexcom.com");
    // One endpoint moved on its own still wins.
    let vars = |k: &str| match k {
        "WEARLAB_PROVIDER_DEXCOM_V3_API_URL" => Some("https://api.dexcom.eu".to_owned()),
        "WEARLAB_PROVIDER_DEXCOM_V3_TOKEN_URL" => Some("http://127.0.0.1:9/token".to_owned()),
        _ => None,
    };
    let config = AppConfig::from_vars(dexcom::SLUG, Dexcom::endpoints_from(vars), vars);
    assert_eq!(config.endpoints.authorize, "https://api.dexcom.eu/v2/oauth2/login");
    assert_eq!(config.endpoints.token, "http://127.0.0.1:9/token");
}

#[test]
fn dexcom_sends_no_push() {
    let dexcom = Dexcom::new(AppConfig::from_vars(dexcom::SLUG, Dexcom::endpoints(), |_| None));
    assert!(!dexcom.pushes());
    let request = PushRequest { method: "POST".into(), body: b"{}".to_vec(), ..Default::default() };
    assert!(matches!(dexcom.push(&client(), None, &request), PushOutcome::Refused(_)));
}

#[tokio::test]
async fn revoke_calls_nothing_dexcom_has_no_revoke_endpoint() {
    let (fake, dexcom) = setup().await;
    let account = fake.account();
    dexcom.revoke(&client(), &account).await.unwrap();
    assert_eq!(fake.total_calls(), 0);
}
