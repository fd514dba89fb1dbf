//! `X-Idempotency-Key` on creates, on both storage adapters: replay, a different request with
//! the same key, concurrent duplicates, expiry after 24 hours.

use std::sync::Arc;

use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::json;

use wearlab_domain::Deps;
use wearlab_domain::ports::{Condition, Item, Key, Page, Query, StoreError, Table, WriteOp};

use crate::helpers::{Answer, TestApp, error_locs};

async fn post_with_key(t: &TestApp, key: &str, body: &str) -> Answer {
    t.send_with(Method::POST, "/v2/user", &[("x-idempotency-key", key)], Some(body)).await
}

pub async fn replays_the_first_answer(t: TestApp) {
    let first = post_with_key(&t, "create-1", r#"{"client_user_id": "idem-1"}"#).await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(first.headers.get("idempotent-replayed").is_none());
    t.clock.advance(Duration::hours(23));
    let again = post_with_key(&t, "create-1", r#"{"client_user_id": "idem-1"}"#).await;
    assert_eq!(again.status, StatusCode::OK, "replayed, not a 400 conflict: {}", again.body);
    assert_eq!(again.body, first.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.headers["content-type"], "application/json");
    assert_eq!(t.get("/v2/user").await.body["total"], 1);
}

pub async fn same_key_different_request_is_422(t: TestApp) {
    post_with_key(&t, "k", r#"{"client_user_id": "a"}"#).await;
    let other = post_with_key(&t, "k", r#"{"client_user_id": "b"}"#).await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&other.body), [["header", "X-Idempotency-Key"]]);
    assert_eq!(t.get("/v2/user").await.body["total"], 1, "the second request did not run");
}

pub async fn concurrent_duplicates_create_one_user(t: TestApp) {
    let t = Arc::new(t);
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let t = t.clone();
            tokio::spawn(async move { post_with_key(&t, "burst", r#"{"client_user_id": "burst"}"#).await })
        })
        .collect();
    let answers: Vec<_> = futures::future::join_all(tasks).await.into_iter().map(Result::unwrap).collect();
    let ids: std::collections::HashSet<_> = answers
        .iter()
        .filter(|a| a.status == StatusCode::OK)
        .map(|a| a.body["user_id"].to_string())
        .collect();
    assert_eq!(ids.len(), 1, "{:?}", answers.iter().map(|a| (a.status, a.body.clone())).collect::<Vec<_>>());
    for a in &answers {
        // A repeat that outwaits the first request is told to retry, and when.
        match a.status {
            StatusCode::OK => {}
            StatusCode::CONFLICT => {
                assert_eq!(a.headers["retry-after"], "1");
                assert_eq!(a.body["detail"], "A request with this idempotency key is still running; retry.");
            }
            other => panic!("{other}: {}", a.body),
        }
    }
    assert_eq!(t.get("/v2/user").await.body["total"], 1);
}

pub async fn keys_expire_after_24_hours(t: TestApp) {
    let first = post_with_key(&t, "day", r#"{"client_user_id": "day"}"#).await;
    assert_eq!(first.status, StatusCode::OK);
    t.clock.advance(Duration::hours(24) + Duration::seconds(1));
    let later = post_with_key(&t, "day", r#"{"client_user_id": "day"}"#).await;
    assert_eq!(later.status, StatusCode::BAD_REQUEST, "ran again: the id is taken now");
}

/// A table whose first transaction creating a user commits and then reports a lost connection:
/// what a process sees that dies (or loses its answer) right after the commit.
struct CommitThenFail {
    inner: Arc<dyn Table>,
    armed: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl Table for CommitThenFail {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.inner.get(key).await
    }
    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError> {
        self.inner.put(item, condition).await
    }
    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError> {
        self.inner.delete(key, condition).await
    }
    async fn transact(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        let creates_user = ops.iter().any(|op| op.key().pk.starts_with("USER#"));
        self.inner.transact(ops).await?;
        if creates_user && self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return Err(StoreError::Unavailable("connection lost after commit".into()));
        }
        Ok(())
    }
    async fn add(&self, add: wearlab_domain::ports::Add) -> Result<i64, StoreError> {
        self.inner.add(add).await
    }
    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.inner.query(query).await
    }
}

pub async fn a_create_that_committed_before_its_answer_was_lost_replays_it(t: TestApp) {
    let table = Arc::new(CommitThenFail { inner: t.deps.table.clone(), armed: true.into() });
    let deps = Deps { table, ..t.deps.clone() };
    let t = t.with_deps(deps);
    let lost = post_with_key(&t, "crash-1", r#"{"client_user_id": "crash-1"}"#).await;
    assert!(lost.status.is_server_error(), "{}", lost.status);
    let retry = post_with_key(&t, "crash-1", r#"{"client_user_id": "crash-1"}"#).await;
    assert_eq!(retry.status, StatusCode::OK, "the original answer, not a conflict: {}", retry.body);
    assert_eq!(retry.headers["idempotent-replayed"], "true");
    assert_eq!(retry.body["client_user_id"], "crash-1");
    let total = t.get("/v2/user").await.body["total"].clone();
    assert_eq!(total, 1);
    let user = t.get(&format!("/v2/user/{}", retry.body["user_id"].as_str().unwrap())).await;
    assert_eq!(user.body, retry.body, "the replay is the user that was created");
}

pub async fn a_retry_with_the_same_json_written_differently_is_the_same_request(t: TestApp) {
    let first =
        post_with_key(&t, "json-1", r#"{"client_user_id":"json-1","fallback_time_zone":"UTC"}"#).await;
    assert_eq!(first.status, StatusCode::OK);
    let again = post_with_key(
        &t,
        "json-1",
        "{\n  \"fallback_time_zone\": \"UTC\",\n  \"client_user_id\": \"json-1\"\n}",
    )
    .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body, first.body);
}

crate::helpers::on_both_adapters!(
    replays_the_first_answer,
    same_key_different_request_is_422,
    concurrent_duplicates_create_one_user,
    keys_expire_after_24_hours,
    a_create_that_committed_before_its_answer_was_lost_replays_it,
    a_retry_with_the_same_json_written_differently_is_the_same_request
);

#[tokio::test]
async fn rejections_are_replayed_too() {
    let t = TestApp::embedded().await;
    let first = post_with_key(&t, "bad", r#"{"client_user_id": "x@example.com"}"#).await;
    assert_eq!(first.status, StatusCode::UNPROCESSABLE_ENTITY);
    let again = post_with_key(&t, "bad", r#"{"client_user_id": "x@example.com"}"#).await;
    assert_eq!(again.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(again.headers["idempotent-replayed"], "true");
}

#[tokio::test]
async fn malformed_keys_are_422_and_bad_api_keys_401() {
    let t = TestApp::embedded().await;
    for key in ["", &"k".repeat(256), "has space"] {
        let a = post_with_key(&t, key, r#"{"client_user_id": "m"}"#).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{key:?}");
    }
    let a = t
        .send_as(
            Method::POST,
            "/v2/user",
            Some("sk_test_nope_nope_nope_nope"),
            &[("x-idempotency-key", "z")],
            Some("{}"),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    let ok = post_with_key(&t, "z", r#"{"client_user_id": "m"}"#).await;
    assert_eq!(ok.status, StatusCode::OK, "the 401 kept nothing under the key");
}

#[tokio::test]
async fn keys_are_per_team() {
    let t = TestApp::embedded().await;
    let other = t.other_team_key().await;
    let mine = post_with_key(&t, "shared-key", r#"{"client_user_id": "t1"}"#).await;
    let theirs = t
        .send_as(
            Method::POST,
            "/v2/user",
            Some(&other),
            &[("x-idempotency-key", "shared-key")],
            Some(r#"{"client_user_id": "t1"}"#),
        )
        .await;
    assert_eq!(theirs.status, StatusCode::OK);
    assert_ne!(theirs.body["user_id"], mine.body["user_id"]);
}

#[tokio::test]
async fn requests_without_a_key_are_not_replayed() {
    let t = TestApp::embedded().await;
    t.post("/v2/user", json!({"client_user_id": "plain"})).await;
    assert_eq!(t.post("/v2/user", json!({"client_user_id": "plain"})).await.status, StatusCode::BAD_REQUEST);
}
