//! `GET /v2/user` reads the team's user count from its counter item and the index only as far
//! as `offset + limit`: the total through every change of the active set (create, delete, undo,
//! erasure, concurrent creates, a team created before the counter), pages in order, and the
//! reads of one page, counted by the table wrapper, on the embedded adapter and DynamoDB (moto).

use std::sync::Arc;

use chrono::Duration;
use http::StatusCode;
use serde_json::{Value, json};
use wearlab_domain::common::ids::{ClientUserId, TeamId, UserId};
use wearlab_domain::lifecycle::{self, Erasure};
use wearlab_domain::ports::{Condition, Item, Table};
use wearlab_domain::users::{self, NewUser};
use wearlab_domain::{Deps, keys};

use crate::helpers::{Faults, FaultyTable, Reads, TestApp};
use crate::users_on_dynamodb::on_moto;

pub(crate) async fn embedded() -> (TestApp, Arc<FaultyTable>) {
    TestApp::embedded_with_faults().await
}

/// The DynamoDB adapter on moto, behind the counting wrapper.
pub(crate) async fn moto() -> (TestApp, Arc<FaultyTable>) {
    let (t, table, _) = on_moto().await;
    let counted = Arc::new(FaultyTable::new(table));
    let deps = Deps { table: counted.clone(), ..t.deps.clone() };
    (TestApp::on(deps, t.clock.clone()).await, counted)
}

async fn total(t: &TestApp) -> u64 {
    let a = t.get("/v2/user?limit=500").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let listed = a.body["users"].as_array().unwrap().len() as u64;
    let total = a.body["total"].as_u64().unwrap();
    assert_eq!(listed, total, "every active user is listed: {}", a.body);
    total
}

/// Creates `n` users without going through HTTP (faster on moto), one second apart.
pub(crate) async fn create_many(t: &TestApp, prefix: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let new = NewUser {
            client_user_id: ClientUserId::parse(&format!("{prefix}-{i:04}")).unwrap(),
            fallback_time_zone: None,
            fallback_birth_date: None,
            ingestion_start: None,
            ingestion_end: None,
        };
        ids.push(users::create(&t.deps, t.team, new).await.unwrap().user_id.to_string());
        t.clock.advance(Duration::seconds(1));
    }
    ids
}

/// Deletes every shard of the team's counter (the documented repair: the team is then counted
/// again from its index).
pub(crate) async fn delete_counter(table: &dyn Table, team: TeamId) {
    for key in keys::team_user_counts(team) {
        table.delete(&key, Condition::None).await.unwrap();
    }
}

/// The team's stored count (the sum of its counter shards), if every shard is stored.
pub(crate) async fn stored_count(table: &dyn Table, team: TeamId) -> Option<i64> {
    let shards = table.get_many(&keys::team_user_counts(team)).await.unwrap();
    shards
        .iter()
        .map(|s| s.as_ref().map(|i| i.decode::<Value>().unwrap().0["active"].as_i64().unwrap()))
        .sum()
}

pub(crate) fn ids_of(page: &Value) -> Vec<String> {
    page["users"].as_array().unwrap().iter().map(|u| u["user_id"].as_str().unwrap().to_owned()).collect()
}

async fn total_follows_every_change(t: TestApp) {
    assert_eq!(total(&t).await, 0);
    let ids = create_many(&t, "count", 3).await;
    assert_eq!(total(&t).await, 3);
    assert_eq!(t.delete(&format!("/v2/user/{}", ids[0])).await.status, StatusCode::OK);
    assert_eq!(total(&t).await, 2);
    assert_eq!(t.delete(&format!("/v2/user/{}", ids[0])).await.status, StatusCode::NOT_FOUND);
    assert_eq!(total(&t).await, 2, "a second delete changes nothing");
    let undo = t.post_empty(&format!("/v2/user/undo_delete?user_id={}", ids[0])).await;
    assert_eq!(undo.status, StatusCode::OK, "{}", undo.body);
    assert_eq!(total(&t).await, 3);
    let again = t.post_empty(&format!("/v2/user/undo_delete?user_id={}", ids[0])).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert_eq!(total(&t).await, 3, "an undo of an active user changes nothing");
    let dup = t.post("/v2/user", json!({"client_user_id": "count-0001"})).await;
    assert_eq!(dup.status, StatusCode::BAD_REQUEST);
    assert_eq!(total(&t).await, 3, "a refused create changes nothing");

    assert_eq!(t.delete(&format!("/v2/user/{}", ids[1])).await.status, StatusCode::OK);
    assert_eq!(total(&t).await, 2);
    t.clock.advance(Duration::days(8));
    let out = lifecycle::erase_user(&t.deps, UserId::parse(&ids[1]).unwrap()).await.unwrap();
    assert!(matches!(out, Erasure::Erased { .. }), "{out:?}");
    assert_eq!(total(&t).await, 2, "erasing a deleted user leaves the active count alone");
    let listed = ids_of(&t.get("/v2/user").await.body);
    assert_eq!(listed, vec![ids[0].clone(), ids[2].clone()]);
}

#[tokio::test]
async fn total_follows_every_change_embedded() {
    total_follows_every_change(embedded().await.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn total_follows_every_change_on_dynamodb() {
    total_follows_every_change(moto().await.0).await;
}

/// Concurrent creates of one team all succeed and the count is exact. The count is an atomic
/// add with no version condition: even a table where every version-checked write loses its
/// race (which made the old read-modify-write counter answer 409) lets every create through.
async fn concurrent_creates_all_count((t, table): (TestApp, Arc<FaultyTable>)) {
    create_many(&t, "before", 2).await;
    table.set(Faults { lose_races: true, ..Faults::default() });
    let posts = (0..50).map(|i| t.post("/v2/user", json!({ "client_user_id": format!("burst-{i}") })));
    let answers = futures::future::join_all(posts).await;
    for a in &answers {
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    }
    table.set(Faults::default());
    assert_eq!(total(&t).await, 52);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_all_count_embedded() {
    concurrent_creates_all_count(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_all_count_on_dynamodb() {
    concurrent_creates_all_count(moto().await).await;
}

async fn pages_follow_creation_order(t: TestApp) {
    let ids = create_many(&t, "page", 7).await;
    for (offset, limit) in [(0, 3), (3, 3), (6, 3), (0, 7), (2, 1), (7, 5), (100, 5)] {
        let a = t.get(&format!("/v2/user?offset={offset}&limit={limit}")).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        let want: Vec<String> = ids.iter().skip(offset).take(limit).cloned().collect();
        assert_eq!(ids_of(&a.body), want, "offset {offset}, limit {limit}");
        assert_eq!(a.body["total"], 7);
        assert_eq!(
            (a.body["offset"].as_u64(), a.body["limit"].as_u64()),
            (Some(offset as u64), Some(limit as u64))
        );
    }
}

#[tokio::test]
async fn pages_follow_creation_order_embedded() {
    pages_follow_creation_order(embedded().await.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_follow_creation_order_on_dynamodb() {
    pages_follow_creation_order(moto().await.0).await;
}

/// Page 1 of a team of 300 reads what page 1 of a team of 30 reads: the counter and one index
/// page of `limit` items.
async fn a_page_reads_what_it_shows((t, table): (TestApp, Arc<FaultyTable>)) {
    let small = TestApp::on(t.deps.clone(), t.clock.clone()).await;
    create_many(&small, "small", 30).await;
    create_many(&t, "big", 300).await;
    let page_one = Reads { gets: 1, queries: 1, items: 10 };
    for team in [&small, &t] {
        // The team's first request of a process also reads its fair-use limit and its API key
        // (both then cached, the key for 60 s on the test clock, which stands still here).
        team.get("/v2/user?limit=1").await;
        table.take_reads();
        let a = team.send(http::Method::GET, "/v2/user?limit=10", Some(&team.key), None).await;
        assert_eq!(a.body["users"].as_array().unwrap().len(), 10);
        assert_eq!(table.take_reads(), page_one, "{}", a.body["total"]);
    }
    // A deep page reads as far as it shows, and still one index page.
    let deep = t.get("/v2/user?offset=290&limit=10").await;
    assert_eq!(deep.body["users"].as_array().unwrap().len(), 10);
    assert_eq!(deep.body["total"], 300);
    let reads = table.take_reads();
    assert_eq!((reads.queries, reads.items), (1, 300));
    // Past the end, only the counter is read (the API key is cached).
    let past = t.get("/v2/user?offset=300&limit=10").await;
    assert!(past.body["users"].as_array().unwrap().is_empty());
    assert_eq!(table.take_reads(), Reads { gets: 1, queries: 0, items: 0 });
}

#[tokio::test]
async fn a_page_reads_what_it_shows_embedded() {
    a_page_reads_what_it_shows(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_reads_what_it_shows_on_dynamodb() {
    a_page_reads_what_it_shows(moto().await).await;
}

/// A team whose users were created before the counter existed: the first listing counts them
/// once and stores the counter; later changes move it.
async fn a_team_without_a_counter_is_counted_once((t, table): (TestApp, Arc<FaultyTable>)) {
    let ids = create_many(&t, "legacy", 25).await;
    delete_counter(table.as_ref(), t.team).await;
    table.take_reads();
    assert_eq!(total(&t).await, 25);
    assert!(table.take_reads().items >= 25, "counted from the index");
    assert_eq!(stored_count(table.as_ref(), t.team).await, Some(25), "stored");
    assert_eq!(total(&t).await, 25);
    assert_eq!(table.take_reads().items, 25, "the second listing reads only its page");

    // A change before any listing creates the counter from the same count.
    delete_counter(table.as_ref(), t.team).await;
    assert_eq!(t.delete(&format!("/v2/user/{}", ids[0])).await.status, StatusCode::OK);
    create_many(&t, "new", 1).await;
    assert_eq!(total(&t).await, 25);
}

#[tokio::test]
async fn a_team_without_a_counter_is_counted_once_embedded() {
    a_team_without_a_counter_is_counted_once(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_without_a_counter_is_counted_once_on_dynamodb() {
    a_team_without_a_counter_is_counted_once(moto().await).await;
}

/// Each listed user is what `GET /v2/user/{id}` answers for it, also with fallback values and
/// a connection.
async fn a_listed_user_is_its_get_answer(t: TestApp) {
    let ids = create_many(&t, "listed", 3).await;
    let patch = json!({"fallback_time_zone": "Europe/Berlin", "fallback_birth_date": "1986-06-15"});
    assert_eq!(t.patch(&format!("/v2/user/{}", ids[0]), patch).await.status, StatusCode::NO_CONTENT);
    let a = t.post("/v2/link/connect/demo", json!({"user_id": ids[0], "provider": "oura"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let page = t.get("/v2/user?limit=10").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert_eq!(ids_of(&page.body), ids);
    for (listed, id) in page.body["users"].as_array().unwrap().iter().zip(&ids) {
        let got = t.get(&format!("/v2/user/{id}")).await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.body);
        assert_eq!(listed, &got.body);
    }
    assert_eq!(page.body["users"][0]["connected_sources"][0]["provider"]["slug"], "oura", "{}", page.body);
    assert_eq!(page.body["users"][0]["fallback_time_zone"]["id"], "Europe/Berlin", "{}", page.body);
}

#[tokio::test]
async fn a_listed_user_is_its_get_answer_embedded() {
    a_listed_user_is_its_get_answer(embedded().await.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_user_is_its_get_answer_on_dynamodb() {
    a_listed_user_is_its_get_answer(moto().await.0).await;
}

/// A team of a deployment from before the counter shards has one counter item (maybe stale
/// after a repair): its first listing counts it once from the index into the shards and removes
/// the old item. A repair that deleted only some shards is counted again the same way.
async fn a_team_of_the_unsharded_counter_is_counted_into_shards((t, table): (TestApp, Arc<FaultyTable>)) {
    create_many(&t, "unsharded", 5).await;
    delete_counter(table.as_ref(), t.team).await;
    let old = keys::team_user_count_unsharded(t.team);
    table.put(Item::new(old.clone(), json!({"active": 99})), Condition::None).await.unwrap();
    assert_eq!(total(&t).await, 5);
    assert!(table.get(&old).await.unwrap().is_none(), "the unsharded item is gone");
    assert_eq!(stored_count(table.as_ref(), t.team).await, Some(5));

    for key in keys::team_user_counts(t.team).iter().skip(3) {
        table.delete(key, Condition::None).await.unwrap();
    }
    create_many(&t, "after", 3).await;
    assert_eq!(total(&t).await, 8);
    assert_eq!(stored_count(table.as_ref(), t.team).await, Some(8));
}

#[tokio::test]
async fn a_team_of_the_unsharded_counter_is_counted_into_shards_embedded() {
    a_team_of_the_unsharded_counter_is_counted_into_shards(embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_of_the_unsharded_counter_is_counted_into_shards_on_dynamodb() {
    a_team_of_the_unsharded_counter_is_counted_into_shards(moto().await).await;
}
