//! The ports only some functions have (a work queue, the lab network) are not on `Deps`: each
//! function's `app` is built with the ones its routes use, and its handlers use exactly those.
//! Each test builds one function's app, as its `main.rs` does, with a port of the test's own and
//! checks the request went through that port.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use http::StatusCode;
use serde_json::json;
use wearlab_domain::ports::QueueName;
use wearlab_domain::ports::lab_network::{
    LabError, LabNetwork, LabOrderRef, LabReport, LabRequest, Placement, Poll, StatusUpdate,
};
use wearlab_domain::teams;
use wearlab_embedded::{RedbTable, TableQueue};

use crate::helpers::{TestApp, state};
use crate::lab::order_body;
use crate::linking::connect_demo;

/// A queue of the test's own, on a table of its own: what lands on it came through the app.
fn own_queue(t: &TestApp) -> TableQueue {
    TableQueue::new(Arc::new(RedbTable::in_memory()), t.deps.clock.clone())
}

async fn depth(queue: &TableQueue, name: QueueName) -> usize {
    queue.depth(name).await.unwrap()
}

#[tokio::test]
async fn user_api_sends_on_demand_pulls_to_the_queue_it_was_built_with() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ports-pull").await;
    connect_demo(&t, &user, "oura").await;
    let queue = own_queue(&t);
    let t = TestApp { app: user_api::app(state(&t.deps), Arc::new(queue.clone())), ..t };

    let a = t.post(&format!("/v2/user/historical_pull/{user}/oura"), json!({})).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
    assert_eq!(depth(&queue, QueueName::Pull).await, 1, "the pull is on the app's queue");
}

#[tokio::test]
async fn bulk_api_sends_its_operations_to_the_queue_it_was_built_with() {
    let t = TestApp::embedded().await;
    teams::set_bulk_operations(&t.deps, t.team, true).await.unwrap();
    let user = t.create_user("ports-bulk").await;
    connect_demo(&t, &user, "oura").await;
    let queue = own_queue(&t);
    let t = TestApp { app: bulk_api::app(state(&t.deps), Arc::new(queue.clone())), ..t };

    let body = json!({"provider": "oura", "user_ids": [user]});
    let a = t.post("/v2/link/bulk_trigger_historical_pull", body).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
    assert_eq!(depth(&queue, QueueName::Bulk).await, 1, "the trigger is on the app's queue");
}

/// The simulated lab, counting the orders placed through it.
#[derive(Default)]
struct CountingLab {
    placed: AtomicUsize,
}

#[async_trait]
impl LabNetwork for CountingLab {
    async fn place(&self, request: &LabRequest) -> Result<Placement, LabError> {
        self.placed.fetch_add(1, Ordering::SeqCst);
        wearlab_sim::SimulatedLab.place(request).await
    }

    async fn poll(&self, order: &LabOrderRef, now: DateTime<Utc>) -> Result<Poll, LabError> {
        wearlab_sim::SimulatedLab.poll(order, now).await
    }

    async fn cancel(&self, order: &LabOrderRef, now: DateTime<Utc>) -> Result<StatusUpdate, LabError> {
        wearlab_sim::SimulatedLab.cancel(order, now).await
    }

    async fn results(&self, order: &LabOrderRef, now: DateTime<Utc>) -> Result<Option<LabReport>, LabError> {
        wearlab_sim::SimulatedLab.results(order, now).await
    }
}

#[tokio::test]
async fn lab_api_places_orders_with_the_lab_network_it_was_built_with() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ports-lab").await;
    let lab = Arc::new(CountingLab::default());
    let t = TestApp { app: lab_api::app(state(&t.deps), lab.clone()), ..t };

    let a = t.post("/v3/order", order_body(&user)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(lab.placed.load(Ordering::SeqCst), 1);
    let order = a.body["order"]["id"].as_str().unwrap().to_owned();
    assert_eq!(t.get(&format!("/v3/order/{order}")).await.status, StatusCode::OK, "read through it too");
}
