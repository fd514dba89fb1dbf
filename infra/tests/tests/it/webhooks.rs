//! Webhooks end to end on the embedded stack: a receiver on 127.0.0.1, events signed by the
//! Standard Webhooks scheme, retries on the schedule, attempts queryable, erasure drops events.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use chrono::Duration;
use http::Method;
use serde_json::json;
use wearlab_domain::ports::EventEnvelope;

use crate::helpers::{TestApp, error_locs};

#[derive(Clone, Default)]
struct Receiver {
    /// How many requests to refuse with 500 before accepting.
    fail_first: usize,
    seen: Arc<Mutex<Vec<(HeaderMap, Bytes)>>>,
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let mut seen = r.seen.lock().unwrap();
    seen.push((headers, body));
    if seen.len() <= r.fail_first { StatusCode::INTERNAL_SERVER_ERROR } else { StatusCode::NO_CONTENT }
}

/// A receiver on a free loopback port; returns its URL.
async fn start_receiver(r: Receiver) -> String {
    let app = axum::Router::new().route("/hook", axum::routing::post(receive)).with_state(r);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/hook")
}

/// The embedded stack on a clock near real time, so receivers can check timestamps.
async fn app() -> TestApp {
    let t = TestApp::embedded().await;
    t.clock.set(chrono::Utc::now());
    t
}

async fn create_endpoint(t: &TestApp, url: &str, types: serde_json::Value) -> (String, String) {
    let a = t.post("/v2/team/webhooks", json!({"url": url, "event_types": types})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    (a.body["id"].as_str().unwrap().to_owned(), a.body["secret"].as_str().unwrap().to_owned())
}

async fn publish(t: &TestApp, user_id: &str, event_type: &str) {
    let event = EventEnvelope {
        event_type: event_type.into(),
        user_id: user_id.parse().unwrap(),
        client_user_id: "c".into(),
        team_id: t.team.as_uuid(),
        data: json!({"provider": "oura"}),
    };
    t.deps.bus.publish(vec![event]).await.unwrap();
}

/// Runs the webhook queue until nothing is due (bounded).
async fn drain(t: &TestApp) -> usize {
    let stack = t.stack.as_ref().unwrap();
    let mut total = 0;
    for _ in 0..20 {
        let n = stack.run_webhooks_once().await.unwrap();
        total += n;
        if n == 0 {
            break;
        }
    }
    total
}

fn verify(secret: &str, headers: &HeaderMap, body: &[u8]) {
    let id = headers["webhook-id"].to_str().unwrap();
    let ts: i64 = headers["webhook-timestamp"].to_str().unwrap().parse().unwrap();
    let expected = standardwebhooks::Webhook::new(secret).unwrap().sign(id, ts, body).unwrap();
    assert_eq!(headers["webhook-signature"].to_str().unwrap(), expected, "signed with the endpoint's secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivered_signed_and_verifiable() {
    let t = app().await;
    let user = t.create_user("hooked").await;
    let r = Receiver::default();
    let (_, secret) = create_endpoint(&t, &start_receiver(r.clone()).await, json!([])).await;
    publish(&t, &user, "provider.connection.created").await;
    drain(&t).await;
    let seen = r.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let (headers, body) = &seen[0];
    verify(&secret, headers, body);
    // The library's own verification, timestamps included.
    standardwebhooks::Webhook::new(&secret).unwrap().verify(body, headers).unwrap();
    let event: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(event["event_type"], "provider.connection.created");
    assert_eq!(event["user_id"], user);
    assert_eq!(event["team_id"], t.team.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_receiver_gets_retries_on_the_schedule_then_exactly_one_delivery() {
    let t = app().await;
    let user = t.create_user("retry").await;
    let r = Receiver { fail_first: 3, ..Default::default() };
    let (id, secret) =
        create_endpoint(&t, &start_receiver(r.clone()).await, json!(["daily.data.sleep.created"])).await;
    publish(&t, &user, "daily.data.sleep.created").await;
    publish(&t, &user, "daily.data.steps.created").await; // filtered out
    drain(&t).await;
    assert_eq!(r.seen.lock().unwrap().len(), 1);
    for wait in [Duration::seconds(5), Duration::minutes(5), Duration::minutes(30)] {
        t.clock.advance(wait - Duration::seconds(1));
        drain(&t).await;
        let before = r.seen.lock().unwrap().len();
        t.clock.advance(Duration::seconds(1));
        drain(&t).await;
        assert_eq!(r.seen.lock().unwrap().len(), before + 1, "retried after exactly {wait}");
    }
    t.clock.advance(Duration::hours(12));
    drain(&t).await;
    let seen = r.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "three failures, one delivery, nothing after");
    let ids: std::collections::HashSet<_> = seen.iter().map(|(h, _)| h["webhook-id"].clone()).collect();
    assert_eq!(ids.len(), 1, "one message id across retries");
    for (h, b) in &seen {
        verify(&secret, h, b);
    }
    let attempts = t.get(&format!("/v2/team/webhooks/{id}/attempts")).await;
    assert_eq!(attempts.status, StatusCode::OK);
    let outcomes: Vec<_> = attempts.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outcomes, ["failed", "failed", "failed", "delivered"]);
    assert_eq!(attempts.body["data"][0]["status_code"], 500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_never_answers_2xx_is_dead_lettered_after_eight_attempts() {
    let t = app().await;
    let user = t.create_user("dead").await;
    let r = Receiver { fail_first: usize::MAX, ..Default::default() };
    let (id, _) = create_endpoint(&t, &start_receiver(r.clone()).await, json!([])).await;
    publish(&t, &user, "daily.data.sleep.created").await;
    for _ in 0..12 {
        drain(&t).await;
        t.clock.advance(Duration::hours(11));
    }
    assert_eq!(r.seen.lock().unwrap().len(), 8);
    let attempts = t.get(&format!("/v2/team/webhooks/{id}/attempts?limit=100")).await;
    let last = attempts.body["data"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["outcome"], "dead_lettered");
    assert_eq!(last["attempt"], 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_an_erased_user_in_flight_are_dropped() {
    let t = app().await;
    let user = t.create_user("gone").await;
    let r = Receiver { fail_first: 1, ..Default::default() };
    // Data events only: the lifecycle events (user.erased is delivered after erasure) are not
    // what this is about.
    let (id, _) =
        create_endpoint(&t, &start_receiver(r.clone()).await, json!(["daily.data.sleep.created"])).await;
    publish(&t, &user, "daily.data.sleep.created").await;
    drain(&t).await;
    assert_eq!(r.seen.lock().unwrap().len(), 1);
    t.delete(&format!("/v2/user/{user}")).await;
    t.clock.advance(Duration::days(7) + Duration::seconds(1));
    t.run_due_jobs().await;
    drain(&t).await;
    assert_eq!(r.seen.lock().unwrap().len(), 1, "nothing sent after erasure");
    let attempts = t.get(&format!("/v2/team/webhooks/{id}/attempts")).await;
    assert_eq!(attempts.body["data"].as_array().unwrap().last().unwrap()["outcome"], "dropped");
}

#[tokio::test]
async fn endpoints_api() {
    let t = app().await;
    let (id, secret) = create_endpoint(&t, "https://example.com/hooks", json!([])).await;
    assert!(secret.starts_with("whsec_"));
    let list = t.get("/v2/team/webhooks").await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.body["data"][0]["id"], id);
    assert!(!list.body.to_string().contains(&secret), "the secret is shown once only");
    let stored = serde_json::to_string(&t.stack.as_ref().unwrap().table.scan_all().await.unwrap()).unwrap();
    assert!(!stored.contains(secret.trim_start_matches("whsec_")), "stored encrypted");
    for bad in [
        json!({"url": "http://example.com/x"}),
        json!({"url": "nope"}),
        json!({"url": "https://e.com", "event_types": ["bad type"]}),
        json!({}),
    ] {
        let a = t.post("/v2/team/webhooks", bad.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert_eq!(error_locs(&a.body)[0][0], "body");
    }
    let other = t.other_team_key().await;
    let theirs = t.send(Method::GET, "/v2/team/webhooks", Some(&other), None).await;
    assert_eq!(theirs.body["data"], json!([]));
    let del = t.send(Method::DELETE, &format!("/v2/team/webhooks/{id}"), Some(&other), None).await;
    assert_eq!(del.status, StatusCode::NOT_FOUND, "another team's endpoint");
    assert_eq!(
        t.get(&format!("/v2/team/webhooks/{id}/attempts?limit=0")).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(t.delete(&format!("/v2/team/webhooks/{id}")).await.status, StatusCode::OK);
    assert_eq!(t.delete(&format!("/v2/team/webhooks/{id}")).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.send(Method::GET, "/v2/team/webhooks", None, None).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_team_has_at_most_20_endpoints() {
    let t = app().await;
    let mut ids = Vec::new();
    for n in 0..20 {
        ids.push(create_endpoint(&t, &format!("https://hooks.example/{n}"), json!([])).await.0);
    }
    let refused =
        t.post("/v2/team/webhooks", json!({"url": "https://hooks.example/20", "event_types": []})).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(refused.body["detail"], "a team has at most 20 webhook endpoints");
    assert_eq!(t.get("/v2/team/webhooks").await.body["data"].as_array().unwrap().len(), 20, "none added");
    let other = t.other_team_key().await;
    let theirs = t
        .send(
            Method::POST,
            "/v2/team/webhooks",
            Some(&other),
            Some(&json!({"url": "https://hooks.example/other", "event_types": []}).to_string()),
        )
        .await;
    assert_eq!(theirs.status, StatusCode::OK, "the limit is per team: {}", theirs.body);
    assert_eq!(t.delete(&format!("/v2/team/webhooks/{}", ids[0])).await.status, StatusCode::OK);
    create_endpoint(&t, "https://hooks.example/again", json!([])).await;
}
