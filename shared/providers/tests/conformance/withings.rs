//! Conformance of the withings adapter against its local fake.

use std::collections::HashMap;

use crate::{COUNTING_WAIT_SECS, Counting};
use chrono::{Duration, NaiveDate, Utc};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderAccount, ProviderError,
    PushNotice, PushOutcome, PushRequest, RateWindow,
};
use wearlab_models::Resource;
use wearlab_providers::fake::withings::{self as fake, Failure, FakeWithings};
use wearlab_providers::withings::{self, Withings};
use wearlab_providers::{Adapter, AppConfig};

const REDIRECT: &str = "https://wearlab.example/v2/link/provider/oauth/withings/callback";

fn client() -> OauthClient {
    OauthClient { client_id: "withings-app".into(), client_secret: Secret::new("withings-app-secret") }
}

async fn setup() -> (FakeWithings, Withings) {
    let fake = FakeWithings::new(client());
    let endpoints = fake.start().await;
    let config = AppConfig { endpoints, platform_client: Some(client()), push_token: None };
    (fake, Withings::new(config))
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

fn fixture_range() -> DateRange {
    DateRange { start: day("2026-11-21"), end: day("2026-11-23") }
}

fn values(records: &[Value]) -> Vec<f64> {
    records.iter().map(|r| r["value"].as_f64().unwrap()).collect()
}

#[tokio::test]
async fn links_through_consent_and_requesttoken_with_the_user_id_from_the_answer() {
    let (fake, withings) = setup().await;
    let request = AuthorizeRequest {
        client_id: client().client_id,
        redirect_uri: REDIRECT.into(),
        state: "state-w".into(),
    };
    let url = url::Url::parse(&withings.authorize_url(&request).unwrap()).unwrap();
    let q: HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["scope"], "user.info,user.metrics,user.activity,user.sleepevents", "comma-separated");
    assert_eq!((q["response_type"].as_str(), q["client_id"].as_str()), ("code", "withings-app"));
    assert_eq!((q["redirect_uri"].as_str(), q["state"].as_str()), (REDIRECT, "state-w"));

    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(url.as_str()).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let location = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    let back: HashMap<_, _> = location.query_pairs().into_owned().collect();
    assert_eq!(back["state"], "state-w");

    let exchange = CodeExchange {
        code: Secret::new(back["code"].clone()),
        redirect_uri: REDIRECT.into(),
        client: client(),
    };
    let before = Utc::now();
    let linked = withings.exchange_code(&exchange).await.unwrap();
    assert_eq!(linked.external_user_id, "12345");
    let expires = linked.credentials.expires_at.unwrap();
    assert!(expires >= before + Duration::seconds(10800) && expires <= Utc::now() + Duration::seconds(10800));
    assert!(linked.credentials.refresh_token.is_some());
    let form = &fake.forms("requesttoken")[0];
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["client_secret"], "withings-app-secret", "the client is authenticated in the body");
    assert_eq!(form["redirect_uri"], REDIRECT);

    let again = withings.exchange_code(&exchange).await;
    assert!(matches!(again, Err(ProviderError::CredentialError(_))), "{again:?}");
}

#[tokio::test]
async fn refresh_keeps_the_new_refresh_token_and_a_used_one_is_revoked() {
    let (fake, withings) = setup().await;
    let first = fake.account().credentials;
    let second = withings.refresh(&client(), &first).await.unwrap();
    assert_ne!(second.refresh_token, first.refresh_token);
    assert_eq!(fake.forms("requesttoken")[0]["grant_type"], "refresh_token");
    let reused = withings.refresh(&client(), &first).await;
    assert!(matches!(reused, Err(ProviderError::Revoked(_))), "{reused:?}");
    let third = withings.refresh(&client(), &second).await.unwrap();
    assert_ne!(third.refresh_token, second.refresh_token);
}

#[tokio::test]
async fn fetches_every_resource_across_pages_with_units_converted() {
    let (fake, withings) = setup().await;
    fake.set_page_size(2);
    let account = fake.account();
    let mut got = HashMap::new();
    for resource in withings.resources() {
        let fetched = withings.fetch(&account, resource, fixture_range(), &NoLimit).await.unwrap();
        got.insert(resource.clone(), fetched.records);
    }

    // Measures: value x 10^unit; goals (category 2) and blood pressure are not read.
    assert_eq!(
        got[&Resource::Body],
        vec![
            json!({"date": "2026-11-21", "weight_kg": 72.45, "fat_percent": 18.3, "timezone": "Europe/Paris"}),
            json!({"date": "2026-11-22", "weight_kg": 72.9, "fat_percent": 18.2, "timezone": "Europe/Paris"}),
        ],
        "the day's last weight and fat ratio"
    );
    assert_eq!(values(&got[&Resource::Weight]), vec![72.45, 72.3, 72.9]);
    assert_eq!(got[&Resource::Weight][0]["timestamp"], "2026-11-21T07:30:00Z");
    assert_eq!(got[&Resource::Weight][0]["unit"], "kg");
    assert_eq!(got[&Resource::Weight][0]["timezone"], "Europe/Paris");
    assert_eq!(values(&got[&Resource::Fat]), vec![18.3, 18.2]);
    assert_eq!(values(&got[&Resource::BloodOxygen]), vec![97.0]);
    assert_eq!(values(&got[&Resource::BodyTemperature]), vec![36.65]);
    assert_eq!(got[&Resource::BodyTemperature][0]["unit"], "°C");
    assert_eq!(got[&Resource::Profile], vec![json!({"height_m": 1.78})]);
    let weight_pages =
        fake.forms("getmeas").into_iter().filter(|f| f["meastypes"] == "1").collect::<Vec<_>>();
    assert_eq!(weight_pages.len(), 2, "three groups, two a page");
    assert_eq!(weight_pages[0]["category"], "1");
    assert!(!weight_pages[0].contains_key("offset"));
    assert_eq!(weight_pages[1]["offset"], "2");

    assert_eq!(got[&Resource::Activity].len(), 3);
    assert_eq!(
        got[&Resource::Activity][0],
        json!({"date": "2026-11-21", "timezone": "Europe/Paris", "steps": 8543.0, "distance_m": 6234.5,
            "floors_climbed": 25.0, "low_minutes": 39.0, "high_minutes": 10.0, "calories_active": 312.5,
            "calories_total": 2150.0}),
        "the Withings API reference's activity example"
    );
    let activity_pages = fake.forms("getactivity");
    assert_eq!(activity_pages.len(), 2);
    assert_eq!(activity_pages[0]["startdateymd"], "2026-11-21");
    assert_eq!(activity_pages[0]["enddateymd"], "2026-11-23");

    assert_eq!(
        got[&Resource::Workouts][0],
        json!({"date": "2026-11-21", "timezone": "Europe/Paris", "time_start": "2026-11-21T17:30:00Z",
            "time_end": "2026-11-21T18:15:00Z", "sport": "running", "calories": 512.0, "distance_m": 8120.0,
            "average_hr": 151.0})
    );
    let sports: Vec<&str> = got[&Resource::Workouts].iter().map(|w| w["sport"].as_str().unwrap()).collect();
    assert_eq!(sports, vec!["running", "cycling", "other"], "categories 2 Run, 6 Bicycling, 36 Other");

    assert_eq!(got[&Resource::Sleep].len(), 2, "the nap shares a day with a longer night");
    assert_eq!(
        got[&Resource::Sleep][0],
        json!({"date": "2026-11-21", "timezone": "Europe/Paris", "bedtime_start": "2026-11-20T22:40:00Z",
            "bedtime_stop": "2026-11-21T06:40:00Z", "duration_s": 28800, "deep_s": 5400, "rem_s": 7200,
            "light_s": 10800, "awake_s": 1800, "efficiency": 85.0, "hr_average": 58.0}),
        "the Withings API reference's sleep summary example, its efficiency written as a percentage"
    );
    assert_eq!(got[&Resource::Sleep][1]["duration_s"], 28500);
    assert_eq!(
        got[&Resource::Sleep][1]["efficiency"],
        92.0,
        "a ratio, as the Withings API reference's schema describes it"
    );

    // Intraday: one 24 h window a day.
    assert_eq!(values(&got[&Resource::Heartrate]), vec![62.0, 88.0, 140.0, 57.0, 58.0, 60.0]);
    assert_eq!(
        got[&Resource::Heartrate][0],
        json!({"timestamp": "2026-11-21T07:00:00Z", "value": 62.0, "unit": "bpm"})
    );
    assert_eq!(values(&got[&Resource::Steps]), vec![120.0, 310.0, 0.0, 45.0]);
    assert_eq!(values(&got[&Resource::Distance]), vec![95.2, 248.7, 0.0, 33.0]);
    assert_eq!(values(&got[&Resource::CaloriesActive]), vec![4.1, 9.8, 1.2, 2.0]);
    let windows: Vec<(i64, i64)> = fake
        .forms("getintradayactivity")
        .iter()
        .filter(|f| f["data_fields"] == "heart_rate")
        .map(|f| (f["startdate"].parse().unwrap(), f["enddate"].parse().unwrap()))
        .collect();
    assert_eq!(windows.len(), 3);
    assert!(windows.iter().all(|(a, b)| b - a < 86_400));
    assert_eq!(windows[0].0, 1_795_219_200, "2026-11-21T00:00:00Z");
}

/// A height measure (type 4, m) is dated by its measure group, as a weight is: the body record
/// of that local day holds it, and the profile keeps the last height undated.
#[tokio::test]
async fn a_measured_height_is_the_body_record_of_its_day() {
    let (fake, withings) = setup().await;
    let account = fake.account();
    let range = DateRange { start: day("2026-01-01"), end: day("2026-01-31") };
    let fetched = withings.fetch(&account, &Resource::Body, range, &NoLimit).await.unwrap();
    // The fixture's height group: 178 x 10^-2 m at 2026-01-05 09:00 UTC (10:00 in Paris).
    assert_eq!(
        fetched.records,
        vec![json!({"date": "2026-01-05", "height_m": 1.78, "timezone": "Europe/Paris"})]
    );
    let asked = fake.forms("getmeas");
    assert!(asked.iter().any(|f| f["meastypes"] == "1,4,6"), "{asked:?}");
}

#[tokio::test]
async fn every_page_and_every_intraday_day_is_admitted_before_it_is_sent() {
    let (fake, withings) = setup().await;
    fake.set_page_size(1);
    let account = fake.account();
    // Three weight groups, one a page: three requests, three admitted.
    let gate = Counting::new();
    withings.fetch(&account, &Resource::Weight, fixture_range(), &gate).await.unwrap();
    assert_eq!(fake.calls("getmeas"), 3);
    assert_eq!(gate.admitted(), 3);
    // Intraday heart rate: one request a day.
    let gate = Counting::new();
    withings.fetch(&account, &Resource::Heartrate, fixture_range(), &gate).await.unwrap();
    assert_eq!(fake.calls("getintradayactivity"), 3);
    assert_eq!(gate.admitted(), 3);

    // A gate that admits two stops the fetch at the third day, which is never sent.
    let gate = Counting::with_budget(2);
    let limited = withings.fetch(&account, &Resource::Steps, fixture_range(), &gate).await;
    assert_eq!(limited, Err(ProviderError::RateLimited { retry_after_secs: COUNTING_WAIT_SECS }));
    assert_eq!(fake.calls("getintradayactivity"), 3 + 2);
}

#[tokio::test]
async fn every_status_family_in_the_body_is_typed() {
    let (fake, withings) = setup().await;
    let account = fake.account();
    let range = fixture_range();
    let data_error = |code| {
        fake.set_failure(Some(Failure::Status(code)));
        withings.fetch(&account, &Resource::Sleep, range, &NoLimit)
    };
    for code in [100, 101, 102, 200, 214, 277, 2553, 2555] {
        assert!(matches!(data_error(code).await, Err(ProviderError::CredentialError(_))), "status {code}");
    }
    for code in (201..=213).chain([503, 2554]) {
        assert!(matches!(data_error(code).await, Err(ProviderError::Api(_))), "status {code}");
    }
    assert_eq!(data_error(401).await, Err(ProviderError::AccessTokenRefused));
    assert!(matches!(data_error(522).await, Err(ProviderError::Api(_))));
    assert_eq!(data_error(601).await, Err(ProviderError::RateLimited { retry_after_secs: 60 }));
    fake.set_failure(Some(Failure::Http(503)));
    assert!(matches!(
        withings.fetch(&account, &Resource::Weight, range, &NoLimit).await,
        Err(ProviderError::Api(_))
    ));

    // The token endpoint: a refusal of the refresh token is Revoked; limits and outages are not.
    let credentials = &account.credentials;
    for code in [100, 201, 214, 401] {
        fake.set_failure(Some(Failure::Status(code)));
        let refused = withings.refresh(&client(), credentials).await;
        assert!(matches!(refused, Err(ProviderError::Revoked(_))), "status {code}: {refused:?}");
    }
    fake.set_failure(Some(Failure::Status(601)));
    assert!(matches!(withings.refresh(&client(), credentials).await, Err(ProviderError::RateLimited { .. })));
    fake.set_failure(Some(Failure::Status(522)));
    assert!(matches!(withings.refresh(&client(), credentials).await, Err(ProviderError::Api(_))));

    // Without the switch, an expired token is status 401 too.
    fake.set_failure(None);
    let mut stale = account.clone();
    stale.credentials.access_token = Secret::new("expired");
    assert_eq!(
        withings.fetch(&stale, &Resource::Activity, range, &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    assert!(withings.fetch(&account, &Resource::Activity, range, &NoLimit).await.is_ok());
    assert!(matches!(
        withings.fetch(&account, &Resource::BloodPressure, range, &NoLimit).await,
        Err(ProviderError::Unsupported(_))
    ));
}

#[test]
fn app_limit_and_hosts_are_withings_published_ones() {
    let withings = Withings::new(AppConfig::from_vars("withings", Withings::endpoints(), |_| None));
    assert_eq!(withings.app_limits(), &[RateWindow { requests: 120, window_secs: 60 }]);
    assert_eq!(withings.slug(), "withings");
    assert_eq!(Withings::endpoints().token, "https://wbsapi.withings.net/v2/oauth2");
}

#[test]
fn notifications_are_hints_by_category_and_the_reachability_check_is_answered() {
    let post = |body: &str| PushRequest {
        method: "POST".into(),
        headers: vec![("content-type".into(), "application/x-www-form-urlencoded".into())],
        body: body.as_bytes().to_vec(),
        ..Default::default()
    };
    let PushOutcome::Notices(notices) = withings::read_push(&post(fake::NOTIFICATION)) else { panic!() };
    assert_eq!(
        notices,
        vec![PushNotice {
            external_user_id: "12345".into(),
            resources: vec![
                Resource::Body,
                Resource::Weight,
                Resource::Fat,
                Resource::Profile,
                Resource::BodyTemperature
            ],
            // 2018-07-03T00:00Z .. 2018-07-04T10:05Z, a day either side for the user's zone.
            range: Some(DateRange { start: day("2018-07-02"), end: day("2018-07-05") }),
        }]
    );
    let resources = |appli: i64| match withings::read_push(&post(&format!(
        "userid=12345&appli={appli}&startdate=1530576000&enddate=1530698753"
    ))) {
        PushOutcome::Notices(n) => n.into_iter().flat_map(|n| n.resources).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(resources(44), vec![Resource::Sleep]);
    assert_eq!(resources(4), vec![Resource::BloodOxygen]);
    assert!(resources(16).contains(&Resource::Heartrate) && resources(16).contains(&Resource::Workouts));
    assert!(resources(50).is_empty(), "bed in: nothing to fetch");
    assert!(resources(1).contains(&Resource::BodyTemperature), "types 71 and 73 are appli 1's");
    // Appli 46: an unlink (or a deleted account) polls the user, whose refused tokens end the
    // connection; a profile update fetches nothing.
    for action in ["unlink", "delete"] {
        let unlink = withings::read_push(&post(&format!("userid=12345&appli=46&action={action}")));
        let PushOutcome::Notices(n) = unlink else { panic!("{unlink:?}") };
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].external_user_id, "12345");
    }
    assert_eq!(
        withings::read_push(&post("userid=12345&appli=46&action=update")),
        PushOutcome::Notices(vec![])
    );
    let PushOutcome::Notices(n) = withings::read_push(&post("userid=12345&appli=44")) else { panic!() };
    assert_eq!(n[0].range, None, "no dates: the caller picks a recent window");

    for method in ["HEAD", "GET"] {
        let check = PushRequest { method: method.into(), ..Default::default() };
        assert_eq!(withings::read_push(&check), PushOutcome::Handshake { status: 200, body: None });
    }
    let refused = |r: &PushRequest| matches!(withings::read_push(r), PushOutcome::Refused(_));
    assert!(refused(&PushRequest { method: "PUT".into(), ..Default::default() }));
    assert!(refused(&post("appli=1")), "no user");
    assert!(refused(&post("userid=12345&appli=sleep")), "unreadable category");
    assert!(refused(&post("userid=&appli=1")), "empty user");
}

#[tokio::test]
async fn revoke_signs_with_a_nonce_and_reaches_withings() {
    let (fake, withings) = setup().await;
    let linked = fake.account();
    withings.revoke(&client(), &linked).await.unwrap();
    assert_eq!((fake.calls("getnonce"), fake.calls("revoke")), (1, 1));
    let revoke = &fake.forms("revoke")[0];
    assert_eq!(revoke["userid"], "12345");
    assert_eq!(
        revoke["signature"],
        withings::signature(&client().client_secret, &["revoke", "withings-app", &revoke["nonce"]])
    );
    assert!(!revoke.contains_key("client_secret"), "a signed call sends no secret");
    assert_eq!(
        withings.fetch(&linked, &Resource::Sleep, fixture_range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );

    let wrong = OauthClient { client_id: "withings-app".into(), client_secret: Secret::new("wrong") };
    assert!(matches!(withings.revoke(&wrong, &fake.account()).await, Err(ProviderError::CredentialError(_))));
    let nameless = ProviderAccount { external_user_id: String::new(), ..fake.account() };
    assert!(matches!(withings.revoke(&client(), &nameless).await, Err(ProviderError::Api(_))));
}

#[tokio::test]
async fn subscribes_the_callback_to_every_mapped_category() {
    let (fake, withings) = setup().await;
    let callback = "https://wearlab.example/v2/provider_webhooks/withings";
    withings.subscribe(&fake.account(), callback).await.unwrap();
    let applis: Vec<String> = fake
        .subscriptions()
        .into_iter()
        .map(|(url, appli)| {
            assert_eq!(url, callback);
            appli
        })
        .collect();
    assert_eq!(applis, vec!["1", "2", "4", "16", "44", "46"]);
    for appli in withings::NOTIFY_APPLIS.into_iter().filter(|a| *a != withings::APPLI_USER) {
        assert!(!withings::resources_of_appli(appli.into()).is_empty(), "appli {appli} is mapped");
    }
}

#[tokio::test]
async fn an_offset_that_does_not_move_stops_the_paging() {
    let (fake, withings) = setup().await;
    fake.stick_paging();
    for (resource, action) in [(Resource::Sleep, "getsummary"), (Resource::Weight, "getmeas")] {
        let fetched = withings.fetch(&fake.account(), &resource, fixture_range(), &NoLimit).await;
        assert!(matches!(fetched, Err(ProviderError::Api(_))), "{resource}: {fetched:?}");
        assert_eq!(fake.calls(action), 2, "{resource}");
    }
}

#[tokio::test]
async fn sleep_is_asked_seven_days_at_a_time() {
    let (fake, withings) = setup().await;
    let range = DateRange { start: day("2026-11-01"), end: day("2026-11-23") };
    let fetched = withings.fetch(&fake.account(), &Resource::Sleep, range, &NoLimit).await.unwrap();
    assert_eq!(fetched.records.len(), 2, "the same nights as over the fixture's days");
    let spans: Vec<(String, String)> = fake
        .forms("getsummary")
        .into_iter()
        .map(|f| (f["startdateymd"].clone(), f["enddateymd"].clone()))
        .collect();
    let span = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        spans,
        vec![
            span("2026-11-01", "2026-11-07"),
            span("2026-11-08", "2026-11-14"),
            span("2026-11-15", "2026-11-21"),
            span("2026-11-22", "2026-11-23"),
        ]
    );
}
