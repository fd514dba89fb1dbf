//! Lifecycle events: `user.deleted`, `user.undo_deleted`, `user.erased` (with counts of what
//! went) and `provider.connection.error`, on the bus and through webhooks.

use chrono::Duration;
use http::StatusCode;
use serde_json::{Value, json};
use wearlab_domain::events::lifecycle::{CONNECTION_ERROR, USER_DELETED, USER_ERASED, USER_UNDO_DELETED};

use crate::helpers::{TestApp, json_receiver};
use crate::linking::{connect_demo, connect_password};

fn published(t: &TestApp, event_type: &str) -> Vec<Value> {
    let bus = &t.stack.as_ref().unwrap().bus;
    bus.published()
        .into_iter()
        .filter(|e| e.event_type == event_type)
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

/// Runs the webhook queue until nothing is due (bounded).
async fn drain(t: &TestApp) {
    for _ in 0..10 {
        if t.stack.as_ref().unwrap().run_webhooks_once().await.unwrap() == 0 {
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_undo_and_erasure_are_announced_and_delivered() {
    let t = TestApp::embedded().await;
    let (url, seen) = json_receiver(|_| StatusCode::NO_CONTENT).await;
    let hook = t.post("/v2/team/webhooks", json!({"url": url})).await;
    assert_eq!(hook.status, StatusCode::OK, "{}", hook.body);
    let user = t.create_user("ev-life").await;
    connect_demo(&t, &user, "fitbit").await;
    let info = t.patch(&format!("/v2/user/{user}/info"), crate::lab::info_body()).await;
    assert_eq!(info.status, StatusCode::OK, "{}", info.body);
    let path = format!("/v2/user/{user}");

    assert_eq!(t.delete(&path).await.status, StatusCode::OK);
    let deleted = published(&t, USER_DELETED);
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0]["user_id"], user);
    assert_eq!(deleted[0]["client_user_id"], "ev-life");
    assert!(deleted[0]["data"]["erase_at"].is_string());
    drain(&t).await;

    assert_eq!(t.post_empty(&format!("/v2/user/undo_delete?user_id={user}")).await.status, StatusCode::OK);
    assert_eq!(published(&t, USER_UNDO_DELETED).len(), 1);
    drain(&t).await;

    assert_eq!(t.delete(&path).await.status, StatusCode::OK);
    t.clock.advance(Duration::days(7) + Duration::seconds(1));
    assert_eq!(t.run_due_jobs().await, 1);
    let erased = published(&t, USER_ERASED);
    assert_eq!(erased.len(), 1);
    let proof = &erased[0]["data"];
    assert_eq!(proof["user_id"], user);
    let total = proof["items_removed"].as_u64().unwrap();
    assert!(total >= 3, "the user, its demographics, its released client id: {proof}");
    let by_kind: u64 =
        proof["items_removed_by_kind"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(by_kind, total);
    assert_eq!(proof["items_removed_by_kind"]["user"], 1, "{proof}");
    assert!(!proof.to_string().contains("ev-life"), "counts only, never what the items held");

    drain(&t).await;
    let types: Vec<String> =
        seen.lock().unwrap().iter().map(|e| e["event_type"].as_str().unwrap().to_owned()).collect();
    for wanted in [USER_DELETED, USER_UNDO_DELETED, USER_ERASED] {
        assert!(types.iter().any(|t| t == wanted), "{wanted} delivered: {types:?}");
    }
}

#[tokio::test]
async fn a_connection_that_breaks_is_announced() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ev-broken").await;
    connect_password(&t, &user, "zwift", "jane-refresh-revoked").await;
    t.post_empty(&format!("/v2/user/refresh/{user}")).await;
    let errors = published(&t, CONNECTION_ERROR);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["user_id"], user);
    assert_eq!(errors[0]["data"]["provider"]["slug"], "zwift");
    assert_eq!(errors[0]["data"]["error_type"], "provider_credential_error");
}
