//! The users smoke run through the DynamoDB and EventBridge Scheduler adapters on moto.

use std::sync::Arc;

use chrono::Duration;
use http::StatusCode;
use serde_json::json;
use wearlab_aws::{EventBridgeScheduler, SchedulerTarget};
use wearlab_domain::Deps;
use wearlab_domain::ports::{ManualClock, Query, query_all};

use crate::helpers::{TestApp, moto_endpoint, moto_table, start_time};

pub async fn on_moto() -> (TestApp, Arc<wearlab_aws::DynamoDbTable>, aws_sdk_scheduler::Client) {
    let (_, sched) = wearlab_aws::clients_for_endpoint(&moto_endpoint()).await;
    wearlab_aws::ensure_schedule_group(&sched, "default").await.unwrap();
    let table = Arc::new(moto_table().await);
    let scheduler = EventBridgeScheduler::new(
        sched.clone(),
        SchedulerTarget {
            group: "default".into(),
            target_arn: "arn:aws:lambda:us-east-1:123456789012:function:erasure-worker".into(),
            role_arn: "arn:aws:iam::123456789012:role/wearlab-scheduler".into(),
        },
    );
    let clock = Arc::new(ManualClock::new(start_time()));
    let deps = Deps {
        table: table.clone(),
        scheduler: Arc::new(scheduler),
        clock: clock.clone(),
        bus: Arc::new(wearlab_embedded::MemoryBus::new()),
        providers: Arc::new(wearlab_sim::SimProviders::new(clock.clone())),
        data_key: Arc::new(wearlab_domain::common::crypto::DataKey::ephemeral()),
    };
    (TestApp::on(deps, clock).await, table, sched)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_smoke_run() {
    let (t, table, sched) = on_moto().await;
    let id = t.create_user("moto-1").await;
    let dup = t.post("/v2/user", json!({"client_user_id": "moto-1"})).await;
    assert_eq!(dup.status, StatusCode::BAD_REQUEST);
    assert_eq!(dup.body["detail"]["user_id"], id);
    assert_eq!(t.get(&format!("/v2/user/{id}")).await.status, StatusCode::OK);
    assert_eq!(t.get("/v2/user/resolve/moto-1").await.body["user_id"], id);
    assert_eq!(
        t.patch(&format!("/v2/user/{id}"), json!({"client_user_id": "moto-2"})).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(t.get("/v2/user?limit=10").await.body["total"], 1);
    let other = t.other_team_key().await;
    let foreign = t.send(http::Method::GET, &format!("/v2/user/{id}"), Some(&other), None).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);

    assert_eq!(t.delete(&format!("/v2/user/{id}")).await.status, StatusCode::OK);
    let schedule =
        sched.get_schedule().group_name("default").name(format!("erase-user-{id}")).send().await.unwrap();
    assert!(schedule.schedule_expression().unwrap().starts_with("at(2026-03-08T09:00:00"));
    assert_eq!(t.post_empty(&format!("/v2/user/undo_delete?user_id={id}")).await.status, StatusCode::OK);
    assert!(
        sched.get_schedule().group_name("default").name(format!("erase-user-{id}")).send().await.is_err(),
        "cancelled"
    );

    assert_eq!(t.delete(&format!("/v2/user/{id}")).await.status, StatusCode::OK);
    t.clock.advance(Duration::days(7));
    // moto never fires schedules: deliver what the schedule carries, as EventBridge would.
    let out = erasure_worker::handle(&t.deps, json!({"erase_user": id})).await.unwrap();
    assert!(matches!(out, erasure_worker::Outcome::Erased { .. }), "{out:?}");
    let uid = wearlab_domain::common::ids::UserId::parse(&id).unwrap();
    let left = query_all(table.as_ref(), Query::partition(wearlab_domain::keys::user_partition(uid)), 100)
        .await
        .unwrap();
    assert!(left.is_empty());
    let due =
        query_all(table.as_ref(), Query::partition(wearlab_domain::keys::ERASURE_DUE), 100).await.unwrap();
    assert!(due.is_empty());
    assert_eq!(
        t.post_empty(&format!("/v2/user/undo_delete?user_id={id}")).await.status,
        StatusCode::NOT_FOUND
    );
    t.create_user("moto-2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_creates_have_one_winner_on_dynamodb() {
    let (t, _, _) = on_moto().await;
    crate::users_api::one_winner_among_fifty(Arc::new(t)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_erases_on_dynamodb() {
    let (t, _, _) = on_moto().await;
    let id = t.create_user("sweep").await;
    t.delete(&format!("/v2/user/{id}")).await;
    t.clock.advance(Duration::days(7) + Duration::minutes(1));
    let out = erasure_worker::handle(&t.deps, json!({"detail-type": "Scheduled Event"})).await.unwrap();
    assert_eq!(out, erasure_worker::Outcome::Swept { users: 1 });
}
