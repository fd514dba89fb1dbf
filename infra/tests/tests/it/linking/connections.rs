use http::{Method, StatusCode};
use serde_json::json;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::keys;
use wearlab_domain::ports::{Query, query_all};

use super::{connect_demo, connect_password};
use crate::helpers::{TestApp, error_locs};

async fn connection_items(t: &TestApp, user: &str) -> usize {
    let uid = UserId::parse(user).unwrap();
    let q = Query::partition(keys::user_partition(uid)).prefix(keys::linking::CONNECTION_PREFIX);
    query_all(t.deps.table.as_ref(), q, 100).await.unwrap().len()
}

async fn account_markers(t: &TestApp) -> usize {
    let q = Query::partition(keys::team(t.team).pk).prefix("PROVACCT#");
    query_all(t.deps.table.as_ref(), q, 100).await.unwrap().len()
}

#[tokio::test]
async fn demo_connections_for_the_four_demo_providers() {
    let t = TestApp::embedded().await;
    let user = t.create_user("demo-1").await;
    for p in ["apple_health_kit", "fitbit", "freestyle_libre", "oura"] {
        let a = t.post("/v2/link/connect/demo/", json!({"user_id": user, "provider": p})).await;
        assert_eq!(a.status, StatusCode::OK, "{p}: {}", a.body);
        assert_eq!(a.body["success"], true, "{}", a.body);
        assert!(a.body["detail"].as_str().is_some_and(|d| d.contains(p)), "{}", a.body);
        assert_eq!(a.body.as_object().unwrap().len(), 2, "upstream DemoConnectionStatus: success and detail");
    }
    let list = t.get(&format!("/v2/user/providers/{user}")).await.body;
    let slugs: Vec<&str> =
        list["providers"].as_array().unwrap().iter().map(|c| c["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs.len(), 4);
    assert!(list["providers"][0]["external_user_id"].as_str().unwrap().starts_with("demo-"));
    let again = t.post("/v2/link/connect/demo", json!({"user_id": user, "provider": "oura"})).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    for (body, loc) in [
        (json!({"user_id": user, "provider": "garmin"}), vec!["body", "provider"]),
        (json!({"user_id": user, "provider": "myspace"}), vec!["body", "provider"]),
        (json!({"user_id": "x", "provider": "oura"}), vec!["body", "user_id"]),
        (json!({"provider": "oura"}), vec!["body", "user_id"]),
    ] {
        let a = t.post("/v2/link/connect/demo", body.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error_locs(&a.body), [loc], "{body}");
    }
    let unknown =
        t.post("/v2/link/connect/demo", json!({"user_id": uuid::Uuid::new_v4(), "provider": "oura"})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let other = t.other_team_key().await;
    let body = json!({"user_id": user, "provider": "oura"}).to_string();
    let foreign = t.send(Method::POST, "/v2/link/connect/demo", Some(&other), Some(&body)).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
    assert_eq!(
        t.send(Method::POST, "/v2/link/connect/demo", None, Some(&body)).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn list_and_deregister_one() {
    let t = TestApp::embedded().await;
    let user = t.create_user("conn-1").await;
    assert_eq!(t.get(&format!("/v2/user/providers/{user}")).await.body, json!({"providers": []}));
    connect_demo(&t, &user, "fitbit").await;
    t.clock.advance(chrono::Duration::minutes(1));
    connect_password(&t, &user, "renpho", "jane").await;
    let list = t.get(&format!("/v2/user/providers/{user}/")).await.body;
    let c = &list["providers"];
    assert_eq!(c[0]["slug"], "fitbit");
    assert_eq!(c[1]["slug"], "renpho");
    assert_eq!(c[1]["name"], "Renpho");
    // The provider's mark on the deployment (the test app's public address), served by link-api.
    let logo = c[1]["logo"].as_str().unwrap();
    assert!(logo.starts_with("http") && logo.ends_with("/v2/link/web/marks/renpho.svg"), "{logo}");
    assert_eq!(c[1]["created_on"], "2026-03-01T09:01:00+00:00");
    assert_eq!(c[1]["error_details"], serde_json::Value::Null);
    assert_eq!(
        c[1]["resource_availability"]["weight"],
        json!({"status": "available", "scope_requirements": null})
    );
    assert!(c[1]["resource_availability"].get("connection").is_none());

    let d = t.delete(&format!("/v2/user/{user}/fitbit")).await;
    assert_eq!(d.status, StatusCode::OK);
    assert_eq!(d.body, json!({"success": true}));
    assert_eq!(connection_items(&t, &user).await, 1);
    let u = t.get(&format!("/v2/user/{user}")).await.body;
    assert_eq!(u["connected_sources"].as_array().unwrap().len(), 1);
    assert_eq!(u["connected_sources"][0]["provider"]["slug"], "renpho");
    let again = t.delete(&format!("/v2/user/{user}/fitbit")).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert_eq!(t.delete(&format!("/v2/user/{user}/myspace")).await.status, StatusCode::NOT_FOUND);
    let bad = t.delete("/v2/user/not-a-uuid/fitbit").await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&bad.body), [["path", "user_id"]]);
    let bad = t.get("/v2/user/providers/not-a-uuid").await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn another_teams_user_and_no_key() {
    let t = TestApp::embedded().await;
    let user = t.create_user("conn-2").await;
    connect_demo(&t, &user, "oura").await;
    let other = t.other_team_key().await;
    let list = t.send(Method::GET, &format!("/v2/user/providers/{user}"), Some(&other), None).await;
    assert_eq!(list.status, StatusCode::NOT_FOUND);
    let del = t.send(Method::DELETE, &format!("/v2/user/{user}/oura"), Some(&other), None).await;
    assert_eq!(del.status, StatusCode::NOT_FOUND);
    assert_eq!(connection_items(&t, &user).await, 1, "untouched");
    assert_eq!(
        t.send(Method::GET, &format!("/v2/user/providers/{user}"), None, None).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        t.send(Method::DELETE, &format!("/v2/user/{user}/oura"), None, None).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        t.get(&format!("/v2/user/providers/{}", uuid::Uuid::new_v4())).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn user_deletion_removes_every_connection_at_once_and_undo_does_not_restore_them() {
    let t = TestApp::embedded().await;
    let user = t.create_user("conn-3").await;
    connect_demo(&t, &user, "oura").await;
    connect_password(&t, &user, "zwift", "jane").await;
    connect_password(&t, &user, "peloton", "jane-deregister-error").await;
    assert_eq!(connection_items(&t, &user).await, 3);
    assert_eq!(account_markers(&t).await, 3);
    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    assert_eq!(connection_items(&t, &user).await, 0, "removed immediately");
    assert_eq!(account_markers(&t).await, 0);
    assert_eq!(t.post_empty(&format!("/v2/user/undo_delete?user_id={user}")).await.status, StatusCode::OK);
    let u = t.get(&format!("/v2/user/{user}")).await.body;
    assert_eq!(u["connected_sources"], json!([]));
    assert_eq!(t.get(&format!("/v2/user/providers/{user}")).await.body, json!({"providers": []}));
    // Erasure leaves nothing of a user deleted with connections.
    connect_demo(&t, &user, "fitbit").await;
    t.delete(&format!("/v2/user/{user}")).await;
    t.clock.advance(chrono::Duration::days(7));
    t.run_due_jobs().await;
    let uid = UserId::parse(&user).unwrap();
    let left =
        query_all(t.deps.table.as_ref(), Query::partition(keys::user_partition(uid)), 100).await.unwrap();
    assert!(left.is_empty());
}

#[tokio::test]
async fn credentials_are_stored_sealed() {
    let t = TestApp::embedded().await;
    let user = t.create_user("conn-4").await;
    connect_password(&t, &user, "zwift", "jane").await;
    let uid = UserId::parse(&user).unwrap();
    let item = t.deps.table.get(&keys::linking::connection(uid, "zwift")).await.unwrap().unwrap();
    let body = item.body.to_string();
    assert!(body.contains("\"credentials\":\"v1."), "{body}");
    assert!(!body.contains("sim:zwift"), "no access token in clear: {body}");
}
