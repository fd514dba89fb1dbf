//! A stack in memory with a manual clock, driven through its router with `oneshot`.

use std::sync::Arc;

use axum::body::Body;
use chrono::{TimeZone, Utc};
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;
use wearlab_domain::common::ids::TeamId;
use wearlab_domain::ports::{
    Add, Condition, Item, Key, ManualClock, Page, Query, Queue, RawItem, RawPage, StoreError, Table, WriteOp,
};
use wearlab_domain::{Deps, teams};
use wearlab_local::{LocalStack, Ports};
use wearlab_web::{App, AppState};

pub const API_KEY_HEADER: &str = "x-service-api-key";

/// The state the tests' apps run on: a deployment's (the API-key cache on, keys trusted 60 s on
/// the test clock), with the default settings and the fixed test key of the phone's tokens.
pub fn state(deps: &Deps) -> AppState {
    AppState::new(deps.clone(), wearlab_domain::common::settings::Settings::default())
        .with_phone_key(Arc::new(wearlab_domain::common::crypto::SigningKey::fixed_for_tests()))
}

/// A fixed start so that dates in assertions are stable.
pub fn start_time() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap()
}

pub struct TestApp {
    pub deps: Deps,
    /// The work queues and the lab network the app and the workers run on (the queues on the
    /// app's table unless the test chose others: [`TestApp::with_queue`]).
    pub ports: Ports,
    pub clock: Arc<ManualClock>,
    pub app: App,
    pub key: String,
    pub team: TeamId,
    /// Present for the embedded stack: runs due jobs as the scheduler would.
    pub stack: Option<LocalStack>,
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Value,
}

impl TestApp {
    /// The embedded stack in memory.
    pub async fn embedded() -> Self {
        let clock = Arc::new(ManualClock::new(start_time()));
        let stack = LocalStack::in_memory(clock.clone());
        let t = Self::on(stack.deps.clone(), clock).await;
        Self { stack: Some(stack), ..t }
    }

    /// The embedded stack in memory behind a table whose faults the test turns on.
    pub async fn embedded_with_faults() -> (Self, Arc<FaultyTable>) {
        let clock = Arc::new(ManualClock::new(start_time()));
        let stack = LocalStack::in_memory(clock.clone());
        let table = Arc::new(FaultyTable::new(stack.deps.table.clone()));
        let deps = Deps { table: table.clone(), ..stack.deps.clone() };
        let t = Self::on(deps, clock).await;
        (Self { stack: Some(stack), ..t }, table)
    }

    /// The same app (and `deps`) with other work queues.
    pub fn with_queue(self, queue: Arc<dyn Queue>) -> Self {
        let ports = Ports { queue, ..self.ports };
        let app = wearlab_local::app(state(&self.deps), &ports);
        Self { app, ports, ..self }
    }

    /// The same team, key and ports on other `deps` (a wrapped table, another bus), the app
    /// rebuilt on them.
    pub fn with_deps(self, deps: Deps) -> Self {
        let app = wearlab_local::app(state(&deps), &self.ports);
        Self { app, deps, ..self }
    }

    /// The app on `state` (other settings) and this test's ports.
    pub fn app_on(&self, state: AppState) -> App {
        wearlab_local::app(state, &self.ports)
    }

    /// The pull queue's (or any queue's) port, for calling a worker as its Lambda does.
    pub fn queue(&self) -> &dyn Queue {
        self.ports.queue.as_ref()
    }

    /// Any adapters, with a fresh team and key.
    pub async fn on(deps: Deps, clock: Arc<ManualClock>) -> Self {
        let team = teams::create_team(&deps, "Test team").await.unwrap();
        let key = teams::issue_key(&deps, team.team_id, "test").await.unwrap().secret;
        let ports = Ports::on_table(deps.table.clone(), deps.clock.clone());
        let app = wearlab_local::app(state(&deps), &ports);
        Self { deps, ports, clock, app, key, team: team.team_id, stack: None }
    }

    /// The events the embedded stack published, oldest first (every team's).
    pub fn published(&self) -> Vec<wearlab_domain::ports::EventEnvelope> {
        self.stack.as_ref().expect("an embedded stack").bus.published()
    }

    /// A key of another team on the same storage.
    pub async fn other_team_key(&self) -> String {
        let team = teams::create_team(&self.deps, "Other team").await.unwrap();
        teams::issue_key(&self.deps, team.team_id, "test").await.unwrap().secret
    }

    pub async fn send(&self, method: Method, path: &str, key: Option<&str>, body: Option<&str>) -> Answer {
        self.send_as(method, path, key, &[], body).await
    }

    /// With this team's key and extra headers.
    pub async fn send_with(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Answer {
        self.send_as(method, path, Some(&self.key.clone()), headers, body).await
    }

    pub async fn send_as(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Answer {
        self.send_bytes(method, path, key, headers, body.map(|b| b.as_bytes().to_vec())).await
    }

    /// As [`TestApp::send_as`], with a body of any bytes (a gzipped one).
    pub async fn send_bytes(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Answer {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(k) = key {
            req = req.header(API_KEY_HEADER, k);
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let req = req.body(body.map(Body::from).unwrap_or_else(Body::empty)).unwrap();
        let res = self.app.clone().oneshot(req).await.unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Answer { status, headers, body }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, Some(&self.key), None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Answer {
        self.send(Method::POST, path, Some(&self.key), Some(&body.to_string())).await
    }

    pub async fn post_empty(&self, path: &str) -> Answer {
        self.send(Method::POST, path, Some(&self.key), None).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Answer {
        self.send(Method::PATCH, path, Some(&self.key), Some(&body.to_string())).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Answer {
        self.send(Method::PUT, path, Some(&self.key), Some(&body.to_string())).await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        self.send(Method::DELETE, path, Some(&self.key), None).await
    }

    /// Creates a user and returns its id.
    pub async fn create_user(&self, client_user_id: &str) -> String {
        let a = self.post("/v2/user", serde_json::json!({ "client_user_id": client_user_id })).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        a.body["user_id"].as_str().unwrap().to_owned()
    }

    /// Runs due one-time jobs (embedded stack only).
    pub async fn run_due_jobs(&self) -> usize {
        self.stack.as_ref().expect("embedded stack").run_due_jobs().await.unwrap()
    }
}

/// The 422 body's locations, e.g. `["body", "client_user_id"]`.
pub fn error_locs(body: &Value) -> Vec<Vec<String>> {
    body["detail"]
        .as_array()
        .unwrap_or_else(|| panic!("not a validation body: {body}"))
        .iter()
        .map(|d| {
            d["loc"].as_array().unwrap().iter().map(|p| p.to_string().trim_matches('"').to_owned()).collect()
        })
        .collect()
}

/// The moto endpoint `make test` started, or a clear failure.
pub fn moto_endpoint() -> String {
    std::env::var("WEARLAB_TEST_AWS_ENDPOINT").expect(
        "WEARLAB_TEST_AWS_ENDPOINT is not set: run `make test`, which starts moto_server, \
         or start `moto_server -H 127.0.0.1 -p PORT` and set it to http://127.0.0.1:PORT",
    )
}

/// A fresh DynamoDB table on moto (one per test, so tests never share state).
pub async fn moto_table() -> wearlab_aws::DynamoDbTable {
    let endpoint = moto_endpoint();
    let (ddb, _) = wearlab_aws::clients_for_endpoint(&endpoint).await;
    let name = format!("wearlab-test-{}", uuid::Uuid::new_v4().simple());
    wearlab_aws::ensure_table(&ddb, &name).await.expect("table created on moto");
    wearlab_aws::DynamoDbTable::new(ddb, name)
}

/// An event bus that is down: refuses every publish.
pub struct RefusingBus;

#[async_trait::async_trait]
impl wearlab_domain::ports::EventBus for RefusingBus {
    async fn publish(
        &self,
        events: Vec<wearlab_domain::ports::EventEnvelope>,
    ) -> Result<(), wearlab_domain::ports::BusError> {
        Err(wearlab_domain::ports::BusError::NotPublished {
            failed: events.len(),
            reason: "bus unavailable".into(),
        })
    }
}

/// A work queue that is down: refuses every message.
pub struct RefusingQueue;

#[async_trait::async_trait]
impl wearlab_domain::ports::Queue for RefusingQueue {
    async fn send(
        &self,
        _queue: wearlab_domain::ports::QueueName,
        messages: Vec<wearlab_domain::ports::Outgoing>,
    ) -> Result<(), wearlab_domain::ports::QueueError> {
        Err(wearlab_domain::ports::QueueError::NotSent {
            failed: messages.len(),
            reason: "queue unavailable".into(),
        })
    }
}

/// What a [`FaultyTable`] does wrong; all off by default.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Every version-checked write finds the item changed by another writer.
    pub lose_races: bool,
    /// Every call fails as storage that cannot be reached.
    pub unavailable: bool,
    /// Queries of this partition (either index) fail as unavailable storage.
    pub failing_query_pk: Option<String>,
    /// Single puts of items whose partition starts with this fail as unavailable storage.
    pub failing_put_pk_prefix: Option<String>,
}

/// A table adapter around a real one, with faults a test turns on and off.
/// It also counts the reads that pass through it (see [`Reads`]).
pub struct FaultyTable {
    inner: Arc<dyn Table>,
    faults: std::sync::Mutex<Faults>,
    reads: std::sync::Mutex<Reads>,
}

/// Reads a [`FaultyTable`] passed on since the last [`FaultyTable::take_reads`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// Item reads by key: one GetItem, or one batch read of several keys (one round trip on
    /// DynamoDB: BatchGetItem).
    pub gets: usize,
    /// Query calls (one page each).
    pub queries: usize,
    /// Items those queries answered.
    pub items: usize,
}

impl FaultyTable {
    pub fn new(inner: Arc<dyn Table>) -> Self {
        Self { inner, faults: Default::default(), reads: Default::default() }
    }

    /// The reads counted so far, and a fresh count from here.
    pub fn take_reads(&self) -> Reads {
        std::mem::take(&mut *self.reads.lock().unwrap())
    }

    pub fn set(&self, faults: Faults) {
        *self.faults.lock().unwrap() = faults;
    }

    fn faults(&self) -> Result<Faults, StoreError> {
        let f = self.faults.lock().unwrap().clone();
        if f.unavailable {
            return Err(StoreError::Unavailable("storage down (test fault)".into()));
        }
        Ok(f)
    }

    fn query_fault(&self, query: &Query) -> Result<(), StoreError> {
        if self.faults()?.failing_query_pk.as_deref() == Some(query.pk.as_str()) {
            return Err(StoreError::Unavailable(format!("queries of {} fail (test fault)", query.pk)));
        }
        Ok(())
    }

    fn count_query(&self, items: usize) {
        let mut reads = self.reads.lock().unwrap();
        reads.queries += 1;
        reads.items += items;
    }

    /// The race lost by a write under `condition`, if races are lost.
    fn lost(&self, condition: Condition, op: Option<usize>) -> Result<(), StoreError> {
        if self.faults()?.lose_races && matches!(condition, Condition::VersionIs(_)) {
            return Err(StoreError::ConditionFailed { op });
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Table for FaultyTable {
    fn index_lag(&self) -> std::time::Duration {
        self.inner.index_lag()
    }

    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.faults()?;
        self.reads.lock().unwrap().gets += 1;
        self.inner.get(key).await
    }

    async fn get_raw(&self, key: &Key) -> Result<Option<RawItem>, StoreError> {
        self.faults()?;
        self.reads.lock().unwrap().gets += 1;
        self.inner.get_raw(key).await
    }

    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<RawItem>>, StoreError> {
        self.faults()?;
        self.reads.lock().unwrap().gets += 1;
        self.inner.get_many(keys).await
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError> {
        self.lost(condition, None)?;
        if self.faults()?.failing_put_pk_prefix.is_some_and(|p| item.key.pk.starts_with(&p)) {
            return Err(StoreError::Unavailable(format!("puts to {} fail (test fault)", item.key.pk)));
        }
        self.inner.put(item, condition).await
    }

    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError> {
        self.lost(condition, None)?;
        self.inner.delete(key, condition).await
    }

    async fn transact(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        for (i, op) in ops.iter().enumerate() {
            self.lost(op.condition(), Some(i))?;
        }
        self.inner.transact(ops).await
    }

    async fn add(&self, add: Add) -> Result<i64, StoreError> {
        self.lost(add.condition, None)?;
        self.inner.add(add).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.query_fault(&query)?;
        let page = self.inner.query(query).await?;
        self.count_query(page.items.len());
        Ok(page)
    }

    async fn query_raw(&self, query: Query) -> Result<RawPage, StoreError> {
        self.query_fault(&query)?;
        let page = self.inner.query_raw(query).await?;
        self.count_query(page.items.len());
        Ok(page)
    }
}

/// Bodies a [`json_receiver`] got, oldest first.
pub type Received = Arc<std::sync::Mutex<Vec<Value>>>;

/// A webhook receiver on a free loopback port: answers `answer(n)` to its n-th request (from 1)
/// and keeps every body. Returns its URL and the bodies.
pub async fn json_receiver(answer: fn(usize) -> StatusCode) -> (String, Received) {
    let seen = Received::default();
    let kept = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                let mut seen = kept.lock().unwrap();
                seen.push(serde_json::from_slice(&body).unwrap());
                answer(seen.len())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), seen)
}

/// Runs each named case, an `async fn(TestApp)`, on the embedded store and on DynamoDB (moto):
/// as tests `embedded::<case>` and `dynamodb_moto::<case>` of the calling module. With
/// `via = f;` first, each case takes `f(app)` instead (an app with more of the test's own).
macro_rules! on_both_adapters {
    (via = $via:path; $($case:ident),* $(,)?) => {
        mod embedded {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case($via(crate::helpers::TestApp::embedded().await)).await })*
        }
        mod dynamodb_moto {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case($via(crate::users_on_dynamodb::on_moto().await.0)).await })*
        }
    };
    ($($case:ident),* $(,)?) => {
        crate::helpers::on_both_adapters!(via = std::convert::identity; $($case),*);
    };
}
pub(crate) use on_both_adapters;
