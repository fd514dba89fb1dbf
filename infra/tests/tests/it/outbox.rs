//! The outbox: events are stored with the change they announce, so a refused publish (or a
//! crash right after the change) delays them until the relay runs, and never loses them.

use std::sync::Arc;

use chrono::Duration;
use http::StatusCode;
use serde_json::json;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::ports::{Clock, Condition, Item, Query, query_all};
use wearlab_domain::{Deps, common::outbox, keys};
use wearlab_embedded::MemoryBus;
use wearlab_local::LocalStack;

use crate::helpers::{RefusingBus, TestApp};
use crate::linking::connect_demo;

/// A team app whose events cannot be published, on the same storage and clock as `t`.
async fn with_bus_down(t: &TestApp) -> TestApp {
    let deps = Deps { bus: Arc::new(RefusingBus), ..t.deps.clone() };
    TestApp::on(deps, t.clock.clone()).await
}

fn connection_events(bus: &MemoryBus, user: &str) -> usize {
    bus.published()
        .iter()
        .filter(|e| e.event_type == "provider.connection.created" && e.user_id.to_string() == user)
        .count()
}

async fn staged_entries(deps: &Deps, user: &str) -> usize {
    let user = UserId::from_uuid(user.parse().unwrap());
    let q = Query::partition(keys::user_partition(user)).prefix("OUTBOX#");
    query_all(deps.table.as_ref(), q, 100).await.unwrap().len()
}

/// The embedded stack, its team app with the bus down, and a user connected through the latter
/// (so the connection's event is staged, not published).
async fn connected_while_bus_down(client_user_id: &str) -> (TestApp, LocalStack, TestApp, String) {
    let t = TestApp::embedded().await;
    let stack = t.stack.clone().unwrap();
    let down = with_bus_down(&t).await;
    let user = down.create_user(client_user_id).await;
    connect_demo(&down, &user, "oura").await;
    (t, stack, down, user)
}

#[tokio::test]
async fn a_connection_made_while_the_bus_is_down_is_announced_and_pulled_later() {
    let (t, stack, down, user) = connected_while_bus_down("outbox-1").await;

    let listed = down.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(listed.status, StatusCode::OK);
    assert_eq!(listed.body["providers"].as_array().unwrap().len(), 1, "the connection is stored");
    assert_eq!(connection_events(&stack.bus, &user), 0);
    assert_eq!(staged_entries(&t.deps, &user).await, 1, "its event waits in the outbox");
    assert_eq!(stack.run_pulls_once().await.unwrap(), 0, "no pull before the event");

    assert_eq!(stack.sweep().await.unwrap().relayed, 0, "too fresh: its publisher may still be at it");
    t.clock.advance(outbox::RELAY_AFTER + Duration::seconds(1));
    assert_eq!(stack.sweep().await.unwrap().relayed, 1);
    assert_eq!(connection_events(&stack.bus, &user), 1);
    assert_eq!(staged_entries(&t.deps, &user).await, 0);
    assert!(stack.run_pulls_once().await.unwrap() > 0, "the event started the historical pull");

    assert_eq!(stack.sweep().await.unwrap().relayed, 0, "sent once");
    assert_eq!(connection_events(&stack.bus, &user), 1);
}

#[tokio::test]
async fn a_published_event_leaves_nothing_staged() {
    let t = TestApp::embedded().await;
    let stack = t.stack.clone().unwrap();
    let user = t.create_user("outbox-2").await;
    connect_demo(&t, &user, "oura").await;
    assert_eq!(connection_events(&stack.bus, &user), 1);
    assert_eq!(staged_entries(&t.deps, &user).await, 0);
    t.clock.advance(outbox::RELAY_AFTER * 2);
    assert_eq!(stack.sweep().await.unwrap().relayed, 0);
    assert_eq!(connection_events(&stack.bus, &user), 1);
}

#[tokio::test]
async fn staged_events_of_an_erased_user_are_erased_with_the_user() {
    let (t, stack, down, user) = connected_while_bus_down("outbox-3").await;
    assert_eq!(down.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);

    t.clock.advance(Duration::days(7) + Duration::minutes(1));
    assert_eq!(t.run_due_jobs().await, 1, "the erasure ran");
    assert_eq!(staged_entries(&t.deps, &user).await, 0);
    assert_eq!(outbox::relay(&t.deps).await.unwrap(), 0);
    assert_eq!(connection_events(&stack.bus, &user), 0, "nothing about an erased user goes out");
}

#[tokio::test]
async fn an_unreadable_staged_entry_does_not_hold_up_the_others() {
    let (t, stack, _, user) = connected_while_bus_down("outbox-4").await;
    let uid = UserId::from_uuid(user.parse().unwrap());
    let (at, id) = (t.clock.now() - Duration::hours(1), uuid::Uuid::new_v4());
    let garbage = Item::new(keys::outbox(uid, at, id), json!({"not": "events"}))
        .with_gsi1(keys::outbox_index(id), keys::outbox_index_sort(at, id));
    t.deps.table.put(garbage, Condition::None).await.unwrap();

    t.clock.advance(outbox::RELAY_AFTER + Duration::seconds(1));
    assert_eq!(outbox::relay(&t.deps).await.unwrap(), 1, "the readable entry went out");
    assert_eq!(connection_events(&stack.bus, &user), 1);
    assert_eq!(staged_entries(&t.deps, &user).await, 1, "the unreadable one is left for a person to look at");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_on_dynamodb() {
    let (t, _, _) = crate::users_on_dynamodb::on_moto().await;
    let down = with_bus_down(&t).await;
    let user = down.create_user("outbox-moto").await;
    connect_demo(&down, &user, "oura").await;
    assert_eq!(staged_entries(&t.deps, &user).await, 1);

    let bus = MemoryBus::new();
    let up = Deps { bus: Arc::new(bus.clone()), ..t.deps.clone() };
    assert_eq!(outbox::relay(&up).await.unwrap(), 0);
    t.clock.advance(outbox::RELAY_AFTER + Duration::seconds(1));
    assert_eq!(outbox::relay(&up).await.unwrap(), 1);
    assert_eq!(connection_events(&bus, &user), 1);
    assert_eq!(staged_entries(&t.deps, &user).await, 0);
    assert_eq!(outbox::relay(&up).await.unwrap(), 0);
}
