//! Conformance of the whoop adapter against its local fake.

use chrono::{Duration, NaiveDate, Utc};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderError, PushOutcome, PushRequest,
    RateWindow,
};
use wearlab_models::Resource;
use wearlab_providers::fake::whoop::{self as fake, Failure, FakeWhoop};
use wearlab_providers::whoop::{self, Whoop};
use wearlab_providers::{Adapter, AppConfig};

const REDIRECT: &str = "https://wearlab.example/v2/link/provider/oauth/whoop_v2/callback";

fn client() -> OauthClient {
    OauthClient { client_id: "whoop-app".into(), client_secret: Secret::new("whoop-app-secret") }
}

async fn setup() -> (FakeWhoop, Whoop) {
    let fake = FakeWhoop::new(client());
    let endpoints = fake.start().await;
    let config = AppConfig { endpoints, platform_client: Some(client()), push_token: None };
    (fake, Whoop::new(config))
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

/// The fixtures' days.
fn fixture_range() -> DateRange {
    DateRange { start: day("2026-11-21"), end: day("2026-11-23") }
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/fixtures/whoop_v2/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn links_through_consent_code_exchange_and_the_profile() {
    let (fake, whoop) = setup().await;
    let request = AuthorizeRequest {
        client_id: client().client_id,
        redirect_uri: REDIRECT.into(),
        state: "state-1".into(),
    };
    let url = url::Url::parse(&whoop.authorize_url(&request).unwrap()).unwrap();
    let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "whoop-app");
    assert_eq!(q["redirect_uri"], REDIRECT);
    assert_eq!(q["state"], "state-1");
    let scopes: Vec<&str> = q["scope"].split(' ').collect();
    for s in
        ["offline", "read:sleep", "read:workout", "read:recovery", "read:body_measurement", "read:profile"]
    {
        assert!(scopes.contains(&s), "scope {s}");
    }

    // The consent page sends the browser back with a code and the state.
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(url.as_str()).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(REDIRECT));
    let back: std::collections::HashMap<_, _> = location.query_pairs().into_owned().collect();
    assert_eq!(back["state"], "state-1");

    let before = Utc::now();
    let linked = whoop
        .exchange_code(&CodeExchange {
            code: Secret::new(back["code"].clone()),
            redirect_uri: REDIRECT.into(),
            client: client(),
        })
        .await
        .unwrap();
    assert_eq!(linked.external_user_id, "10129");
    assert!(linked.credentials.refresh_token.is_some());
    let expires = linked.credentials.expires_at.unwrap();
    assert!(expires >= before + Duration::seconds(3600) && expires <= Utc::now() + Duration::seconds(3600));
    assert!(linked.credentials.scopes.contains(&"offline".to_owned()));
    assert_eq!((fake.calls("token"), fake.calls("profile")), (1, 1));

    // A code works once.
    let again = whoop
        .exchange_code(&CodeExchange {
            code: Secret::new(back["code"].clone()),
            redirect_uri: REDIRECT.into(),
            client: client(),
        })
        .await;
    assert!(matches!(again, Err(ProviderError::CredentialError(_))), "{again:?}");
}

#[tokio::test]
async fn refresh_keeps_the_new_refresh_token_and_a_used_one_is_revoked() {
    let (fake, whoop) = setup().await;
    let first = fake.account().credentials;
    let second = whoop.refresh(&client(), &first).await.unwrap();
    assert_ne!(second.refresh_token, first.refresh_token, "WHOOP returns a new refresh token");
    assert_ne!(second.access_token, first.access_token);
    let reused = whoop.refresh(&client(), &first).await;
    assert!(matches!(reused, Err(ProviderError::Revoked(_))), "{reused:?}");
    let third = whoop.refresh(&client(), &second).await.unwrap();
    assert_ne!(third.refresh_token, second.refresh_token);
    let wrong_app = OauthClient { client_id: "whoop-app".into(), client_secret: Secret::new("wrong") };
    assert!(matches!(whoop.refresh(&wrong_app, &third).await, Err(ProviderError::Revoked(_))));
    assert_eq!(fake.calls("token"), 4);
}

#[tokio::test]
async fn fetches_every_resource_across_pages_with_units_converted() {
    let (fake, whoop) = setup().await;
    fake.set_page_size(2);
    let account = fake.account();
    let range = fixture_range();
    let mut got = std::collections::HashMap::new();
    for resource in whoop.resources() {
        let range = match resource {
            // WHOOP's body values are current ones, dated today.
            Resource::Body => {
                DateRange { start: Utc::now().date_naive() - Duration::days(1), end: Utc::now().date_naive() }
            }
            _ => range,
        };
        let fetched = whoop.fetch(&account, resource, range, &NoLimit).await.unwrap();
        assert_eq!(fetched.resource, *resource);
        got.insert(resource.clone(), fetched.records);
    }

    // Four sleeps on two pages, newest first: the scored ones oldest first, the nap of the 21st
    // its own sleep; the sleep not yet scored is left for a later poll.
    let sleeps = fixture("sleep.json");
    let s1 = &sleeps["records"][3]["score"]["stage_summary"];
    assert_eq!(got[&Resource::Sleep].len(), 3);
    let night = &got[&Resource::Sleep][0];
    assert!(night.get("type").is_none(), "a night is typed by its length in the pipeline");
    assert_eq!(night["date"], "2026-11-21");
    assert_eq!(night["bedtime_start"], "2026-11-20T23:18:00Z");
    assert_eq!(night["bedtime_stop"], "2026-11-21T06:51:00Z");
    assert_eq!(night["timezone"], "Etc/GMT-1");
    assert_eq!(night["duration_s"], s1["total_in_bed_time_milli"].as_i64().unwrap() / 1000);
    assert_eq!(night["duration_s"], 27180);
    assert_eq!(night["deep_s"], s1["total_slow_wave_sleep_time_milli"].as_i64().unwrap() / 1000);
    assert_eq!(night["rem_s"], s1["total_rem_sleep_time_milli"].as_i64().unwrap() / 1000);
    assert_eq!(night["light_s"], s1["total_light_sleep_time_milli"].as_i64().unwrap() / 1000);
    assert_eq!(night["awake_s"], s1["total_awake_time_milli"].as_i64().unwrap() / 1000);
    assert_eq!(night["efficiency"], 94.9);
    let nap = &got[&Resource::Sleep][1];
    assert_eq!(nap["type"], "acknowledged_nap", "WHOOP's nap: true");
    assert_eq!(
        (nap["date"].as_str(), nap["bedtime_start"].as_str()),
        (Some("2026-11-21"), Some("2026-11-21T13:00:00Z"))
    );
    assert_eq!(nap["duration_s"], 1800);
    // Woke at 07:15 local (UTC-5) on the 22nd.
    assert_eq!(got[&Resource::Sleep][2]["date"], "2026-11-22");
    assert_eq!(got[&Resource::Sleep][2]["timezone"], "Etc/GMT+5");
    assert_eq!(got[&Resource::Sleep][2]["efficiency"], 91.69533848);
    assert!(got[&Resource::Sleep][2].get("type").is_none());

    let rates: Vec<f64> =
        got[&Resource::RespiratoryRate].iter().map(|r| r["value"].as_f64().unwrap()).collect();
    assert_eq!(rates, vec![15.86, 14.9, 16.11328125], "every scored sleep, naps included, oldest first");
    assert_eq!(got[&Resource::RespiratoryRate][0]["timestamp"], "2026-11-21T06:51:00Z");

    let workouts = &got[&Resource::Workouts];
    assert_eq!(workouts.len(), 3);
    let w = fixture("workout.json");
    let kj = w["records"][2]["score"]["kilojoule"].as_f64().unwrap();
    assert_eq!(workouts[0]["calories"], ((kj / 4.184) * 10.0).round() / 10.0);
    assert_eq!(workouts[0]["calories"], 438.0, "1832.74 kJ");
    assert_eq!(workouts[0]["distance_m"], 8123.4);
    assert_eq!(workouts[0]["average_hr"], 152.0);
    assert_eq!(workouts[0]["sport"], "running");
    assert_eq!(workouts[0]["date"], "2026-11-21");
    assert_eq!(workouts[0]["time_start"], "2026-11-21T17:00:00Z");
    assert_eq!(workouts[0]["time_end"], "2026-11-21T18:02:14Z");
    assert_eq!(workouts[1]["calories"], 375.1, "1569.34 kJ");
    assert_eq!(workouts[1]["date"], "2026-11-22", "18:20 local on the 22nd");
    assert_eq!(workouts[2]["sport"], "functional_fitness");
    assert!(workouts[2].get("calories").is_none(), "an UNSCORABLE workout has no energy");

    // Recoveries are stamped at the end of their sleep; one still PENDING_SCORE gives nothing.
    assert_eq!(
        got[&Resource::Hrv],
        vec![
            json!({"timestamp": "2026-11-21T06:51:00Z", "value": 68.4, "unit": "ms", "timezone": "Etc/GMT-1"}),
            json!({"timestamp": "2026-11-22T12:15:00Z", "value": 31.813562, "unit": "ms", "timezone": "Etc/GMT+5"}),
        ]
    );
    assert_eq!(got[&Resource::BloodOxygen].len(), 1, "SpO2 only from WHOOP 4.0 and later");
    assert_eq!(got[&Resource::BloodOxygen][0]["value"], 96.7);
    assert_eq!(got[&Resource::BloodOxygen][0]["unit"], "%");
    assert_eq!(got[&Resource::BodyTemperature][0]["value"], 33.4);
    assert_eq!(got[&Resource::BodyTemperature][0]["unit"], "°C");
    // The recoveries' resting heart rates, each the day of its sleep's end (local), as its HRV.
    assert_eq!(
        got[&Resource::Activity],
        vec![
            json!({"date": "2026-11-21", "resting_hr_bpm": 51.2, "timezone": "Etc/GMT-1"}),
            json!({"date": "2026-11-22", "resting_hr_bpm": 64.0, "timezone": "Etc/GMT+5"}),
        ]
    );

    assert_eq!(
        got[&Resource::Body],
        vec![json!({"date": Utc::now().date_naive().to_string(), "weight_kg": 90.7185})]
    );
    assert_eq!(got[&Resource::Profile], vec![json!({"height_m": 1.8288})]);

    // Paging: WHOOP's largest page asked for, the next token followed to the end.
    let pages = fake.queries("workout");
    assert_eq!(pages.len(), 2);
    assert!(pages.iter().all(|q| q["limit"] == whoop::PAGE_LIMIT.to_string()));
    assert!(!pages[0].contains_key("nextToken"));
    assert_eq!(pages[1]["nextToken"], "2");
    assert_eq!(pages[0]["start"], "2026-11-20T00:00:00Z");
    assert_eq!(pages[0]["end"], "2026-11-25T00:00:00Z");
}

#[tokio::test]
async fn answers_401_429_and_5xx_map_to_typed_errors() {
    let (fake, whoop) = setup().await;
    let account = fake.account();
    let range = fixture_range();
    fake.set_failure(Some(Failure::Unauthorized));
    assert_eq!(
        whoop.fetch(&account, &Resource::Sleep, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    fake.set_failure(Some(Failure::RateLimited { reset_secs: 37 }));
    assert_eq!(
        whoop.fetch(&account, &Resource::Workouts, range, &NoLimit).await,
        Err(ProviderError::RateLimited { retry_after_secs: 37 })
    );
    fake.set_failure(Some(Failure::ServerError));
    assert!(matches!(
        whoop.fetch(&account, &Resource::Hrv, range, &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    fake.set_failure(None);
    assert!(whoop.fetch(&account, &Resource::Sleep, range, &NoLimit).await.is_ok());
    assert!(matches!(
        whoop.fetch(&account, &Resource::Heartrate, range, &NoLimit).await,
        Err(ProviderError::Unsupported(_))
    ));
}

#[test]
fn app_limits_are_whoops_published_ones() {
    let whoop = Whoop::new(AppConfig::from_vars("whoop_v2", Whoop::endpoints(), |_| None));
    assert_eq!(
        whoop.app_limits(),
        &[
            RateWindow { requests: 100, window_secs: 60 },
            RateWindow { requests: 10_000, window_secs: 86_400 }
        ]
    );
    assert_eq!(whoop.slug(), "whoop_v2");
    assert!(!whoop.resources().contains(&Resource::Heartrate), "WHOOP has no heart-rate series");
    assert_eq!(Whoop::endpoints().api, "https://api.prod.whoop.com/developer");
}

#[test]
fn push_is_read_only_when_signed_and_fresh() {
    let now = Utc::now();
    let body = fake::WEBHOOK_SLEEP_UPDATED.as_bytes();
    let secret = client().client_secret.expose().to_owned();
    let good = fake::signed_push(&secret, now.timestamp_millis(), body);
    let PushOutcome::Notices(notices) = whoop::read_push(&client(), &good, now) else { panic!("refused") };
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].external_user_id, "10129");
    assert_eq!(notices[0].resources, vec![Resource::Sleep, Resource::RespiratoryRate]);
    assert_eq!(notices[0].range, None);

    let refused = |r: &PushRequest| matches!(whoop::read_push(&client(), r, now), PushOutcome::Refused(_));
    assert!(refused(&fake::signed_push("another-secret", now.timestamp_millis(), body)), "bad signature");
    let mut tampered = good.clone();
    tampered.body = body.iter().map(|b| if *b == b'9' { b'8' } else { *b }).collect();
    assert!(refused(&tampered), "body changed after signing");
    let mut unsigned = good.clone();
    unsigned.headers.retain(|(k, _)| k != "x-whoop-signature");
    assert!(refused(&unsigned), "no signature");
    let mut no_time = good.clone();
    no_time.headers.retain(|(k, _)| k != "x-whoop-signature-timestamp");
    assert!(refused(&no_time), "no timestamp");
    let stale = fake::signed_push(&secret, (now - Duration::seconds(301)).timestamp_millis(), body);
    assert!(refused(&stale), "older than 300 s");
    let fresh_enough = fake::signed_push(&secret, (now - Duration::seconds(299)).timestamp_millis(), body);
    assert!(!refused(&fresh_enough));
    let mut get = good.clone();
    get.method = "GET".into();
    assert!(refused(&get), "WHOOP only POSTs");

    let notice_of = |kind: &str| {
        let body = json!({"user_id": 10129, "id": "ecfc6a15-4661-442f-a9a4-f160dd7afae8", "type": kind,
            "trace_id": "e369c784-5100-49e8-8098-75d35c47b31b"})
        .to_string();
        match whoop::read_push(
            &client(),
            &fake::signed_push(&secret, now.timestamp_millis(), body.as_bytes()),
            now,
        ) {
            PushOutcome::Notices(n) => n.into_iter().flat_map(|n| n.resources).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        notice_of("recovery.updated"),
        vec![Resource::Hrv, Resource::BloodOxygen, Resource::BodyTemperature, Resource::Activity]
    );
    assert_eq!(notice_of("workout.updated"), vec![Resource::Workouts]);
    assert_eq!(notice_of("workout.deleted"), vec![Resource::Workouts]);
    assert_eq!(notice_of("sleep.deleted"), vec![Resource::Sleep, Resource::RespiratoryRate]);
    assert!(notice_of("cycle.updated").is_empty(), "signed but nothing Wearlab maps");
}

#[test]
fn a_push_names_its_user_before_its_signature_is_checked() {
    let whoop =
        Whoop::new(AppConfig { endpoints: Whoop::endpoints(), platform_client: None, push_token: None });
    let body = fake::WEBHOOK_SLEEP_UPDATED.as_bytes();
    // Whatever the signature: the claim only chooses whose secret checks it.
    let push = fake::signed_push("any-secret", Utc::now().timestamp_millis(), body);
    assert_eq!(whoop.push_claimed_user(&push).as_deref(), Some("10129"));
    let mut unreadable = push.clone();
    unreadable.body = b"not json".to_vec();
    assert_eq!(whoop.push_claimed_user(&unreadable), None);
}

#[tokio::test]
async fn revoke_reaches_whoop_and_refreshes_an_expired_token_first() {
    let (fake, whoop) = setup().await;
    let linked = fake.account();
    whoop.revoke(&client(), &linked).await.unwrap();
    assert_eq!(fake.calls("revoke"), 1);
    assert_eq!(
        whoop.fetch(&linked, &Resource::Sleep, fixture_range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused),
        "the access is gone"
    );

    let expired = fake.account();
    fake.expire_access_tokens();
    whoop.revoke(&client(), &expired).await.unwrap();
    assert_eq!(fake.calls("revoke"), 3, "refused once, then with the refreshed token");
    assert_eq!(fake.calls("token"), 1);
}

#[tokio::test]
async fn a_consent_without_offline_fails_the_link() {
    let (fake, whoop) = setup().await;
    fake.refuse_offline();
    let request =
        AuthorizeRequest { client_id: client().client_id, redirect_uri: REDIRECT.into(), state: "s".into() };
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(whoop.authorize_url(&request).unwrap()).send().await.unwrap();
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    let code = location.query_pairs().find(|(k, _)| k == "code").unwrap().1.into_owned();
    let linked = whoop
        .exchange_code(&CodeExchange {
            code: Secret::new(code),
            redirect_uri: REDIRECT.into(),
            client: client(),
        })
        .await;
    assert_eq!(linked, Err(ProviderError::ScopesNotGranted(vec!["offline".into()])));
    assert_eq!(fake.calls("profile"), 0);
}

#[tokio::test]
async fn a_next_token_that_does_not_move_stops_the_paging() {
    let (fake, whoop) = setup().await;
    fake.stick_paging();
    let fetched = whoop.fetch(&fake.account(), &Resource::Workouts, fixture_range(), &NoLimit).await;
    assert!(matches!(fetched, Err(ProviderError::Api(_))), "{fetched:?}");
    assert_eq!(fake.calls("workout"), 2);
}
