use http::StatusCode;
use serde_json::Value;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::keys;

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
    // What was fetched is stored: 30 days back and today, readable through the data API.
    let a = t.get(&format!("/v2/summary/body/{user}?start_date=2026-01-30&end_date=2026-03-01")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["body"].as_array().unwrap().len(), 31, "{}", a.body);
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

/// Runs the pull queue until nothing is due (bounded), as the pull worker would.
async fn run_pull_worker(t: &TestApp) {
    for _ in 0..50 {
        if t.stack.as_ref().unwrap().run_pulls_once().await.unwrap() == 0 {
            return;
        }
    }
}

fn published(t: &TestApp, event_type: &str) -> Vec<Value> {
    let bus = &t.stack.as_ref().unwrap().bus;
    bus.published().into_iter().filter(|e| e.event_type == event_type).map(|e| e.data).collect()
}

#[tokio::test]
async fn refresh_stores_and_announces_a_new_day() {
    let t = TestApp::embedded().await;
    let user = t.create_user("rf-5").await;
    connect_demo(&t, &user, "oura").await;
    run_pull_worker(&t).await; // the historical pull
    assert!(published(&t, "daily.data.activity.created").is_empty());
    // The provider gains a day; the refresh fetches, stores and announces it.
    t.clock.advance(chrono::Duration::days(1));
    let a = t.post_empty(&format!("/v2/user/refresh/{user}?timeout=10")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(entries(&a.body["refreshed_sources"]).contains(&"oura/activity".to_owned()), "{}", a.body);
    assert_eq!(entries(&a.body["in_progress_sources"]), Vec::<String>::new());
    let read = t.get(&format!("/v2/summary/activity/{user}?start_date=2026-03-02&end_date=2026-03-02")).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    let summary = read.body["activity"][0].clone();
    assert_eq!(summary["calendar_date"], "2026-03-02", "{}", read.body);
    assert_eq!(published(&t, "daily.data.activity.created"), vec![summary]);
    assert_eq!(published(&t, "daily.data.heartrate.created").len(), 1);
    // Refreshing again with nothing new announces nothing more.
    let n = t.published().len();
    t.post_empty(&format!("/v2/user/refresh/{user}?timeout=10")).await;
    assert_eq!(t.published().len(), n);
}
