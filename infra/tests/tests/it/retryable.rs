//! The retryable answers `docs/CLIENTS.md` promises, each forced: 409 with `Retry-After` for a
//! change that keeps losing to concurrent writers, a refusing work queue and an idempotency key
//! still in use; 503 with `Retry-After` for unreachable storage. Permanent refusals carry no
//! `Retry-After`.

use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::json;
use wearlab_domain::common::idempotency::{self, Claim, IdempotencyKey};
use wearlab_domain::common::ids::UserId;

use crate::helpers::{Answer, Faults, RefusingQueue, TestApp};
use crate::linking::connect_demo;

fn assert_retryable(a: &Answer, status: StatusCode, detail: &str) {
    assert_eq!(a.status, status, "{}", a.body);
    assert_eq!(a.headers["retry-after"], "1", "{status} tells when to retry");
    assert_eq!(a.headers["content-type"], "application/json");
    assert_eq!(a.body, json!({ "detail": detail }));
}

#[tokio::test]
async fn a_user_change_that_keeps_losing_the_race_is_409() {
    let (t, table) = TestApp::embedded_with_faults().await;
    let user = t.create_user("race-1").await;
    table.set(Faults { lose_races: true, ..Faults::default() });
    let a = t.patch(&format!("/v2/user/{user}"), json!({"client_user_id": "race-2"})).await;
    assert_retryable(&a, StatusCode::CONFLICT, "the user is being changed concurrently, retry");
    table.set(Faults::default());
    let stored = t.get(&format!("/v2/user/{user}")).await;
    assert_eq!(stored.body["client_user_id"], "race-1", "nothing was changed");
    let retried = t.patch(&format!("/v2/user/{user}"), json!({"client_user_id": "race-2"})).await;
    assert_eq!(retried.status, StatusCode::NO_CONTENT, "the retry goes through: {}", retried.body);
    assert_eq!(t.get(&format!("/v2/user/{user}")).await.body["client_user_id"], "race-2");
}

#[tokio::test]
async fn unreachable_storage_is_503_without_its_cause() {
    let (t, table) = TestApp::embedded_with_faults().await;
    let user = t.create_user("down-1").await;
    table.set(Faults { unavailable: true, ..Faults::default() });
    for a in [
        t.get(&format!("/v2/user/{user}")).await,
        t.post("/v2/user", json!({"client_user_id": "down-2"})).await,
    ] {
        assert_retryable(&a, StatusCode::SERVICE_UNAVAILABLE, "Service temporarily unavailable, retry.");
    }
    table.set(Faults::default());
    assert_eq!(t.get("/v2/user").await.body["total"], 1, "the refused create stored nothing");
}

#[tokio::test]
async fn a_refusing_work_queue_is_409() {
    let t = TestApp::embedded().await;
    let user = t.create_user("q-1").await;
    connect_demo(&t, &user, "oura").await;
    let t = t.with_queue(Arc::new(RefusingQueue));
    let a = t.post_empty(&format!("/v2/user/historical_pull/{user}/oura")).await;
    assert_retryable(&a, StatusCode::CONFLICT, "1 message(s) not sent: queue unavailable");
}

#[tokio::test]
async fn a_repeat_while_the_first_request_runs_is_409() {
    let t = TestApp::embedded().await;
    let body = r#"{"client_user_id": "idem-busy"}"#;
    // The first request with the key is still running: its claim is held here.
    let key = IdempotencyKey::parse("busy").unwrap();
    let fingerprint = idempotency::fingerprint("POST", "/v2/user", body.as_bytes());
    let Claim::Proceed(token) = idempotency::claim(&t.deps, t.team, &key, &fingerprint).await.unwrap() else {
        panic!("the key was free")
    };
    let repeat = t.send_with(Method::POST, "/v2/user", &[("x-idempotency-key", "busy")], Some(body)).await;
    assert_retryable(
        &repeat,
        StatusCode::CONFLICT,
        "A request with this idempotency key is still running; retry.",
    );
    assert_eq!(t.get("/v2/user").await.body["total"], 0, "the repeat did not run");
    // The first request failed in a way worth retrying and gave the key back: the retry runs.
    idempotency::release(&t.deps, token).await.unwrap();
    let retry = t.send_with(Method::POST, "/v2/user", &[("x-idempotency-key", "busy")], Some(body)).await;
    assert_eq!(retry.status, StatusCode::OK, "{}", retry.body);
    let created = UserId::parse(retry.body["user_id"].as_str().unwrap()).unwrap();
    assert_eq!(t.get(&format!("/v2/user/{created}")).await.body["client_user_id"], "idem-busy");
}

#[tokio::test]
async fn permanent_refusals_carry_no_retry_after() {
    let t = TestApp::embedded().await;
    t.create_user("taken").await;
    let a = t.post("/v2/user", json!({"client_user_id": "taken"})).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.headers.get("retry-after").is_none());
    let unknown = t.get(&format!("/v2/user/{}", uuid::Uuid::new_v4())).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.headers.get("retry-after").is_none());
}
