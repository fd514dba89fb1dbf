use http::StatusCode;
use serde_json::Value;
use wearlab_domain::ids::UserId;
use wearlab_domain::keys;
use wearlab_domain::linking::connections::ConnectionRecord;

use super::{connect_demo, connect_password};
use crate::helpers::TestApp;

fn entries(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn refreshes_every_resource_of_every_connection() {
    let t = TestApp::embedded().await;
    let user = t.create_user("rf-1").await;
    connect_demo(&t, &user, "oura").await;
    connect_password(&t, &user, "renpho", "jane").await;
    let a = t.post_empty(&format!("/v2/user/refresh/{user}?timeout=10")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["success"], true);
    assert_eq!(a.body["user_id"], user);
    let refreshed = entries(&a.body["refreshed_sources"]);
    for e in ["oura/sleep", "oura/heartrate", "renpho/weight", "renpho/body"] {
        assert!(refreshed.contains(&e.to_owned()), "{e} in {refreshed:?}");
    }
    assert!(!refreshed.iter().any(|e| e.ends_with("/connection")));
    assert_eq!(entries(&a.body["failed_sources"]), Vec::<String>::new());
    assert_eq!(entries(&a.body["in_progress_sources"]), Vec::<String>::new());
    // What was fetched is recorded on the connection.
    let uid = UserId::parse(&user).unwrap();
    let item = t.deps.table.get(&keys::linking::connection(uid, "renpho")).await.unwrap().unwrap();
    let rec: ConnectionRecord = item.decode().unwrap();
    let weight = &rec.synced["weight"];
    assert_eq!(weight.through.to_string(), "2026-03-01");
    assert_eq!(weight.records, 31 * 24, "30 days back and today, hourly");
}

#[tokio::test]
async fn failures_and_revoked_access_are_reported() {
    let t = TestApp::embedded().await;
    let user = t.create_user("rf-2").await;
    connect_password(&t, &user, "renpho", "jane-fetch-error").await;
    connect_password(&t, &user, "zwift", "jane-refresh-revoked").await;
    let a = t.post_empty(&format!("/v2/user/refresh/{user}")).await;
    let failed = entries(&a.body["failed_sources"]);
    assert!(failed.contains(&"renpho/weight".to_owned()), "{failed:?}");
    assert!(failed.contains(&"zwift/workouts".to_owned()), "{failed:?}");
    assert!(entries(&a.body["refreshed_sources"]).is_empty());
    let conns = t.get(&format!("/v2/user/providers/{user}")).await.body;
    let zwift = conns["providers"].as_array().unwrap().iter().find(|c| c["slug"] == "zwift").unwrap().clone();
    assert_eq!(zwift["status"], "error");
    assert_eq!(zwift["error_details"]["error_type"], "provider_credential_error");
    assert_eq!(zwift["resource_availability"]["workouts"]["status"], "unavailable");
    let renpho =
        conns["providers"].as_array().unwrap().iter().find(|c| c["slug"] == "renpho").unwrap().clone();
    assert_eq!(renpho["status"], "connected", "a failed fetch does not break the connection");
}

#[tokio::test]
async fn expired_tokens_are_renewed_before_fetching() {
    let t = TestApp::embedded().await;
    let user = t.create_user("rf-3").await;
    connect_password(&t, &user, "peloton", "jane").await;
    t.clock.advance(chrono::Duration::hours(3));
    let uid = UserId::parse(&user).unwrap();
    let before = t.deps.table.get(&keys::linking::connection(uid, "peloton")).await.unwrap().unwrap();
    let a = t.post_empty(&format!("/v2/user/refresh/{user}")).await;
    assert!(entries(&a.body["failed_sources"]).is_empty(), "{}", a.body);
    let after = t.deps.table.get(&keys::linking::connection(uid, "peloton")).await.unwrap().unwrap();
    assert_ne!(before.body["credentials"], after.body["credentials"], "renewed credentials stored");
}

#[tokio::test]
async fn slow_sources_are_in_progress_when_the_timeout_passes() {
    let t = TestApp::embedded().await;
    let user = t.create_user("rf-4").await;
    connect_password(&t, &user, "renpho", "jane-slow").await;
    connect_demo(&t, &user, "freestyle_libre").await;
    // Through the use case, below the API's 5 s minimum, so that the test waits as little as
    // it can: the slow source takes 20 s (simulated), the demo source a few milliseconds.
    let uid = UserId::parse(&user).unwrap();
    let r = wearlab_domain::lifecycle::refresh(&t.deps, t.team, uid, std::time::Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(r.refreshed_sources, vec!["freestyle_libre/glucose".to_owned()]);
    assert!(r.in_progress_sources.contains(&"renpho/weight".to_owned()), "{:?}", r.in_progress_sources);
    assert!(r.failed_sources.is_empty(), "{:?}", r.failed_sources);
}
