//! Conformance of the Google Health adapter against its local fake.

use std::collections::HashMap;

use chrono::{Duration, NaiveDate, Utc};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderError, PushOutcome, RateWindow,
};
use wearlab_models::Resource;
use wearlab_providers::fake::google_health::{self as fake, GoogleHealthFake};
use wearlab_providers::google_health::{self, GoogleHealth, GoogleUrls};
use wearlab_providers::{Adapter, AppConfig};

const REDIRECT: &str = "https://wearlab.example/v2/link/provider/oauth/google_health/callback";
const PUSH_SECRET: &str = "Bearer subscriber-secret";

fn client() -> OauthClient {
    OauthClient {
        client_id: "gh-app.apps.googleusercontent.com".into(),
        client_secret: Secret::new("gh-secret"),
    }
}

async fn setup() -> (GoogleHealthFake, GoogleHealth) {
    let fake = GoogleHealthFake::start(&client()).await;
    let adapter = GoogleHealth::new(fake.config(&client(), Some(PUSH_SECRET)), fake.urls());
    (fake, adapter)
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

/// The fixtures' days.
fn fixture_range() -> DateRange {
    DateRange { start: day("2026-11-21"), end: day("2026-11-23") }
}

async fn consent(adapter: &GoogleHealth, state: &str) -> (url::Url, HashMap<String, String>) {
    let request = AuthorizeRequest {
        client_id: client().client_id,
        redirect_uri: REDIRECT.into(),
        state: state.into(),
    };
    let url = url::Url::parse(&adapter.authorize_url(&request).unwrap()).unwrap();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(url.as_str()).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(REDIRECT));
    (url, location.query_pairs().into_owned().collect())
}

#[tokio::test]
async fn links_through_googles_consent_offline_and_the_identity() {
    let (fake, adapter) = setup().await;
    let (url, back) = consent(&adapter, "state-1").await;
    let q: HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], client().client_id);
    assert_eq!(q["redirect_uri"], REDIRECT);
    assert_eq!(q["state"], "state-1");
    assert_eq!((q["access_type"].as_str(), q["prompt"].as_str()), ("offline", "consent"));
    assert_eq!(q["include_granted_scopes"], "true");
    let scopes: Vec<&str> = q["scope"].split(' ').collect();
    assert_eq!(
        scopes,
        [
            "https://www.googleapis.com/auth/googlehealth.activity_and_fitness.readonly",
            "https://www.googleapis.com/auth/googlehealth.health_metrics_and_measurements.readonly",
            "https://www.googleapis.com/auth/googlehealth.sleep.readonly",
        ]
    );
    assert_eq!(back["state"], "state-1");

    let before = Utc::now();
    let exchange = CodeExchange {
        code: Secret::new(back["code"].clone()),
        redirect_uri: REDIRECT.into(),
        client: client(),
    };
    let linked = adapter.exchange_code(&exchange).await.unwrap();
    assert_eq!(linked.external_user_id, fake::USER_ID);
    assert!(linked.credentials.refresh_token.is_some(), "offline access gives a refresh token");
    let expires = linked.credentials.expires_at.unwrap();
    assert!(expires >= before + Duration::seconds(3599) && expires <= Utc::now() + Duration::seconds(3599));
    assert_eq!(linked.credentials.scopes.len(), 3);
    assert_eq!((fake.calls("token:authorization_code"), fake.calls("identity")), (1, 1));

    // A code works once; a wrong app secret is refused.
    assert!(matches!(adapter.exchange_code(&exchange).await, Err(ProviderError::CredentialError(_))));
    let (_, back) = consent(&adapter, "state-2").await;
    let wrong = OauthClient { client_secret: Secret::new("wrong"), ..client() };
    let refused = adapter
        .exchange_code(&CodeExchange {
            code: Secret::new(back["code"].clone()),
            redirect_uri: REDIRECT.into(),
            client: wrong,
        })
        .await;
    assert!(matches!(refused, Err(ProviderError::CredentialError(_))), "{refused:?}");
}

#[tokio::test]
async fn refresh_keeps_the_refresh_token_google_does_not_resend_and_a_refused_one_is_revoked() {
    let (fake, adapter) = setup().await;
    let first = fake.account().credentials;
    let second = adapter.refresh(&client(), &first).await.unwrap();
    assert_ne!(second.access_token, first.access_token);
    assert_eq!(second.refresh_token, first.refresh_token, "Google sent none: the old one is kept");
    assert!(second.expires_at.is_some());
    let third = adapter.refresh(&client(), &second).await.unwrap();
    assert_eq!(third.refresh_token, first.refresh_token);

    let wrong_app = OauthClient { client_secret: Secret::new("wrong"), ..client() };
    assert!(matches!(adapter.refresh(&wrong_app, &third).await, Err(ProviderError::Revoked(_))));
    fake.revoke_refresh_tokens();
    assert!(matches!(adapter.refresh(&client(), &third).await, Err(ProviderError::Revoked(_))));
    assert_eq!(fake.calls("token:refresh_token"), 4);
}

#[tokio::test]
async fn fetches_every_resource_across_pages_with_units_converted() {
    let (fake, adapter) = setup().await;
    let account = fake.account();
    let mut got = HashMap::new();
    for resource in adapter.resources() {
        let fetched = adapter.fetch(&account, resource, fixture_range(), &NoLimit).await.unwrap();
        assert_eq!(fetched.resource, *resource);
        got.insert(resource.clone(), fetched.records);
    }

    // Steps: three intervals in range over two pages, oldest first; the 25th is outside.
    assert_eq!(
        got[&Resource::Steps],
        vec![
            json!({"timestamp": "2026-11-21T08:00:00+00:00", "value": 1200.0, "unit": "count", "timezone": "Etc/GMT-1"}),
            json!({"timestamp": "2026-11-21T09:00:00+00:00", "value": 850.0, "unit": "count", "timezone": "Etc/GMT-1"}),
            json!({"timestamp": "2026-11-22T07:30:00+00:00", "value": 2034.0, "unit": "count", "timezone": "Etc/GMT-1"}),
        ]
    );
    // Millimetres to metres.
    let metres: Vec<f64> = got[&Resource::Distance].iter().map(|r| r["value"].as_f64().unwrap()).collect();
    assert_eq!(metres, vec![850.0, 1200.5]);
    assert!(got[&Resource::Distance].iter().all(|r| r["unit"] == "m"));
    let bpm: Vec<f64> = got[&Resource::Heartrate].iter().map(|r| r["value"].as_f64().unwrap()).collect();
    assert_eq!(bpm, vec![62.0, 71.0, 58.0], "int64 strings read as numbers");
    assert_eq!(got[&Resource::Heartrate][0]["unit"], "bpm");
    assert_eq!(
        got[&Resource::Hrv],
        vec![
            json!({"timestamp": "2026-11-21T12:00:00+00:00", "value": 48.2, "unit": "ms"}),
            json!({"timestamp": "2026-11-22T12:00:00+00:00", "value": 51.7, "unit": "ms"}),
        ]
    );
    assert_eq!(
        got[&Resource::BloodOxygen],
        vec![json!({"timestamp": "2026-11-22T12:00:00+00:00", "value": 96.4, "unit": "%"})]
    );
    // The daily resting heart rate (an int64 string) as the activity summary of its date.
    assert_eq!(
        got[&Resource::Activity],
        vec![
            json!({"date": "2026-11-21", "resting_hr_bpm": 61.0}),
            json!({"date": "2026-11-22", "resting_hr_bpm": 58.0}),
        ]
    );

    // Weight grams to kilograms, the day's last weighing; body fat in percent beside it.
    assert_eq!(
        got[&Resource::Body],
        vec![
            json!({"date": "2026-11-21", "weight_kg": 72.3, "fat_percent": 21.4, "timezone": "Etc/GMT-1"}),
            json!({"date": "2026-11-23", "weight_kg": 71.95, "timezone": "Etc/GMT-1"}),
        ]
    );

    // Sleep, oldest first: the night ending on the 21st (stages), the nap of the 21st as its own
    // sleep, the classic night ending on the 22nd (UTC-5) with its asleep time as light sleep.
    let sleeps = &got[&Resource::Sleep];
    assert_eq!(sleeps.len(), 3);
    let night = &sleeps[0];
    assert!(night.get("type").is_none(), "a night is typed by its length in the pipeline");
    assert_eq!(night["date"], "2026-11-21");
    assert_eq!(night["bedtime_start"], "2026-11-20T22:40:00+00:00");
    assert_eq!(night["bedtime_stop"], "2026-11-21T06:10:00+00:00");
    assert_eq!(night["duration_s"], 27000.0);
    assert_eq!((night["deep_s"].as_f64(), night["rem_s"].as_f64()), (Some(5400.0), Some(5400.0)));
    assert_eq!((night["light_s"].as_f64(), night["awake_s"].as_f64()), (Some(13500.0), Some(2700.0)));
    assert_eq!(night["timezone"], "Etc/GMT-1");
    let stages = night["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 6);
    assert_eq!(stages[2], json!({"stage": "deep", "start_offset_s": 6600, "end_offset_s": 12000}));
    let nap = &sleeps[1];
    assert_eq!(nap["type"], "acknowledged_nap", "metadata.nap");
    assert_eq!((nap["date"].as_str(), nap["duration_s"].as_f64()), (Some("2026-11-21"), Some(2400.0)));
    assert_eq!(nap["bedtime_start"], "2026-11-21T13:00:00+00:00");
    let classic = &sleeps[2];
    assert!(classic.get("type").is_none());
    assert_eq!(classic["date"], "2026-11-22");
    assert_eq!(classic["timezone"], "Etc/GMT+5");
    assert_eq!((classic["light_s"].as_f64(), classic["awake_s"].as_f64()), (Some(24600.0), Some(2400.0)));
    assert!(classic.get("stages").is_none());

    // Workouts: kcal as given, millimetres to metres, the local start day.
    let w = &got[&Resource::Workouts];
    assert_eq!(w.len(), 2);
    assert_eq!(
        w[0],
        json!({"date": "2026-11-21", "time_start": "2026-11-21T17:00:00+00:00",
            "time_end": "2026-11-21T17:45:30+00:00", "sport": "running", "calories": 412.5,
            "distance_m": 7420.0, "average_hr": 148.0, "timezone": "Etc/GMT-1"})
    );
    assert_eq!(w[1]["sport"], "weightlifting");
    assert_eq!(w[1]["date"], "2026-11-22", "18:00 at UTC-5 on the 22nd, 23:00 UTC");
    assert!(w[1].get("distance_m").is_none());

    // Paging and the filter: the largest page asked for, the token followed, civil days.
    let pages = fake.queries("steps");
    assert_eq!(pages.len(), 2);
    assert!(pages.iter().all(|q| q["pageSize"] == google_health::PAGE_SIZE.to_string()));
    assert!(!pages[0].contains_key("pageToken"));
    assert_eq!(pages[1]["pageToken"], "2");
    assert_eq!(
        pages[0]["filter"],
        "steps.interval.civil_start_time >= \"2026-11-21\" AND steps.interval.civil_start_time < \"2026-11-24\""
    );
    let sessions = fake.queries("sleep");
    assert!(sessions.iter().all(|q| q["pageSize"] == google_health::SESSION_PAGE_SIZE.to_string()));
    assert_eq!(sessions.len(), 2);
}

#[tokio::test]
async fn a_phone_and_a_watch_counting_the_same_walk_are_counted_once() {
    let (fake, adapter) = setup().await;
    fake.set_page_size(100);
    let account = fake.account();
    let day = DateRange { start: day("2026-11-21"), end: day("2026-11-21") };
    let total = |records: &[Value]| records.iter().map(|r| r["value"].as_f64().unwrap()).sum::<f64>();

    // Google lists each source's points as recorded: the phone's 08:00-08:30 beside the watch's.
    let http = reqwest::Client::new();
    let raw = http
        .get(format!("{}/v4/users/me/dataTypes/steps/dataPoints", fake.base_url()))
        .bearer_auth(account.credentials.access_token.expose())
        .query(&[("pageSize", "100")])
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let raw: Value = serde_json::from_slice(&raw).unwrap();
    let sources: Vec<&str> = raw["dataPoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["steps"]["interval"]["startTime"] == "2026-11-21T08:00:00Z")
        .map(|p| p["dataSource"]["platform"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["FITBIT", "HEALTH_CONNECT"], "the fixture holds the walk twice");

    // The adapter reads the reconciled stream: the walk once.
    let steps = adapter.fetch(&account, &Resource::Steps, day, &NoLimit).await.unwrap().records;
    assert_eq!(total(&steps), 1200.0 + 850.0, "{steps:?}");
    let distance = adapter.fetch(&account, &Resource::Distance, day, &NoLimit).await.unwrap().records;
    assert_eq!(total(&distance), 850.0, "{distance:?}");
    assert!(fake.calls("steps:reconcile") > 0 && fake.calls("distance:reconcile") > 0);
}

#[tokio::test]
async fn any_other_resource_is_a_clear_error() {
    let (fake, adapter) = setup().await;
    for resource in [Resource::Profile, Resource::CaloriesActive, Resource::Connection] {
        let fetched = adapter.fetch(&fake.account(), &resource, fixture_range(), &NoLimit).await;
        assert!(matches!(fetched, Err(ProviderError::Unsupported(_))), "{resource}: {fetched:?}");
    }
}

#[tokio::test]
async fn answers_401_429_and_5xx_map_to_typed_errors() {
    let (fake, adapter) = setup().await;
    let account = fake.account();
    let range = fixture_range();
    fake.fail_next(401, 1);
    assert_eq!(
        adapter.fetch(&account, &Resource::Steps, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    fake.fail_next(429, 1);
    // Google names no reset: the shared default wait.
    assert_eq!(
        adapter.fetch(&account, &Resource::Sleep, range, &NoLimit).await,
        Err(ProviderError::RateLimited {
            retry_after_secs: wearlab_providers::http::DEFAULT_RETRY_AFTER_SECS
        })
    );
    fake.fail_next(503, 1);
    assert!(matches!(
        adapter.fetch(&account, &Resource::Heartrate, range, &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    assert!(adapter.fetch(&account, &Resource::Steps, range, &NoLimit).await.is_ok());
    fake.expire_access_tokens();
    assert_eq!(
        adapter.fetch(&account, &Resource::Hrv, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );

    // Google's 300 calls a minute per user answer 429 once spent.
    let account = fake.account();
    fake.set_per_user_limit(0);
    assert!(matches!(
        adapter.fetch(&account, &Resource::Steps, range, &NoLimit).await,
        Err(ProviderError::RateLimited { .. })
    ));
}

#[test]
fn app_and_user_limits_are_googles_published_ones() {
    let adapter = GoogleHealth::new(
        AppConfig::from_vars("google_health", GoogleHealth::endpoints(), |_| None),
        GoogleUrls::real(),
    );
    assert_eq!(
        adapter.app_limits(),
        &[
            RateWindow { requests: 120_000, window_secs: 60 },
            RateWindow { requests: 86_400_000, window_secs: 86_400 }
        ]
    );
    assert_eq!(adapter.user_limits(), &[RateWindow { requests: 300, window_secs: 60 }]);
    assert_eq!(adapter.slug(), "google_health");
    assert_eq!(GoogleHealth::endpoints().api, "https://health.googleapis.com");
    assert_eq!(GoogleHealth::endpoints().token, "https://oauth2.googleapis.com/token");
}

#[tokio::test]
async fn the_subscriber_verification_answers_201_with_the_secret_and_is_refused_without() {
    let (_, adapter) = setup().await;
    let verify = |auth: Option<&str>| {
        adapter.push(&client(), Some(PUSH_SECRET), &fake::push(auth, fake::VERIFICATION))
    };
    assert_eq!(verify(Some(PUSH_SECRET)), PushOutcome::Handshake { status: 201, body: None });
    assert!(matches!(verify(None), PushOutcome::Refused(_)), "the second verification: no Authorization");
    assert!(matches!(verify(Some("Bearer other")), PushOutcome::Refused(_)));
    assert!(matches!(verify(Some("subscriber-secret")), PushOutcome::Refused(_)), "the whole header value");
    // No secret configured: nothing is accepted.
    let unset = adapter.push(&client(), None, &fake::push(Some(PUSH_SECRET), fake::VERIFICATION));
    assert!(matches!(unset, PushOutcome::Refused(_)));
}

#[tokio::test]
async fn a_notification_with_the_secret_and_googles_signature_becomes_a_notice_for_its_days() {
    let (fake, adapter) = setup().await;
    let push = fake.signed_push(Some(PUSH_SECRET), fake::NOTIFICATION);
    adapter.prepare_push(&push).await.unwrap();
    assert_eq!(fake.calls("signing_keys"), 1, "Google's keyset read before the push is checked");
    let PushOutcome::Notices(notices) = adapter.push(&client(), Some(PUSH_SECRET), &push) else {
        panic!("refused")
    };
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].external_user_id, fake::USER_ID);
    assert_eq!(notices[0].resources, vec![Resource::Steps]);
    assert_eq!(notices[0].range, Some(DateRange { start: day("2026-11-21"), end: day("2026-11-23") }));
    assert_eq!(adapter.push_claimed_user(&push).as_deref(), Some(fake::USER_ID));

    let no_secret = fake.signed_push(None, fake::NOTIFICATION);
    assert!(matches!(adapter.push(&client(), Some(PUSH_SECRET), &no_secret), PushOutcome::Refused(_)));
    let wrong = fake.signed_push(Some("Bearer guess"), fake::NOTIFICATION);
    assert!(matches!(adapter.push(&client(), Some(PUSH_SECRET), &wrong), PushOutcome::Refused(_)));
    let unreadable = fake.signed_push(Some(PUSH_SECRET), "not json");
    assert!(matches!(adapter.push(&client(), Some(PUSH_SECRET), &unreadable), PushOutcome::Refused(_)));
    let mut get = push.clone();
    get.method = "GET".into();
    assert!(matches!(adapter.push(&client(), Some(PUSH_SECRET), &get), PushOutcome::Refused(_)));

    let notice_of = |data_type: &str| {
        let mut body: Value = serde_json::from_str(fake::NOTIFICATION).unwrap();
        body["data"]["dataType"] = json!(data_type);
        match adapter.push(
            &client(),
            Some(PUSH_SECRET),
            &fake.signed_push(Some(PUSH_SECRET), &body.to_string()),
        ) {
            PushOutcome::Notices(n) => n.into_iter().flat_map(|n| n.resources).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(notice_of("sleep"), vec![Resource::Sleep]);
    assert_eq!(notice_of("exercise"), vec![Resource::Workouts]);
    assert_eq!(notice_of("heart-rate"), vec![Resource::Heartrate]);
    assert_eq!(notice_of("body-fat"), vec![Resource::Body]);
    assert_eq!(notice_of("weight"), vec![Resource::Body]);
    assert_eq!(notice_of("daily-oxygen-saturation"), vec![Resource::BloodOxygen]);
    assert_eq!(notice_of("daily-resting-heart-rate"), vec![Resource::Activity]);
    assert!(notice_of("floors").is_empty(), "authentic but nothing Wearlab maps");
}

#[tokio::test]
async fn a_notification_not_signed_by_google_is_refused_even_with_the_secret() {
    let (fake, adapter) = setup().await;
    let refused = |request: &wearlab_domain::ports::providers::PushRequest| {
        matches!(adapter.push(&client(), Some(PUSH_SECRET), request), PushOutcome::Refused(_))
    };
    let signed = fake.signed_push(Some(PUSH_SECRET), fake::NOTIFICATION);
    // Before Google's keys are read nothing can be checked: refused.
    assert!(refused(&signed));
    adapter.prepare_push(&signed).await.unwrap();
    assert!(!refused(&signed));

    let unsigned = fake::push(Some(PUSH_SECRET), fake::NOTIFICATION);
    assert!(refused(&unsigned), "the shared secret alone is not enough");
    // The signature of another body.
    let mut tampered = signed.clone();
    tampered.body = fake::NOTIFICATION.replace("steps", "sleep").into_bytes();
    assert!(refused(&tampered));
    // Signed by a key Google does not publish, under Google's key id.
    let forger = p256::ecdsa::SigningKey::from_slice(&[3u8; 32]).unwrap();
    let forged = wearlab_providers::tink::sign(fake::SIGNING_KEY_ID, &forger, fake::NOTIFICATION.as_bytes());
    let mut request = fake::push(Some(PUSH_SECRET), fake::NOTIFICATION);
    request.headers.push((
        "x-healthapi-signature".into(),
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, forged),
    ));
    assert!(refused(&request));
    let mut garbage = fake::push(Some(PUSH_SECRET), fake::NOTIFICATION);
    garbage.headers.push(("x-healthapi-signature".into(), "not base64!".into()));
    assert!(refused(&garbage));

    // An unknown key id reads the keyset again, at most once a minute.
    let unknown = wearlab_providers::tink::sign(7, &forger, fake::NOTIFICATION.as_bytes());
    let mut request = fake::push(Some(PUSH_SECRET), fake::NOTIFICATION);
    request.headers.push((
        "x-healthapi-signature".into(),
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, unknown),
    ));
    adapter.prepare_push(&request).await.unwrap();
    adapter.prepare_push(&request).await.unwrap();
    assert_eq!(fake.calls("signing_keys"), 1, "tried within the minute: not read again");
    assert!(refused(&request));
}

#[tokio::test]
async fn without_googles_keys_a_signed_notification_cannot_be_checked() {
    let fake = GoogleHealthFake::start(&client()).await;
    let mut urls = fake.urls();
    urls.signing_keys = format!("{}/nothing-here.json", fake.base_url());
    let adapter = GoogleHealth::new(fake.config(&client(), Some(PUSH_SECRET)), urls);
    let signed = fake.signed_push(Some(PUSH_SECRET), fake::NOTIFICATION);
    assert!(matches!(adapter.prepare_push(&signed).await, Err(ProviderError::Api(_))));
    assert!(matches!(adapter.push(&client(), Some(PUSH_SECRET), &signed), PushOutcome::Refused(_)));
}

#[tokio::test]
async fn deregistration_revokes_the_grant_at_google() {
    let (fake, adapter) = setup().await;
    let account = fake.account();
    adapter.revoke(&client(), &account).await.unwrap();
    let refresh = account.credentials.refresh_token.as_ref().unwrap().expose().to_owned();
    assert_eq!(fake.revoked(), vec![refresh], "the refresh token: revoking it ends the grant");
    assert_eq!(
        adapter.fetch(&account, &Resource::Steps, fixture_range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused),
        "the grant's access token is gone with it"
    );
    assert!(matches!(adapter.refresh(&client(), &account.credentials).await, Err(ProviderError::Revoked(_))));
    // Revoking again (Google: 400 invalid_token) is not an error: the grant is gone.
    adapter.revoke(&client(), &account).await.unwrap();
    assert_eq!(fake.calls("revoke"), 2);

    // Credentials without a refresh token: the access token is revoked.
    let mut access_only = fake.account();
    access_only.credentials.refresh_token = None;
    adapter.revoke(&client(), &access_only).await.unwrap();
    assert_eq!(fake.revoked().last(), Some(&access_only.credentials.access_token.expose().to_owned()));
}

#[test]
fn googles_other_urls_are_its_own_unless_configured() {
    assert_eq!(GoogleUrls::real().revoke, "https://oauth2.googleapis.com/revoke");
    assert_eq!(GoogleUrls::from_vars(|_| None), GoogleUrls::real());
    let urls = GoogleUrls::from_vars(|k| {
        (k == "WEARLAB_PROVIDER_GOOGLE_HEALTH_REVOKE_URL").then(|| "http://127.0.0.1:9/revoke".to_owned())
    });
    assert_eq!(urls.revoke, "http://127.0.0.1:9/revoke");
    assert_eq!(urls.signing_keys, GoogleUrls::real().signing_keys);
}

#[tokio::test]
async fn a_bad_filter_is_googles_400() {
    let (fake, _) = setup().await;
    let account = fake.account();
    let http = reqwest::Client::new();
    let answer = http
        .get(format!("{}/v4/users/me/dataTypes/steps/dataPoints", fake.base_url()))
        .bearer_auth(account.credentials.access_token.expose())
        .query(&[("filter", "weight.sample_time.civil_time >= \"2026-11-21\"")])
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 400);
}
