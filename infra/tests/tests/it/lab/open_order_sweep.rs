//! The open-order sweep (the minute-worker on AWS, a background task of the local stack):
//! orders nobody reads still move with the lab, and every change is announced exactly as a
//! read would announce it, on both storage adapters.

use std::sync::Arc;

use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::Value;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::lab::{Links, advance_due};
use wearlab_domain::ports::{EventBus, StoreError};
use wearlab_domain::{Deps, DomainError, common::outbox};
use wearlab_embedded::MemoryBus;

use super::order_body;
use crate::helpers::{Faults, RefusingBus, TestApp};

/// `(event_type, status, requisition_form_url)` of every event about the order, oldest first.
fn order_events(bus: &MemoryBus, order_id: &str) -> Vec<(String, String, String)> {
    bus.published()
        .into_iter()
        .filter(|e| e.data["id"] == order_id)
        .map(|e| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (e.event_type, text(&e.data["status"]), text(&e.data["requisition_form_url"]))
        })
        .collect()
}

/// Places an order through `https://127.0.0.1:8443` (a TLS proxy on the machine, as it says).
async fn place_through_public_host(t: &TestApp, client_user_id: &str) -> (String, String) {
    let user = t.create_user(client_user_id).await;
    let body = order_body(&user).to_string();
    let headers = [("host", "127.0.0.1:8443"), ("x-forwarded-proto", "https")];
    let a = t.send_with(Method::POST, "/v3/order", &headers, Some(&body)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    (user, a.body["order"]["id"].as_str().unwrap().to_owned())
}

async fn stored_status(deps: &Deps, user: &str, order_id: &str) -> String {
    let key =
        wearlab_domain::keys::lab::order(UserId::from_uuid(user.parse().unwrap()), order_id.parse().unwrap());
    let item = deps.table.get(&key).await.unwrap().expect("the order is stored");
    item.decode::<Value>().unwrap()["status"].as_str().unwrap().to_owned()
}

/// What one sweep run of the worker does, with events going to `bus`.
async fn sweep(deps: &Deps, bus: Arc<dyn EventBus>) -> usize {
    let deps = Deps { bus, ..deps.clone() };
    advance_due(
        &deps,
        &wearlab_sim::SimulatedLab,
        &Links { base_url: "https://fallback.example.test".into() },
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn unread_orders_move_with_the_lab_and_their_changes_are_announced() {
    let t = TestApp::embedded().await;
    let stack = t.stack.clone().unwrap();
    let (user, id) = place_through_public_host(&t, "sweep-1").await;
    assert_eq!(stack.sweep().await.unwrap().orders, 0, "nothing is due yet");

    t.clock.advance(Duration::hours(1) + Duration::minutes(1));
    assert_eq!(stack.sweep().await.unwrap().orders, 1);
    let events = order_events(&stack.bus, &id);
    let kinds_and_statuses: Vec<(&str, &str)> =
        events.iter().map(|(k, s, _)| (k.as_str(), s.as_str())).collect();
    assert_eq!(
        kinds_and_statuses,
        vec![
            ("labtest.order.created", "received.walk_in_test.ordered"),
            ("labtest.order.updated", "received.walk_in_test.requisition_created"),
            ("labtest.order.updated", "collecting_sample.walk_in_test.appointment_pending"),
        ],
        "two changes were due, and nobody read the order"
    );
    for (_, _, url) in &events {
        assert!(
            url.starts_with(&format!("https://127.0.0.1:8443/v3/order/{id}/requisition/pdf?")),
            "links point where the order was placed: {url}"
        );
    }
    assert_eq!(
        stored_status(&t.deps, &user, &id).await,
        "collecting_sample.walk_in_test.appointment_pending"
    );

    // Again before the next change: nothing is due, nothing is announced twice.
    assert_eq!(stack.sweep().await.unwrap().orders, 0);
    assert_eq!(order_events(&stack.bus, &id).len(), 3);
    // A read then finds the order as the sweep left it, and announces nothing more.
    let read = t.get(&format!("/v3/order/{id}")).await;
    assert_eq!(read.body["status"], "collecting_sample.walk_in_test.appointment_pending");
    assert_eq!(read.body["events"].as_array().unwrap().len(), 3);
    assert_eq!(order_events(&stack.bus, &id).len(), 3);

    // Through to the end: completed, then the order is no longer open.
    t.clock.advance(Duration::days(3));
    assert_eq!(stack.sweep().await.unwrap().orders, 1);
    assert_eq!(order_events(&stack.bus, &id).last().unwrap().1, "completed.walk_in_test.completed");
    assert_eq!(order_events(&stack.bus, &id).len(), 5);
    t.clock.advance(Duration::days(30));
    assert_eq!(stack.sweep().await.unwrap().orders, 0, "a completed order is not looked at again");
}

#[tokio::test]
async fn orders_of_a_deleted_user_are_left_alone() {
    let t = TestApp::embedded().await;
    let stack = t.stack.clone().unwrap();
    let (user, id) = place_through_public_host(&t, "sweep-2").await;
    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    t.clock.advance(Duration::hours(2));
    assert_eq!(stack.sweep().await.unwrap().orders, 0);
    assert_eq!(order_events(&stack.bus, &id).len(), 1, "only the order's creation was announced");
    assert_eq!(stored_status(&t.deps, &user, &id).await, "received.walk_in_test.ordered");

    // Undo: the order moves again, with every change it missed.
    let undo = t.post_empty(&format!("/v2/user/undo_delete?user_id={user}")).await;
    assert_eq!(undo.status, StatusCode::OK);
    assert_eq!(stack.sweep().await.unwrap().orders, 1);
    assert_eq!(order_events(&stack.bus, &id).len(), 3);
}

#[tokio::test]
async fn changes_the_bus_refuses_are_stored_and_announced_by_the_relay() {
    let t = TestApp::embedded().await;
    let stack = t.stack.clone().unwrap();
    let (user, id) = place_through_public_host(&t, "sweep-3").await;
    t.clock.advance(Duration::minutes(1));

    assert_eq!(sweep(&t.deps, Arc::new(RefusingBus)).await, 1);
    assert_eq!(stored_status(&t.deps, &user, &id).await, "received.walk_in_test.requisition_created");
    assert_eq!(order_events(&stack.bus, &id).len(), 1, "the change is stored, its event staged");

    // The relay leaves fresh entries to their publisher, then sends what is overdue, once.
    assert_eq!(outbox::relay(&t.deps).await.unwrap(), 0);
    t.clock.advance(outbox::RELAY_AFTER + Duration::seconds(1));
    assert_eq!(stack.sweep().await.unwrap().relayed, 1);
    let events = order_events(&stack.bus, &id);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1].0, "labtest.order.updated");
    assert_eq!(events[1].1, "received.walk_in_test.requisition_created");
    assert_eq!(stack.sweep().await.unwrap().relayed, 0);
    assert_eq!(order_events(&stack.bus, &id).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_minute_worker_advances_orders_on_dynamodb() {
    let (t, _, _) = crate::users_on_dynamodb::on_moto().await;
    let bus = MemoryBus::new();
    let deps = Deps { bus: Arc::new(bus.clone()), ..t.deps.clone() };
    let t = t.with_deps(deps);
    let (user, id) = place_through_public_host(&t, "sweep-moto").await;

    t.clock.advance(Duration::minutes(1));
    let outcome = minute_worker::handle(&t.deps, &wearlab_sim::SimulatedLab, None).await.unwrap();
    assert_eq!(outcome.orders, 1);
    assert_eq!(stored_status(&t.deps, &user, &id).await, "received.walk_in_test.requisition_created");
    let events = order_events(&bus, &id);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1].0, "labtest.order.updated");
    assert_eq!(minute_worker::handle(&t.deps, &wearlab_sim::SimulatedLab, None).await.unwrap().orders, 0);
}

#[tokio::test]
async fn the_minute_worker_relays_even_when_the_order_sweep_fails() {
    let (t, table) = TestApp::embedded_with_faults().await;
    let stack = t.stack.clone().unwrap();
    let (_, id) = place_through_public_host(&t, "sweep-4").await;
    t.clock.advance(Duration::minutes(1));
    assert_eq!(sweep(&t.deps, Arc::new(RefusingBus)).await, 1, "the change's event is staged");
    t.clock.advance(outbox::RELAY_AFTER + Duration::seconds(1));

    let open_orders = wearlab_domain::keys::lab::OPEN_ORDERS_INDEX.to_owned();
    table.set(Faults { failing_query_pk: Some(open_orders), ..Faults::default() });
    let run = minute_worker::handle(&t.deps, &wearlab_sim::SimulatedLab, None).await;
    assert!(matches!(run, Err(DomainError::Store(StoreError::Unavailable(_)))), "the run fails: {run:?}");
    let events = order_events(&stack.bus, &id);
    assert_eq!(events.len(), 2, "the relay ran anyway: {events:?}");
    assert_eq!(events[1].0, "labtest.order.updated");
    assert_eq!(events[1].1, "received.walk_in_test.requisition_created");

    table.set(Faults::default());
    assert_eq!(
        minute_worker::handle(&t.deps, &wearlab_sim::SimulatedLab, None).await.unwrap().relayed,
        0,
        "relayed once"
    );
}
