//! `wearlab-admin providers backfill-push-index`: provider-account markers written without their
//! provider-push index entry get it, page by page, once; on the embedded table and on DynamoDB
//! (moto).

use std::sync::Arc;

use serde_json::json;
use wearlab_domain::Deps;
use wearlab_domain::common::ids::{TeamId, UserId};
use wearlab_domain::keys::linking::{provider_account, provider_user_index, provider_user_index_sort};
use wearlab_domain::linking::backfill::{BackfillReport, backfill_push_index};
use wearlab_domain::ports::{Condition, Item, ManualClock, Query, Table, query_all};

fn deps(table: Arc<dyn Table>) -> Deps {
    let clock = Arc::new(ManualClock::new(crate::helpers::start_time()));
    Deps {
        table: table.clone(),
        scheduler: Arc::new(wearlab_embedded::TableScheduler::new(table)),
        clock: clock.clone(),
        bus: Arc::new(wearlab_embedded::MemoryBus::new()),
        providers: Arc::new(wearlab_sim::SimProviders::new(clock)),
        data_key: Arc::new(wearlab_domain::common::crypto::DataKey::ephemeral()),
    }
}

/// A marker as written before the index existed: no GSI1 entry.
async fn old_marker(table: &dyn Table, team: TeamId, provider: &str, external: &str) -> UserId {
    let user = UserId::new_random();
    let item = Item::new(provider_account(team, provider, external, user), json!({ "user_id": user }));
    table.put(item, Condition::NotExists).await.unwrap();
    user
}

async fn indexed(table: &dyn Table, provider: &str, external: &str) -> Vec<String> {
    let items = query_all(table, Query::gsi1(provider_user_index(provider, external)), 10).await.unwrap();
    items.into_iter().filter_map(|i| i.gsi1.map(|g| g.sk)).collect()
}

async fn backfills_old_markers_once(table: Arc<dyn Table>) {
    let deps = deps(table.clone());
    let (team, other_team) = (TeamId::new_random(), TeamId::new_random());
    // External ids of their own per run: the moto table is shared by the tests.
    let ext = |i: usize| format!("u{i}#{team}");
    let mut users = Vec::new();
    for i in 0..5 {
        users.push(
            old_marker(table.as_ref(), team, if i % 2 == 0 { "oura" } else { "withings" }, &ext(i)).await,
        );
    }
    let current_user = UserId::new_random();
    let current =
        Item::new(provider_account(team, "oura", &ext(9), current_user), json!({ "user_id": current_user }))
            .with_gsi1(provider_user_index("oura", &ext(9)), provider_user_index_sort(team, current_user));
    table.put(current, Condition::NotExists).await.unwrap();
    let foreign = format!("f#{other_team}");
    old_marker(table.as_ref(), other_team, "oura", &foreign).await;
    assert!(indexed(table.as_ref(), "oura", &ext(0)).await.is_empty(), "no push finds it yet");

    // Two markers a page, one page a run: runs until done, bounded.
    let mut total = BackfillReport::default();
    let mut after: Option<String> = None;
    let mut runs = 0;
    for _ in 0..10 {
        let r = backfill_push_index(&deps, team, after.as_deref(), 2, 1).await.unwrap();
        runs += 1;
        assert!(r.scanned <= 2, "{r:?}");
        total.scanned += r.scanned;
        total.rewritten += r.rewritten;
        total.skipped += r.skipped;
        after = r.next;
        if after.is_none() {
            break;
        }
    }
    assert!(after.is_none(), "finished within the bound");
    assert!(runs >= 3, "six markers at two a page take three runs, took {runs}");
    assert_eq!((total.scanned, total.rewritten, total.skipped), (6, 5, 0));

    for (i, user) in users.iter().enumerate() {
        let provider = if i % 2 == 0 { "oura" } else { "withings" };
        assert_eq!(
            indexed(table.as_ref(), provider, &ext(i)).await,
            vec![provider_user_index_sort(team, *user)]
        );
    }
    assert_eq!(
        indexed(table.as_ref(), "oura", &ext(9)).await,
        vec![provider_user_index_sort(team, current_user)]
    );
    assert!(
        indexed(table.as_ref(), "oura", &foreign).await.is_empty(),
        "another team's markers are its own run"
    );

    let again = backfill_push_index(&deps, team, None, 100, 10).await.unwrap();
    assert_eq!(again, BackfillReport { scanned: 6, rewritten: 0, skipped: 0, next: None }, "idempotent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfills_old_markers_on_redb() {
    backfills_old_markers_once(Arc::new(wearlab_embedded::RedbTable::in_memory())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfills_old_markers_on_dynamodb() {
    backfills_old_markers_once(Arc::new(crate::helpers::moto_table().await)).await
}
