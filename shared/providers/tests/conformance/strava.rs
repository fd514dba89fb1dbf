//! Conformance of the strava adapter against its local fake.

use std::collections::HashMap;

use crate::Counting;
use chrono::{Duration, NaiveDate, Utc};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderAccount, ProviderError,
    PushOutcome, RateWindow,
};
use wearlab_models::Resource;
use wearlab_providers::fake::strava::{self as fake, ATHLETE_ID, Failure, FakeStrava};
use wearlab_providers::strava::{self, Strava};
use wearlab_providers::{Adapter, AppConfig};

const REDIRECT: &str = "https://wearlab.example/v2/link/provider/oauth/strava/callback";
const PUSH_TOKEN: &str = "strava-verify-token";

fn client() -> OauthClient {
    OauthClient { client_id: "strava-app".into(), client_secret: Secret::new("strava-app-secret") }
}

async fn setup() -> (FakeStrava, Strava) {
    let fake = FakeStrava::new(client());
    let endpoints = fake.start().await;
    let config =
        AppConfig { endpoints, platform_client: Some(client()), push_token: Some(Secret::new(PUSH_TOKEN)) };
    (fake, Strava::new(config))
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

/// The fixtures' days.
fn fixture_range() -> DateRange {
    DateRange { start: day("2026-11-21"), end: day("2026-11-23") }
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/fixtures/strava/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The fake's account with the scopes a consent granted (comma-separated).
fn granted(fake: &FakeStrava, scopes: &str) -> ProviderAccount {
    let mut account = fake.account();
    account.credentials.scopes = scopes.split(',').map(str::to_owned).collect();
    account
}

#[tokio::test]
async fn links_through_consent_and_code_exchange_naming_the_athlete() {
    let (fake, adapter) = setup().await;
    let request = AuthorizeRequest {
        client_id: client().client_id,
        redirect_uri: REDIRECT.into(),
        state: "state-1".into(),
    };
    let url = url::Url::parse(&adapter.authorize_url(&request).unwrap()).unwrap();
    assert!(url.as_str().ends_with("&state=state-1"), "{url}");
    let q: HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "strava-app");
    assert_eq!(q["redirect_uri"], REDIRECT);
    assert_eq!(q["scope"], "read,activity:read_all", "comma-separated, as Strava wants");

    // The consent sends the browser back with a code, the state and the granted scopes.
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(url.as_str()).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(REDIRECT));
    let back: HashMap<_, _> = location.query_pairs().into_owned().collect();
    assert_eq!(back["state"], "state-1");
    assert_eq!(back["scope"], "read,activity:read_all");

    let exchange = CodeExchange {
        code: Secret::new(back["code"].clone()),
        redirect_uri: REDIRECT.into(),
        client: client(),
    };
    let before = Utc::now();
    let linked = adapter.exchange_code(&exchange).await.unwrap();
    assert_eq!(linked.external_user_id, ATHLETE_ID.to_string(), "the athlete of the token answer");
    assert!(linked.credentials.refresh_token.is_some());
    let expires = linked.credentials.expires_at.unwrap();
    assert!(expires >= before + Duration::hours(6) && expires <= Utc::now() + Duration::hours(6));
    assert_eq!(fake.calls("token"), 1);
    assert_eq!(fake.calls("athlete"), 0, "the token answer names the athlete already");

    // A code works once; another app's secret is refused.
    let again = adapter.exchange_code(&exchange).await;
    assert!(matches!(again, Err(ProviderError::CredentialError(_))), "{again:?}");
    let wrong = CodeExchange {
        client: OauthClient { client_id: "strava-app".into(), client_secret: Secret::new("wrong") },
        ..exchange
    };
    assert!(matches!(adapter.exchange_code(&wrong).await, Err(ProviderError::CredentialError(_))));
}

#[tokio::test]
async fn refresh_keeps_the_latest_refresh_token_and_the_granted_scopes() {
    let (fake, adapter) = setup().await;
    let first = granted(&fake, "read,activity:read").credentials;
    let second = adapter.refresh(&client(), &first).await.unwrap();
    assert_ne!(second.refresh_token, first.refresh_token, "the rotated refresh token is kept");
    assert_ne!(second.access_token, first.access_token);
    assert_eq!(second.scopes, vec!["read", "activity:read"], "Strava's refresh names no scopes");
    let reused = adapter.refresh(&client(), &first).await;
    assert!(matches!(reused, Err(ProviderError::Revoked(_))), "{reused:?}");
    let wrong_app = OauthClient { client_id: "strava-app".into(), client_secret: Secret::new("wrong") };
    assert!(matches!(adapter.refresh(&wrong_app, &second).await, Err(ProviderError::Revoked(_))));
    let mut none = second.clone();
    none.refresh_token = None;
    assert!(matches!(adapter.refresh(&client(), &none).await, Err(ProviderError::Revoked(_))));
}

#[tokio::test]
async fn fetches_every_resource_with_units() {
    let (fake, adapter) = setup().await;
    let account = granted(&fake, "read,activity:read_all");
    let range = fixture_range();
    let mut got = HashMap::new();
    for resource in adapter.resources() {
        let fetched = adapter.fetch(&account, resource, range, &NoLimit).await.unwrap();
        assert_eq!(fetched.resource, *resource);
        got.insert(resource.clone(), fetched.records);
    }

    let workouts = &got[&Resource::Workouts];
    assert_eq!(workouts.len(), 5, "{workouts:?}");
    let bondcliff = workouts.iter().find(|w| w["time_start"] == "2026-11-21T12:35:51Z").unwrap();
    assert_eq!(bondcliff["date"], "2026-11-21");
    assert_eq!(bondcliff["sport"], "mountain_bike_ride");
    assert_eq!(bondcliff["distance_m"], 23676.5, "metres, as Strava gives them");
    assert_eq!(bondcliff["time_end"], "2026-11-21T14:05:51Z", "start + elapsed_time 5400 s");
    assert_eq!(bondcliff["average_hr"], 152.4);
    assert_eq!(bondcliff["timezone"], "America/Los_Angeles");
    assert_eq!(bondcliff["calories"], 1080.0, "the summary's kilojoules of work, about the kcal burned");
    let hike =
        workouts.iter().find(|w| w["sport"] == "hike").expect("the private manual hike, with read_all");
    assert_eq!(hike["distance_m"], 22530.8);
    let run = workouts.iter().find(|w| w["sport"] == "run").unwrap();
    assert_eq!(run["date"], "2026-11-22");
    assert!(run.get("calories").is_none(), "a run has no power, so no kilojoules");
    assert!(run.get("average_hr").is_none(), "the 2013 run has no average heart rate");

    let window = &fake.queries("activities")[0];
    assert_eq!(window["per_page"], "200");
    assert_eq!(window["page"], "1");
    let after: i64 = window["after"].parse().unwrap();
    let before: i64 = window["before"].parse().unwrap();
    assert_eq!(
        (after, before),
        (1_795_132_800, 1_795_564_800),
        "a day either side: 2026-11-20 to 2026-11-25, UTC"
    );

    // Streams: four recorded activities (the manual hike has none), 12 samples each.
    let streams = fixture("streams.json");
    let hr = &got[&Resource::Heartrate];
    assert_eq!(hr.len(), 48);
    let first = hr.iter().find(|r| r["timestamp"] == "2026-11-21T12:35:51Z").unwrap();
    assert_eq!(first["value"], streams["1234567809"]["heartrate"]["data"][0].as_f64().unwrap());
    assert_eq!(first["unit"], "bpm");
    assert_eq!(first["timezone"], "America/Los_Angeles");
    assert!(hr.iter().any(|r| r["timestamp"] == "2026-11-21T12:37:41Z"), "start + the time stream's 110 s");

    // Distance: metres since the previous sample; they add up to the stream's last value.
    let ride: Vec<&Value> = got[&Resource::Distance]
        .iter()
        .filter(|r| r["timestamp"].as_str().unwrap().starts_with("2026-11-21"))
        .collect();
    assert_eq!(ride.len(), 12);
    assert_eq!(ride[0]["value"], 2.9);
    assert_eq!(ride[1]["value"], 2.9);
    assert_eq!(ride[2]["value"], 2.7);
    assert!(ride.iter().all(|r| r["unit"] == "m"));
    let total: f64 = ride.iter().map(|r| r["value"].as_f64().unwrap()).sum();
    assert!((total - 49.5).abs() < 1e-9, "{total}");

    // The workout stream: power (W) and cadence (rpm); the run has no power meter.
    let stream = &got[&Resource::WorkoutStream];
    assert_eq!(stream.iter().filter(|r| r["unit"] == "W").count(), 36);
    assert_eq!(stream.iter().filter(|r| r["unit"] == "rpm").count(), 48);
    assert!(stream.iter().any(|r| r["unit"] == "W" && r["value"] == 240.0));
    assert_eq!(fake.calls("streams"), 4, "four activities, once each for the three stream resources");
    assert_eq!(fake.calls("activities"), 1, "one list for the workouts and the three stream resources");
    let keys = &fake.queries("streams")[0];
    assert_eq!(keys["keys"], strava::STREAM_KEYS);
    assert_eq!(keys["key_by_type"], "true");

    assert_eq!(got[&Resource::Profile], vec![json!({})], "Strava's athlete has no height or birth date");
}

/// The pipeline fetches a chunk's stream resources at once: the activity list and each
/// activity's streams are asked once for all of them, each request admitted once.
#[tokio::test]
async fn a_chunks_stream_resources_share_one_list_and_one_streams_call_per_activity() {
    let (fake, adapter) = setup().await;
    let account = granted(&fake, "read,activity:read_all");
    let gate = Counting::new();
    let fetch = |resource| adapter.fetch(&account, resource, fixture_range(), &gate);
    let (hr, distance, stream) = tokio::join!(
        fetch(&Resource::Heartrate),
        fetch(&Resource::Distance),
        fetch(&Resource::WorkoutStream)
    );
    assert_eq!(hr.unwrap().records.len(), 48);
    assert_eq!(distance.unwrap().records.len(), 48);
    assert_eq!(stream.unwrap().records.len(), 36 + 48);
    assert_eq!(fake.calls("activities"), 1);
    assert_eq!(fake.calls("streams"), 4, "four recorded activities");
    assert_eq!(gate.admitted(), 1 + 4, "each request admitted once, before it is sent");

    // Another connection's token reads Strava itself, never what this one read.
    let other = granted(&fake, "read,activity:read_all");
    assert_ne!(other.credentials.access_token, account.credentials.access_token);
    adapter.fetch(&other, &Resource::Heartrate, fixture_range(), &NoLimit).await.unwrap();
    assert_eq!(fake.calls("activities"), 2);
    assert_eq!(fake.calls("streams"), 8);
}

/// A refusal is not kept: the next fetch asks Strava again.
#[tokio::test]
async fn a_failed_call_is_not_kept() {
    let (fake, adapter) = setup().await;
    let account = granted(&fake, "read,activity:read_all");
    fake.set_failure(Some(Failure::ServerError));
    assert!(adapter.fetch(&account, &Resource::Heartrate, fixture_range(), &NoLimit).await.is_err());
    fake.set_failure(None);
    let hr = adapter.fetch(&account, &Resource::Heartrate, fixture_range(), &NoLimit).await.unwrap();
    assert_eq!(hr.records.len(), 48);
}

#[tokio::test]
async fn the_activity_list_is_followed_until_a_short_page() {
    let (fake, adapter) = setup().await;
    fake.add_activities(250);
    let account = granted(&fake, "read,activity:read_all");
    let workouts =
        adapter.fetch(&account, &Resource::Workouts, fixture_range(), &NoLimit).await.unwrap().records;
    assert_eq!(workouts.len(), 255);
    let pages = fake.queries("activities");
    assert!(pages.iter().all(|q| q["per_page"] == "200"), "Strava's largest page");
    assert_eq!(pages.iter().map(|q| q["page"].as_str()).collect::<Vec<_>>(), ["1", "2"]);
}

#[tokio::test]
async fn private_activities_need_activity_read_all_and_no_activity_scope_is_a_clear_error() {
    let (fake, adapter) = setup().await;
    let range = fixture_range();
    let public_only = granted(&fake, "read,activity:read");
    let workouts = adapter.fetch(&public_only, &Resource::Workouts, range, &NoLimit).await.unwrap().records;
    assert_eq!(workouts.len(), 4, "the private hike is skipped");
    assert!(workouts.iter().all(|w| w["sport"] != "hike"));

    let none = granted(&fake, "read");
    for resource in [Resource::Workouts, Resource::Heartrate, Resource::Distance, Resource::WorkoutStream] {
        assert_eq!(
            adapter.fetch(&none, &resource, range, &NoLimit).await,
            Err(ProviderError::ScopesNotGranted(vec!["activity:read".into()])),
            "{resource}"
        );
    }
    assert!(
        adapter.fetch(&none, &Resource::Profile, range, &NoLimit).await.is_ok(),
        "read is enough for the athlete"
    );
    assert!(matches!(
        adapter.fetch(&none, &Resource::Sleep, range, &NoLimit).await,
        Err(ProviderError::Unsupported(_))
    ));
}

#[tokio::test]
async fn answers_401_429_and_5xx_map_to_typed_errors() {
    let (fake, adapter) = setup().await;
    let account = granted(&fake, "read,activity:read_all");
    let range = fixture_range();
    fake.set_failure(Some(Failure::Unauthorized));
    assert_eq!(
        adapter.fetch(&account, &Resource::Workouts, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    fake.set_failure(Some(Failure::ServerError));
    assert!(matches!(
        adapter.fetch(&account, &Resource::Heartrate, range, &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    fake.set_failure(None);

    // Over the 15-minute read limit: wait for the next quarter hour at most.
    fake.set_read_limits(0, 1000);
    match adapter.fetch(&account, &Resource::Workouts, range, &NoLimit).await {
        Err(ProviderError::RateLimited { retry_after_secs }) => {
            assert!((1..=900).contains(&retry_after_secs))
        }
        other => panic!("{other:?}"),
    }
    // Over the daily one: wait for 00:00 UTC at most.
    fake.set_read_limits(100, 0);
    match adapter.fetch(&account, &Resource::Profile, range, &NoLimit).await {
        Err(ProviderError::RateLimited { retry_after_secs }) => {
            assert!((1..=86_400).contains(&retry_after_secs))
        }
        other => panic!("{other:?}"),
    }
    fake.set_read_limits(100, 1000);
    fake.expire_access_tokens();
    assert_eq!(
        adapter.fetch(&account, &Resource::Profile, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
}

#[test]
fn app_limits_are_stravas_read_limits() {
    let adapter = Strava::new(AppConfig::from_vars("strava", Strava::endpoints(), |_| None));
    assert_eq!(
        adapter.app_limits(),
        &[
            RateWindow { requests: 100, window_secs: 900 },
            RateWindow { requests: 1_000, window_secs: 86_400 }
        ]
    );
    assert_eq!(adapter.slug(), "strava");
    assert_eq!(
        adapter.resources(),
        [
            Resource::Profile,
            Resource::Workouts,
            Resource::WorkoutStream,
            Resource::Heartrate,
            Resource::Distance
        ]
    );
    assert_eq!(Strava::endpoints().api, "https://www.strava.com/api/v3");
}

#[test]
fn the_handshake_repeats_the_challenge_only_with_the_verify_token() {
    let adapter = Strava::new(AppConfig::from_vars("strava", Strava::endpoints(), |_| None));
    let answer =
        strava::read_push(Some(PUSH_TOKEN), &fake::handshake(PUSH_TOKEN, "15f7d1a91c1f40f8a748fd134752feb3"));
    assert_eq!(
        answer,
        PushOutcome::Handshake {
            status: 200,
            body: Some(json!({"hub.challenge": "15f7d1a91c1f40f8a748fd134752feb3"}))
        }
    );
    let refused = |o: PushOutcome| matches!(o, PushOutcome::Refused(_));
    assert!(refused(strava::read_push(Some(PUSH_TOKEN), &fake::handshake("wrong", "c"))));
    assert!(refused(strava::read_push(None, &fake::handshake(PUSH_TOKEN, "c"))), "no token configured");
    let mut not_subscribe = fake::handshake(PUSH_TOKEN, "c");
    not_subscribe.query[0].1 = "unsubscribe".into();
    assert!(refused(strava::read_push(Some(PUSH_TOKEN), &not_subscribe)));
    // Read without any OAuth app: Strava signs nothing.
    assert!(matches!(
        adapter.push_unsigned(Some(PUSH_TOKEN), &fake::handshake(PUSH_TOKEN, "c")),
        Some(PushOutcome::Handshake { status: 200, .. })
    ));
    assert_eq!(adapter.push_claimed_user(&fake::event(fake::WEBHOOK_ACTIVITY_CREATE)), None);
}

#[test]
fn events_fetch_the_activitys_days_or_deauthorise_the_athlete() {
    let PushOutcome::Notices(notices) = strava::read_push(None, &fake::event(fake::WEBHOOK_ACTIVITY_CREATE))
    else {
        panic!()
    };
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].external_user_id, ATHLETE_ID.to_string());
    assert_eq!(
        notices[0].resources,
        [Resource::Workouts, Resource::WorkoutStream, Resource::Heartrate, Resource::Distance]
    );
    assert_eq!(notices[0].range, Some(DateRange { start: day("2026-11-22"), end: day("2026-11-23") }));

    assert_eq!(
        strava::read_push(None, &fake::event(fake::WEBHOOK_ATHLETE_DEAUTHORIZE)),
        PushOutcome::Deauthorized { external_user_id: ATHLETE_ID.to_string() }
    );
    let event = |body: Value| strava::read_push(None, &fake::event(&body.to_string()));
    let base = json!({"object_type": "activity", "object_id": 1, "aspect_type": "delete", "owner_id": 7,
        "subscription_id": 120475, "event_time": 1795449900, "updates": {}});
    assert_eq!(event(base.clone()), PushOutcome::Notices(vec![]), "deletions are not modelled");
    let mut renamed = base.clone();
    renamed["aspect_type"] = json!("update");
    renamed["updates"] = json!({"title": "Messy"});
    assert!(matches!(event(renamed), PushOutcome::Notices(n) if n.len() == 1));
    let mut athlete_update = base;
    athlete_update["object_type"] = json!("athlete");
    athlete_update["aspect_type"] = json!("update");
    athlete_update["updates"] = json!({"authorized": "true"});
    assert_eq!(event(athlete_update), PushOutcome::Notices(vec![]));
    assert!(matches!(strava::read_push(None, &fake::event("not json")), PushOutcome::Refused(_)));
}

#[tokio::test]
async fn the_one_subscription_of_the_app_is_created_once() {
    let (fake, adapter) = setup().await;
    let callback = "https://api.example/v2/provider_webhooks/strava";
    assert_eq!(adapter.ensure_subscriptions(&client(), callback, Some(PUSH_TOKEN)).await, Ok(1));
    assert_eq!(fake.subscriptions(), vec![(120_475, callback.to_owned(), PUSH_TOKEN.to_owned())]);
    assert_eq!(adapter.ensure_subscriptions(&client(), callback, Some(PUSH_TOKEN)).await, Ok(0));
    let elsewhere =
        adapter.ensure_subscriptions(&client(), "https://other.example/cb", Some(PUSH_TOKEN)).await;
    assert!(matches!(elsewhere, Err(ProviderError::Api(_))), "{elsewhere:?}");
    assert!(matches!(
        adapter.ensure_subscriptions(&client(), callback, None).await,
        Err(ProviderError::Unsupported(_))
    ));
    assert_eq!(fake.subscriptions().len(), 1);
}

#[tokio::test]
async fn revoke_deauthorizes_and_refreshes_an_expired_token_first() {
    let (fake, adapter) = setup().await;
    let linked = granted(&fake, "read,activity:read_all");
    adapter.revoke(&client(), &linked).await.unwrap();
    assert_eq!(fake.calls("deauthorize"), 1);
    assert_eq!(
        adapter.fetch(&linked, &Resource::Profile, fixture_range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );

    let expired = fake.account();
    fake.expire_access_tokens();
    adapter.revoke(&client(), &expired).await.unwrap();
    assert_eq!(fake.calls("deauthorize"), 3, "refused once, then with the refreshed token");
    assert_eq!(fake.calls("token"), 1);
}
