//! The Oura adapter against the local Oura.

use chrono::{NaiveDate, Utc};
use serde_json::Value;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, NoLimit, OauthClient, ProviderAccount, ProviderCredentials,
    ProviderError, PushOutcome, PushRequest,
};
use wearlab_models::Resource;
use wearlab_providers::Adapter;
use wearlab_providers::fake::oura::{OuraFake, USER_ID};
use wearlab_providers::oura::{self, Oura};

const PUSH_TOKEN: &str = "push-verification-token";

fn client() -> OauthClient {
    OauthClient { client_id: "oura-app".into(), client_secret: Secret::new("oura-secret") }
}

async fn setup() -> (OuraFake, Oura) {
    let fake = OuraFake::start(&client()).await;
    let adapter = Oura::new(fake.config(&client(), Some(PUSH_TOKEN)));
    (fake, adapter)
}

fn account(fake: &OuraFake) -> ProviderAccount {
    let (access, refresh) = fake.issue_tokens();
    ProviderAccount {
        external_user_id: USER_ID.into(),
        credentials: ProviderCredentials {
            access_token: Secret::new(access),
            refresh_token: Some(Secret::new(refresh)),
            expires_at: None,
            scopes: vec![],
        },
    }
}

fn range() -> DateRange {
    DateRange {
        start: NaiveDate::from_ymd_opt(2026, 11, 1).unwrap(),
        end: NaiveDate::from_ymd_opt(2026, 11, 24).unwrap(),
    }
}

/// Follows the consent page as a browser would: the fake redirects back with a code.
async fn consent(url: &str) -> (String, String) {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let res = http.get(url).send().await.unwrap();
    assert_eq!(res.status(), 302);
    let location = url::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap();
    let q = |k: &str| location.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned()).unwrap();
    (q("code"), q("state"))
}

#[tokio::test]
async fn links_with_scopes_code_exchange_and_user_id() {
    let (fake, adapter) = setup().await;
    let url = adapter
        .authorize_url(&AuthorizeRequest {
            client_id: "oura-app".into(),
            redirect_uri: "http://127.0.0.1:1/cb".into(),
            state: "st-1".into(),
        })
        .unwrap();
    let parsed = url::Url::parse(&url).unwrap();
    let q: std::collections::HashMap<_, _> = parsed.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "oura-app");
    assert_eq!(q["scope"], "personal daily heartrate workout spo2Daily");
    assert!(url.starts_with(&format!("{}/oauth/authorize?", fake.base_url())));

    let (code, state) = consent(&url).await;
    assert_eq!(state, "st-1");
    let exchange = CodeExchange {
        code: Secret::new(code.clone()),
        redirect_uri: "http://127.0.0.1:1/cb".into(),
        client: client(),
    };
    let account = adapter.exchange_code(&exchange).await.unwrap();
    assert_eq!(account.external_user_id, USER_ID);
    assert!(account.credentials.refresh_token.is_some());
    let expires = account.credentials.expires_at.unwrap();
    assert!(expires > Utc::now() + chrono::Duration::hours(23));
    assert!(account.credentials.scopes.contains(&"heartrate".to_owned()));

    // A code works once; a wrong client secret is refused.
    let again = adapter.exchange_code(&exchange).await.unwrap_err();
    assert!(matches!(again, ProviderError::CredentialError(_)), "{again:?}");
    let (code, _) = consent(&url).await;
    let wrong = CodeExchange {
        client: OauthClient { client_id: "oura-app".into(), client_secret: Secret::new("nope") },
        code: Secret::new(code),
        ..exchange
    };
    assert!(matches!(adapter.exchange_code(&wrong).await, Err(ProviderError::CredentialError(_))));
}

#[tokio::test]
async fn refresh_rotates_the_single_use_refresh_token() {
    let (fake, adapter) = setup().await;
    let old = account(&fake).credentials;
    let fresh = adapter.refresh(&client(), &old).await.unwrap();
    assert_ne!(fresh.access_token, old.access_token);
    assert_ne!(fresh.refresh_token, old.refresh_token);
    assert!(fresh.expires_at.is_some());
    assert_eq!(fake.calls("token:refresh_token"), 1);

    // The old refresh token was used: a second use is refused as revoked.
    let err = adapter.refresh(&client(), &old).await.unwrap_err();
    assert!(matches!(err, ProviderError::Revoked(_)), "{err:?}");
    // The new one works, and gives new data access.
    let newer = adapter.refresh(&client(), &fresh).await.unwrap();
    let acc = ProviderAccount { external_user_id: USER_ID.into(), credentials: newer };
    assert_eq!(adapter.fetch(&acc, &Resource::Workouts, range(), &NoLimit).await.unwrap().records.len(), 2);
}

fn by_date<'a>(records: &'a [Value], date: &str) -> &'a Value {
    records.iter().find(|r| r["date"] == date).unwrap_or_else(|| panic!("no record of {date}"))
}

#[tokio::test]
async fn fetches_every_resource_across_pages_with_units() {
    let (fake, adapter) = setup().await;
    let acc = account(&fake);
    let fetch = |r: Resource| {
        let (adapter, acc) = (&adapter, &acc);
        async move { adapter.fetch(acc, &r, range(), &NoLimit).await.unwrap().records }
    };

    let activity = fetch(Resource::Activity).await;
    assert_eq!(activity.len(), 3);
    let a = by_date(&activity, "2026-11-20");
    assert_eq!(a["steps"], 9421.0);
    assert_eq!(a["calories_active"], 612.0);
    assert_eq!(a["calories_total"], 2840.0);
    assert!(
        a.get("distance_m").is_none_or(Value::is_null),
        "equivalent_walking_distance is energy expressed as walking, not a distance travelled"
    );
    assert_eq!(a["low_minutes"], 297.0, "seconds to minutes");
    assert_eq!(a["high_minutes"], 19.0);
    // Three documents at two a page: two pages.
    assert_eq!(fake.calls("daily_activity"), 2);

    let sleep = fetch(Resource::Sleep).await;
    assert_eq!(sleep.len(), 4, "the nap of the 20th is a sleep of its own");
    let s = by_date(&sleep, "2026-11-20");
    assert_eq!(s["type"], "long_sleep");
    assert_eq!(s["bedtime_start"], "2026-11-19T23:04:00+01:00");
    assert_eq!(s["bedtime_stop"], "2026-11-20T07:04:00+01:00");
    assert_eq!(
        (s["deep_s"].as_f64(), s["rem_s"].as_f64(), s["light_s"].as_f64()),
        (Some(5400.0), Some(7200.0), Some(14400.0))
    );
    assert_eq!(s["awake_s"], 1800.0);
    assert_eq!(s["duration_s"], 28800.0);
    assert_eq!(s["efficiency"], 88.0);
    assert_eq!(s["hr_average"], 56.5);
    let stages = s["stages"].as_array().unwrap();
    assert_eq!(stages[0]["stage"], "awake");
    assert_eq!(stages.last().unwrap()["end_offset_s"], 15 * 300);
    let nap = sleep.iter().find(|r| r["bedtime_start"] == "2026-11-20T15:00:00+01:00").unwrap();
    assert_eq!(nap["date"], "2026-11-20");
    assert_eq!(nap["type"], "acknowledged_nap", "Oura's late_nap: a user confirmed nap");
    assert_eq!(nap["duration_s"], 1800.0);
    assert_eq!(nap["bedtime_stop"], "2026-11-20T15:30:00+01:00");

    let hrv = fetch(Resource::Hrv).await;
    assert_eq!(hrv.len(), 2 + 2 + 2, "null samples skipped");
    assert_eq!(hrv[0]["timestamp"], "2026-11-19T22:04:00+00:00");
    assert_eq!(hrv[0]["unit"], "ms");
    assert_eq!(hrv[1]["timestamp"], "2026-11-19T22:14:00+00:00", "interval 300 s");

    let resp = fetch(Resource::RespiratoryRate).await;
    assert_eq!(resp.len(), 3);
    assert_eq!(resp[0]["value"], 14.875);

    let workouts = fetch(Resource::Workouts).await;
    assert_eq!(workouts.len(), 2);
    let w = by_date(&workouts, "2026-11-22");
    assert_eq!(w["sport"], "running");
    assert_eq!(w["calories"], 520.0);
    assert_eq!(w["distance_m"], 8400.0);
    assert_eq!(w["time_start"], "2026-11-22T09:00:00+01:00");

    let hr = fetch(Resource::Heartrate).await;
    assert_eq!(hr.len(), 5);
    assert_eq!(hr[2]["value"], 122.0);
    assert_eq!(hr[2]["unit"], "bpm");
    // 24 days in one 30-day window, five rows at two a page: three pages.
    assert_eq!(fake.calls("heartrate"), 3);

    let spo2 = fetch(Resource::BloodOxygen).await;
    assert_eq!(spo2.len(), 2, "a day without an average is skipped");
    assert_eq!(spo2[0]["value"], 96.8);
    assert_eq!(spo2[0]["unit"], "%");

    let temp = fetch(Resource::BodyTemperatureDelta).await;
    assert_eq!(temp.len(), 2);
    assert_eq!(temp[1]["value"], 0.35);
    assert_eq!(temp[1]["unit"], "°C");

    let profile = fetch(Resource::Profile).await;
    assert_eq!(profile[0]["height_m"], 1.8);
    assert_eq!(profile[0]["birth_year"], i64::from(chrono::Datelike::year(&Utc::now())) - 31);

    assert!(fetch(Resource::StressLevel).await.is_empty(), "no Oura series: empty, not an error");

    // A range leaves out other days.
    let one = DateRange {
        start: NaiveDate::from_ymd_opt(2026, 11, 21).unwrap(),
        end: NaiveDate::from_ymd_opt(2026, 11, 21).unwrap(),
    };
    let a = adapter.fetch(&acc, &Resource::Activity, one, &NoLimit).await.unwrap().records;
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["date"], "2026-11-21");
}

#[tokio::test]
async fn heart_rate_is_asked_for_in_windows_of_thirty_days() {
    let (fake, adapter) = setup().await;
    fake.set_page_size(100);
    let acc = account(&fake);
    let long = DateRange {
        start: NaiveDate::from_ymd_opt(2026, 8, 1).unwrap(),
        end: NaiveDate::from_ymd_opt(2026, 11, 24).unwrap(),
    };
    let hr = adapter.fetch(&acc, &Resource::Heartrate, long, &NoLimit).await.unwrap().records;
    assert_eq!(hr.len(), 5, "every row once");
    // 116 days: four windows.
    assert_eq!(fake.calls("heartrate"), 4);
}

#[tokio::test]
async fn errors_map_401_429_and_5xx() {
    let (fake, adapter) = setup().await;
    let acc = account(&fake);
    fake.fail_next(429, 1);
    match adapter.fetch(&acc, &Resource::Activity, range(), &NoLimit).await {
        Err(ProviderError::RateLimited { retry_after_secs }) => assert_eq!(retry_after_secs, 7),
        other => panic!("{other:?}"),
    }
    fake.fail_next(503, 1);
    assert!(matches!(
        adapter.fetch(&acc, &Resource::Sleep, range(), &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    fake.fail_next(500, 1);
    assert!(matches!(
        adapter.fetch(&acc, &Resource::Profile, range(), &NoLimit).await,
        Err(ProviderError::Api(_))
    ));
    fake.fail_next(403, 1);
    assert!(matches!(
        adapter.fetch(&acc, &Resource::Workouts, range(), &NoLimit).await,
        Err(ProviderError::CredentialError(_))
    ));
    // A failure on a later page fails the fetch (no half resource).
    fake.expire_access_tokens();
    assert_eq!(
        adapter.fetch(&acc, &Resource::Heartrate, range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    // After a refresh the new token works.
    let fresh = adapter.refresh(&client(), &acc.credentials).await.unwrap();
    let acc = ProviderAccount { credentials: fresh, ..acc };
    assert_eq!(adapter.fetch(&acc, &Resource::Heartrate, range(), &NoLimit).await.unwrap().records.len(), 5);
}

fn push_post(body: &str, timestamp: i64, signature: Option<String>) -> PushRequest {
    let mut headers = vec![("x-oura-timestamp".to_owned(), timestamp.to_string())];
    if let Some(s) = signature {
        headers.push(("x-oura-signature".into(), s));
    }
    PushRequest { method: "POST".into(), query: vec![], headers, body: body.as_bytes().to_vec() }
}

#[tokio::test]
async fn push_handshake_and_signatures() {
    let (_fake, adapter) = setup().await;
    let get = |token: &str| PushRequest {
        method: "GET".into(),
        query: vec![
            ("verification_token".into(), token.into()),
            ("challenge".into(), "random-string".into()),
        ],
        ..PushRequest::default()
    };
    assert_eq!(
        adapter.push(&client(), Some(PUSH_TOKEN), &get(PUSH_TOKEN)),
        PushOutcome::Handshake { status: 200, body: Some(serde_json::json!({"challenge": "random-string"})) }
    );
    assert!(matches!(adapter.push(&client(), Some(PUSH_TOKEN), &get("wrong")), PushOutcome::Refused(_)));
    assert!(matches!(adapter.push(&client(), None, &get(PUSH_TOKEN)), PushOutcome::Refused(_)));

    let body = r#"{"event_type":"update","data_type":"sleep","object_id":"12345abc","event_time":"2026-11-22T08:00:00+00:00","user_id":"8f9a5221-639e-4a85-81cb-4065ef23f979"}"#;
    let now = Utc::now().timestamp();
    let good = oura::sign("oura-secret", &now.to_string(), body.as_bytes());
    match adapter.push(&client(), Some(PUSH_TOKEN), &push_post(body, now, Some(good.clone()))) {
        PushOutcome::Notices(n) => {
            assert_eq!(n.len(), 1);
            assert_eq!(n[0].external_user_id, USER_ID);
            assert_eq!(n[0].resources, [Resource::Sleep, Resource::Hrv, Resource::RespiratoryRate]);
            let r = n[0].range.unwrap();
            assert_eq!((r.start.to_string(), r.end.to_string()), ("2026-11-21".into(), "2026-11-22".into()));
        }
        other => panic!("{other:?}"),
    }
    // Lower-case hex is the same signature.
    assert!(matches!(
        adapter.push(&client(), Some(PUSH_TOKEN), &push_post(body, now, Some(good.to_ascii_lowercase()))),
        PushOutcome::Notices(_)
    ));
    let refused =
        |r: PushRequest| matches!(adapter.push(&client(), Some(PUSH_TOKEN), &r), PushOutcome::Refused(_));
    assert!(refused(push_post(body, now, None)), "missing signature");
    let other_secret = oura::sign("other", &now.to_string(), body.as_bytes());
    assert!(refused(push_post(body, now, Some(other_secret))), "bad signature");
    let tampered = body.replace("sleep", "workout");
    assert!(refused(push_post(&tampered, now, Some(good))), "body changed after signing");
    let old = now - 3600;
    let stale = oura::sign("oura-secret", &old.to_string(), body.as_bytes());
    assert!(refused(push_post(body, old, Some(stale))), "stale timestamp");
}

#[tokio::test]
async fn revoke_ends_access() {
    let (fake, adapter) = setup().await;
    let acc = account(&fake);
    adapter.revoke(&client(), &acc).await.unwrap();
    assert_eq!(fake.calls("revoke"), 1);
    assert_eq!(
        adapter.fetch(&acc, &Resource::Activity, range(), &NoLimit).await,
        Err(ProviderError::AccessTokenRefused)
    );
    // Revoking again (token already dead) is not an error.
    adapter.revoke(&client(), &acc).await.unwrap();
}

#[tokio::test]
async fn revoking_with_an_expired_access_token_refreshes_and_revokes_the_fresh_one() {
    let (fake, adapter) = setup().await;
    let acc = account(&fake);
    fake.expire_access_tokens();
    adapter.revoke(&client(), &acc).await.unwrap();
    assert_eq!(fake.calls("token:refresh_token"), 1, "the expired token was refreshed");
    assert_eq!(fake.calls("revoke"), 2, "the dead token, then the fresh one");
    // The refresh token was spent on the fresh access token, which is revoked: nothing is left.
    assert!(matches!(adapter.refresh(&client(), &acc.credentials).await, Err(ProviderError::Revoked(_))));
}

#[tokio::test]
async fn push_timestamps_in_milliseconds_are_read_too() {
    let (_fake, adapter) = setup().await;
    let body = r#"{"event_type":"update","data_type":"workout","object_id":"w1","event_time":"2026-11-22T08:00:00+00:00","user_id":"8f9a5221-639e-4a85-81cb-4065ef23f979"}"#;
    let now_ms = Utc::now().timestamp_millis();
    let signed = oura::sign("oura-secret", &now_ms.to_string(), body.as_bytes());
    match adapter.push(&client(), Some(PUSH_TOKEN), &push_post(body, now_ms, Some(signed))) {
        PushOutcome::Notices(n) => assert_eq!(n[0].resources, [Resource::Workouts]),
        other => panic!("a fresh push stamped in milliseconds: {other:?}"),
    }
    let old_ms = now_ms - 3_600_000;
    let stale = oura::sign("oura-secret", &old_ms.to_string(), body.as_bytes());
    assert!(matches!(
        adapter.push(&client(), Some(PUSH_TOKEN), &push_post(body, old_ms, Some(stale))),
        PushOutcome::Refused(_)
    ));
}

#[tokio::test]
async fn push_subscriptions_are_created_once_and_renewed_before_they_expire() {
    let (fake, adapter) = setup().await;
    let callback = "https://api.example/v2/provider_webhooks/oura";
    assert_eq!(adapter.ensure_subscriptions(&client(), callback, Some(PUSH_TOKEN)).await.unwrap(), 10);
    let subs = fake.subscriptions();
    assert_eq!(subs.len(), 10, "five data types, created and updated");
    assert!(subs.iter().all(|s| s["callback_url"] == callback));
    // All current: nothing to do.
    assert_eq!(adapter.ensure_subscriptions(&client(), callback, Some(PUSH_TOKEN)).await.unwrap(), 0);
    assert_eq!(fake.calls("subscription:create"), 10);
    // About to expire: renewed, not created again.
    fake.expire_subscriptions(Utc::now() + chrono::Duration::days(3));
    assert_eq!(adapter.ensure_subscriptions(&client(), callback, Some(PUSH_TOKEN)).await.unwrap(), 10);
    assert_eq!(fake.calls("subscription:renew"), 10);
    assert_eq!(fake.subscriptions().len(), 10);
    // The app's credentials are checked; without a verification token nothing is subscribed.
    let wrong = OauthClient { client_id: "oura-app".into(), client_secret: Secret::new("nope") };
    assert!(matches!(
        adapter.ensure_subscriptions(&wrong, callback, Some(PUSH_TOKEN)).await,
        Err(ProviderError::AccessTokenRefused)
    ));
    assert!(adapter.ensure_subscriptions(&client(), callback, None).await.is_err());
}
