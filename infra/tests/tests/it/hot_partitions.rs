//! One team's changes and audited reads spread over many partitions (DynamoDB serves about
//! 1,000 writes a second per partition): a burst of changes of one team writes its user count
//! over every counter shard, a burst of audited reads writes its entries over every audit
//! shard, and the count and the audit listing stay exact. Partition keys are counted by a table
//! wrapper that notes every written key, on the embedded adapter and DynamoDB (moto).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use http::StatusCode;
use serde_json::{Value, json};
use wearlab_domain::Deps;
use wearlab_domain::common::audit::AuditEntry;
use wearlab_domain::keys::audit as audit_keys;
use wearlab_domain::ports::{
    Add, Condition, Item, Key, Page, Query, RawItem, RawPage, StoreError, Table, WriteOp,
};
use wearlab_domain::ports::{Clock, to_body};

use crate::helpers::TestApp;
use crate::users_count::create_many;

/// A table that notes the partition key of every write passed on to `inner`.
pub(crate) struct WrittenPartitions {
    inner: Arc<dyn Table>,
    written: Mutex<Vec<String>>,
}

impl WrittenPartitions {
    pub(crate) fn new(inner: Arc<dyn Table>) -> Self {
        Self { inner, written: Mutex::default() }
    }

    /// The distinct partition keys starting with `prefix` written since the last call.
    pub(crate) fn take(&self, prefix: &str) -> BTreeSet<String> {
        let written = std::mem::take(&mut *self.written.lock().unwrap());
        written.into_iter().filter(|pk| pk.starts_with(prefix)).collect()
    }

    fn note<'a>(&self, keys: impl IntoIterator<Item = &'a Key>) {
        self.written.lock().unwrap().extend(keys.into_iter().map(|k| k.pk.clone()));
    }
}

#[async_trait::async_trait]
impl Table for WrittenPartitions {
    fn index_lag(&self) -> std::time::Duration {
        self.inner.index_lag()
    }

    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.inner.get(key).await
    }

    async fn get_raw(&self, key: &Key) -> Result<Option<RawItem>, StoreError> {
        self.inner.get_raw(key).await
    }

    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<RawItem>>, StoreError> {
        self.inner.get_many(keys).await
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError> {
        self.note([&item.key]);
        self.inner.put(item, condition).await
    }

    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError> {
        self.note([key]);
        self.inner.delete(key, condition).await
    }

    async fn transact(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        self.note(ops.iter().map(WriteOp::key));
        self.inner.transact(ops).await
    }

    async fn put_all(&self, items: Vec<Item>) -> Result<(), StoreError> {
        self.note(items.iter().map(|i| &i.key));
        self.inner.put_all(items).await
    }

    async fn add(&self, add: Add) -> Result<i64, StoreError> {
        self.note([&add.key]);
        self.inner.add(add).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.inner.query(query).await
    }

    async fn query_raw(&self, query: Query) -> Result<RawPage, StoreError> {
        self.inner.query_raw(query).await
    }
}

/// A test app of a new team whose table notes the partitions written. `base` keeps the
/// storage alive.
async fn recording(base: &TestApp) -> (TestApp, Arc<WrittenPartitions>) {
    let table = Arc::new(WrittenPartitions::new(base.deps.table.clone()));
    let deps = Deps { table: table.clone(), ..base.deps.clone() };
    (TestApp::on(deps, base.clock.clone()).await, table)
}

/// How many changes a burst makes at once.
const BURST: usize = 200;
/// The fewest partitions one team's burst must spread over: 10,000 writes a second at about
/// 1,000 a second per partition need ten; the table has sixteen shards of each.
const SPREAD: usize = 16;

/// A burst of creates and PATCHes of one team: every one goes through, the counter writes
/// spread over every shard, and `total` is exact.
async fn a_burst_of_changes_spreads_over_the_counter_shards(base: TestApp) {
    let (t, written) = recording(&base).await;
    let ids = create_many(&t, "before", BURST / 2).await;
    written.take("");
    let creates =
        (0..BURST / 2).map(|i| t.post("/v2/user", json!({ "client_user_id": format!("burst-{i}") })));
    let paths: Vec<String> = ids.iter().map(|id| format!("/v2/user/{id}")).collect();
    let patches = paths.iter().map(|p| t.patch(p, json!({"fallback_time_zone": "Asia/Tokyo"})));
    let (created, patched) =
        tokio::join!(futures::future::join_all(creates), futures::future::join_all(patches));
    for a in created.iter().chain(&patched) {
        assert!(a.status.is_success(), "{} {}", a.status, a.body);
    }
    let counters = written.take(&format!("TEAM#{}#COUNT#", t.team));
    assert!(counters.len() >= SPREAD, "{} counter partitions: {counters:?}", counters.len());
    let page = t.get("/v2/user?limit=500").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert_eq!(page.body["total"], BURST as u64);
    assert_eq!(page.body["users"].as_array().unwrap().len(), BURST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_changes_spreads_over_the_counter_shards_embedded() {
    a_burst_of_changes_spreads_over_the_counter_shards(TestApp::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_changes_spreads_over_the_counter_shards_on_dynamodb() {
    let (t, _, _) = crate::users_on_dynamodb::on_moto().await;
    a_burst_of_changes_spreads_over_the_counter_shards(t).await;
}

/// The team's audit log read page by page (`limit` entries) to the end.
async fn audit_pages(t: &TestApp, filter: &str, limit: usize, most: usize) -> Vec<Value> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..=most / limit + 1 {
        let path = match &cursor {
            Some(c) => format!("/v2/team/audit_log?{filter}limit={limit}&next_cursor={c}"),
            None => format!("/v2/team/audit_log?{filter}limit={limit}"),
        };
        let a = t.get(&path).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        all.extend(a.body["data"].as_array().unwrap().iter().cloned());
        cursor = a.body["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            return all;
        }
    }
    panic!("the cursor never ended after {} entries", all.len())
}

/// A burst of audited reads of one team, all in the same microsecond: every entry is written,
/// over every audit shard, and the log lists each once, newest first (then by id), across pages
/// of any size, with the entries of before the shards (the team's one partition) after them.
async fn a_burst_of_audited_reads_spreads_over_the_audit_shards(base: TestApp) {
    let (t, written) = recording(&base).await;
    let user = t.create_user("audited").await;
    let earlier = t.clock.now() - chrono::Duration::seconds(1);
    let old = AuditEntry {
        id: uuid::Uuid::new_v4().simple().to_string(),
        at: earlier,
        key_id: "before-shards".into(),
        method: "GET".into(),
        route: "/v2/user/{user_id}/info/latest".into(),
        user_id: None,
        resource: None,
        status: 200,
    };
    let key = Key::new(audit_keys::team_partition(t.team), audit_keys::entry_sort(earlier, &old.id));
    t.deps.table.put(Item::new(key, to_body(&old)), Condition::NotExists).await.unwrap();
    written.take("");

    let path = format!("/v2/summary/sleep/{user}?start_date=2026-02-01");
    let answers = futures::future::join_all((0..BURST).map(|_| t.get(&path))).await;
    for a in &answers {
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    }
    let shards = written.take(&format!("AUDIT#{}#", t.team));
    assert!(shards.len() >= SPREAD, "{} audit partitions: {shards:?}", shards.len());

    let all = audit_pages(&t, "", 500, BURST + 1).await;
    assert_eq!(all.len(), BURST + 1);
    let order: Vec<(DateTime<Utc>, String)> = all
        .iter()
        .map(|e| (e["at"].as_str().unwrap().parse().unwrap(), e["id"].as_str().unwrap().to_owned()))
        .collect();
    assert!(order.windows(2).all(|w| w[0] > w[1]), "newest first, then by id, each once");
    assert_eq!(all[BURST]["id"], old.id.as_str(), "the entry of before the shards is listed, last");
    for limit in [7, 64] {
        assert_eq!(audit_pages(&t, "", limit, BURST + 1).await, all, "pages of {limit}");
    }
    let of_user = audit_pages(&t, &format!("user_id={user}&"), 9, BURST).await;
    assert_eq!(of_user[..], all[..BURST], "the user's index lists the same entries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_audited_reads_spreads_over_the_audit_shards_embedded() {
    a_burst_of_audited_reads_spreads_over_the_audit_shards(TestApp::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_audited_reads_spreads_over_the_audit_shards_on_dynamodb() {
    let (t, _, _) = crate::users_on_dynamodb::on_moto().await;
    a_burst_of_audited_reads_spreads_over_the_audit_shards(t).await;
}
