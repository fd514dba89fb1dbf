//! The mobile SDKs' bookkeeping around their uploads, on both adapters: connecting an SDK
//! provider (idempotent: no write and no second event for a connected user), the connection in
//! the user's list and its removal, the sync state, the start of a historical stage, and the
//! sync progress reports the team reads back. Request bodies are in the shapes the SDKs build
//! (the source beside each); iOS writes user ids in upper case.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::Deps;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::keys;
use wearlab_domain::pipeline::PullMessage;
use wearlab_domain::ports::{
    Add, Condition, Item, Key, ManualClock, Outcome, Page, Query, RawItem, RawPage, StoreError, Table,
    WriteOp, query_all,
};
use wearlab_embedded::MemoryBus;

use crate::helpers::{TestApp, error_locs, moto_table, start_time};

#[derive(Clone, Copy)]
enum Storage {
    Embedded,
    Moto,
}

/// A table that counts the writes reaching it (puts, deletes, transactions; not the atomic adds
/// of the fair-use counters) and the reads.
struct Counting {
    inner: Arc<dyn Table>,
    writes: AtomicUsize,
    reads: AtomicUsize,
}

impl Counting {
    /// The writes and reads (item reads and queries) since the last call.
    fn take(&self) -> (usize, usize) {
        (self.writes.swap(0, Ordering::SeqCst), self.reads.swap(0, Ordering::SeqCst))
    }

    fn read(&self) {
        self.reads.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl Table for Counting {
    fn index_lag(&self) -> std::time::Duration {
        self.inner.index_lag()
    }
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.read();
        self.inner.get(key).await
    }
    async fn get_raw(&self, key: &Key) -> Result<Option<RawItem>, StoreError> {
        self.read();
        self.inner.get_raw(key).await
    }
    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<RawItem>>, StoreError> {
        self.read();
        self.inner.get_many(keys).await
    }
    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.put(item, condition).await
    }
    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.delete(key, condition).await
    }
    async fn transact(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.transact(ops).await
    }
    async fn add(&self, add: Add) -> Result<i64, StoreError> {
        self.inner.add(add).await
    }
    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.read();
        self.inner.query(query).await
    }
    async fn query_raw(&self, query: Query) -> Result<RawPage, StoreError> {
        self.read();
        self.inner.query_raw(query).await
    }
}

struct Env {
    t: TestApp,
    table: Arc<Counting>,
    bus: Arc<MemoryBus>,
}

async fn env(storage: Storage) -> Env {
    let clock = Arc::new(ManualClock::new(start_time()));
    let inner: Arc<dyn Table> = match storage {
        Storage::Embedded => Arc::new(wearlab_embedded::RedbTable::in_memory()),
        Storage::Moto => Arc::new(moto_table().await),
    };
    let table = Arc::new(Counting { inner, writes: AtomicUsize::new(0), reads: AtomicUsize::new(0) });
    let bus = Arc::new(MemoryBus::new());
    let deps = Deps {
        table: table.clone(),
        scheduler: Arc::new(wearlab_embedded::TableScheduler::new(table.clone())),
        clock: clock.clone(),
        bus: bus.clone(),
        providers: Arc::new(wearlab_sim::SimProviders::new(clock.clone())),
        data_key: Arc::new(wearlab_domain::common::crypto::DataKey::ephemeral()),
    };
    Env { t: TestApp::on(deps, clock).await, table, bus }
}

impl Env {
    fn connection_events(&self) -> Vec<Value> {
        self.bus
            .published()
            .into_iter()
            .filter(|e| e.event_type == "provider.connection.created")
            .map(|e| serde_json::to_value(e).unwrap())
            .collect()
    }

    /// The sort keys of the user's partition.
    async fn user_items(&self, user: &str) -> Vec<String> {
        let q = Query::partition(keys::user_partition(UserId::parse(user).unwrap()));
        query_all(self.t.deps.table.as_ref(), q, 1_000).await.unwrap().into_iter().map(|i| i.key.sk).collect()
    }

    async fn connect(&self, provider: &str, body: Value) -> crate::helpers::Answer {
        self.t.post(&format!("/v2/link/provider/manual/{provider}"), body).await
    }

    async fn sync_state(&self, user: &str, provider: &str) -> crate::helpers::Answer {
        // iOS `Sources/VitalCore/Core/Client/Data Models/Base Models/UserCRUD.swift`: the window
        // the app asks for and its permissions.
        let body = json!({
            "tzinfo": "Europe/London",
            "request_start_date": "2025-12-01T00:00:00Z",
            "request_end_date": "2026-03-01T09:00:00Z",
            "granted_permissions": ["HKQuantityTypeIdentifierHeartRate"],
        });
        self.t.post(&format!("/v2/user/{user}/sdk_sync_state/{provider}"), body).await
    }
}

/// iOS `Sources/VitalCore/Core/Client/Endpoints/VitalClient+Link.swift`: `{user_id,
/// granted_permissions}`, the user id in upper case, the HealthKit identifiers sorted.
fn ios_connect(user: &str) -> Value {
    json!({
        "user_id": user.to_uppercase(),
        "granted_permissions": ["HKQuantityTypeIdentifierHeartRate", "HKQuantityTypeIdentifierStepCount"],
    })
}

/// Android `VitalClient/.../services/VitalPrivateService.kt`: `{user_id, provider_id,
/// granted_permissions}` with Health Connect permissions.
fn android_connect(user: &str, provider: &str) -> Value {
    json!({
        "user_id": user,
        "provider_id": provider,
        "granted_permissions": ["android.permission.health.READ_HEART_RATE", "android.permission.health.READ_STEPS"],
    })
}

/// A sync progress report as iOS builds it (`Sources/VitalHealthKit/HealthKit/Storage/
/// SyncProgressReporter.swift`, `SyncProgressStore.swift`): per backfill type its syncs (tags,
/// statuses with their codes) and system events, and the device.
fn ios_progress(data_count: i64) -> Value {
    json!({
        "sync_progress": {"backfill_types": {
            "heartrate": {
                "syncs": [{
                    "start": "2026-03-01T08:50:00Z",
                    "end": "2026-03-01T08:51:00Z",
                    "tags": [0, 2, 4],
                    "statuses": [
                        {"timestamp": "2026-03-01T08:50:00Z", "type": 1, "count": 1},
                        {"timestamp": "2026-03-01T08:50:30Z", "type": 3, "count": 4},
                        {"timestamp": "2026-03-01T08:51:00Z", "type": 5, "count": 1},
                    ],
                    "data_count": data_count,
                }],
                "system_events": [{"timestamp": "2026-03-01T08:49:59Z", "type": 1, "count": 1}],
                "data_count": data_count,
                "first_asked": "2026-03-01T08:49:00Z",
            },
            "sleep": {"syncs": [], "system_events": [], "data_count": 0},
        }},
        "device_info": {
            "os_version": "18.2", "model": "iPhone16,1", "app_bundle": "com.example.app",
            "app_version": "2.4.0", "app_build": "240",
        },
    })
}

/// Every value of `v` that is null, by path.
fn nulls(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Null => out.push(at.to_owned()),
        Value::Object(m) => m.iter().for_each(|(k, v)| nulls(v, &format!("{at}.{k}"), out)),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, v)| nulls(v, &format!("{at}[{i}]"), out)),
        _ => {}
    }
}

async fn connecting_is_idempotent_and_announced_once(storage: Storage) {
    let e = env(storage).await;
    let user = e.t.create_user("phone-1").await;
    let first = e.connect("apple_health_kit", ios_connect(&user)).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body, json!({"success": true}));
    let events = e.connection_events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["user_id"], user);
    assert_eq!(events[0]["data"]["provider"]["slug"], "apple_health_kit");
    assert_eq!(events[0]["data"]["external_user_id"], Value::Null, "no provider account: null");
    let key = keys::linking::connection(UserId::parse(&user).unwrap(), "apple_health_kit");
    let stored = e.t.deps.table.get(&key).await.unwrap().unwrap();

    // The SDKs call it before every sync: nothing is written or announced again.
    e.table.take();
    for body in [ios_connect(&user), json!({"user_id": user})] {
        let again = e.connect("apple_health_kit", body).await;
        assert_eq!((again.status, &again.body), (StatusCode::OK, &json!({"success": true})));
    }
    assert_eq!(e.table.take(), (0, 2), "a connected user costs one read per call and no write");
    assert_eq!(e.connection_events().len(), 1, "announced once");
    let after = e.t.deps.table.get(&key).await.unwrap().unwrap();
    assert_eq!((after.version, &after.body), (stored.version, &stored.body), "stored state unchanged");

    // Listed with what the iOS SDK decodes (`Data Models/Patches/UserConnection.swift`).
    let list = e.t.get(&format!("/v2/user/providers/{}", user.to_uppercase())).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    let c = &list.body["providers"][0];
    for field in ["name", "slug", "logo"] {
        assert!(c[field].is_string(), "{field}: {c}");
    }
    assert_eq!(c["slug"], "apple_health_kit");
    assert_eq!(c["status"], "connected");
    assert_eq!(c["created_on"], "2026-03-01T09:00:00+00:00");
    assert!(c["resource_availability"].as_object().is_some_and(|r| !r.is_empty()), "{c}");
    assert_eq!(c["external_user_id"], Value::Null);
    assert_eq!(c["demo"], false, "the phone's data is real");
}

/// Two first connects at once (the app syncing in the foreground while its background task
/// does): the one that commits second finds the connection on its retry and keeps it, so the
/// user has one connection, announced once.
async fn a_connect_that_lost_the_race_keeps_the_first(storage: Storage) {
    use wearlab_domain::common::crypto::Secret;
    use wearlab_domain::common::provider_catalog::catalog;
    use wearlab_domain::linking::connections::{self, Committed, NewConnection};
    use wearlab_domain::ports::providers::{ProviderAccount, ProviderCredentials};

    let e = env(storage).await;
    let user = e.t.create_user("phone-race").await;
    let a = e.connect("apple_health_kit", ios_connect(&user)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let id = UserId::parse(&user).unwrap();
    let key = keys::linking::connection(id, "apple_health_kit");
    let stored = e.t.deps.table.get(&key).await.unwrap().unwrap();
    // What the losing connect commits after its read found no connection.
    let late = NewConnection {
        provider: catalog().get("apple_health_kit").unwrap(),
        account: ProviderAccount {
            external_user_id: user.clone(),
            credentials: ProviderCredentials {
                access_token: Secret::new(""),
                refresh_token: None,
                expires_at: None,
                scopes: vec!["HKQuantityTypeIdentifierStepCount".into()],
            },
        },
        demo: false,
        token: None,
        extra_ops: vec![],
        team_app_client_id: None,
        import_op: None,
    };
    let done = connections::commit(&e.t.deps, e.t.team, id, late).await.unwrap();
    assert!(matches!(done, Committed::Connected { .. }), "{done:?}");
    let after = e.t.deps.table.get(&key).await.unwrap().unwrap();
    assert_eq!((after.version, &after.body), (stored.version, &stored.body), "the first connection kept");
    assert_eq!(e.connection_events().len(), 1, "announced once");

    // And through the API, both at once.
    let other = e.t.create_user("phone-race-2").await;
    let (one, two) = tokio::join!(
        e.connect("health_connect", android_connect(&other, "health_connect")),
        e.connect("health_connect", android_connect(&other, "health_connect")),
    );
    assert_eq!((one.status, two.status), (StatusCode::OK, StatusCode::OK), "{} {}", one.body, two.body);
    let created: Vec<_> = e.connection_events().into_iter().filter(|c| c["user_id"] == other).collect();
    assert_eq!(created.len(), 1, "one connection, announced once: {created:?}");
}

async fn connect_refusals(storage: Storage) {
    let e = env(storage).await;
    let user = e.t.create_user("phone-2").await;
    let oura = e.connect("oura", json!({"user_id": user})).await;
    assert_eq!(oura.status, StatusCode::BAD_REQUEST, "{}", oura.body);
    let detail = oura.body["detail"].as_str().unwrap();
    for slug in ["apple_health_kit", "health_connect", "samsung_health", "freestyle_libre_ble"] {
        assert!(detail.contains(slug), "the allowed providers are named: {detail}");
    }
    let unknown = e.connect("health_connect", json!({"user_id": uuid::Uuid::new_v4()})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.body);
    let bad = e.connect("health_connect", json!({"user_id": "me", "granted_permissions": "all"})).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.body);
    assert!(error_locs(&bad.body).contains(&vec!["body".to_owned(), "granted_permissions".to_owned()]));
    let bad_id = e.connect("health_connect", json!({"user_id": "me"})).await;
    assert_eq!(bad_id.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad_id.body);
    assert_eq!(error_locs(&bad_id.body), vec![vec!["body".to_owned(), "user_id".to_owned()]]);
    // Another team's user is no user of this team, connected or not.
    assert_eq!(
        e.connect("health_connect", android_connect(&user, "health_connect")).await.status,
        StatusCode::OK
    );
    let other = e.t.other_team_key().await;
    let body = android_connect(&user, "health_connect").to_string();
    let foreign =
        e.t.send(Method::POST, "/v2/link/provider/manual/health_connect", Some(&other), Some(&body)).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND, "{}", foreign.body);
    assert!(e.connection_events().len() == 1);
}

async fn no_pull_from_a_phone(storage: Storage) {
    let e = env(storage).await;
    let user = e.t.create_user("phone-3").await;
    assert_eq!(e.connect("apple_health_kit", ios_connect(&user)).await.status, StatusCode::OK);
    let created =
        e.bus.published().into_iter().find(|ev| ev.event_type == "provider.connection.created").unwrap();
    let outcome = wearlab_domain::pipeline::handle(&e.t.deps, e.t.queue(), PullMessage::Event(created)).await;
    assert_eq!(outcome, Outcome::Ack);
    let items = e.user_items(&user).await;
    assert!(
        !items.iter().any(|sk| sk.starts_with("PULL#") || sk.starts_with("DATA#")),
        "nothing pulled: {items:?}"
    );
    let on_demand = e.t.post_empty(&format!("/v2/user/historical_pull/{user}/apple_health_kit")).await;
    assert_eq!(on_demand.status, StatusCode::BAD_REQUEST, "{}", on_demand.body);
    assert!(on_demand.body["detail"].as_str().unwrap().contains("phone"), "{}", on_demand.body);
}

/// A refresh of the user polls each connection now; the phone's is not polled (the simulator
/// would answer for it with synthetic data).
async fn a_refresh_fetches_nothing_for_a_phone(storage: Storage) {
    let e = env(storage).await;
    let user = e.t.create_user("phone-8").await;
    assert_eq!(e.connect("apple_health_kit", ios_connect(&user)).await.status, StatusCode::OK);
    let refreshed = e.t.post_empty(&format!("/v2/user/refresh/{user}")).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.body);
    for list in ["failed_sources", "refreshed_sources", "in_progress_sources"] {
        assert_eq!(refreshed.body[list], json!([]), "{}", refreshed.body);
    }
    let list = e.t.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(list.body["providers"][0]["status"], "connected", "not marked failing");
    let items = e.user_items(&user).await;
    assert!(
        !items.iter().any(|sk| sk.starts_with("DATA#") || sk.starts_with("SYNC")),
        "nothing fetched: {items:?}"
    );
    let daily = e.bus.published().into_iter().filter(|ev| ev.event_type.starts_with("daily.")).count();
    assert_eq!(daily, 0);
}

async fn disconnecting_ends_the_connection_without_a_revoke(storage: Storage) {
    let e = env(storage).await;
    let user = e.t.create_user("phone-4").await;
    assert_eq!(
        e.connect("health_connect", android_connect(&user, "health_connect")).await.status,
        StatusCode::OK
    );
    assert_eq!(e.sync_state(&user, "health_connect").await.body["status"], "active");
    let gone = e.t.delete(&format!("/v2/user/{}/health_connect", user.to_uppercase())).await;
    assert_eq!(gone.status, StatusCode::OK, "{}", gone.body);
    let items = e.user_items(&user).await;
    assert!(!items.iter().any(|sk| sk.starts_with("REVOKE#")), "no provider to revoke at: {items:?}");
    assert_eq!(e.sync_state(&user, "health_connect").await.body["status"], "error");
    let providers = e.t.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(providers.body["providers"], json!([]));
    // Connecting again makes a new connection, announced.
    assert_eq!(
        e.connect("health_connect", android_connect(&user, "health_connect")).await.status,
        StatusCode::OK
    );
    assert_eq!(e.connection_events().len(), 2);
    assert_eq!(e.sync_state(&user, "health_connect").await.body["status"], "active");
}

async fn sync_state_answers_the_sdk(storage: Storage) {
    let e = env(storage).await;
    let user = e.t.create_user("phone-5").await;
    let upper = user.to_uppercase();
    let none = e.sync_state(&upper, "apple_health_kit").await;
    assert_eq!(none.status, StatusCode::OK, "{}", none.body);
    assert_eq!(none.body["status"], "error", "no connection");

    assert_eq!(e.connect("apple_health_kit", ios_connect(&user)).await.status, StatusCode::OK);
    let s = e.sync_state(&upper, "apple_health_kit").await;
    assert_eq!(s.status, StatusCode::OK, "{}", s.body);
    let mut found = Vec::new();
    nulls(&s.body, "$", &mut found);
    assert!(found.is_empty(), "never null: {found:?}");
    assert_eq!(s.body["status"], "active");
    assert_eq!(s.body["expires_in"], 3600);
    assert_eq!(s.body["request_start_date"], "2026-03-01T09:00:00+00:00");
    assert!(
        s.body.get("request_end_date").is_none() && s.body.get("ingestion_start").is_none(),
        "{}",
        s.body
    );
    assert_eq!(s.body["per_device_activity_ts"], false);
    assert_eq!(s.body["reporting_interval"], 3600);
    assert_eq!(
        s.body["pull_preferences"],
        json!({"historical_days_to_pull": 90, "backfill_type_overrides": {}})
    );
    let params = &s.body["health_kit_params"];
    assert_eq!(params["query_chunk_sizes_foreground"]["timeseries"], 5000);
    assert_eq!(params["query_chunk_sizes_background"]["timeseries"], 2500);
    assert_eq!(params["query_chunk_sizes_foreground"]["sleep"], 0);
    // An empty body is as good (every field optional).
    let empty = e.t.post(&format!("/v2/user/{user}/sdk_sync_state/apple_health_kit"), json!({})).await;
    assert_eq!(empty.body, s.body);

    // The team's data pull preferences: the provider's days, else the team's default.
    let prefs = json!({"default_history_days": 60, "history_days": {"apple_health_kit": 30}});
    assert_eq!(
        e.t.send(Method::PUT, "/v2/team/data_pull_preferences", Some(&e.t.key), Some(&prefs.to_string()))
            .await
            .status,
        StatusCode::OK
    );
    let s = e.sync_state(&user, "apple_health_kit").await;
    assert_eq!(s.body["pull_preferences"]["historical_days_to_pull"], 30);
    assert_eq!(
        e.connect("samsung_health", android_connect(&user, "samsung_health")).await.status,
        StatusCode::OK
    );
    let s = e.sync_state(&user, "samsung_health").await;
    assert_eq!(s.body["pull_preferences"]["historical_days_to_pull"], 60);

    // Ingestion bounds: the SDK reads up to the end of the last day, then (7 days on) pauses.
    let bounds = json!({"ingestion_start": "2026-01-15", "ingestion_end": "2026-02-26"});
    assert_eq!(e.t.patch(&format!("/v2/user/{user}"), bounds).await.status, StatusCode::NO_CONTENT);
    let s = e.sync_state(&user, "apple_health_kit").await;
    assert_eq!(s.body["status"], "active", "{}", s.body);
    assert_eq!(s.body["ingestion_start"], "2026-01-15T00:00:00+00:00");
    assert_eq!(s.body["request_end_date"], "2026-02-27T00:00:00+00:00");
    assert_eq!(
        s.body["request_start_date"], "2026-02-27T00:00:00+00:00",
        "Android's anchor: no later than the end"
    );
    e.t.clock.advance(Duration::days(4));
    assert_eq!(
        e.sync_state(&user, "apple_health_kit").await.body["status"],
        "active",
        "7 days after the end"
    );
    e.t.clock.advance(Duration::days(1));
    let s = e.sync_state(&user, "apple_health_kit").await;
    assert_eq!(s.body["status"], "paused", "{}", s.body);

    // Refusals.
    let oura = e.sync_state(&user, "oura").await;
    assert_eq!(oura.status, StatusCode::BAD_REQUEST, "{}", oura.body);
    assert!(oura.body["detail"].as_str().unwrap().contains("health_connect"));
    let unknown = e.sync_state(&uuid::Uuid::new_v4().to_string(), "apple_health_kit").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let bad_id = e.sync_state("me", "apple_health_kit").await;
    assert_eq!(bad_id.status, StatusCode::UNPROCESSABLE_ENTITY);
    let bad =
        e.t.post(&format!("/v2/user/{user}/sdk_sync_state/apple_health_kit"), json!({"tzinfo": 3})).await;
    assert_eq!(error_locs(&bad.body), vec![vec!["body".to_owned(), "tzinfo".to_owned()]]);
}

async fn historical_stage_is_accepted(storage: Storage) {
    let e = env(storage).await;
    let user = e.t.create_user("phone-6").await;
    let path = |u: &str| format!("/v2/user/{u}/sdk_start_historical_stage/apple_health_kit");
    // iOS `VitalHealthKit/HealthKit/VitalHealthKitClient.swift`, before each historical attempt.
    let body = json!({"range_start": "2025-12-01T00:00:00Z", "range_end": "2026-03-01T09:00:00Z", "backfill_type": "heartrate"});
    let ok = e.t.post(&path(&user.to_uppercase()), body.clone()).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    assert_eq!(e.t.post(&path(&uuid::Uuid::new_v4().to_string()), body).await.status, StatusCode::NOT_FOUND);
}

async fn progress_is_kept_and_read_back(storage: Storage) {
    let e = env(storage).await;
    let user = e.t.create_user("phone-7").await;
    let path = format!("/v2/user/{}/sdk_sync_progress/apple_health_kit", user.to_uppercase());
    let none = e.t.get(&path).await;
    assert_eq!(none.status, StatusCode::NOT_FOUND, "{}", none.body);

    let first = e.t.post(&path, ios_progress(120)).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let read = e.t.get(&path).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    assert_eq!(read.body["received_at"], "2026-03-01T09:00:00Z");
    assert_eq!(read.body["user_id"], user);
    assert_eq!(read.body["provider"], "apple_health_kit");
    assert_eq!(read.body["sync_progress"], ios_progress(120)["sync_progress"]);
    assert_eq!(read.body["device_info"]["model"], "iPhone16,1");

    e.t.clock.advance(Duration::hours(1));
    assert_eq!(e.t.post(&path, ios_progress(480)).await.status, StatusCode::OK);
    let read = e.t.get(&path).await;
    assert_eq!(read.body["received_at"], "2026-03-01T10:00:00Z");
    assert_eq!(read.body["sync_progress"]["backfill_types"]["heartrate"]["data_count"], 480, "the later one");
    let kept: Vec<String> =
        e.user_items(&user).await.into_iter().filter(|sk| sk.starts_with("SDK#PROGRESS#")).collect();
    assert_eq!(kept.len(), 1, "one item per user and provider: {kept:?}");

    // A wrong shape: every offending field located.
    let mut bad = ios_progress(1);
    bad["sync_progress"]["backfill_types"]["heartrate"]["syncs"][0]["start"] = json!("yesterday");
    bad["sync_progress"]["backfill_types"]["heartrate"]["syncs"][0]["statuses"][1]["type"] = json!(99);
    let refused = e.t.post(&path, bad).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.body);
    let locs = error_locs(&refused.body);
    let at = |tail: &[&str]| {
        ["body", "sync_progress", "backfill_types", "heartrate", "syncs", "0"]
            .iter()
            .chain(tail)
            .map(|s| (*s).to_owned())
            .collect::<Vec<String>>()
    };
    assert!(locs.contains(&at(&["start"])) && locs.contains(&at(&["statuses", "1", "type"])), "{locs:?}");
    let missing = e.t.post(&path, json!({"sync_progress": {"backfill_types": {}}})).await;
    assert_eq!(error_locs(&missing.body), vec![vec!["body".to_owned(), "device_info".to_owned()]]);

    // Over the cap: 413 naming it, and the kept report stays.
    let mut large = ios_progress(1);
    large["sync_progress"]["backfill_types"]["heartrate"]["syncs"][0]["statuses"][0]["error_details"] =
        json!("x".repeat(300 * 1024));
    let too_large = e.t.post(&path, large).await;
    assert_eq!(too_large.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", too_large.body);
    assert!(too_large.body["detail"].as_str().unwrap().contains("262144"), "{}", too_large.body);
    assert_eq!(e.t.get(&path).await.body["sync_progress"]["backfill_types"]["heartrate"]["data_count"], 480);

    // Refusals: not an SDK provider, another team, an unknown user.
    let oura = e.t.post(&format!("/v2/user/{user}/sdk_sync_progress/oura"), ios_progress(1)).await;
    assert_eq!(oura.status, StatusCode::BAD_REQUEST, "{}", oura.body);
    let other = e.t.other_team_key().await;
    assert_eq!(e.t.send(Method::GET, &path, Some(&other), None).await.status, StatusCode::NOT_FOUND);
    let unknown = format!("/v2/user/{}/sdk_sync_progress/apple_health_kit", uuid::Uuid::new_v4());
    assert_eq!(e.t.post(&unknown, ios_progress(1)).await.status, StatusCode::NOT_FOUND);
}

macro_rules! on_both {
    ($($test:ident),* $(,)?) => {
        mod embedded {
            $(#[tokio::test]
            async fn $test() {
                super::$test(super::Storage::Embedded).await;
            })*
        }
        mod on_dynamodb {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                super::$test(super::Storage::Moto).await;
            })*
        }
    };
}

on_both!(
    connecting_is_idempotent_and_announced_once,
    a_connect_that_lost_the_race_keeps_the_first,
    connect_refusals,
    no_pull_from_a_phone,
    a_refresh_fetches_nothing_for_a_phone,
    disconnecting_ends_the_connection_without_a_revoke,
    sync_state_answers_the_sdk,
    historical_stage_is_accepted,
    progress_is_kept_and_read_back,
);
