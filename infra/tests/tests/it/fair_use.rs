//! Per-team fair use: a team over its requests per minute gets 429 with `Retry-After` and the
//! `RateLimit-*` headers while another team is unaffected; the limit holds across two app
//! instances on one table (embedded and DynamoDB on moto); the operator's limit of a team
//! applies; the next window lets the team in again.

use chrono::Duration;
use http::{Method, StatusCode};
use wearlab_domain::common::fair_use;
use wearlab_web::App;

use crate::helpers::{Answer, TestApp};
use crate::users_on_dynamodb::on_moto;

/// An instance of the API (its own process-local state) with `limit` requests per minute.
fn instance(t: &TestApp, limit: u32) -> App {
    t.app_on(crate::helpers::state(&t.deps).with_default_rate_limit(limit))
}

async fn list(t: &TestApp, app: &App, key: &str) -> Answer {
    TestApp {
        app: app.clone(),
        deps: t.deps.clone(),
        ports: t.ports.clone(),
        clock: t.clock.clone(),
        key: key.into(),
        team: t.team,
        stack: None,
    }
    .send(Method::GET, "/v2/user", Some(key), None)
    .await
}

fn header(a: &Answer, name: &str) -> String {
    a.headers.get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

async fn a_team_over_its_limit_is_refused_alone(t: TestApp) {
    let app = instance(&t, 5);
    let other = t.other_team_key().await;
    for remaining in (0..5).rev() {
        let a = list(&t, &app, &t.key).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert_eq!(header(&a, "ratelimit-limit"), "5");
        assert_eq!(header(&a, "ratelimit-remaining"), remaining.to_string());
        assert_eq!(header(&a, "ratelimit-reset"), "60", "the window started with the clock's minute");
    }
    let refused = list(&t, &app, &t.key).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS, "{}", refused.body);
    assert_eq!(header(&refused, "retry-after"), "60");
    assert_eq!(header(&refused, "ratelimit-remaining"), "0");
    assert_eq!(header(&refused, "ratelimit-limit"), "5");
    assert!(refused.body["detail"].as_str().unwrap().contains("5 requests per minute"), "{}", refused.body);
    // Another team is not refused.
    let other_answer = list(&t, &app, &other).await;
    assert_eq!(other_answer.status, StatusCode::OK, "{}", other_answer.body);
    assert_eq!(header(&other_answer, "ratelimit-remaining"), "4");
    // Half a minute later: still refused, and told so.
    t.clock.advance(Duration::seconds(30));
    let later = list(&t, &app, &t.key).await;
    assert_eq!((later.status, header(&later, "retry-after")), (StatusCode::TOO_MANY_REQUESTS, "30".into()));
    // The next window lets the team in again.
    t.clock.advance(Duration::seconds(30));
    assert_eq!(list(&t, &app, &t.key).await.status, StatusCode::OK);
    // Answers without an API key carry no RateLimit headers.
    let anonymous = t.send(Method::GET, "/v2/user", None, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert!(anonymous.headers.get("ratelimit-limit").is_none());
}

#[tokio::test]
async fn a_team_over_its_limit_is_refused_alone_embedded() {
    a_team_over_its_limit_is_refused_alone(TestApp::embedded().await).await;
}

async fn the_limit_is_shared_by_instances_on_one_table(t: TestApp) {
    let (a, b) = (instance(&t, 10), instance(&t, 10));
    for _ in 0..6 {
        assert_eq!(list(&t, &a, &t.key).await.status, StatusCode::OK);
    }
    for _ in 0..4 {
        assert_eq!(list(&t, &b, &t.key).await.status, StatusCode::OK);
    }
    assert_eq!(list(&t, &b, &t.key).await.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(list(&t, &a, &t.key).await.status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn the_limit_is_shared_by_instances_on_one_table_embedded() {
    the_limit_is_shared_by_instances_on_one_table(TestApp::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_is_shared_by_instances_on_one_table_on_dynamodb() {
    the_limit_is_shared_by_instances_on_one_table(on_moto().await.0).await;
}

/// Concurrent requests of one team on two instances never get more than the limit through.
async fn concurrent_requests_stay_within_the_limit(t: TestApp) {
    let (a, b) = (instance(&t, 200), instance(&t, 200));
    let sends = (0..300).map(|i| {
        let app = if i % 2 == 0 { a.clone() } else { b.clone() };
        let t = &t;
        async move { list(t, &app, &t.key).await.status }
    });
    let statuses = futures::future::join_all(sends).await;
    let ok = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let refused = statuses.iter().filter(|s| **s == StatusCode::TOO_MANY_REQUESTS).count();
    assert_eq!(ok + refused, 300, "{statuses:?}");
    // Blocks of 4 (200 / 50): at most one block per instance is held back unspent.
    assert!((192..=200).contains(&ok), "{ok} allowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_stay_within_the_limit_embedded() {
    concurrent_requests_stay_within_the_limit(TestApp::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_stay_within_the_limit_on_dynamodb() {
    concurrent_requests_stay_within_the_limit(on_moto().await.0).await;
}

/// The operator's limit of a team (what `wearlab-admin team rate-limit` sets) applies to that
/// team only, on every instance within a minute; `default` goes back to the deployment's.
#[tokio::test]
async fn the_operators_limit_of_a_team_applies() {
    let t = TestApp::embedded().await;
    let app = instance(&t, 100);
    let other = t.other_team_key().await;
    assert_eq!(header(&list(&t, &app, &t.key).await, "ratelimit-limit"), "100");
    fair_use::set_team_limit(&t.deps, t.team, Some(2)).await.unwrap();
    assert_eq!(fair_use::team_limit(&t.deps, t.team).await.unwrap(), Some(2));
    // A fresh instance reads it at once: the first instance took a block of 2 (100 / 50) of
    // this minute, so the team is at its new limit already.
    let fresh = instance(&t, 100);
    let a = list(&t, &fresh, &t.key).await;
    assert_eq!((a.status, header(&a, "ratelimit-limit")), (StatusCode::TOO_MANY_REQUESTS, "2".into()));
    // A running instance reads it within a minute (a new window here).
    t.clock.advance(Duration::seconds(61));
    for _ in 0..2 {
        let a = list(&t, &app, &t.key).await;
        assert_eq!((a.status, header(&a, "ratelimit-limit")), (StatusCode::OK, "2".into()));
    }
    assert_eq!(list(&t, &app, &t.key).await.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        header(&list(&t, &app, &other).await, "ratelimit-limit"),
        "100",
        "the other team keeps the default"
    );
    assert!(fair_use::set_team_limit(&t.deps, t.team, Some(0)).await.is_err(), "0 is refused");
    fair_use::set_team_limit(&t.deps, t.team, None).await.unwrap();
    t.clock.advance(Duration::seconds(61));
    assert_eq!(header(&list(&t, &app, &t.key).await, "ratelimit-limit"), "100");
}
