//! The deletion lifecycle on the embedded stack with a manual clock: grace period, undo,
//! erasure by schedule and by sweep, and what remains in the table afterwards.

use chrono::Duration;
use http::StatusCode;
use serde_json::json;

use crate::helpers::TestApp;

/// Items anywhere in the table that mention the user, once the webhook queue has handled the
/// lifecycle events in flight (they name the user by design).
async fn items_of(t: &TestApp, user_id: &str) -> Vec<String> {
    for _ in 0..10 {
        if t.stack.as_ref().unwrap().run_webhooks_once().await.unwrap() == 0 {
            break;
        }
    }
    let table = &t.stack.as_ref().unwrap().table;
    table
        .scan_all()
        .await
        .unwrap()
        .into_iter()
        .filter(|i| serde_json::to_string(i).unwrap().contains(user_id))
        .map(|i| format!("{}/{}", i.key.pk, i.key.sk))
        .collect()
}

#[tokio::test]
async fn delete_undo_delete_then_erase_after_seven_days() {
    let t = TestApp::embedded().await;
    let id = t
        .post("/v2/user", json!({"client_user_id": "life", "fallback_time_zone": "Europe/Paris"}))
        .await
        .body["user_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/v2/user/{id}");

    assert_eq!(t.delete(&path).await.status, StatusCode::OK);
    assert_eq!(t.get(&path).await.status, StatusCode::NOT_FOUND);
    t.clock.advance(Duration::days(3));
    assert_eq!(t.post_empty(&format!("/v2/user/undo_delete?user_id={id}")).await.status, StatusCode::OK);
    let back = t.get(&path).await;
    assert_eq!(back.status, StatusCode::OK);
    assert_eq!(back.body["fallback_time_zone"]["id"], "Europe/Paris");

    assert_eq!(t.delete(&path).await.status, StatusCode::OK);
    t.clock.advance(Duration::days(7) - Duration::seconds(1));
    assert_eq!(t.run_due_jobs().await, 0, "nothing due before the grace period ends");
    assert!(!items_of(&t, &id).await.is_empty());
    assert_eq!(t.post_empty("/v2/user/undo_delete?client_user_id=life").await.status, StatusCode::OK);
    assert_eq!(t.delete(&path).await.status, StatusCode::OK);
    t.clock.advance(Duration::days(7));
    assert_eq!(t.run_due_jobs().await, 1);

    assert_eq!(items_of(&t, &id).await, Vec::<String>::new(), "no item of the user remains");
    assert_eq!(
        t.post_empty(&format!("/v2/user/undo_delete?user_id={id}")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(t.post_empty("/v2/user/undo_delete?client_user_id=life").await.status, StatusCode::NOT_FOUND);
    let reuse = t.post("/v2/user", json!({"client_user_id": "life"})).await;
    assert_eq!(reuse.status, StatusCode::OK);
    assert_ne!(reuse.body["user_id"], id);
}

#[tokio::test]
async fn undo_after_grace_but_before_erasure_is_404() {
    let t = TestApp::embedded().await;
    let id = t.create_user("late").await;
    t.delete(&format!("/v2/user/{id}")).await;
    t.clock.advance(Duration::days(7));
    let a = t.post_empty(&format!("/v2/user/undo_delete?user_id={id}")).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn sweep_erases_users_whose_schedule_was_lost() {
    let t = TestApp::embedded().await;
    let id = t.create_user("lost").await;
    t.delete(&format!("/v2/user/{id}")).await;
    let stack = t.stack.as_ref().unwrap();
    for job in stack.scheduler.pending().await.unwrap() {
        use wearlab_domain::ports::Scheduler;
        stack.scheduler.cancel(&job.name).await.unwrap();
    }
    t.clock.advance(Duration::days(8));
    assert_eq!(t.run_due_jobs().await, 0);
    stack.hourly().await.unwrap();
    assert_eq!(items_of(&t, &id).await, Vec::<String>::new());
}

#[tokio::test]
async fn a_stale_schedule_does_not_erase_early() {
    let t = TestApp::embedded().await;
    let id = t.create_user("stale").await;
    let path = format!("/v2/user/{id}");
    t.delete(&path).await;
    t.clock.advance(Duration::days(2));
    t.post_empty(&format!("/v2/user/undo_delete?user_id={id}")).await;
    t.delete(&path).await;
    // The first deletion's time passes; the user's erasure is due only 7 days after the second.
    t.clock.advance(Duration::days(5) + Duration::hours(1));
    let worker = erasure_worker::handle(&t.deps, json!({"erase_user": id})).await.unwrap();
    assert_eq!(worker, erasure_worker::Outcome::Skipped { reason: "grace period not over" });
    assert!(!items_of(&t, &id).await.is_empty());
    t.clock.advance(Duration::days(2));
    assert_eq!(t.run_due_jobs().await, 1);
    assert_eq!(items_of(&t, &id).await, Vec::<String>::new());
    let again = erasure_worker::handle(&t.deps, json!({"erase_user": id})).await.unwrap();
    assert_eq!(again, erasure_worker::Outcome::Skipped { reason: "already erased" }, "erasure is idempotent");
}

#[tokio::test]
async fn local_data_survives_a_restart() {
    let dir = std::env::temp_dir().join(format!("wearlab-restart-{}", uuid::Uuid::new_v4().simple()));
    let key;
    let id;
    {
        let stack = wearlab_local::LocalStack::open(&dir).unwrap();
        key = stack.ensure_team_key(None).await.unwrap();
        let user = wearlab_domain::users::create(
            &stack.deps,
            wearlab_local::LOCAL_TEAM_ID,
            wearlab_domain::users::NewUser {
                client_user_id: wearlab_domain::common::ids::ClientUserId::parse("kept").unwrap(),
                fallback_time_zone: None,
                fallback_birth_date: None,
                ingestion_start: None,
                ingestion_end: None,
            },
        )
        .await
        .unwrap();
        id = user.user_id;
    }
    let stack = wearlab_local::LocalStack::open(&dir).unwrap();
    assert_eq!(stack.ensure_team_key(Some(&key)).await.unwrap(), key);
    let team = wearlab_domain::teams::authenticate(&stack.deps, &key).await.unwrap();
    let user =
        wearlab_domain::users::get(&stack.deps, team, wearlab_domain::common::ids::UserId::from_uuid(id))
            .await
            .unwrap();
    assert_eq!(user.client_user_id, "kept");
    let _ = std::fs::remove_dir_all(dir);
}
