//! What the Wearlab benchmarks share: a stack in memory driven through its router with
//! `oneshot` (as the integration tests do), request builders, and percentiles.
//!
//! `scripts/bench` runs everything; `docs/PERFORMANCE.md` records the figures.

pub mod cost;
pub mod lambda;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use tower::ServiceExt;
use wearlab_domain::common::fair_use::MAX_REQUESTS_PER_MINUTE;
use wearlab_domain::common::settings::Settings;
use wearlab_domain::ports::SystemClock;
use wearlab_local::LocalStack;
use wearlab_web::{App, AppState};

/// The API key header of every request.
pub const API_KEY_HEADER: &str = "x-service-api-key";

/// The fixed key of benchmark runs: `sk_bench_` and 48 hex characters.
pub const BENCH_KEY: &str = "sk_bench_0123456789abcdef0123456789abcdef0123456789abcdef";

/// A user as `GET /v2/user/{id}` answers it, for the bare server to answer the same size.
pub const SAMPLE_USER_JSON: &str = r#"{"user_id":"0b6d3f4e-2f4a-4c35-9a51-7d1c2e9a8f10","team_id":"00000000-0000-4000-8000-000000000001","client_user_id":"bench-user","created_on":"2026-03-01T09:00:00.000000Z","connected_sources":[],"fallback_time_zone":null,"ingestion_start":null,"ingestion_end":null}"#;

/// The local stack in memory, its router and a user to read.
pub struct InProc {
    pub stack: LocalStack,
    pub app: App,
    pub key: String,
    pub user_id: String,
    created: AtomicU64,
}

impl InProc {
    /// A stack in memory on the system clock with the local team, [`BENCH_KEY`] and one user.
    /// `auth_cache` chooses `AppState::new` (keys cached 60 s, as a warm Lambda) or
    /// `AppState::without_auth_cache` (one key read per request).
    pub async fn new(auth_cache: bool) -> Self {
        let stack = LocalStack::in_memory(Arc::new(SystemClock));
        let key = stack.ensure_team_key(Some(BENCH_KEY)).await.expect("bench key registered");
        let state = if auth_cache {
            AppState::new(stack.deps.clone(), Settings::default())
        } else {
            AppState::without_auth_cache(stack.deps.clone())
        };
        // Benchmarks send far more than a team's default requests per minute: the highest limit
        // keeps fair use on every request (an admission each, a table add per block of 100)
        // without refusing any.
        let state = state.with_default_rate_limit(MAX_REQUESTS_PER_MINUTE);
        let app = stack.app(state);
        let mut this = Self { stack, app, key, user_id: String::new(), created: AtomicU64::new(0) };
        let (status, body) = this.send(this.create_user_request()).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        this.user_id = user_id_of(&body);
        this
    }

    /// `GET /v2/user/{id}` of the user made by [`InProc::new`].
    pub fn get_user_request(&self) -> Request<Body> {
        self.request(Method::GET, &format!("/v2/user/{}", self.user_id), None)
    }

    /// `POST /v2/user` with a `client_user_id` no earlier request of this process used.
    pub fn create_user_request(&self) -> Request<Body> {
        let n = self.created.fetch_add(1, Ordering::Relaxed);
        let body = format!(r#"{{"client_user_id":"bench-{}-{n}"}}"#, std::process::id());
        self.request(Method::POST, "/v2/user", Some(body))
    }

    /// `GET /v2/user?limit=..`.
    pub fn list_users_request(&self, limit: u64) -> Request<Body> {
        self.request(Method::GET, &format!("/v2/user?limit={limit}"), None)
    }

    fn request(&self, method: Method, path: &str, body: Option<String>) -> Request<Body> {
        request(method, path, &self.key, body)
    }

    /// Runs one request through the router and reads the whole answer.
    pub async fn send(&self, req: Request<Body>) -> (StatusCode, Bytes) {
        send(&self.app, req).await
    }

    /// The time of one request, from handing it to the router to the last byte of the answer.
    /// Panics on anything but 200: a benchmark of errors would measure the wrong thing.
    pub async fn timed(&self, req: Request<Body>) -> Duration {
        let start = Instant::now();
        let (status, body) = self.send(req).await;
        let took = start.elapsed();
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        took
    }
}

/// The users' ports on moto (`WEARLAB_TEST_AWS_ENDPOINT`, set by `scripts/with-moto`): a fresh
/// DynamoDB table (its round trips counted) and the EventBridge scheduler; the local stack's
/// in-memory adapters for the rest, so that this keeps compiling as `Deps` grows ports the
/// users use cases do not touch. Refuses an endpoint that is not on loopback.
pub async fn moto_deps()
-> Result<(wearlab_domain::Deps, Arc<wearlab_aws::DynamoDbTable>, String), Box<dyn std::error::Error>> {
    let endpoint = std::env::var("WEARLAB_TEST_AWS_ENDPOINT")
        .map_err(|_| "WEARLAB_TEST_AWS_ENDPOINT is not set: run under scripts/with-moto")?;
    let host = endpoint.trim_start_matches("http://");
    if !(host.starts_with("127.0.0.1:") || host.starts_with("localhost:")) {
        return Err(format!("refusing a non-loopback endpoint: {endpoint}").into());
    }
    let (ddb, sched) = wearlab_aws::clients_for_endpoint(&endpoint).await;
    let name = format!("wearlab-bench-{}", uuid::Uuid::new_v4().simple());
    wearlab_aws::ensure_table(&ddb, &name).await?;
    let table = Arc::new(wearlab_aws::DynamoDbTable::new(ddb, name));
    let scheduler = wearlab_aws::EventBridgeScheduler::new(
        sched,
        wearlab_aws::SchedulerTarget {
            group: "default".into(),
            target_arn: "arn:aws:lambda:us-east-1:123456789012:function:erasure-worker".into(),
            role_arn: "arn:aws:iam::123456789012:role/wearlab-scheduler".into(),
        },
    );
    let mut deps = LocalStack::in_memory(Arc::new(SystemClock)).deps;
    deps.table = table.clone();
    deps.scheduler = Arc::new(scheduler);
    Ok((deps, table, endpoint))
}

/// Serves `app` over HTTP/1.1 on a free loopback port, as `wearlab-local` does.
pub async fn serve_http(app: App) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(async move {
        axum::serve(listener, axum::ServiceExt::<Request<Body>>::into_make_service(app))
            .await
            .expect("serves")
    });
    addr
}

/// One keep-alive HTTP/1.1 connection that sends GETs one at a time and reads each answer
/// whole (headers, then `content-length` bytes): the least a client can do per request.
pub struct HttpConnection {
    stream: tokio::net::TcpStream,
    buf: Vec<u8>,
}

impl HttpConnection {
    pub async fn open(addr: std::net::SocketAddr) -> Self {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connects");
        stream.set_nodelay(true).expect("nodelay");
        Self { stream, buf: Vec::with_capacity(64 * 1024) }
    }

    /// The time of one GET with the API key, from the first byte sent to the last received.
    /// Panics on anything but 200.
    pub async fn timed_get(&mut self, path: &str, key: &str) -> Duration {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let req = format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{API_KEY_HEADER}: {key}\r\n\r\n");
        let start = Instant::now();
        self.stream.write_all(req.as_bytes()).await.expect("sends");
        self.buf.clear();
        let (head_end, length) = loop {
            let mut chunk = [0u8; 16 * 1024];
            let n = self.stream.read(&mut chunk).await.expect("reads");
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buf[..end]).expect("a text head").to_ascii_lowercase();
                assert!(head.starts_with("http/1.1 200"), "{head}");
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .expect("a content-length");
                break (end + 4, length);
            }
        };
        while self.buf.len() < head_end + length {
            let mut chunk = [0u8; 64 * 1024];
            let n = self.stream.read(&mut chunk).await.expect("reads");
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
        start.elapsed()
    }
}

/// A request with the API key, and a JSON body when given.
pub fn request(method: Method, path: &str, key: &str, body: Option<String>) -> Request<Body> {
    let mut req = Request::builder().method(method).uri(path).header(API_KEY_HEADER, key);
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    req.body(body.map(Body::from).unwrap_or_else(Body::empty)).expect("valid request")
}

/// Runs one request through `app` with `oneshot` and reads the whole answer.
pub async fn send(app: &App, req: Request<Body>) -> (StatusCode, Bytes) {
    let res = app.clone().oneshot(req).await.expect("the router is infallible");
    let status = res.status();
    let body = res.into_body().collect().await.expect("body reads").to_bytes();
    (status, body)
}

/// The `user_id` of a user answer.
pub fn user_id_of(body: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).expect("a JSON answer");
    v["user_id"].as_str().expect("an answer with user_id").to_owned()
}

/// Prints one markdown row `| name | n | mean | median | p90 | p99 | max |` (µs) of `samples`
/// and gives their summary.
pub fn print_row(name: &str, samples: &mut [Duration]) -> Summary {
    let s = Summary::of(samples);
    println!(
        "| {name} | {} | {} | {} | {} | {} | {} |",
        s.n,
        us(s.mean),
        us(s.median),
        us(s.p90),
        us(s.p99),
        us(s.max)
    );
    s
}

/// Order statistics of a set of timings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: Duration,
    pub min: Duration,
    pub median: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Summary {
    /// Sorts `samples` and summarises them (nearest-rank percentiles). Panics when empty.
    pub fn of(samples: &mut [Duration]) -> Self {
        assert!(!samples.is_empty(), "no samples");
        samples.sort_unstable();
        let total: Duration = samples.iter().sum();
        Self {
            n: samples.len(),
            mean: total / samples.len() as u32,
            min: samples[0],
            median: percentile(samples, 50.0),
            p90: percentile(samples, 90.0),
            p99: percentile(samples, 99.0),
            max: samples[samples.len() - 1],
        }
    }
}

/// The nearest-rank `p`th percentile of sorted `samples`.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Microseconds with one decimal.
pub fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// Milliseconds with two decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// One JSON request through `app` with the API key `key`; panics unless it succeeds, and answers
/// the body as JSON (`null` when empty). For the benches that drive the stack through its router.
pub async fn call_json(
    app: &App,
    key: &str,
    method: &str,
    path: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(API_KEY_HEADER, key)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("request builds");
    let res = app.clone().oneshot(req).await.expect("router answers");
    let status = res.status();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    assert!(status.is_success(), "{method} {path}: {status} {}", String::from_utf8_lossy(&bytes));
    serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null)
}

/// A memory figure of this process from `/proc/self/status`, in MiB: `VmHWM:` the peak resident
/// set, `VmRSS:` the current one (0 where there is no such file).
pub fn rss_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A directory under the system's temporary directory for one run's local stack, removed when
/// dropped, also when the run panics: a 10,000-connection pull leaves tens of gigabytes.
pub struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    /// `<temp>/<prefix>-<random>`, not created (the local stack creates it).
    pub fn new(prefix: &str) -> Self {
        Self(std::env::temp_dir().join(format!("{prefix}-{}", uuid::Uuid::new_v4().simple())))
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut s: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let sum = Summary::of(&mut s);
        assert_eq!(sum.median, Duration::from_millis(50));
        assert_eq!(sum.p99, Duration::from_millis(99));
        assert_eq!(sum.min, Duration::from_millis(1));
        assert_eq!(sum.max, Duration::from_millis(100));
        assert_eq!(percentile(&[Duration::from_millis(7)], 99.0), Duration::from_millis(7));
    }

    #[test]
    fn bench_key_is_well_formed() {
        let hex = BENCH_KEY.strip_prefix("sk_bench_").unwrap();
        assert!(hex.len() >= 40 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(wearlab_domain::teams::is_well_formed_key(BENCH_KEY));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn in_process_requests_answer() {
        let p = InProc::new(true).await;
        assert!(p.timed(p.get_user_request()).await > Duration::ZERO);
        let (status, body) = p.send(p.create_user_request()).await;
        assert_eq!(status, StatusCode::OK);
        assert_ne!(user_id_of(&body), p.user_id);
        let (status, _) = p.send(p.list_users_request(10)).await;
        assert_eq!(status, StatusCode::OK);
    }
}
