//! The cost model: a scripted month of one team driven through the handlers on moto with every
//! AWS call counted ([`wearlab_aws::AwsMeter`]), scaled from a sample of users and days to the
//! month, and priced with the published us-east-1 list prices. The scripted month, the prices
//! and their sources are in `docs/PERFORMANCE.md`, "What a month costs".
//!
//! Phases, each measured on its own (the meter's counts, the API requests and the Lambda
//! invocations with their durations):
//!
//! 1. idle minute-worker runs (the per-deployment floor: every minute of the month);
//! 2. onboarding, per user: create the user, link two providers (demo connections of the
//!    simulator), their 90-day historical pulls on the pull queue and every event delivered to
//!    the team's webhook endpoint (a loopback server) and to EventBridge;
//! 3. per sampled day: the day moves on, the scheduled poll runs (its fan-out, then every
//!    connection's poll job: the first poll of a day finds the new day, as the poll a push asks
//!    for does), then a second poll that finds nothing new (the schedule's daily safety-net poll
//!    of a connection whose pushes arrive: the scripted month's connections get their data by
//!    push, `PUSHED_POLL_INTERVAL`), and a sample of the 100 API reads per user per day;
//! 4. lab orders (one per 50 users), placed and advanced by the minute worker to their results.
//!
//! The month of `MONTH_USERS` users is the phases' figures per unit times the units of a month.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use http::{Method, StatusCode};
use serde::{Deserialize, Serialize};
use wearlab_aws::{AwsMeter, CallSpan, EventBridgeBus, Service, SqsQueue, Tally};
use wearlab_domain::common::fair_use::MAX_REQUESTS_PER_MINUTE;
use wearlab_domain::common::settings::Settings;
use wearlab_domain::pipeline::pull::PUSHED_POLL_INTERVAL;
use wearlab_domain::ports::{
    BusError, Clock, EventBus, EventEnvelope, Outgoing, Queue, QueueName, ShiftedClock, SystemClock,
};
use wearlab_domain::webhooks::WebhookPorts;
use wearlab_domain::{Deps, teams};
use wearlab_web::{App, AppState};

/// The team the month is priced for.
pub const MONTH_USERS: f64 = 1000.0;
/// Days of the month.
pub const MONTH_DAYS: f64 = 30.0;
/// API reads per user per day.
pub const READS_PER_USER_DAY: f64 = 100.0;
/// Users per lab order.
pub const USERS_PER_ORDER: f64 = 50.0;
/// Runs of the scheduled poll's fan-out per day (`PollSchedule`: rate(15 minutes)).
pub const POLLS_PER_DAY: f64 = 96.0;

/// Scheduled polls per day of a connection whose pushes arrive (the month's connections get each
/// day's data by push): one a [`PUSHED_POLL_INTERVAL`].
pub fn safety_net_polls_per_day() -> f64 {
    86_400.0 / PUSHED_POLL_INTERVAL.as_secs_f64()
}
/// Minute-worker runs per month (rate(1 minute)).
pub const MINUTE_RUNS_PER_MONTH: f64 = 60.0 * 24.0 * MONTH_DAYS;
/// The providers each user links.
pub const PROVIDERS: [&str; 2] = ["fitbit", "oura"];
/// Days of history each connection pulls.
pub const HISTORY_DAYS: u32 = 90;
/// Queues a Lambda event source mapping polls (pull, webhook, bulk and the bulk dead letters).
pub const POLLED_QUEUES: f64 = 4.0;
/// ReceiveMessage calls of one event source mapping on an idle queue a month: five long polls
/// of 20 s at a time, all month (see `docs/PERFORMANCE.md`).
pub const IDLE_RECEIVES_PER_QUEUE_MONTH: f64 = 5.0 * 3.0 * 60.0 * 24.0 * MONTH_DAYS;

/// The billed quantities, by line.
pub mod line {
    pub const DDB_READ: &str = "dynamodb_read_units";
    pub const DDB_WRITE: &str = "dynamodb_write_units";
    pub const DDB_INDEX_WRITE: &str = "dynamodb_index_write_units";
    pub const DDB_STORED: &str = "dynamodb_stored_bytes";
    pub const SQS: &str = "sqs_requests";
    pub const EVENTS: &str = "eventbridge_events";
    pub const SCHEDULES: &str = "scheduler_invocations";
    pub const API: &str = "api_gateway_requests";
    pub const LAMBDA: &str = "lambda_invocations";
    pub const GB_SECONDS: &str = "lambda_gb_seconds";
    /// Not priced (under `measured/`): the GB-seconds of the durations as measured on the
    /// emulator, AWS calls at its latency.
    pub const GB_SECONDS_EMULATED: &str = "measured/lambda_gb_seconds_on_moto";
    /// Not priced: seconds of the invocations' own work (outside AWS calls).
    pub const OWN_SECONDS: &str = "measured/lambda_own_work_seconds";
    /// Not priced: seconds inside the function's AWS calls, as measured on the emulator.
    pub const AWS_SECONDS_EMULATED: &str = "measured/lambda_aws_call_seconds_on_moto";
    /// Not priced: seconds inside the function's AWS calls at the services' published latency
    /// ([`super::LATENCIES`]).
    pub const AWS_SECONDS_PRICED: &str = "measured/lambda_aws_call_seconds_priced";
}

/// A published latency the priced Lambda durations take for one AWS call, instead of the
/// emulator's: conservative figures, their sources in `docs/PERFORMANCE.md` ("Lambda durations").
pub struct Latency {
    pub service: Service,
    /// The operations it is for (empty: every other operation of the service).
    pub operations: &'static [&'static str],
    pub per_call: Duration,
}

/// The latencies priced, per call: DynamoDB's single-digit milliseconds at their top (10 ms,
/// twice that for a batch or a transaction, which do the work of several items), and SQS's "tens
/// or low hundreds of milliseconds" at 100 ms, taken for EventBridge and Scheduler too.
pub const LATENCIES: [Latency; 5] = [
    Latency {
        service: Service::DynamoDb,
        operations: &["BatchGetItem", "BatchWriteItem", "TransactWriteItems", "TransactGetItems"],
        per_call: Duration::from_millis(20),
    },
    Latency { service: Service::DynamoDb, operations: &[], per_call: Duration::from_millis(10) },
    Latency { service: Service::Sqs, operations: &[], per_call: Duration::from_millis(100) },
    Latency { service: Service::EventBridge, operations: &[], per_call: Duration::from_millis(100) },
    Latency { service: Service::Scheduler, operations: &[], per_call: Duration::from_millis(100) },
];

/// The latency priced for one call of `operation` on `service`.
pub fn latency_of(service: Service, operation: &str) -> Duration {
    LATENCIES
        .iter()
        .filter(|l| l.service == service)
        .find(|l| l.operations.is_empty() || l.operations.contains(&operation))
        .map_or(Duration::ZERO, |l| l.per_call)
}

/// One invocation's time, split: its own work (outside AWS calls) and its AWS calls, as measured
/// on the emulator and as priced at [`LATENCIES`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Split {
    pub own: Duration,
    pub aws_emulated: Duration,
    pub aws_priced: Duration,
}

impl Split {
    /// The duration Lambda would bill: own work plus the calls at the published latencies.
    pub fn priced(&self) -> Duration {
        self.own + self.aws_priced
    }
}

/// Splits the invocation from `started` to `ended` by the AWS calls in `spans` (those that
/// started in it; others are left out). Overlapping calls (a batch's messages handled at once)
/// form a stretch of time; in it, the priced time is the sum of the calls' published latencies
/// divided by how many were in flight on average (their measured times over the stretch's), and
/// at least the slowest one's. A call the function did not make (a rule's delivery played
/// in-process) takes its time from the invocation and adds none.
pub fn split(started: Instant, ended: Instant, spans: &[CallSpan]) -> Split {
    let mut calls: Vec<&CallSpan> = spans.iter().filter(|s| s.start >= started && s.start <= ended).collect();
    calls.sort_by_key(|s| s.start);
    let wall = ended.saturating_duration_since(started);
    let mut out = Split::default();
    let mut i = 0;
    while i < calls.len() {
        let from = calls[i].start;
        let mut to = calls[i].end.min(ended);
        let mut j = i + 1;
        while j < calls.len() && calls[j].start < to {
            to = to.max(calls[j].end.min(ended));
            j += 1;
        }
        let stretch = &calls[i..j];
        let length = to.saturating_duration_since(from);
        let measured: Duration =
            stretch.iter().map(|s| s.end.min(ended).saturating_duration_since(s.start)).sum();
        let ours: Vec<Duration> =
            stretch.iter().filter(|s| s.by_function).map(|s| latency_of(s.service, s.operation)).collect();
        let in_flight =
            if length.is_zero() { 1.0 } else { (measured.as_secs_f64() / length.as_secs_f64()).max(1.0) };
        let priced = Duration::from_secs_f64(ours.iter().sum::<Duration>().as_secs_f64() / in_flight)
            .max(ours.iter().copied().max().unwrap_or_default());
        out.aws_emulated += length;
        out.aws_priced += priced;
        i = j;
    }
    out.own = wall.saturating_sub(out.aws_emulated);
    out
}

/// A list price: the line, its service, dollars per unit, and what the unit is.
pub struct Price {
    pub line: &'static str,
    pub service: &'static str,
    pub dollars_per_unit: f64,
    pub unit: &'static str,
}

/// us-east-1 list prices (on-demand, arm64 Lambda, HTTP API, standard queues); their sources
/// and date are in `docs/PERFORMANCE.md`. Free tiers are left out.
pub const PRICES: [Price; 10] = [
    Price {
        line: line::DDB_READ,
        service: "DynamoDB",
        dollars_per_unit: 0.125e-6,
        unit: "read request unit",
    },
    Price {
        line: line::DDB_WRITE,
        service: "DynamoDB",
        dollars_per_unit: 0.625e-6,
        unit: "write request unit",
    },
    Price {
        line: line::DDB_INDEX_WRITE,
        service: "DynamoDB",
        dollars_per_unit: 0.625e-6,
        unit: "write request unit (GSI1)",
    },
    Price {
        line: line::DDB_STORED,
        service: "DynamoDB",
        dollars_per_unit: 0.25 / (1024.0 * 1024.0 * 1024.0),
        unit: "byte-month stored",
    },
    Price { line: line::SQS, service: "SQS", dollars_per_unit: 0.40e-6, unit: "request (64 KB chunk)" },
    Price {
        line: line::EVENTS,
        service: "EventBridge",
        dollars_per_unit: 1.0e-6,
        unit: "event (64 KB chunk)",
    },
    Price {
        line: line::SCHEDULES,
        service: "EventBridge Scheduler",
        dollars_per_unit: 1.0e-6,
        unit: "invocation",
    },
    Price { line: line::API, service: "API Gateway", dollars_per_unit: 1.0e-6, unit: "request" },
    Price { line: line::LAMBDA, service: "Lambda", dollars_per_unit: 0.2e-6, unit: "request" },
    Price {
        line: line::GB_SECONDS,
        service: "Lambda",
        dollars_per_unit: 0.000_013_333_4,
        unit: "GB-second (arm64)",
    },
];

/// Quantities by line (and, under `calls/`, AWS calls by operation, not priced).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage(pub BTreeMap<String, f64>);

impl Usage {
    pub fn get(&self, line: &str) -> f64 {
        self.0.get(line).copied().unwrap_or(0.0)
    }

    fn add_to(&mut self, line: &str, n: f64) {
        *self.0.entry(line.to_owned()).or_default() += n;
    }

    /// `self + other × factor`.
    pub fn plus(mut self, other: &Usage, factor: f64) -> Usage {
        for (k, v) in &other.0 {
            self.add_to(k, v * factor);
        }
        self
    }

    pub fn scaled(&self, factor: f64) -> Usage {
        Usage::default().plus(self, factor)
    }

    fn from_tally(t: &Tally) -> Usage {
        let mut u = Usage::default();
        u.add_to(line::DDB_READ, t.read_units);
        u.add_to(line::DDB_WRITE, t.write_units);
        u.add_to(line::DDB_INDEX_WRITE, t.index_write_units);
        u.add_to(line::DDB_STORED, t.stored_bytes as f64);
        u.add_to(line::SQS, t.sqs_requests as f64);
        u.add_to(line::EVENTS, t.events as f64);
        u.add_to(line::SCHEDULES, t.schedules as f64);
        for ((service, op), n) in &t.calls {
            u.add_to(&format!("calls/{} {op}", service.as_str()), *n as f64);
        }
        u
    }

    /// Dollars by line.
    pub fn dollars(&self) -> Vec<(&'static Price, f64)> {
        PRICES.iter().map(|p| (p, self.get(p.line) * p.dollars_per_unit)).collect()
    }

    /// Dollars by service, most first.
    pub fn by_service(&self) -> Vec<(&'static str, f64)> {
        let mut by: Vec<(&'static str, f64)> = Vec::new();
        for (p, d) in self.dollars() {
            match by.iter_mut().find(|(s, _)| *s == p.service) {
                Some((_, t)) => *t += d,
                None => by.push((p.service, d)),
            }
        }
        by.sort_by(|a, b| b.1.total_cmp(&a.1));
        by
    }

    pub fn total_dollars(&self) -> f64 {
        self.dollars().iter().map(|(_, d)| d).sum()
    }

    /// The priced lines only (what the committed baseline holds).
    pub fn priced(&self) -> Usage {
        Usage(
            self.0
                .iter()
                .filter(|(k, _)| !k.starts_with("calls/") && !k.starts_with("measured/"))
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
        )
    }
}

/// How big a sample to drive.
#[derive(Debug, Clone)]
pub struct Sample {
    pub users: usize,
    pub days: usize,
    /// API reads driven per user per sampled day (in the mix of [`read_mix`]); their figures
    /// are scaled to [`READS_PER_USER_DAY`].
    pub reads: usize,
    /// Idle minute-worker runs and runs while lab orders are open.
    pub minute_runs: usize,
}

/// What one sample measured, per unit.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub sample_users: usize,
    /// One idle minute-worker run.
    pub minute_run: Usage,
    /// One user's onboarding (create, two links, two 90-day pulls, their events).
    pub onboarding: Usage,
    /// The scheduled poll's fan-out (per run, whatever the connections).
    pub poll_fanout: Usage,
    /// Per user per day: the poll that finds the new day.
    pub poll_new_day: Usage,
    /// Per user: one poll that finds nothing new.
    pub poll_nothing_new: Usage,
    /// One API read (the mix).
    pub read: Usage,
    /// One lab order, placed and advanced to its results.
    pub lab_order: Usage,
}

impl Measured {
    /// A month of [`MONTH_USERS`] users.
    pub fn month(&self) -> Usage {
        let users = MONTH_USERS;
        let user_days = users * MONTH_DAYS;
        let mut month = Usage::default()
            .plus(&self.minute_run, MINUTE_RUNS_PER_MONTH)
            .plus(&self.onboarding, users)
            .plus(&self.poll_fanout, POLLS_PER_DAY * MONTH_DAYS)
            .plus(&self.poll_new_day, user_days)
            .plus(&self.poll_nothing_new, user_days * safety_net_polls_per_day())
            .plus(&self.read, user_days * READS_PER_USER_DAY)
            .plus(&self.lab_order, users / USERS_PER_ORDER);
        month.add_to(line::SQS, POLLED_QUEUES * IDLE_RECEIVES_PER_QUEUE_MONTH);
        month
    }

    /// The month per user.
    pub fn per_user_month(&self) -> Usage {
        self.month().scaled(1.0 / MONTH_USERS)
    }
}

/// The 100 reads of a user's day, in tenths: 4 summaries, 4 timeseries, 2 user reads.
pub fn read_mix(n: usize) -> Vec<ReadKind> {
    const TENTH: [ReadKind; 10] = [
        ReadKind::Summary,
        ReadKind::Timeseries,
        ReadKind::User,
        ReadKind::Summary,
        ReadKind::Timeseries,
        ReadKind::Summary,
        ReadKind::Timeseries,
        ReadKind::User,
        ReadKind::Summary,
        ReadKind::Timeseries,
    ];
    (0..n).map(|i| TENTH[i % 10]).collect()
}

#[derive(Debug, Clone, Copy)]
pub enum ReadKind {
    /// `GET /v2/summary/sleep/{user_id}` of the last two days (data-api, audited).
    Summary,
    /// `GET /v2/timeseries/{user_id}/heartrate` of the last day (data-api, audited).
    Timeseries,
    /// `GET /v2/user/{user_id}` (user-api).
    User,
}

/// Memory (MB) of each function by binary name, read from the SAM template.
pub fn memory_sizes(template: &str) -> HashMap<String, f64> {
    let mut default = 128.0;
    let mut out = HashMap::new();
    let mut in_globals = false;
    let (mut memory, mut binary): (Option<f64>, Option<String>) = (None, None);
    let mut flush = |memory: &mut Option<f64>, binary: &mut Option<String>, default: f64| {
        if let Some(b) = binary.take() {
            out.insert(b, memory.unwrap_or(default));
        }
        *memory = None;
    };
    for l in template.lines() {
        let top = l.starts_with("  ") && !l.starts_with("   ") && l.trim_end().ends_with(':');
        if !l.starts_with(' ') {
            in_globals = l.starts_with("Globals:");
        }
        if top {
            flush(&mut memory, &mut binary, default);
        }
        let t = l.trim();
        if let Some(v) = t.strip_prefix("MemorySize:") {
            let v: f64 = v.trim().parse().unwrap_or(default);
            if in_globals {
                default = v;
            } else {
                memory = Some(v);
            }
        }
        if let Some(b) = t.strip_prefix("Binary:") {
            binary = Some(b.trim().to_owned());
        }
    }
    flush(&mut memory, &mut binary, default);
    out
}

/// The function an API path goes to (the template's routes).
pub fn function_of(method: &Method, path: &str) -> &'static str {
    if path.starts_with("/v2/summary") || path.starts_with("/v2/timeseries") {
        if method == Method::GET { "data-api" } else { "sdk-api" }
    } else if path.starts_with("/v2/link/bulk") {
        "bulk-api"
    } else if path.starts_with("/v2/link") || path.starts_with("/v2/provider") {
        "link-api"
    } else if path.starts_with("/v2/team") {
        "team-api"
    } else if path.starts_with("/v3") {
        "lab-api"
    } else if path.starts_with("/fhir") {
        "fhir-api"
    } else {
        "user-api"
    }
}

/// The bus as deployed: PutEvents on EventBridge, then what its rules deliver to SQS (every
/// event to the webhook queue, `provider.connection.created` also to the pull queue; one
/// SendMessage per event and target).
struct RuledBus {
    bus: EventBridgeBus,
    /// The rules' deliveries: counted, and timed as AWS's, not the function's.
    queue: SqsQueue,
}

#[async_trait::async_trait]
impl EventBus for RuledBus {
    async fn publish(&self, events: Vec<EventEnvelope>) -> Result<(), BusError> {
        let n = events.len();
        self.bus.publish(events.clone()).await?;
        let err = |e: wearlab_domain::ports::QueueError| BusError::NotPublished {
            failed: n,
            reason: e.to_string(),
        };
        for e in events {
            if e.event_type == wearlab_domain::linking::connections::CONNECTION_CREATED {
                let pull = Outgoing::now(wearlab_domain::pipeline::PullMessage::Event(e.clone()).body());
                self.queue.send(QueueName::Pull, vec![pull]).await.map_err(err)?;
            }
            let body = serde_json::to_value(&e)
                .map_err(|e| BusError::NotPublished { failed: n, reason: e.to_string() })?;
            self.queue.send(QueueName::Webhook, vec![Outgoing::now(body)]).await.map_err(err)?;
        }
        Ok(())
    }
}

/// The stack on moto with the meter installed, and what the run measures beside the meter.
pub struct Run {
    pub meter: AwsMeter,
    pub deps: Deps,
    pub app: App,
    pub key: String,
    pub clock: Arc<ShiftedClock>,
    queue: Arc<SqsQueue>,
    plain_sqs: aws_sdk_sqs::Client,
    urls: HashMap<QueueName, String>,
    sender: wearlab_http::HttpSender,
    memory: HashMap<String, f64>,
    /// Usage the meter does not see: API requests, Lambda invocations, the event source
    /// mappings' receives and deletes.
    extra: std::sync::Mutex<Usage>,
    pub delivered: Arc<AtomicUsize>,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Most time one drain of a queue may take.
const DRAIN_DEADLINE: Duration = Duration::from_secs(600);

impl Run {
    /// A fresh table, queues and stack on the moto at `endpoint` (loopback only).
    pub async fn start(endpoint: &str, template: &str) -> Result<Run, Error> {
        let host = endpoint.trim_start_matches("http://");
        if !(host.starts_with("127.0.0.1:") || host.starts_with("localhost:")) {
            return Err(format!("refusing a non-loopback endpoint: {endpoint}").into());
        }
        let config = wearlab_aws::config_for_endpoint(endpoint).await;
        let meter = AwsMeter::new();
        let id = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("wearlab-cost-{id}");
        wearlab_aws::ensure_table(&aws_sdk_dynamodb::Client::new(&config), &name).await?;
        let plain_sqs = aws_sdk_sqs::Client::new(&config);
        let mut urls = HashMap::new();
        for q in [QueueName::Pull, QueueName::Webhook, QueueName::Bulk] {
            let out = plain_sqs.create_queue().queue_name(format!("{}-{id}", q.as_str())).send().await?;
            urls.insert(q, out.queue_url().ok_or("no queue url")?.to_owned());
        }
        let clock = Arc::new(ShiftedClock::new(Arc::new(SystemClock)));
        let queue = Arc::new(SqsQueue::new(meter.sqs(&config), urls.clone(), clock.clone()));
        let table = Arc::new(wearlab_aws::DynamoDbTable::new(meter.dynamodb(&config), name));
        let scheduler = wearlab_aws::EventBridgeScheduler::new(
            meter.scheduler(&config),
            wearlab_aws::SchedulerTarget {
                group: "default".into(),
                target_arn: "arn:aws:lambda:us-east-1:123456789012:function:erasure-worker".into(),
                role_arn: "arn:aws:iam::123456789012:role/wearlab-scheduler".into(),
            },
        );
        let bus = RuledBus {
            bus: EventBridgeBus::new(meter.eventbridge(&config), "default"),
            queue: SqsQueue::new(meter.sqs_for_aws(&config), urls.clone(), clock.clone()),
        };
        let mut deps = wearlab_local::LocalStack::in_memory(clock.clone()).deps;
        deps.table = table;
        deps.scheduler = Arc::new(scheduler);
        deps.bus = Arc::new(bus);
        let team = teams::create_team(&deps, "Cost team").await?.team_id;
        let key = teams::issue_key(&deps, team, "cost").await?.secret;
        let ports =
            wearlab_local::Ports { queue: queue.clone(), lab_network: Arc::new(wearlab_sim::SimulatedLab) };
        let state =
            AppState::new(deps.clone(), Settings::default()).with_default_rate_limit(MAX_REQUESTS_PER_MINUTE);
        let app = wearlab_local::app(state, &ports);
        let sender = wearlab_http::HttpSender::new(wearlab_domain::webhooks::url::UrlPolicy::LocalStack);
        let run = Run {
            meter,
            deps,
            app,
            key,
            clock,
            queue,
            plain_sqs,
            urls,
            sender,
            memory: memory_sizes(template),
            extra: std::sync::Mutex::default(),
            delivered: Arc::default(),
        };
        // The team's webhook endpoint: a loopback server that answers 204 to every delivery.
        let delivered = run.delivered.clone();
        let receiver = axum::Router::new().route(
            "/hook",
            axum::routing::post(move || {
                let d = delivered.clone();
                async move {
                    d.fetch_add(1, Ordering::Relaxed);
                    StatusCode::NO_CONTENT
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, receiver).await });
        run.call(
            Method::POST,
            "/v2/team/webhooks",
            Some(serde_json::json!({ "url": format!("http://{addr}/hook") })),
        )
        .await?;
        run.call(
            Method::PUT,
            "/v2/team/data_pull_preferences",
            Some(serde_json::json!({ "default_history_days": HISTORY_DAYS })),
        )
        .await?;
        Ok(run)
    }

    fn extra(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.extra.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One Lambda invocation of `function` that started at `started` and ends now: billed by
    /// the millisecond, its AWS calls at the published latencies ([`split`]); the duration as
    /// measured on the emulator kept beside it.
    fn invoked(&self, function: &str, started: Instant) {
        let ended = Instant::now();
        let split = split(started, ended, &self.meter.take_spans());
        let gb = self.memory.get(function).copied().unwrap_or(128.0) / 1024.0;
        let billed_seconds = |d: Duration| (d.as_micros() as f64 / 1000.0).ceil() / 1000.0;
        let mut e = self.extra();
        e.add_to(line::LAMBDA, 1.0);
        e.add_to(line::GB_SECONDS, billed_seconds(split.priced()) * gb);
        e.add_to(line::GB_SECONDS_EMULATED, billed_seconds(ended - started) * gb);
        e.add_to(line::OWN_SECONDS, split.own.as_secs_f64());
        e.add_to(line::AWS_SECONDS_EMULATED, split.aws_emulated.as_secs_f64());
        e.add_to(line::AWS_SECONDS_PRICED, split.aws_priced.as_secs_f64());
        e.add_to(&format!("calls/Lambda {function}"), 1.0);
    }

    /// Everything counted so far.
    pub fn usage(&self) -> Usage {
        Usage::from_tally(&self.meter.snapshot()).plus(&self.extra(), 1.0)
    }

    /// One API request through API Gateway to its function; the answer's JSON.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value, Error> {
        let function = function_of(&method, path);
        let req = crate::request(method, path, &self.key, body.map(|b| b.to_string()));
        let started = Instant::now();
        let (status, bytes) = crate::send(&self.app, req).await;
        self.invoked(function, started);
        self.extra().add_to(line::API, 1.0);
        if !status.is_success() {
            return Err(format!("{path}: {status} {}", String::from_utf8_lossy(&bytes)).into());
        }
        Ok(serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null))
    }

    /// Runs the pull and webhook queues' consumers, as Lambda's event source mappings do, until
    /// both queues are empty: each batch one invocation of its worker (batch sizes of the
    /// template), its receive and its delete counted as SQS requests.
    pub async fn drain(&self) -> Result<(), Error> {
        let started = Instant::now();
        loop {
            let pulls = self.drain_once(QueueName::Pull, "pull-worker", 5).await?;
            let hooks = self.drain_once(QueueName::Webhook, "webhook-worker", 10).await?;
            if pulls + hooks == 0 {
                if self.waiting(QueueName::Pull).await? + self.waiting(QueueName::Webhook).await? == 0 {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            if started.elapsed() > DRAIN_DEADLINE {
                return Err("queues not drained in time".into());
            }
        }
    }

    async fn waiting(&self, q: QueueName) -> Result<u64, Error> {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let out = self
            .plain_sqs
            .get_queue_attributes()
            .queue_url(&self.urls[&q])
            .attribute_names(A::ApproximateNumberOfMessages)
            .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(A::ApproximateNumberOfMessagesDelayed)
            .send()
            .await?;
        Ok(out.attributes().map_or(0, |a| a.values().filter_map(|v| v.parse::<u64>().ok()).sum()))
    }

    /// One batch of `q`; how many messages it held.
    async fn drain_once(&self, q: QueueName, function: &str, batch: i32) -> Result<usize, Error> {
        let url = &self.urls[&q];
        let out = self
            .plain_sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(batch)
            .visibility_timeout(5)
            .message_system_attribute_names(
                aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
            )
            .send()
            .await?;
        let messages = out.messages();
        if messages.is_empty() {
            return Ok(0);
        }
        let bytes: usize = messages.iter().map(|m| m.body().map_or(0, str::len)).sum();
        let records: Vec<SqsMessage> = messages
            .iter()
            .map(|m| {
                let mut r = SqsMessage::default();
                r.message_id = m.message_id().map(str::to_owned);
                r.receipt_handle = m.receipt_handle().map(str::to_owned);
                r.body = m.body().map(str::to_owned);
                if let Some(c) = m.attributes().and_then(|a| {
                    a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount)
                }) {
                    r.attributes.insert("ApproximateReceiveCount".into(), c.clone());
                }
                r
            })
            .collect();
        let mut event = SqsEvent::default();
        event.records = records;
        let started = Instant::now();
        let response = match q {
            QueueName::Pull => {
                wearlab_aws::handle_sqs_batch(&self.queue, q, event, |env, _| {
                    pull_worker::handle(&self.deps, self.queue.as_ref(), env)
                })
                .await
            }
            _ => {
                let ports = WebhookPorts { queue: self.queue.as_ref(), sender: &self.sender };
                wearlab_aws::handle_sqs_batch(&self.queue, q, event, |env, _| {
                    webhook_worker::handle(&self.deps, ports, env)
                })
                .await
            }
        };
        self.invoked(function, started);
        let failed: Vec<String> =
            response.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
        let entries: Vec<_> = messages
            .iter()
            .filter(|m| !failed.iter().any(|f| Some(f.as_str()) == m.message_id()))
            .enumerate()
            .map(|(i, m)| {
                aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .receipt_handle(m.receipt_handle().unwrap_or_default())
                    .build()
                    .expect("id and handle are set")
            })
            .collect();
        let mut sqs = bytes.div_ceil(64 * 1024).max(1) as f64;
        if !entries.is_empty() {
            self.plain_sqs.delete_message_batch().queue_url(url).set_entries(Some(entries)).send().await?;
            sqs += 1.0;
        }
        self.extra().add_to(line::SQS, sqs);
        Ok(messages.len())
    }

    /// One minute-worker run (its scheduled rule's invocation).
    pub async fn minute(&self) -> Result<(), Error> {
        let started = Instant::now();
        minute_worker::handle(&self.deps, &wearlab_sim::SimulatedLab, None).await?;
        self.invoked("minute-worker", started);
        Ok(())
    }

    /// The scheduled poll: the rule's message on the pull queue, its fan-out run as one
    /// invocation; the poll jobs it sent wait on the queue.
    pub async fn poll_fanout(&self) -> Result<(), Error> {
        let body = serde_json::json!({ "poll_all": {} });
        // The rule's delivery to the queue (one SendMessage).
        self.extra().add_to(line::SQS, 1.0);
        let envelope: wearlab_domain::ports::Envelope =
            serde_json::from_value(serde_json::json!({ "body": body }))?;
        let started = Instant::now();
        let outcome = pull_worker::handle(&self.deps, self.queue.as_ref(), envelope).await;
        self.invoked("pull-worker", started);
        // Its receive and delete.
        self.extra().add_to(line::SQS, 2.0);
        match outcome {
            wearlab_domain::ports::Outcome::Ack => Ok(()),
            other => Err(format!("poll fan-out: {other:?}").into()),
        }
    }
}

/// Measures one sample on the moto at `endpoint`. `progress` is told each phase.
pub async fn measure(
    endpoint: &str,
    template: &str,
    sample: &Sample,
    progress: impl Fn(&str),
) -> Result<Measured, Error> {
    let run = Run::start(endpoint, template).await?;
    let mut m = Measured { sample_users: sample.users, ..Measured::default() };
    let users = sample.users as f64;

    progress("idle minute-worker runs");
    let before = run.usage();
    for _ in 0..sample.minute_runs {
        run.minute().await?;
    }
    m.minute_run = run.usage().plus(&before, -1.0).scaled(1.0 / sample.minute_runs as f64);

    progress("onboarding: users, links, 90-day pulls, events");
    let before = run.usage();
    let mut ids = Vec::new();
    for n in 0..sample.users {
        let u = run
            .call(
                Method::POST,
                "/v2/user",
                Some(serde_json::json!({ "client_user_id": format!("cost-{n}") })),
            )
            .await?;
        let id = u["user_id"].as_str().ok_or("no user id")?.to_owned();
        for provider in PROVIDERS {
            run.call(
                Method::POST,
                "/v2/link/connect/demo",
                Some(serde_json::json!({ "user_id": id, "provider": provider })),
            )
            .await?;
        }
        ids.push(id);
    }
    run.drain().await?;
    m.onboarding = run.usage().plus(&before, -1.0).scaled(1.0 / users);

    let mut fanout = Usage::default();
    let mut new_day = Usage::default();
    let mut nothing_new = Usage::default();
    let mut reads = Usage::default();
    let mix = read_mix(sample.reads);
    for day in 0..sample.days {
        progress(&format!("day {}: polls and reads", day + 1));
        run.clock.advance_seconds(24 * 3600);
        for found in [true, false] {
            let before = run.usage();
            run.poll_fanout().await?;
            let after_fanout = run.usage();
            fanout = fanout.plus(&after_fanout.clone().plus(&before, -1.0), 1.0);
            run.drain().await?;
            let polls = run.usage().plus(&after_fanout, -1.0);
            if found {
                new_day = new_day.plus(&polls, 1.0);
            } else {
                nothing_new = nothing_new.plus(&polls, 1.0);
            }
        }
        let before = run.usage();
        let today = run.clock.now().date_naive();
        let yesterday = today - chrono::Days::new(1);
        for id in &ids {
            for kind in &mix {
                let path = match kind {
                    ReadKind::Summary => {
                        format!("/v2/summary/sleep/{id}?start_date={yesterday}&end_date={today}")
                    }
                    ReadKind::Timeseries => {
                        format!(
                            "/v2/timeseries/{id}/heartrate/grouped?start_date={yesterday}&end_date={yesterday}"
                        )
                    }
                    ReadKind::User => format!("/v2/user/{id}"),
                };
                run.call(Method::GET, &path, None).await?;
            }
        }
        // Audit entries written after the answer are counted with their read.
        reads = reads.plus(&run.usage().plus(&before, -1.0), 1.0);
    }
    let days = sample.days as f64;
    m.poll_fanout = fanout.scaled(1.0 / (2.0 * days));
    m.poll_new_day = new_day.scaled(1.0 / (users * days));
    m.poll_nothing_new = nothing_new.scaled(1.0 / (users * days));
    m.read = reads.scaled(1.0 / (users * days * sample.reads as f64));

    progress("lab orders");
    let orders = (sample.users as f64 / USERS_PER_ORDER).ceil().max(1.0) as usize;
    let before = run.usage();
    let test_id = wearlab_domain::lab::test_catalog::catalog()
        .lab_tests
        .iter()
        .find(|t| t.slug == "meridian_essential_health")
        .ok_or("no lab test meridian_essential_health")?
        .id
        .to_string();
    for id in ids.iter().take(orders) {
        run.call(Method::POST, "/v3/order", Some(order_body(id, &test_id))).await?;
    }
    for _ in 0..sample.minute_runs {
        run.clock.advance_seconds(12 * 3600);
        run.minute().await?;
        run.drain().await?;
    }
    // The runs themselves are the month's minute runs (counted there): only the orders' part here.
    m.lab_order = run
        .usage()
        .plus(&before, -1.0)
        .plus(&m.minute_run, -(sample.minute_runs as f64))
        .scaled(1.0 / orders as f64);
    Ok(m)
}

fn order_body(user_id: &str, test_id: &str) -> serde_json::Value {
    serde_json::json!({
        "user_id": user_id,
        "patient_details": {
            "first_name": "Grace", "last_name": "Hopper", "dob": "1970-12-09", "gender": "female",
            "phone_number": "+12125550123", "email": "grace@example.com"
        },
        "patient_address": {"first_line": "1 Main St", "city": "New York", "state": "NY", "zip": "10001", "country": "US"},
        "order_set": {"lab_test_ids": [test_id]}
    })
}

/// Prints the month: quantities, dollars by line and by service, the line that costs most.
pub fn print_month(month: &Usage) {
    let users = MONTH_USERS;
    println!("| line | per user-month | month of {users:.0} users | list price | $ per month |");
    println!("|---|---:|---:|---|---:|");
    for (p, d) in month.dollars() {
        let q = month.get(p.line);
        println!(
            "| {} | {:.1} | {:.0} | ${:.3e} per {} | {:.2} |",
            p.line,
            q / users,
            q,
            p.dollars_per_unit,
            p.unit,
            d
        );
    }
    println!();
    println!("| service | $ per {users:.0} users per month |");
    println!("|---|---:|");
    for (s, d) in month.by_service() {
        println!("| {s} | {d:.2} |");
    }
    let total = month.total_dollars();
    println!("| **total** | **{total:.2}** |");
    let gb_emulated = month.get(line::GB_SECONDS_EMULATED);
    println!(
        "Lambda: own work {:.0} s, AWS calls {:.0} s on moto and {:.0} s at the published latencies; \
         {:.0} GB-seconds priced (${:.2}), {gb_emulated:.0} as measured on moto (${:.2}, not priced)",
        month.get(line::OWN_SECONDS),
        month.get(line::AWS_SECONDS_EMULATED),
        month.get(line::AWS_SECONDS_PRICED),
        month.get(line::GB_SECONDS),
        month.get(line::GB_SECONDS) * 0.000_013_333_4,
        gb_emulated * 0.000_013_333_4,
    );
    if let Some((p, d)) = month.dollars().into_iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
        println!("costs most: {} ({}), ${d:.2} of ${total:.2}", p.line, p.service);
    }
    let verdict = if total <= 10.0 { "met".to_owned() } else { format!("MISSED by ${:.2}", total - 10.0) };
    println!("target <= $10 per 1,000 users per month: {verdict}");
}

/// The committed per-user-month figures a small run is compared with.
pub const BASELINE_PATH: &str = "cost-baseline.json";

/// Lines of `now` that more than doubled against `baseline` (Lambda GB-seconds left out: a
/// measured duration depends on the build and the machine, not on the code's AWS calls).
pub fn doubled(baseline: &Usage, now: &Usage) -> Vec<String> {
    let mut out = Vec::new();
    for (line, was) in &baseline.0 {
        if line == line::GB_SECONDS {
            continue;
        }
        let is = now.get(line);
        if is > 2.0 * was.max(f64::EPSILON) && is > 1e-9 {
            out.push(format!("{line}: {is:.3} per user-month, baseline {was:.3}"));
        }
    }
    for (line, is) in &now.0 {
        if !baseline.0.contains_key(line) && *is > 0.0 {
            out.push(format!("{line}: {is:.3} per user-month, not in the baseline"));
        }
    }
    out
}

/// Phases of `m` and their per-user-month share, for the breakdown.
pub fn phases(m: &Measured) -> Vec<(&'static str, Usage)> {
    let users = MONTH_USERS;
    let user_days = users * MONTH_DAYS;
    let mut idle = Usage::default();
    idle.add_to(line::SQS, POLLED_QUEUES * IDLE_RECEIVES_PER_QUEUE_MONTH);
    vec![
        ("minute worker (every minute)", m.minute_run.scaled(MINUTE_RUNS_PER_MONTH)),
        ("Lambda's pollers on 4 idle queues", idle),
        ("onboarding (2 links, 90-day pulls, events)", m.onboarding.scaled(users)),
        ("poll fan-out (96 a day)", m.poll_fanout.scaled(POLLS_PER_DAY * MONTH_DAYS)),
        ("the push's poll finding the new day (1 a day)", m.poll_new_day.scaled(user_days)),
        (
            "the daily safety-net poll finding nothing new (1 a day)",
            m.poll_nothing_new.scaled(user_days * safety_net_polls_per_day()),
        ),
        ("API reads (100 a day)", m.read.scaled(user_days * READS_PER_USER_DAY)),
        ("lab orders (1 per 50 users)", m.lab_order.scaled(users / USERS_PER_ORDER)),
    ]
}

/// Prints the phases' dollars per month of [`MONTH_USERS`] users, and per user-month their
/// DynamoDB units, requests and Lambda seconds (priced, and on moto).
pub fn print_phases(m: &Measured) {
    println!(
        "| phase | $ per {MONTH_USERS:.0} users per month | of which DynamoDB | Lambda | SQS | EventBridge | \
         per user-month: write units | GSI1 write units | read units | SQS requests | events | \
         Lambda invocations | Lambda s priced | Lambda s on moto |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, u) in phases(m) {
        let by = u.by_service();
        let of = |s: &str| by.iter().find(|(n, _)| *n == s).map_or(0.0, |(_, d)| *d);
        let per_user = |l: &str| u.get(l) / MONTH_USERS;
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {:.1} |",
            u.total_dollars(),
            of("DynamoDB"),
            of("Lambda"),
            of("SQS"),
            of("EventBridge"),
            per_user(line::DDB_WRITE),
            per_user(line::DDB_INDEX_WRITE),
            per_user(line::DDB_READ),
            per_user(line::SQS),
            per_user(line::EVENTS),
            per_user(line::LAMBDA),
            per_user(line::OWN_SECONDS) + per_user(line::AWS_SECONDS_PRICED),
            per_user(line::OWN_SECONDS) + per_user(line::AWS_SECONDS_EMULATED),
        );
    }
    println!();
    println!("AWS calls per user-month by phase, the most frequent:");
    for (name, u) in phases(m) {
        let mut calls: Vec<(&String, &f64)> = u.0.iter().filter(|(k, _)| k.starts_with("calls/")).collect();
        calls.sort_by(|x, y| y.1.total_cmp(x.1));
        let top: Vec<String> = calls
            .into_iter()
            .take(6)
            .map(|(k, v)| format!("{:.0} {}", v / MONTH_USERS, k.trim_start_matches("calls/")))
            .collect();
        println!("  {name}: {}", top.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_more_than_doubles_is_named() {
        let baseline = Usage([(line::SQS.to_owned(), 10.0), (line::API.to_owned(), 3.0)].into());
        let same = Usage([(line::SQS.to_owned(), 19.0), (line::API.to_owned(), 6.0)].into());
        assert!(doubled(&baseline, &same).is_empty());
        let more = Usage([(line::SQS.to_owned(), 21.0), (line::API.to_owned(), 3.0)].into());
        let found = doubled(&baseline, &more);
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with(line::SQS), "{found:?}");
        // A line the baseline never had is a change too.
        let new = Usage([(line::EVENTS.to_owned(), 1.0)].into());
        assert_eq!(doubled(&baseline, &new).len(), 1);
    }

    fn span(service: Service, operation: &'static str, at: Instant, from_ms: u64, to_ms: u64) -> CallSpan {
        CallSpan {
            service,
            operation,
            start: at + Duration::from_millis(from_ms),
            end: at + Duration::from_millis(to_ms),
            by_function: true,
        }
    }

    #[test]
    fn an_invocation_is_priced_as_its_own_work_plus_the_published_latencies() {
        let t = Instant::now();
        let end = t + Duration::from_millis(200);
        // Two GetItem of 40 ms each on the emulator, one after the other: 120 ms of own work,
        // and 2 × 10 ms priced instead of 80.
        let calls =
            [span(Service::DynamoDb, "GetItem", t, 10, 50), span(Service::DynamoDb, "GetItem", t, 60, 100)];
        let s = split(t, end, &calls);
        assert_eq!(s.own, Duration::from_millis(120));
        assert_eq!(s.aws_emulated, Duration::from_millis(80));
        assert_eq!(s.aws_priced, Duration::from_millis(20));
        assert_eq!(s.priced(), Duration::from_millis(140));
        // Five PutEvents in flight at once for the same 100 ms (a batch's messages): one latency.
        let parallel: Vec<CallSpan> =
            (0..5).map(|_| span(Service::EventBridge, "PutEvents", t, 50, 150)).collect();
        let s = split(t, end, &parallel);
        assert_eq!(s.own, Duration::from_millis(100));
        assert_eq!(s.aws_priced, Duration::from_millis(100));
        // A rule's delivery played in-process takes its time from the invocation and adds none;
        // a call from before the invocation is not its.
        let mut delivery = span(Service::Sqs, "SendMessageBatch", t, 0, 100);
        delivery.by_function = false;
        let earlier =
            CallSpan { start: t - Duration::from_millis(5), ..span(Service::Sqs, "SendMessage", t, 0, 1) };
        let s = split(t, end, &[delivery, earlier]);
        assert_eq!(s.own, Duration::from_millis(100));
        assert_eq!(s.aws_priced, Duration::ZERO);
    }

    #[test]
    fn every_service_called_has_a_published_latency() {
        for service in [Service::DynamoDb, Service::Sqs, Service::EventBridge, Service::Scheduler] {
            assert!(latency_of(service, "AnyOperation") > Duration::ZERO, "{service:?}");
        }
        assert_eq!(latency_of(Service::DynamoDb, "GetItem"), Duration::from_millis(10));
        assert_eq!(latency_of(Service::DynamoDb, "TransactWriteItems"), Duration::from_millis(20));
    }

    #[test]
    fn memory_sizes_come_from_the_template() {
        let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml"))
            .expect("the SAM template");
        let sizes = memory_sizes(&template);
        assert_eq!(sizes.get("pull-worker"), Some(&1024.0));
        assert_eq!(sizes.get("user-api"), Some(&256.0));
        assert_eq!(sizes.get("bulk-worker"), Some(&512.0));
    }

    #[test]
    fn a_month_prices_every_line() {
        let mut one = Usage::default();
        one.add_to(line::DDB_WRITE, 1.0);
        one.add_to(line::API, 1.0);
        let m = Measured { onboarding: one, ..Measured::default() };
        let month = m.month();
        // 1,000 users: 1,000 write units and 1,000 requests, and the idle pollers' receives.
        assert_eq!(month.get(line::DDB_WRITE), 1000.0);
        let dollars = month.total_dollars();
        let expected =
            1000.0 * 0.625e-6 + 1000.0 * 1.0e-6 + POLLED_QUEUES * IDLE_RECEIVES_PER_QUEUE_MONTH * 0.4e-6;
        assert!((dollars - expected).abs() < 1e-9, "{dollars} vs {expected}");
    }
}
