//! Revokes at providers of removed connections: attempted right after the removal, retried by
//! the sweep with backoff when they fail, dropped (credentials with them) when the budget ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use wearlab_sim::SimulatedLab;

use chrono::Duration;
use http::StatusCode;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::linking::connections;
use wearlab_domain::linking::revokes::{BACKOFF, Pending};
use wearlab_domain::ports::{Item, Query, query_all};
use wearlab_domain::{Deps, keys};
use wearlab_sim::Altered;

use super::{connect_demo, connect_password};
use crate::helpers::TestApp;
use crate::pipeline::FlakyProviders;

/// An embedded app whose provider revokes fail `fail` times, its dependencies and the provider.
async fn failing(fail: usize) -> (TestApp, Deps, Arc<Altered<FlakyProviders>>) {
    let base = TestApp::embedded().await;
    let stack = base.stack.clone().unwrap();
    let mut providers = FlakyProviders::plain();
    providers.revoke_fails = AtomicUsize::new(fail);
    let providers = providers.on(stack.deps.providers.clone());
    let mut deps = stack.deps.clone();
    deps.providers = providers.clone();
    let t = TestApp::on(deps.clone(), base.clock.clone()).await;
    (t, deps, providers)
}

async fn pending(t: &TestApp, user: &str) -> Vec<Item> {
    let uid = UserId::parse(user).unwrap();
    let q = Query::partition(keys::user_partition(uid)).prefix("REVOKE#");
    query_all(t.deps.table.as_ref(), q, 100).await.unwrap()
}

#[tokio::test]
async fn a_revoke_that_succeeds_at_once_leaves_nothing_pending() {
    let (t, _, providers) = failing(0).await;
    let user = t.create_user("rev-1").await;
    connect_demo(&t, &user, "oura").await;
    assert_eq!(t.delete(&format!("/v2/user/{user}/oura")).await.status, StatusCode::OK);
    assert_eq!(providers.revoked.load(Ordering::SeqCst), 1);
    assert!(pending(&t, &user).await.is_empty());
}

#[tokio::test]
async fn a_failed_revoke_is_retried_by_the_sweep_with_backoff_and_reaches_the_provider() {
    let (t, deps, providers) = failing(2).await;
    let user = t.create_user("rev-2").await;
    connect_password(&t, &user, "zwift", "jane").await;
    assert_eq!(t.delete(&format!("/v2/user/{user}/zwift")).await.status, StatusCode::OK);
    assert_eq!(providers.revoked.load(Ordering::SeqCst), 0);
    let left = pending(&t, &user).await;
    assert_eq!(left.len(), 1, "kept for a retry");
    let body = left[0].body.to_string();
    assert!(!body.contains("sim:zwift"), "credentials kept sealed: {body}");

    assert_eq!(minute_worker::handle(&deps, &SimulatedLab, None).await.unwrap().revokes, 0, "not due yet");
    t.clock.advance(BACKOFF[0] + Duration::seconds(1));
    assert_eq!(
        minute_worker::handle(&deps, &SimulatedLab, None).await.unwrap().revokes,
        1,
        "second attempt, fails"
    );
    assert_eq!(providers.revoked.load(Ordering::SeqCst), 0);
    assert_eq!(pending(&t, &user).await.len(), 1);
    t.clock.advance(BACKOFF[1] + Duration::seconds(1));
    assert_eq!(minute_worker::handle(&deps, &SimulatedLab, None).await.unwrap().revokes, 1);
    assert_eq!(providers.revoked.load(Ordering::SeqCst), 1, "reached the provider");
    assert!(pending(&t, &user).await.is_empty());
    assert_eq!(minute_worker::handle(&deps, &SimulatedLab, None).await.unwrap().revokes, 0, "revoked once");
}

#[tokio::test]
async fn a_revoke_failing_past_the_budget_is_dropped_with_its_credentials() {
    let t = TestApp::embedded().await;
    let stack = t.stack.clone().unwrap();
    let user = t.create_user("rev-3").await;
    connect_password(&t, &user, "peloton", "jane-deregister-error").await;
    connect_demo(&t, &user, "oura").await;
    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    let left = pending(&t, &user).await;
    assert_eq!(left.len(), 1, "the failed revoke of the deleted user waits");
    assert_eq!(left[0].body["entries"].as_array().unwrap().len(), 1, "the oura revoke went through");
    for wait in BACKOFF {
        assert_eq!(pending(&t, &user).await.len(), 1);
        t.clock.advance(wait + Duration::seconds(1));
        assert_eq!(stack.sweep().await.unwrap().revokes, 1);
    }
    assert!(pending(&t, &user).await.is_empty(), "budget over: item and credentials gone");
    t.clock.advance(Duration::days(1));
    assert_eq!(stack.sweep().await.unwrap().revokes, 0);
}

#[tokio::test]
async fn revokes_stored_but_never_attempted_are_done_by_the_sweep() {
    let (t, deps, providers) = failing(0).await;
    let user = t.create_user("rev-4").await;
    connect_demo(&t, &user, "oura").await;
    connect_demo(&t, &user, "fitbit").await;
    let uid = UserId::parse(&user).unwrap();
    let conns: Vec<_> =
        connections::load_all(&deps, uid).await.unwrap().into_iter().map(|(c, _)| c).collect();
    // The removing transaction committed, then the process stopped before the attempt.
    let staged = Pending::new(&deps, t.team, uid, &conns).unwrap();
    deps.table.transact(staged.write_op().into_iter().collect()).await.unwrap();
    assert_eq!(pending(&t, &user).await.len(), 1);
    assert_eq!(minute_worker::handle(&deps, &SimulatedLab, None).await.unwrap().revokes, 1);
    assert_eq!(providers.revoked.load(Ordering::SeqCst), 2);
    assert!(pending(&t, &user).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_revoke_is_retried_from_the_due_index_on_dynamodb() {
    let (base, _, _) = crate::users_on_dynamodb::on_moto().await;
    let mut providers = FlakyProviders::plain();
    providers.revoke_fails = AtomicUsize::new(1);
    let providers = providers.on(base.deps.providers.clone());
    let deps = Deps { providers: providers.clone(), ..base.deps.clone() };
    let t = TestApp::on(deps.clone(), base.clock.clone()).await;
    let user = t.create_user("rev-moto").await;
    connect_demo(&t, &user, "oura").await;
    connect_demo(&t, &user, "fitbit").await;
    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    assert_eq!(providers.revoked.load(Ordering::SeqCst), 1, "one of the two went through");
    assert_eq!(pending(&t, &user).await.len(), 1);
    assert_eq!(minute_worker::handle(&deps, &SimulatedLab, None).await.unwrap().revokes, 0, "not due yet");
    t.clock.advance(BACKOFF[0] + Duration::seconds(1));
    assert_eq!(minute_worker::handle(&deps, &SimulatedLab, None).await.unwrap().revokes, 1);
    assert_eq!(providers.revoked.load(Ordering::SeqCst), 2);
    assert!(pending(&t, &user).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sweeps_revoke_once() {
    let (t, deps, providers) = failing(1).await;
    let user = t.create_user("rev-5").await;
    connect_demo(&t, &user, "oura").await;
    assert_eq!(t.delete(&format!("/v2/user/{user}/oura")).await.status, StatusCode::OK);
    t.clock.advance(BACKOFF[0] + Duration::seconds(1));
    let (a, b) = tokio::join!(
        minute_worker::handle(&deps, &SimulatedLab, None),
        minute_worker::handle(&deps, &SimulatedLab, None)
    );
    assert_eq!(a.unwrap().revokes + b.unwrap().revokes, 1, "one sweep claimed the item");
    assert_eq!(providers.revoked.load(Ordering::SeqCst), 1);
    assert!(pending(&t, &user).await.is_empty());
}
