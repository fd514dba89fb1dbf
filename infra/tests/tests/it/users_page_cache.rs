//! `GET /v2/user` answers a page nobody changed from the pages the process keeps, after one read
//! of the team's counter item, and never answers a page older than the last change of a listed
//! user: every such change (create, PATCH, connection made or removed, delete, undo) moves the
//! counter item's version in its own transaction. On the embedded adapter and DynamoDB (moto),
//! whose index shows a write only after `Table::index_lag`.

use std::sync::Arc;

use chrono::Duration;
use http::StatusCode;
use serde_json::{Value, json};
use wearlab_domain::users::{self, PageRequest};

use crate::helpers::{FaultyTable, Reads, TestApp};
use crate::users_count::{create_many, delete_counter, embedded, ids_of, moto, stored_count};

const PAGE: &str = "/v2/user?limit=10";

/// Asks for the page until the process keeps it: on DynamoDB a page is kept only when read
/// `index_lag` after its version was first seen, so the clock moves on past that.
async fn warm(t: &TestApp) -> Value {
    let lag = t.deps.table.index_lag();
    let mut last = Value::Null;
    for _ in 0..2 {
        let a = t.get(PAGE).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        last = a.body;
        t.clock.advance(Duration::from_std(lag).unwrap() + Duration::seconds(1));
    }
    last
}

/// The page as read without any cache.
async fn fresh(t: &TestApp) -> Value {
    let page = PageRequest::parse(Some(0), Some(10)).unwrap();
    serde_json::to_value(users::list(&t.deps, t.team, page).await.unwrap()).unwrap()
}

/// What one `GET` of the page read (the API key is cached: `warm` asked less than 60 s before,
/// on the test clock).
async fn reads_of_page(t: &TestApp, table: &FaultyTable) -> (Value, Reads) {
    table.take_reads();
    let a = t.get(PAGE).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    (a.body, table.take_reads())
}

async fn a_page_asked_again_costs_one_read((t, table): (TestApp, Arc<FaultyTable>)) {
    create_many(&t, "kept", 30).await;
    let first = t.get(PAGE).await.body;
    // Kept now (embedded) or once the index lag has passed (DynamoDB).
    let warmed = warm(&t).await;
    assert_eq!(warmed, first);
    let (page, reads) = reads_of_page(&t, &table).await;
    assert_eq!(page, first);
    assert_eq!(reads, Reads { gets: 1, queries: 0, items: 0 }, "the counter item only");
    // Another page of the same team is kept on its own.
    table.take_reads();
    t.get("/v2/user?offset=10&limit=10").await;
    assert_eq!(table.take_reads().queries, 1);
}

#[tokio::test]
async fn a_page_asked_again_costs_one_read_embedded() {
    a_page_asked_again_costs_one_read(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_asked_again_costs_one_read_on_dynamodb() {
    a_page_asked_again_costs_one_read(moto().await).await;
}

/// On DynamoDB a page read right after a change may miss it (the index lags): such a page is
/// answered but not kept, and the page is read again until the lag has passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn within_the_index_lag_a_page_is_read_every_time_on_dynamodb() {
    let (t, table) = moto().await;
    create_many(&t, "lag", 12).await;
    // The team's first request of a process also reads its fair-use limit (then cached).
    t.get("/v2/user?limit=1").await;
    for _ in 0..3 {
        let (_, reads) = reads_of_page(&t, &table).await;
        assert_eq!((reads.gets, reads.queries), (1, 1));
        t.clock.advance(Duration::milliseconds(500));
    }
    t.clock.advance(Duration::seconds(1));
    reads_of_page(&t, &table).await;
    let (_, reads) = reads_of_page(&t, &table).await;
    assert_eq!(reads.queries, 0, "kept once read two seconds after the version was first seen");
}

/// What a page must show after a change.
type Shows = Box<dyn Fn(Value) -> bool>;

/// After each kind of change of a listed user, the next page shows it: it is the page as read
/// without a cache.
async fn every_change_shows_on_the_next_page((t, table): (TestApp, Arc<FaultyTable>)) {
    let ids = create_many(&t, "change", 3).await;
    warm(&t).await;
    let deleted = ids[2].clone();
    let changes: Vec<(&str, Shows)> = vec![
        ("create", Box::new(|p| p["total"] == 4 && p["users"].as_array().unwrap().len() == 4)),
        ("patch client_user_id", Box::new(|p| p["users"][0]["client_user_id"] == "renamed")),
        ("patch fallback time zone", Box::new(|p| p["users"][0]["fallback_time_zone"]["id"] == "Asia/Tokyo")),
        ("connect", Box::new(|p| p["users"][1]["connected_sources"][0]["provider"]["slug"] == "oura")),
        ("disconnect", Box::new(|p| p["users"][1]["connected_sources"] == json!([]))),
        ("delete", Box::new(move |p| p["total"] == 3 && !ids_of(&p).contains(&deleted))),
        ("undo delete", Box::new(|p| p["total"] == 4)),
    ];
    for (change, shows) in changes {
        let before = t.get(PAGE).await.body;
        let a = match change {
            "create" => t.post("/v2/user", json!({"client_user_id": "change-new"})).await,
            "patch client_user_id" => {
                t.patch(&format!("/v2/user/{}", ids[0]), json!({"client_user_id": "renamed"})).await
            }
            "patch fallback time zone" => {
                t.patch(&format!("/v2/user/{}", ids[0]), json!({"fallback_time_zone": "Asia/Tokyo"})).await
            }
            "connect" => {
                t.post("/v2/link/connect/demo", json!({"user_id": ids[1], "provider": "oura"})).await
            }
            "disconnect" => t.delete(&format!("/v2/user/{}/oura", ids[1])).await,
            "delete" => t.delete(&format!("/v2/user/{}", ids[2])).await,
            _ => t.post_empty(&format!("/v2/user/undo_delete?user_id={}", ids[2])).await,
        };
        assert!(a.status.is_success(), "{change}: {} {}", a.status, a.body);
        table.take_reads();
        let after = t.get(PAGE).await;
        assert_eq!(after.status, StatusCode::OK);
        assert!(table.take_reads().queries >= 1, "{change}: the page is read again");
        assert_ne!(after.body, before, "{change}");
        assert!(shows(after.body.clone()), "{change}: {}", after.body);
        assert_eq!(after.body, fresh(&t).await, "{change}");
        // Kept again, the same answer.
        assert_eq!(warm(&t).await, after.body, "{change}");
        let (kept, reads) = reads_of_page(&t, &table).await;
        assert_eq!((kept, reads.queries), (after.body, 0), "{change}");
    }
    // A PATCH that changes nothing moves nothing: the page stays kept.
    let same = t.patch(&format!("/v2/user/{}", ids[0]), json!({"client_user_id": "renamed"})).await;
    assert_eq!(same.status, StatusCode::NO_CONTENT);
    assert_eq!(reads_of_page(&t, &table).await.1.queries, 0);
}

#[tokio::test]
async fn every_change_shows_on_the_next_page_embedded() {
    every_change_shows_on_the_next_page(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_shows_on_the_next_page_on_dynamodb() {
    every_change_shows_on_the_next_page(moto().await).await;
}

/// A team whose users were created before the counter item existed: a PATCH, a connection and
/// its removal create the counter (counting the team once) and go through.
async fn changes_of_a_team_without_a_counter_go_through((t, table): (TestApp, Arc<FaultyTable>)) {
    let ids = create_many(&t, "old", 3).await;
    for step in ["patch", "connect", "disconnect"] {
        delete_counter(table.as_ref(), t.team).await;
        let a = match step {
            "patch" => {
                t.patch(&format!("/v2/user/{}", ids[0]), json!({"client_user_id": "old-renamed"})).await
            }
            "connect" => {
                t.post("/v2/link/connect/demo", json!({"user_id": ids[1], "provider": "oura"})).await
            }
            _ => t.delete(&format!("/v2/user/{}/oura", ids[1])).await,
        };
        assert!(a.status.is_success(), "{step}: {} {}", a.status, a.body);
        assert_eq!(stored_count(table.as_ref(), t.team).await, Some(3), "{step}: the counter is created");
    }
    let page = t.get(PAGE).await.body;
    assert_eq!(page["users"][0]["client_user_id"], "old-renamed");
    assert_eq!(page["users"][1]["connected_sources"], json!([]));
}

#[tokio::test]
async fn changes_of_a_team_without_a_counter_go_through_embedded() {
    changes_of_a_team_without_a_counter_go_through(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_of_a_team_without_a_counter_go_through_on_dynamodb() {
    changes_of_a_team_without_a_counter_go_through(moto().await).await;
}

/// A counter item deleted (the documented repair) and counted again starts at a version no kept
/// page was read under: a page kept before shows the change made after.
async fn a_counter_counted_again_never_repeats_a_kept_version((t, table): (TestApp, Arc<FaultyTable>)) {
    let ids = create_many(&t, "repair", 1).await;
    let before = warm(&t).await;
    assert_eq!(before["users"][0]["client_user_id"], "repair-0000");
    delete_counter(table.as_ref(), t.team).await;
    let a = t.patch(&format!("/v2/user/{}", ids[0]), json!({"client_user_id": "repaired"})).await;
    assert_eq!(a.status, StatusCode::NO_CONTENT, "{}", a.body);
    let after = t.get(PAGE).await.body;
    assert_eq!(after["users"][0]["client_user_id"], "repaired", "{after}");
}

#[tokio::test]
async fn a_counter_counted_again_never_repeats_a_kept_version_embedded() {
    a_counter_counted_again_never_repeats_a_kept_version(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_counted_again_never_repeats_a_kept_version_on_dynamodb() {
    a_counter_counted_again_never_repeats_a_kept_version(moto().await).await;
}
