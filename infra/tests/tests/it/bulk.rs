//! Bulk connection operations: the team switch, import (with its failures, re-import,
//! duplicate and crashed deliveries, poison messages), the historical pull trigger under
//! throttles, the list of operations, export, pause, and the bulk queue on SQS (moto).

use std::sync::Arc;
use std::time::Duration;

use chrono::Duration as Span;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::common::ids::UserId;
use wearlab_domain::keys;
use wearlab_domain::ports::{Outgoing, Query, Queue, QueueName, query_all};
use wearlab_domain::teams;

use crate::helpers::{TestApp, error_locs};

const CLIENT_ID: &str = "team-fitbit-app";

/// A team with bulk operations on and its own fitbit app.
async fn bulk_team() -> TestApp {
    let t = TestApp::embedded().await;
    teams::set_bulk_operations(&t.deps, t.team, true).await.unwrap();
    let a = t
        .send(
            Method::PUT,
            "/v2/team/oauth_app/fitbit",
            Some(&t.key),
            Some(&json!({"client_id": CLIENT_ID, "client_secret": "s3cret"}).to_string()),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    t
}

fn recipe(user: &str, token: &str) -> Value {
    json!({"user_id": user, "access_token": token, "refresh_token": format!("r-{token}"),
           "provider_id": format!("fb-{}", &user[..8]), "expires_at": 1_900_000_000, "oauth_scopes": ["activity"]})
}

fn team_token(account: &str) -> String {
    wearlab_sim::app_access_token("fitbit", CLIENT_ID, &[], account)
}

/// Runs the bulk and pull queues until nothing is due (bounded).
async fn drain(t: &TestApp) -> usize {
    let stack = t.stack.as_ref().unwrap();
    let mut total = 0;
    for _ in 0..100 {
        let n = stack.run_bulk_once().await.unwrap() + stack.run_pulls_once().await.unwrap();
        total += n;
        if n == 0 {
            break;
        }
    }
    total
}

/// Workers in the background while a request waits (bounded: `rounds` passes), stopped
/// between two passes, never in the middle of a message.
struct Workers {
    stop: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Workers {
    async fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.task.await.unwrap();
    }
}

fn workers(t: &TestApp, rounds: usize) -> Workers {
    let stack = t.stack.clone().unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let task = tokio::spawn(async move {
        for _ in 0..rounds {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            stack.run_bulk_once().await.unwrap();
            stack.run_pulls_once().await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    Workers { stop, task }
}

async fn ops(t: &TestApp) -> Vec<Value> {
    let a = t.get("/v2/link/bulk_op?page_size=50").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["data"].as_array().unwrap().clone()
}

fn connection_events(t: &TestApp, user: &str) -> usize {
    t.published()
        .iter()
        .filter(|e| e.event_type == "provider.connection.created" && e.user_id.to_string() == user)
        .count()
}

fn sorted(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect();
    out.sort();
    out
}

fn ids(users: &[&String]) -> Vec<String> {
    let mut out: Vec<String> = users.iter().map(|s| s.to_string()).collect();
    out.sort();
    out
}

#[tokio::test]
async fn bulk_is_forbidden_until_the_operator_enables_it() {
    let t = TestApp::embedded().await;
    let routes = [
        (Method::POST, "/v2/link/bulk_import", Some("{}")),
        (Method::POST, "/v2/link/bulk_trigger_historical_pull", Some("not json")),
        (Method::GET, "/v2/link/bulk_op", None),
        (Method::POST, "/v2/link/bulk_export", Some(r#"{"provider":"fitbit"}"#)),
        (Method::POST, "/v2/link/bulk_pause", Some(r#"{"provider":"fitbit","user_ids":[]}"#)),
    ];
    for (method, path, body) in &routes {
        let a = t.send(method.clone(), path, Some(&t.key), *body).await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{path}: {}", a.body);
        assert!(a.body["detail"].as_str().unwrap().contains("not enabled"), "{}", a.body);
    }
    let a = t.send(Method::GET, "/v2/link/bulk_op", None, None).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "no key: 401 before 403");
    teams::set_bulk_operations(&t.deps, t.team, true).await.unwrap();
    assert_eq!(t.get("/v2/link/bulk_op").await.status, StatusCode::OK);
    teams::set_bulk_operations(&t.deps, t.team, false).await.unwrap();
    assert_eq!(t.get("/v2/link/bulk_op").await.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn import_needs_the_teams_oauth_app_and_valid_recipes() {
    let t = TestApp::embedded().await;
    teams::set_bulk_operations(&t.deps, t.team, true).await.unwrap();
    let user = t.create_user("b-1").await;
    let a = t
        .post("/v2/link/bulk_import", json!({"provider": "fitbit", "connections": [recipe(&user, "x")]}))
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    assert!(a.body["detail"].as_str().unwrap().contains("/v2/team/oauth_app/fitbit"), "{}", a.body);

    let t = bulk_team().await;
    let user = t.create_user("b-1").await;
    let bad = [
        (
            json!({"provider": "apple_health_kit", "connections": [recipe(&user, "x")]}),
            vec!["body", "provider"],
        ),
        (json!({"provider": "fitbit", "connections": []}), vec!["body", "connections"]),
        (
            json!({"provider": "fitbit", "connections": [recipe(&user, "x"), recipe(&user, "y")]}),
            vec!["body", "connections", "1", "user_id"],
        ),
        (
            json!({"provider": "fitbit", "connections": [recipe(&user, " ")]}),
            vec!["body", "connections", "0", "access_token"],
        ),
        (
            json!({"provider": "fitbit", "connections": [{"user_id": user, "access_token": "a", "refresh_token": "",
                "provider_id": "p", "expires_at": -5, "oauth_scopes": []}]}),
            vec!["body", "connections", "0", "expires_at"],
        ),
    ];
    for (body, loc) in bad {
        let a = t.post("/v2/link/bulk_import", body.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", a.body);
        assert!(error_locs(&a.body).contains(&loc.iter().map(|s| s.to_string()).collect()), "{}", a.body);
    }
    let missing = t.post("/v2/link/bulk_import", json!({"provider": "fitbit"})).await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(ops(&t).await.is_empty(), "refused requests record no operation");
}

#[tokio::test]
async fn import_waits_for_completion_and_reports_each_user() {
    let t = bulk_team().await;
    let ok1 = t.create_user("b-ok1").await;
    let ok2 = t.create_user("b-ok2").await;
    let deleted = t.create_user("b-del").await;
    assert_eq!(t.delete(&format!("/v2/user/{deleted}")).await.status, StatusCode::OK);
    let unknown = uuid::Uuid::new_v4().to_string();
    let foreign = t.create_user("b-foreign").await;
    let other_team = TestApp::on(t.deps.clone(), t.clock.clone()).await;
    let theirs = other_team.create_user("theirs").await;
    let body = json!({"provider": "fitbit", "wait_for_completion": true, "connections": [
        recipe(&ok1, &team_token("a1")),
        recipe(&ok2, &team_token("a2")),
        recipe(&deleted, &team_token("a3")),
        recipe(&unknown, &team_token("a4")),
        recipe(&foreign, &wearlab_sim::app_access_token("fitbit", "someone-elses-app", &[], "a5")),
        recipe(&theirs, &team_token("a6")),
    ]});
    let bg = workers(&t, 500);
    let a = t.post("/v2/link/bulk_import", body).await;
    bg.stop().await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(sorted(&a.body["user_ids_imported"]), ids(&[&ok1, &ok2]));
    assert_eq!(sorted(&a.body["user_ids_failed"]), ids(&[&deleted, &unknown, &foreign, &theirs]));

    for u in [&ok1, &ok2] {
        let c = t.get(&format!("/v2/user/providers/{u}")).await;
        assert_eq!(c.body["providers"][0]["slug"], "fitbit", "{}", c.body);
        assert_eq!(c.body["providers"][0]["status"], "connected");
        assert_eq!(connection_events(&t, u), 1);
        // Tokens are stored sealed, never as given.
        let item = t.deps.table.get(&keys::linking::connection(UserId::parse(u).unwrap(), "fitbit")).await;
        let raw = item.unwrap().unwrap().body.to_string();
        assert!(!raw.contains("sim:fitbit"), "token stored in the clear: {raw}");
    }
    assert_eq!(connection_events(&t, &foreign), 0);
    let listed = ops(&t).await;
    assert_eq!(listed.len(), 1);
    let op = &listed[0];
    assert_eq!(op["type"], "link_bulk_import");
    assert_eq!(op["status"], "failure", "some users failed: {op}");
    assert_eq!(
        (op["pending"].as_u64(), op["processed"].as_u64(), op["failed"].as_u64()),
        (Some(0), Some(6), Some(4))
    );
    assert!(op["ended_at"].is_string() && op["estimated_completion_at"].is_null());
    assert_eq!(op["provider"], "fitbit");
    // The import started the connections' historical pulls.
    drain(&t).await;
    let pulled = t.published();
    let kinds: Vec<&str> = pulled.iter().map(|e| e.event_type.as_str()).collect();
    assert!(
        pulled.iter().any(|e| e.event_type.starts_with("historical.data.") && e.user_id.to_string() == ok1),
        "{kinds:?}"
    );
}

/// Imported connections are written without moving the team's list version one by one; the
/// message moves it once before it counts as done, so a page kept before shows them after.
#[tokio::test]
async fn imported_connections_show_on_a_page_kept_before_the_import() {
    let t = bulk_team().await;
    let users = [t.create_user("kept-1").await, t.create_user("kept-2").await];
    for _ in 0..3 {
        let page = t.get("/v2/user?limit=10").await;
        assert_eq!(page.body["users"][0]["connected_sources"], json!([]), "{}", page.body);
    }
    let body = json!({"provider": "fitbit", "wait_for_completion": true, "connections": [
        recipe(&users[0], &team_token("k1")),
        recipe(&users[1], &team_token("k2")),
    ]});
    let bg = workers(&t, 500);
    let a = t.post("/v2/link/bulk_import", body).await;
    bg.stop().await;
    assert_eq!(sorted(&a.body["user_ids_imported"]), ids(&[&users[0], &users[1]]), "{}", a.body);
    let page = t.get("/v2/user?limit=10").await;
    let listed = page.body["users"].as_array().unwrap();
    for u in &users {
        // Created in the same instant: listed in user id order, so found by id.
        let user = listed.iter().find(|l| l["user_id"] == u.as_str()).expect("listed");
        assert_eq!(user["connected_sources"][0]["provider"]["slug"], "fitbit", "{}", page.body);
    }
}

#[tokio::test]
async fn reimport_replaces_tokens_without_a_second_connection() {
    let t = bulk_team().await;
    let user = t.create_user("b-re").await;
    for token in [team_token("first"), team_token("second")] {
        let a = t
            .post(
                "/v2/link/bulk_import",
                json!({"provider": "fitbit", "connections": [recipe(&user, &token)]}),
            )
            .await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
        assert_eq!(a.body, Value::Null, "202 has no body");
        drain(&t).await;
    }
    let c = t.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(c.body["providers"].as_array().unwrap().len(), 1, "{}", c.body);
    let export = t.post("/v2/link/bulk_export", json!({"provider": "fitbit"})).await;
    assert_eq!(export.status, StatusCode::OK, "{}", export.body);
    assert_eq!(export.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(export.body["data"][0]["access_token"], team_token("second"));
    let all = ops(&t).await;
    assert!(all.iter().all(|o| o["status"] == "success"), "{all:?}");
}

#[tokio::test]
async fn wait_answers_202_when_the_op_cannot_finish_in_20_seconds_and_the_list_progresses() {
    let t = bulk_team().await;
    let mut users = Vec::new();
    for i in 0..3 {
        users.push(t.create_user(&format!("b-w{i}")).await);
    }
    let connections: Vec<Value> = users.iter().map(|u| recipe(u, &team_token(u))).collect();
    // No worker runs; the deployment's clock passes the 20 s while the request waits: once the
    // operation is stored its start (from which the 20 s count) is fixed, whenever that is.
    let request = t.post(
        "/v2/link/bulk_import",
        json!({"provider": "fitbit", "wait_for_completion": true, "connections": connections}),
    );
    let ticker = async {
        for _ in 0..1000 {
            if !ops(&t).await.is_empty() {
                t.clock.advance(Span::seconds(21));
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the operation was never stored");
    };
    let (a, ()) = tokio::join!(request, ticker);
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
    let op = &ops(&t).await[0];
    assert_eq!(
        (op["status"].as_str(), op["pending"].as_u64(), op["processed"].as_u64()),
        (Some("in_progress"), Some(3), Some(0))
    );
    assert!(op["ended_at"].is_null());
    drain(&t).await;
    let op = &ops(&t).await[0];
    assert_eq!(
        (op["status"].as_str(), op["pending"].as_u64(), op["processed"].as_u64()),
        (Some("success"), Some(0), Some(3))
    );
    assert!(op["ended_at"].is_string());
}

#[tokio::test]
async fn list_is_newest_first_with_cursor_pages_and_checked_parameters() {
    let t = bulk_team().await;
    let user = t.create_user("b-l").await;
    for provider in ["fitbit", "garmin", "oura"] {
        t.clock.advance(Span::seconds(1));
        let a = t
            .post("/v2/link/bulk_trigger_historical_pull", json!({"provider": provider, "user_ids": [user]}))
            .await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
    }
    let first = t.get("/v2/link/bulk_op?page_size=2").await;
    assert_eq!(first.status, StatusCode::OK);
    let providers: Vec<&str> =
        first.body["data"].as_array().unwrap().iter().map(|o| o["provider"].as_str().unwrap()).collect();
    assert_eq!(providers, ["oura", "garmin"]);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let second = t.get(&format!("/v2/link/bulk_op?page_size=2&next_cursor={cursor}")).await;
    assert_eq!(second.body["data"][0]["provider"], "fitbit");
    assert!(second.body["next_cursor"].is_null());
    assert_eq!(t.get("/v2/link/bulk_op").await.body["data"].as_array().unwrap().len(), 3, "default page 10");
    for bad in ["page_size=0", "page_size=51", "page_size=x", "next_cursor=garbage"] {
        let a = t.get(&format!("/v2/link/bulk_op?{bad}")).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", a.body);
    }
    let other = t.other_team_key().await;
    let foreign =
        t.send(Method::GET, &format!("/v2/link/bulk_op?next_cursor={cursor}"), Some(&other), None).await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "the other team has bulk off");
}

#[tokio::test]
async fn duplicate_and_crashed_deliveries_import_once() {
    let t = bulk_team().await;
    let mut users = Vec::new();
    for i in 0..4 {
        users.push(t.create_user(&format!("b-d{i}")).await);
    }
    let connections: Vec<Value> = users.iter().map(|u| recipe(u, &team_token(u))).collect();
    let a = t.post("/v2/link/bulk_import", json!({"provider": "fitbit", "connections": connections})).await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let stack = t.stack.as_ref().unwrap();
    // The queue delivers the one message twice.
    let held = stack.queue.receive(QueueName::Bulk, 10).await.unwrap();
    assert_eq!(held.len(), 1, "four recipes travel in one message");
    stack.queue.send(QueueName::Bulk, vec![Outgoing::now(held[0].envelope.body.clone())]).await.unwrap();
    // A worker handles the held copy, then crashes before acknowledging it.
    let outcome = bulk_worker::handle(&t.deps, &stack.queue, held[0].envelope.clone()).await;
    assert_eq!(outcome, wearlab_domain::ports::Outcome::Ack);
    // The duplicate, and the crashed copy after its lease runs out, change nothing.
    drain(&t).await;
    t.clock.advance(Span::seconds(61));
    drain(&t).await;
    assert_eq!(stack.queue.depth(QueueName::Bulk).await.unwrap(), 0);
    for u in &users {
        assert_eq!(connection_events(&t, u), 1, "one connection.created per user");
    }
    let op = &ops(&t).await[0];
    assert_eq!(
        (op["status"].as_str(), op["processed"].as_u64(), op["failed"].as_u64()),
        (Some("success"), Some(4), Some(0))
    );
}

#[tokio::test]
async fn a_poison_message_ends_in_the_dead_letters_and_its_recipes_fail() {
    let t = bulk_team().await;
    let good = t.create_user("b-good").await;
    let poison = t.create_user("b-poison").await;
    let flaky = wearlab_sim::app_access_token("fitbit", CLIENT_ID, &[wearlab_sim::FLAG_VERIFY_ERROR], "p");
    let a = t
        .post("/v2/link/bulk_import", json!({"provider": "fitbit", "connections": [recipe(&good, &team_token("g")), recipe(&poison, &flaky)]}))
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let stack = t.stack.as_ref().unwrap();
    // Every delivery fails on the provider's error; backoff between them (bounded loop).
    for _ in 0..10 {
        drain(&t).await;
        t.clock.advance(Span::minutes(30));
    }
    drain(&t).await;
    assert_eq!(stack.queue.depth(QueueName::Bulk).await.unwrap(), 0);
    let op = &ops(&t).await[0];
    assert_eq!(op["status"], "failure", "{op}");
    assert_eq!((op["processed"].as_u64(), op["failed"].as_u64()), (Some(2), Some(1)));
    assert_eq!(connection_events(&t, &good), 1, "the good recipe was imported once across the retries");
    assert_eq!(connection_events(&t, &poison), 0);
}

#[tokio::test]
async fn trigger_starts_throttled_pulls_and_reports_who_failed() {
    let t = bulk_team().await;
    let mut connected = Vec::new();
    for i in 0..2 {
        let u = t.create_user(&format!("b-t{i}")).await;
        let a = t.post("/v2/link/connect/demo", json!({"user_id": u, "provider": "fitbit"})).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        connected.push(u);
    }
    drain(&t).await;
    let lonely = t.create_user("b-none").await;
    let paused = t.create_user("b-paused").await;
    t.post("/v2/link/connect/demo", json!({"user_id": paused, "provider": "fitbit"})).await;
    let p = t.post("/v2/link/bulk_pause", json!({"provider": "fitbit", "user_ids": [paused]})).await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    let before = t.published().len();

    let bg = workers(&t, 500);
    let a = t
        .post(
            "/v2/link/bulk_trigger_historical_pull",
            json!({"provider": "fitbit", "wait_for_completion": true,
            "user_ids": [connected[0], connected[1], lonely, paused]}),
        )
        .await;
    bg.stop().await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(sorted(&a.body["user_ids_triggered"]), ids(&[&connected[0], &connected[1]]));
    assert_eq!(sorted(&a.body["user_ids_failed"]), ids(&[&lonely, &paused]));
    drain(&t).await;
    let after = t.published();
    let kinds: Vec<&str> = after[before..].iter().map(|e| e.event_type.as_str()).collect();
    for u in &connected {
        assert!(
            after[before..]
                .iter()
                .any(|e| e.event_type == "historical.data.activity.created" && e.user_id.to_string() == *u),
            "{kinds:?}"
        );
    }
    assert!(
        !after[before..]
            .iter()
            .any(|e| e.user_id.to_string() == paused && e.event_type.starts_with("historical"))
    );
    let op = &ops(&t).await[0];
    assert_eq!(
        (op["type"].as_str(), op["status"].as_str()),
        (Some("link_bulk_historical_trigger"), Some("failure"))
    );
}

#[tokio::test]
async fn a_garmin_trigger_waits_for_the_throttle_and_estimates_its_end() {
    let t = bulk_team().await;
    let app = json!({"client_id": "team-garmin-app", "client_secret": "s"}).to_string();
    t.send(Method::PUT, "/v2/team/oauth_app/garmin", Some(&t.key), Some(&app)).await;
    let mut users = Vec::new();
    let mut connections = Vec::new();
    for i in 0..3 {
        let u = t.create_user(&format!("b-g{i}")).await;
        let token = wearlab_sim::app_access_token("garmin", "team-garmin-app", &[], &u);
        connections.push(recipe(&u, &token));
        users.push(u);
    }
    let a = t.post("/v2/link/bulk_import", json!({"provider": "garmin", "connections": connections})).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
    // The imported connections' own pulls take garmin's 2 per minute; let the windows pass.
    drain(&t).await;
    t.clock.advance(Span::minutes(5));
    drain(&t).await;
    t.clock.advance(Span::minutes(2));
    // The request waits for its operation while the workers are stepped here: garmin lets two
    // pulls start, the clock stands still so the third waits, then the clock passes the request's
    // 20 s wait limit.
    let request = t.post(
        "/v2/link/bulk_trigger_historical_pull",
        json!({"provider": "garmin", "wait_for_completion": true, "user_ids": users}),
    );
    let workers = async {
        for _ in 0..500 {
            drain(&t).await;
            let trigger = ops(&t).await.into_iter().find(|op| op["type"] == "link_bulk_historical_trigger");
            if trigger.is_some_and(|op| op["processed"] == 2) {
                t.clock.advance(Span::seconds(21));
                return;
            }
            // Lets the request queue its messages and look at its operation.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("two pulls never started");
    };
    let (a, ()) = tokio::join!(request, workers);
    assert_eq!(a.status, StatusCode::ACCEPTED, "2 per minute: the third waits: {}", a.body);
    let op = &ops(&t).await[0];
    assert_eq!(
        (op["status"].as_str(), op["processed"].as_u64(), op["pending"].as_u64()),
        (Some("in_progress"), Some(2), Some(1))
    );
    assert!(op["estimated_completion_at"].is_string(), "{op}");
    t.clock.advance(Span::minutes(1));
    drain(&t).await;
    let op = &ops(&t).await[0];
    assert_eq!((op["status"].as_str(), op["processed"].as_u64()), (Some("success"), Some(3)), "{op}");
}

#[tokio::test]
async fn trigger_refuses_bad_input() {
    let t = bulk_team().await;
    let u = t.create_user("b-bad").await;
    for (body, loc) in [
        (json!({"provider": "fitbit", "user_ids": []}), vec!["body", "user_ids"]),
        (json!({"provider": "fitbit", "user_ids": [u, u]}), vec!["body", "user_ids", "1"]),
        (json!({"provider": "whoop", "user_ids": [u]}), vec!["body", "provider"]),
    ] {
        let a = t.post("/v2/link/bulk_trigger_historical_pull", body.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", a.body);
        assert!(error_locs(&a.body).contains(&loc.iter().map(|s| s.to_string()).collect()), "{}", a.body);
    }
    let a = t
        .post(
            "/v2/link/bulk_trigger_historical_pull",
            json!({"provider": "fitbit", "user_ids": ["not-a-uuid"]}),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn export_round_trips_into_import_and_skips_other_apps() {
    let t = bulk_team().await;
    let imported = t.create_user("b-x1").await;
    let demo = t.create_user("b-x2").await;
    t.post("/v2/link/connect/demo", json!({"user_id": demo, "provider": "fitbit"})).await;
    let a = t
        .post(
            "/v2/link/bulk_import",
            json!({"provider": "fitbit", "connections": [recipe(&imported, &team_token("x"))]}),
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    drain(&t).await;
    let export = t.post("/v2/link/bulk_export", json!({"provider": "fitbit"})).await;
    assert_eq!(export.status, StatusCode::OK, "{}", export.body);
    let data = export.body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "the demo connection is not the team app's: {}", export.body);
    assert_eq!(data[0]["user_id"], imported);
    assert_eq!(data[0]["provider_id"], recipe(&imported, "")["provider_id"]);
    assert!(export.body["next_token"].is_null());
    let by_id =
        t.post("/v2/link/bulk_export", json!({"provider": "fitbit", "user_ids": [imported, demo]})).await;
    assert_eq!(by_id.body["data"].as_array().unwrap().len(), 1);

    // The exported recipes import as they are.
    let again = t.post("/v2/link/bulk_import", json!({"provider": "fitbit", "connections": data})).await;
    assert_eq!(again.status, StatusCode::ACCEPTED, "{}", again.body);
    drain(&t).await;
    assert_eq!(ops(&t).await[0]["status"], "success");

    for (body, status) in [
        (json!({"provider": "oura"}), StatusCode::BAD_REQUEST),
        (json!({"provider": "fitbit", "next_token": "garbage"}), StatusCode::UNPROCESSABLE_ENTITY),
        (
            json!({"provider": "fitbit", "user_ids": [imported], "next_token": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (json!({"provider": "nope"}), StatusCode::UNPROCESSABLE_ENTITY),
    ] {
        let a = t.post("/v2/link/bulk_export", body.clone()).await;
        assert_eq!(a.status, status, "{body}: {}", a.body);
    }
}

#[tokio::test]
async fn paused_connections_are_kept_but_skipped_by_polls_and_pulls() {
    let t = bulk_team().await;
    let user = t.create_user("b-p").await;
    t.post("/v2/link/connect/demo", json!({"user_id": user, "provider": "fitbit"})).await;
    drain(&t).await;
    let unknown = uuid::Uuid::new_v4().to_string();
    let a = t.post("/v2/link/bulk_pause", json!({"provider": "fitbit", "user_ids": [user, unknown]})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["user_ids_paused"], json!([user]));
    assert_eq!(a.body["user_ids_failed"], json!([unknown]));
    let c = t.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(c.body["providers"][0]["status"], "paused", "kept, paused: {}", c.body);

    let before = t.published().len();
    t.clock.advance(Span::days(2));
    t.stack.as_ref().unwrap().schedule_poll().await.unwrap();
    drain(&t).await;
    let after = t.published();
    assert!(
        after[before..].iter().all(|e| e.user_id.to_string() != user),
        "no data events for a paused connection"
    );
    let pull = t.post_empty(&format!("/v2/user/historical_pull/{user}/fitbit")).await;
    assert_eq!(pull.status, StatusCode::BAD_REQUEST, "{}", pull.body);
    assert!(pull.body["detail"].as_str().unwrap().contains("paused"));

    let too_many: Vec<String> = (0..1001).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    let a = t.post("/v2/link/bulk_pause", json!({"provider": "fitbit", "user_ids": too_many})).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn bodies_over_6_mb_get_413_naming_the_limit() {
    let t = bulk_team().await;
    let user = t.create_user("b-big").await;
    let token = "t".repeat(8000);
    let connections: Vec<Value> = (0..800).map(|_| recipe(&user, &token)).collect();
    let body = json!({"provider": "fitbit", "connections": connections}).to_string();
    assert!(body.len() > 6 * 1024 * 1024);
    let a = t.send(Method::POST, "/v2/link/bulk_import", Some(&t.key), Some(&body)).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", a.body);
    let detail = a.body["detail"].as_str().unwrap();
    assert!(detail.contains("6 MB") && detail.to_lowercase().contains("split"), "{detail}");
}

#[tokio::test]
async fn many_connections_travel_in_few_messages() {
    let t = bulk_team().await;
    let connections: Vec<Value> =
        (0..10_000).map(|_| recipe(&uuid::Uuid::new_v4().to_string(), &team_token("many"))).collect();
    let a = t.post("/v2/link/bulk_import", json!({"provider": "fitbit", "connections": connections})).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
    let stack = t.stack.as_ref().unwrap();
    let messages = stack.queue.depth(QueueName::Bulk).await.unwrap();
    assert!(messages <= 100, "10,000 recipes in {messages} messages: at most 10 SendMessageBatch calls");
    let op = &ops(&t).await[0];
    assert_eq!(op["pending"].as_u64(), Some(10_000));
    // Unknown users: the worker fails each, and the op ends.
    drain(&t).await;
    let op = &ops(&t).await[0];
    assert_eq!((op["status"].as_str(), op["failed"].as_u64()), (Some("failure"), Some(10_000)));
}

#[tokio::test]
async fn the_bulk_queue_survives_a_restart_of_the_local_stack() {
    let dir = std::env::temp_dir().join(format!("wearlab-bulk-restart-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let user;
    {
        let stack = wearlab_local::LocalStack::open(&dir).unwrap();
        let clock = Arc::new(wearlab_domain::ports::ManualClock::new(chrono::Utc::now()));
        let t = TestApp::on(stack.deps.clone(), clock).await;
        teams::set_bulk_operations(&t.deps, t.team, true).await.unwrap();
        t.send(
            Method::PUT,
            "/v2/team/oauth_app/fitbit",
            Some(&t.key),
            Some(&json!({"client_id": CLIENT_ID, "client_secret": "s"}).to_string()),
        )
        .await;
        user = t.create_user("b-restart").await;
        let a = t
            .post(
                "/v2/link/bulk_import",
                json!({"provider": "fitbit", "connections": [recipe(&user, &team_token("r"))]}),
            )
            .await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
    }
    let stack = wearlab_local::LocalStack::open(&dir).unwrap();
    assert_eq!(stack.queue.depth(QueueName::Bulk).await.unwrap(), 1, "the message outlived the process");
    stack.run_bulk_once().await.unwrap();
    let conn = stack
        .deps
        .table
        .get(&keys::linking::connection(UserId::parse(&user).unwrap(), "fitbit"))
        .await
        .unwrap();
    assert!(conn.is_some(), "imported after the restart");
    drop(stack);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn on_demand_historical_pull() {
    let t = bulk_team().await;
    let user = t.create_user("b-od").await;
    t.post("/v2/link/connect/demo", json!({"user_id": user, "provider": "oura"})).await;
    drain(&t).await;
    let before = t.published().len();
    let a = t.post_empty(&format!("/v2/user/historical_pull/{user}/oura")).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
    assert_eq!(
        (a.body["user_id"].as_str(), a.body["provider"].as_str()),
        (Some(user.as_str()), Some("oura"))
    );
    drain(&t).await;
    let after = t.published();
    let sleep = after[before..].iter().filter(|e| e.event_type == "historical.data.sleep.created").count();
    assert_eq!(sleep, 1, "a second pull announces its resources once more");
    for (path, status) in [
        (format!("/v2/user/historical_pull/{user}/fitbit"), StatusCode::NOT_FOUND),
        (format!("/v2/user/historical_pull/{user}/nope"), StatusCode::NOT_FOUND),
        (format!("/v2/user/historical_pull/{}/oura", uuid::Uuid::new_v4()), StatusCode::NOT_FOUND),
        ("/v2/user/historical_pull/not-a-uuid/oura".to_owned(), StatusCode::UNPROCESSABLE_ENTITY),
    ] {
        assert_eq!(t.post_empty(&path).await.status, status, "{path}");
    }
}

/// The bulk queue on SQS through moto: 10,000 recipes in at most 10 SendMessageBatch calls,
/// and a Lambda batch delivering one message twice imports once.
mod on_sqs {
    use super::*;
    use std::collections::HashMap;

    use crate::helpers::moto_endpoint;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn enqueue_in_few_calls_and_import_once_per_duplicate() {
        let config = wearlab_aws::config_for_endpoint(&moto_endpoint()).await;
        let client = aws_sdk_sqs::Client::new(&config);
        let name = format!("wearlab-bulk-{}", uuid::Uuid::new_v4().simple());
        let url =
            client.create_queue().queue_name(name).send().await.unwrap().queue_url().unwrap().to_owned();
        let t = bulk_team().await;
        let sqs = wearlab_aws::SqsQueue::new(
            client.clone(),
            HashMap::from([(QueueName::Bulk, url.clone())]),
            t.clock.clone(),
        );
        let t = t.with_queue(Arc::new(sqs.clone()));
        let user = t.create_user("b-sqs").await;
        let mut connections: Vec<Value> =
            (0..9_999).map(|_| recipe(&uuid::Uuid::new_v4().to_string(), &team_token("sqs"))).collect();
        connections.push(recipe(&user, &team_token("sqs-user")));
        let a =
            t.post("/v2/link/bulk_import", json!({"provider": "fitbit", "connections": connections})).await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
        assert!(sqs.send_batch_calls() <= 10, "{} SendMessageBatch calls", sqs.send_batch_calls());

        // Receive everything, and deliver each message twice in one Lambda batch.
        // moto may answer a receive empty while messages remain: stop after three empty
        // answers in a row, not the first.
        let mut records = Vec::new();
        let mut empty = 0;
        for _ in 0..50 {
            let r = client.receive_message().queue_url(&url).max_number_of_messages(10).send().await.unwrap();
            if r.messages().is_empty() {
                empty += 1;
                if empty == 3 {
                    break;
                }
                continue;
            }
            empty = 0;
            for m in r.messages() {
                let record = json!({"messageId": m.message_id().unwrap(), "body": m.body().unwrap(),
                                    "attributes": {"ApproximateReceiveCount": "1"}});
                records.push(record.clone());
                records.push(record);
            }
        }
        assert!(!records.is_empty());
        let event: aws_lambda_events::sqs::SqsEvent =
            serde_json::from_value(json!({"Records": records})).unwrap();
        let response = wearlab_aws::handle_sqs_batch(&sqs, QueueName::Bulk, event, |env, _| {
            bulk_worker::handle(&t.deps, &sqs, env)
        })
        .await;
        assert!(response.batch_item_failures.is_empty());
        assert_eq!(connection_events(&t, &user), 1);
        let op = &ops(&t).await[0];
        assert_eq!((op["processed"].as_u64(), op["failed"].as_u64()), (Some(10_000), Some(9_999)), "{op}");
    }

    #[test]
    fn batches_from_the_dead_letter_queue_are_told_apart() {
        let event = |arn: &str| -> aws_lambda_events::sqs::SqsEvent {
            serde_json::from_value(json!({"Records": [{"eventSourceARN": arn}]})).unwrap()
        };
        assert!(bulk_worker::from_dead_letter_queue(&event("arn:dlq"), Some("arn:dlq")));
        assert!(!bulk_worker::from_dead_letter_queue(&event("arn:q"), Some("arn:dlq")));
        assert!(!bulk_worker::from_dead_letter_queue(&event("arn:q"), None));
    }
}

/// The results partition of an operation holds only ids (no tokens).
#[tokio::test]
async fn results_hold_no_tokens() {
    let t = bulk_team().await;
    let user = t.create_user("b-res").await;
    t.post(
        "/v2/link/bulk_import",
        json!({"provider": "fitbit", "connections": [recipe(&user, &team_token("secret-ish"))]}),
    )
    .await;
    drain(&t).await;
    let q = Query::partition(format!("TEAM#{}", t.team)).prefix(keys::bulk::OP_PREFIX);
    let ops = query_all(t.deps.table.as_ref(), q, 100).await.unwrap();
    assert_eq!(ops.len(), 1);
    let stack = t.stack.as_ref().unwrap();
    assert_eq!(stack.queue.depth(QueueName::Bulk).await.unwrap(), 0);
    for item in ops {
        assert!(!item.body.to_string().contains("sim:fitbit"));
    }
}

/// Another team's users are not this team's: they fail (trigger, pause) or are left out
/// (export), and their connections stay as they were.
#[tokio::test]
async fn another_teams_users_are_refused_by_every_operation() {
    let t = bulk_team().await;
    let other = TestApp::on(t.deps.clone(), t.clock.clone()).await;
    let theirs = other.create_user("theirs").await;
    let a = other.post("/v2/link/connect/demo", json!({"user_id": theirs, "provider": "fitbit"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    drain(&t).await;

    let bg = workers(&t, 500);
    let a = t
        .post(
            "/v2/link/bulk_trigger_historical_pull",
            json!({"provider": "fitbit", "wait_for_completion": true, "user_ids": [theirs]}),
        )
        .await;
    bg.stop().await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["user_ids_failed"], json!([theirs]));
    assert_eq!(a.body["user_ids_triggered"], json!([]));

    let a = t.post("/v2/link/bulk_pause", json!({"provider": "fitbit", "user_ids": [theirs]})).await;
    assert_eq!(
        (a.body["user_ids_paused"].clone(), a.body["user_ids_failed"].clone()),
        (json!([]), json!([theirs]))
    );
    let c = other.get(&format!("/v2/user/providers/{theirs}")).await;
    assert_eq!(c.body["providers"][0]["status"], "connected", "{}", c.body);

    let a = t.post("/v2/link/bulk_export", json!({"provider": "fitbit", "user_ids": [theirs]})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["data"], json!([]));
    let pull = t.post_empty(&format!("/v2/user/historical_pull/{theirs}/fitbit")).await;
    assert_eq!(pull.status, StatusCode::NOT_FOUND);
}
