//! The local stack: every API router and worker in one process, on embedded storage.
//!
//! `make run` starts it; tests build one in memory with a manual clock and drive its jobs.

pub mod listener;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wearlab_domain::common::crypto::{DataKey, SigningKey};
use wearlab_domain::common::ids::TeamId;
use wearlab_domain::common::settings::{Settings, whole_number};
use wearlab_domain::ports::providers::Providers;
use wearlab_domain::ports::{
    Clock, LabNetwork, Queue, QueueName, Scheduler, ShiftedClock, SystemClock, Table,
};
use wearlab_domain::webhooks::WebhookPorts;
use wearlab_domain::webhooks::url::UrlPolicy;
use wearlab_domain::{Deps, DomainError, teams};
use wearlab_embedded::{MemoryBus, RedbTable, TableQueue, TableScheduler};
use wearlab_http::HttpSender;
use wearlab_web::{App, AppState};

/// The allocator the local stack's binary (and the benchmarks that stand for it) installs:
/// mimalloc. With glibc's malloc, a historical pull spent about a third of its CPU in
/// allocation and a fifth waiting on the allocator's arena locks, since serde values built on
/// one thread are freed on another (docs/PERFORMANCE.md, section 5).
pub use mimalloc::MiMalloc as Allocator;

/// The team of a local stack.
pub const LOCAL_TEAM_ID: TeamId =
    TeamId::from_uuid(uuid::Uuid::from_u128(0x0000_0000_0000_4000_8000_0000_0000_0001));
/// How often due one-time jobs are looked for.
pub const JOB_POLL: Duration = Duration::from_secs(1);
/// How often an idle worker queue is polled again.
pub const QUEUE_POLL: Duration = Duration::from_millis(250);
/// Consumers of the pull and webhook queues, each handling a batch of up to ten messages at
/// once: up to 40 pulls or deliveries in flight.
pub const QUEUE_CONSUMERS: usize = 4;
/// How often the erasure sweep and the expiry purge run, as the hourly rule does on AWS.
pub const SWEEP_EVERY: Duration = Duration::from_secs(3600);
/// How often connections are polled for new data, as the poll schedule does on AWS.
pub const DATA_POLL_EVERY: Duration = Duration::from_secs(15 * 60);
/// How often open lab orders are advanced and the outbox relayed, as the minute-worker's rule
/// does on AWS.
pub const SWEEP_WORKER_EVERY: Duration = Duration::from_secs(60);

/// The process environment, with `WEARLAB_SIMULATED_PROVIDERS` true unless it is set.
fn local_var(name: &str) -> Option<String> {
    match std::env::var(name).ok() {
        None if name == wearlab_providers::SIMULATED_PROVIDERS_VAR => Some("true".to_owned()),
        value => value,
    }
}

/// The ports only some functions take (they are not on [`Deps`]), all of them: this process
/// serves every function.
#[derive(Clone)]
pub struct Ports {
    /// The work queues (pull, bulk, webhook).
    pub queue: Arc<dyn Queue>,
    /// What a lab does with an order (the simulated lab network).
    pub lab_network: Arc<dyn LabNetwork>,
}

impl Ports {
    /// The queues kept on `table` (the local stack's are on its own table), and the simulated
    /// lab network.
    pub fn on_table(table: Arc<dyn Table>, clock: Arc<dyn Clock>) -> Self {
        Self {
            queue: Arc::new(TableQueue::new(table, clock)),
            lab_network: Arc::new(wearlab_sim::SimulatedLab),
        }
    }
}

/// One process's adapters and workers.
#[derive(Clone)]
pub struct LocalStack {
    pub deps: Deps,
    /// What POSTs the webhook worker's deliveries.
    pub webhook_sender: Arc<HttpSender>,
    pub table: RedbTable,
    pub scheduler: TableScheduler,
    /// What the stack published, readable by tests and at `GET /local/events`.
    pub bus: MemoryBus,
    /// The queues of the background workers (pull, bulk, webhook), on the same table.
    pub queue: TableQueue,
    /// The clock every rule reads, movable forward at `POST /local/clock/advance`.
    pub clock: Arc<ShiftedClock>,
    /// The operator's settings the stack's API and sweeps run with.
    pub settings: Settings,
    /// The key of the phone's per-user tokens (`data_dir/phone_signing_key`); none in memory
    /// unless a test gives one ([`LocalStack::with_phone_key`]).
    pub phone_key: Option<Arc<SigningKey>>,
}

/// The local stack's configuration, read once at start ([`LocalConfig::from_vars`]: `main.rs`
/// passes the process environment): the deployment's [`Settings`] and the local ones. Every
/// value is checked; a bad one stops the stack at start, naming the variable.
#[derive(Debug, Clone)]
pub struct LocalConfig {
    pub settings: Settings,
    /// `WEARLAB_DATA_DIR`: where the table file, the data key and the API key are kept;
    /// default `.local`.
    pub data_dir: PathBuf,
    /// `PORT`: the port on 127.0.0.1, 0 (any free port) to 65535; default 8080.
    pub port: u16,
    /// `WEARLAB_CACHE_MB` in bytes: the embedded table's page cache ([`cache_bytes_of`]).
    pub cache_bytes: usize,
    /// `WEARLAB_DATA_KEY`: the data key (base64 of 32 bytes), else the one kept in the data
    /// directory.
    pub data_key: Option<String>,
    /// `WEARLAB_API_KEY`: the local team's API key, else the one kept in the data directory.
    pub api_key: Option<String>,
    /// `WEARLAB_PHONE_SIGNING_KEY`: the phone tokens' signing key (base64 PKCS#8 DER of an RSA
    /// 2048 key), else the one kept in the data directory.
    pub phone_signing_key: Option<String>,
}

impl LocalConfig {
    /// Every setting from `var` (the process environment in `main.rs`; a map in tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, DomainError> {
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let settings = Settings::from_vars(&var).map_err(|e| DomainError::Rejected(e.to_string()))?;
        let port =
            whole_number("PORT", get("PORT").as_deref(), 0..=65_535, 8080).map_err(DomainError::Rejected)?;
        Ok(Self {
            settings,
            data_dir: get("WEARLAB_DATA_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".local")),
            port: u16::try_from(port).unwrap_or(8080),
            cache_bytes: cache_bytes_of(get("WEARLAB_CACHE_MB").as_deref())?,
            data_key: get("WEARLAB_DATA_KEY"),
            api_key: get("WEARLAB_API_KEY"),
            phone_signing_key: get("WEARLAB_PHONE_SIGNING_KEY"),
        })
    }

    /// The defaults with the data in `data_dir` (tests, benchmarks): no environment is read.
    pub fn in_dir(data_dir: &Path) -> Self {
        Self {
            settings: Settings::default(),
            data_dir: data_dir.to_owned(),
            port: 8080,
            cache_bytes: wearlab_embedded::DEFAULT_CACHE_BYTES,
            data_key: None,
            api_key: None,
            phone_signing_key: None,
        }
    }
}

impl LocalStack {
    /// A stack on a redb file under `data_dir` with the default settings (tests, benchmarks).
    pub fn open(data_dir: &Path) -> Result<Self, DomainError> {
        Self::open_with(&LocalConfig::in_dir(data_dir))
    }

    /// A stack on a redb file under `config.data_dir`, on the system clock. Secrets at rest are
    /// sealed with `WEARLAB_DATA_KEY`, or a key generated on first start into
    /// `data_dir/data_key`.
    pub fn open_with(config: &LocalConfig) -> Result<Self, DomainError> {
        let data_dir = &config.data_dir;
        let table = RedbTable::open_with_cache(&data_dir.join("wearlab.redb"), config.cache_bytes)?;
        let key = local_data_key(data_dir, config.data_key.as_deref())?;
        let phone_key = local_phone_key(data_dir, config.phone_signing_key.as_deref())?;
        // Local receivers run on this machine: http and loopback are allowed.
        let sender = HttpSender::new(UrlPolicy::LocalStack).with_in_flight(config.settings.webhook_in_flight);
        // Real providers where the developer configured an OAuth app (docs/PROVIDERS.md); every
        // other provider links to the simulator unless WEARLAB_SIMULATED_PROVIDERS=false: on a
        // laptop, simulated data is the point.
        wearlab_providers::simulated_links(local_var).map_err(DomainError::Rejected)?;
        let providers = |sim| wearlab_providers::from_vars(sim, local_var);
        let stack = Self::with(table, Arc::new(SystemClock), key, sender, providers);
        Ok(Self { settings: config.settings.clone(), phone_key: Some(Arc::new(phone_key)), ..stack })
    }

    /// The same stack with the key of the phone's per-user tokens (tests: a fixed key).
    pub fn with_phone_key(self, key: Arc<SigningKey>) -> Self {
        Self { phone_key: Some(key), ..self }
    }

    /// A stack in memory on the given clock (tests, benchmarks), with a throwaway data key.
    pub fn in_memory(clock: Arc<dyn Clock>) -> Self {
        Self::in_memory_with(clock, |sim| sim)
    }

    /// [`LocalStack::in_memory`] with the simulator wrapped by `providers` (tests put real
    /// adapters pointed at local fakes in front of it).
    pub fn in_memory_with(
        clock: Arc<dyn Clock>,
        providers: impl FnOnce(Arc<dyn Providers>) -> Arc<dyn Providers>,
    ) -> Self {
        let sender = HttpSender::new(UrlPolicy::LocalStack);
        Self::with(RedbTable::in_memory(), clock, DataKey::ephemeral(), sender, providers)
    }

    fn with(
        table: RedbTable,
        inner: Arc<dyn Clock>,
        data_key: DataKey,
        webhook_sender: HttpSender,
        providers: impl FnOnce(Arc<dyn Providers>) -> Arc<dyn Providers>,
    ) -> Self {
        let shifted = Arc::new(ShiftedClock::new(inner));
        let clock: Arc<dyn Clock> = shifted.clone();
        let shared: Arc<dyn Table> = Arc::new(table.clone());
        let scheduler = TableScheduler::new(shared.clone());
        let queue = TableQueue::new(shared.clone(), clock.clone());
        let bus = MemoryBus::feeding(Arc::new(queue.clone()));
        let deps = Deps {
            table: shared,
            scheduler: Arc::new(scheduler.clone()) as Arc<dyn Scheduler>,
            clock: clock.clone(),
            bus: Arc::new(PullRuleBus { bus: bus.clone(), queue: queue.clone() }),
            providers: providers(Arc::new(wearlab_sim::SimProviders::new(clock.clone()))),
            data_key: Arc::new(data_key),
        };
        Self {
            deps,
            webhook_sender: Arc::new(webhook_sender),
            table,
            scheduler,
            bus,
            queue,
            clock: shifted,
            settings: Settings::default(),
            phone_key: None,
        }
    }

    /// Every API router on this stack's adapters, plus the local debug routes: `GET /local/events`
    /// (what the stack published for the key's team, oldest first; `?event_type=` filters,
    /// `?limit=` keeps the last) and `POST /local/clock/advance?seconds=N` (moves the stack's clock forward, for tests that
    /// expire link tokens and portal links; takes the team's API key). Neither exists on Lambda:
    /// only this function adds them.
    pub fn app(&self, state: AppState) -> App {
        self.app_on(state, &self.ports())
    }

    /// [`LocalStack::app`] with other queues or another lab network (tests, benchmarks).
    pub fn app_on(&self, state: AppState, ports: &Ports) -> App {
        let bus = self.bus.clone();
        let clock = self.clock.clone();
        let debug = axum::Router::new()
            .route(
                LOCAL_EVENTS_PATH,
                axum::routing::get(
                    move |team: wearlab_web::AuthTeam, q: axum::extract::Query<EventsQuery>| {
                        let bus = bus.clone();
                        async move {
                            let own = bus
                                .published()
                                .into_iter()
                                .filter(|e| e.team_id == team.0.as_uuid())
                                .collect();
                            axum::Json(q.0.select(own))
                        }
                    },
                ),
            )
            .route(
                LOCAL_CLOCK_PATH,
                axum::routing::post(
                    move |_: wearlab_web::AuthTeam, q: axum::extract::Query<AdvanceQuery>| {
                        let clock = clock.clone();
                        async move { advance(&clock, q.0.seconds) }
                    },
                ),
            );
        let state = state.with_webhook_urls(UrlPolicy::LocalStack);
        wearlab_web::app(served_routes(ports).merge(wearlab_web::Routes::from(debug)), state)
    }

    pub fn state(&self) -> AppState {
        let state = AppState::new(self.deps.clone(), self.settings.clone());
        match &self.phone_key {
            Some(key) => state.with_phone_key(key.clone()),
            None => state,
        }
    }

    /// This stack's queues and the simulated lab network.
    pub fn ports(&self) -> Ports {
        Ports { queue: Arc::new(self.queue.clone()), lab_network: Arc::new(wearlab_sim::SimulatedLab) }
    }

    /// Ensures the local team exists and `key` (or a new key) opens it. Returns the key.
    pub async fn ensure_team_key(&self, key: Option<&str>) -> Result<String, DomainError> {
        teams::ensure_team(&self.deps, LOCAL_TEAM_ID, "Local team").await?;
        match key {
            Some(k) => {
                teams::register_key(&self.deps, LOCAL_TEAM_ID, k).await?;
                Ok(k.to_owned())
            }
            None => Ok(teams::issue_key(&self.deps, LOCAL_TEAM_ID, "local").await?.secret),
        }
    }

    /// Runs every one-time job that is due now, as EventBridge Scheduler would. Returns how many ran.
    pub async fn run_due_jobs(&self) -> Result<usize, DomainError> {
        let due = self.scheduler.due(self.deps.now()).await?;
        let mut ran = 0;
        for job in due {
            match erasure_worker::handle(&self.deps, job.payload.clone()).await {
                Ok(outcome) => {
                    tracing::info!(job = %job.name, ?outcome, "job ran");
                    self.scheduler.cancel(&job.name).await?;
                    ran += 1;
                }
                // Left in place: the next poll retries it, as the scheduler's retry policy would.
                Err(e) => tracing::warn!(job = %job.name, error = %e, "job failed; will retry"),
            }
        }
        Ok(ran)
    }

    /// Handles the webhook queue's due messages once (fan-out and deliveries). Returns how many.
    pub async fn run_webhooks_once(&self) -> Result<usize, DomainError> {
        let ports = WebhookPorts { queue: &self.queue, sender: self.webhook_sender.as_ref() };
        let n = self
            .queue
            .run_once(QueueName::Webhook, |env, _| webhook_worker::handle(&self.deps, ports, env))
            .await?;
        Ok(n)
    }

    /// Handles the pull queue's due messages once (historical pulls, polls, pulls started by
    /// new connections). Returns how many.
    pub async fn run_pulls_once(&self) -> Result<usize, DomainError> {
        let n = self
            .queue
            .run_once(QueueName::Pull, |env, _| pull_worker::handle(&self.deps, &self.queue, env))
            .await?;
        Ok(n)
    }

    /// Handles the bulk queue's due messages once (imports, historical pull triggers), then its
    /// dead letters (their items count as failed). Returns how many.
    pub async fn run_bulk_once(&self) -> Result<usize, DomainError> {
        let n = self
            .queue
            .run_once(QueueName::Bulk, |env, _| bulk_worker::handle(&self.deps, &self.queue, env))
            .await?;
        let dead = self
            .queue
            .run_dead_letters_once(QueueName::Bulk, |env| bulk_worker::handle_dead_letter(&self.deps, env))
            .await?;
        Ok(n + dead)
    }

    /// What the poll schedule does on AWS: queues one poll of every polled connection.
    pub async fn schedule_poll(&self) -> Result<(), DomainError> {
        let body =
            wearlab_domain::pipeline::PullMessage::Job(wearlab_domain::pipeline::Job::PollAll {}).body();
        wearlab_domain::ports::Queue::send(
            &self.queue,
            QueueName::Pull,
            vec![wearlab_domain::ports::Outgoing::now(body)],
        )
        .await
        .map_err(|e| DomainError::Busy(e.to_string()))
    }

    /// The hourly maintenance: erasure sweep, then the expiry purge DynamoDB's TTL would do.
    pub async fn hourly(&self) -> Result<(), DomainError> {
        let sweep = serde_json_event();
        erasure_worker::handle(&self.deps, sweep).await?;
        self.table.purge_expired(self.deps.now().timestamp()).await?;
        Ok(())
    }

    /// What the every-minute rule does on AWS (the minute-worker): advances every open lab
    /// order whose next status change is due, then publishes events left in the outbox.
    pub async fn sweep(&self) -> Result<minute_worker::Outcome, DomainError> {
        minute_worker::handle(&self.deps, &wearlab_sim::SimulatedLab, self.settings.public_url.as_deref())
            .await
    }

    /// Runs the queue workers, the job poll, the data poll, the every-minute sweeps and the
    /// hourly maintenance until the process ends.
    pub fn spawn_workers(&self) {
        self.consume(QUEUE_CONSUMERS, "webhook queue", |s| async move { s.run_webhooks_once().await });
        self.consume(QUEUE_CONSUMERS, "pull queue", |s| async move { s.run_pulls_once().await });
        self.consume(1, "bulk queue", |s| async move { s.run_bulk_once().await });
        self.every(DATA_POLL_EVERY, "data poll", |s| async move { s.schedule_poll().await });
        self.every(JOB_POLL, "job poll", |s| async move { s.run_due_jobs().await.map(drop) });
        self.every(SWEEP_WORKER_EVERY, "every-minute sweeps", |s| async move { s.sweep().await.map(drop) });
        self.every(SWEEP_EVERY, "hourly maintenance", |s| async move { s.hourly().await });
    }

    /// Runs `consumers` tasks that each handle a queue's due messages (`work` answers how many)
    /// until none is due, then look again every [`QUEUE_POLL`], as Lambda's pollers of an SQS
    /// queue do; a failure is logged and the next poll tries again.
    fn consume<F, Fut>(&self, consumers: usize, what: &'static str, work: F)
    where
        F: Fn(LocalStack) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<usize, DomainError>> + Send,
    {
        let work = Arc::new(work);
        for _ in 0..consumers {
            let (stack, work) = (self.clone(), work.clone());
            tokio::spawn(async move {
                loop {
                    match work(stack.clone()).await {
                        Ok(n) if n > 0 => tokio::task::yield_now().await,
                        Ok(_) => tokio::time::sleep(QUEUE_POLL).await,
                        Err(e) => {
                            tracing::warn!(error = %e, task = what, "queue consumer failed");
                            tokio::time::sleep(QUEUE_POLL).await;
                        }
                    }
                }
            });
        }
    }

    /// Runs `work` now and then every `period` in a task of its own; a failure is logged and
    /// the next tick tries again, as a scheduled rule or queue poller would.
    fn every<F, Fut>(&self, period: Duration, what: &'static str, work: F)
    where
        F: Fn(LocalStack) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<(), DomainError>> + Send,
    {
        let stack = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tick.tick().await;
                if let Err(e) = work(stack.clone()).await {
                    tracing::warn!(error = %e, task = what, "background task failed");
                }
            }
        });
    }
}

/// Every API function's routes, documented together. Their handlers that use a queue or the
/// lab network find it where [`app`] provides it.
pub fn routes() -> wearlab_web::Routes {
    user_api::routes()
        .merge(link_api::routes())
        .merge(team_api::routes())
        .merge(bulk_api::routes())
        .merge(lab_api::routes())
        .merge(data_api::routes())
        .merge(sdk_api::routes())
        .merge(fhir_api::routes())
}

/// Every router of every API function, served together on `ports`, `/openapi.json` included.
/// Webhook endpoints may be plain http to loopback here: the team's receivers run on the same
/// machine.
pub fn app(state: AppState, ports: &Ports) -> App {
    wearlab_web::app(served_routes(ports), state.with_webhook_urls(UrlPolicy::LocalStack))
}

/// The documented routes on `ports`, plus the undocumented browser pages: the simulated
/// providers' OAuth consent page (the OAuth callback and hosted link page are part of link-api).
fn served_routes(ports: &Ports) -> wearlab_web::Routes {
    routes()
        .provide(ports.queue.clone())
        .provide(ports.lab_network.clone())
        .merge(wearlab_web::Routes::from(wearlab_sim::routes()))
}

/// The local bus as deployed on AWS: every event is kept (and feeds the webhook queue), and
/// `provider.connection.created` also goes to the pull queue, as the EventBridge rule to the
/// pull queue does, so a new connection starts its historical pull.
struct PullRuleBus {
    bus: MemoryBus,
    queue: TableQueue,
}

#[async_trait::async_trait]
impl wearlab_domain::ports::EventBus for PullRuleBus {
    async fn publish(
        &self,
        events: Vec<wearlab_domain::ports::EventEnvelope>,
    ) -> Result<(), wearlab_domain::ports::BusError> {
        use wearlab_domain::ports::{BusError, Outgoing, Queue};
        let pulls: Vec<Outgoing> = events
            .iter()
            .filter(|e| e.event_type == wearlab_domain::linking::connections::CONNECTION_CREATED)
            .map(|e| Outgoing::now(wearlab_domain::pipeline::PullMessage::Event(e.clone()).body()))
            .collect();
        let n = events.len();
        self.bus.publish(events).await?;
        if !pulls.is_empty() {
            self.queue
                .send(QueueName::Pull, pulls)
                .await
                .map_err(|e| BusError::NotPublished { failed: n, reason: e.to_string() })?;
        }
        Ok(())
    }
}

/// The local-only debug route listing published events.
pub const LOCAL_EVENTS_PATH: &str = "/local/events";
/// The local-only route that moves the clock forward.
pub const LOCAL_CLOCK_PATH: &str = "/local/clock/advance";
/// The most one call may move the clock (a year): enough to cross any expiry.
pub const MAX_ADVANCE_SECONDS: i64 = 366 * 24 * 3600;

#[derive(Debug, serde::Deserialize)]
pub struct AdvanceQuery {
    seconds: i64,
}

/// `POST /local/clock/advance`: 1 to `MAX_ADVANCE_SECONDS` forward; answers the new now.
fn advance(
    clock: &ShiftedClock,
    seconds: i64,
) -> Result<axum::Json<serde_json::Value>, wearlab_web::ApiError> {
    if !(1..=MAX_ADVANCE_SECONDS).contains(&seconds) {
        return Err(wearlab_web::ApiError::BadRequest(format!(
            "seconds must be between 1 and {MAX_ADVANCE_SECONDS}"
        )));
    }
    let now = clock.advance_seconds(seconds);
    tracing::info!(seconds, "local clock moved forward");
    Ok(axum::Json(serde_json::json!({ "now": now })))
}

#[derive(Debug, Default, serde::Deserialize)]
pub struct EventsQuery {
    #[serde(default)]
    event_type: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

impl EventsQuery {
    fn select(
        &self,
        events: Vec<wearlab_domain::ports::EventEnvelope>,
    ) -> Vec<wearlab_domain::ports::EventEnvelope> {
        let mut kept: Vec<_> = events
            .into_iter()
            .filter(|e| self.event_type.as_ref().is_none_or(|t| &e.event_type == t))
            .collect();
        if let Some(n) = self.limit {
            kept.drain(..kept.len().saturating_sub(n));
        }
        kept
    }
}

/// The embedded table's page cache: `WEARLAB_CACHE_MB` mebibytes (1 to 65,536), else
/// [`wearlab_embedded::DEFAULT_CACHE_BYTES`]. It bounds most of the process's memory
/// beyond the requests in flight (docs/PERFORMANCE.md, section 5).
fn cache_bytes_of(setting: Option<&str>) -> Result<usize, DomainError> {
    const MIB: usize = 1024 * 1024;
    let mb =
        whole_number("WEARLAB_CACHE_MB", setting, 1..=65_536, wearlab_embedded::DEFAULT_CACHE_BYTES / MIB)
            .map_err(DomainError::Rejected)?;
    Ok(mb * MIB)
}

/// The local data key: `configured` (`WEARLAB_DATA_KEY`, base64 of 32 bytes) if set, else the
/// key kept in `data_dir/data_key`, generated on first start (mode 0600, like the API key file).
fn local_data_key(data_dir: &Path, configured: Option<&str>) -> Result<DataKey, DomainError> {
    let unusable = |what: &str, e: &dyn std::fmt::Display| {
        DomainError::Rejected(format!("{what} is not a usable data key: {e}"))
    };
    if let Some(k) = configured {
        return DataKey::from_base64(k).map_err(|e| unusable("WEARLAB_DATA_KEY", &e));
    }
    let file = data_dir.join("data_key");
    if let Ok(saved) = std::fs::read_to_string(&file) {
        return DataKey::from_base64(&saved).map_err(|e| unusable(&file.display().to_string(), &e));
    }
    let (key, encoded) = DataKey::generate();
    std::fs::write(&file, &encoded).map_err(|e| unusable(&file.display().to_string(), &e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| unusable(&file.display().to_string(), &e))?;
    }
    Ok(key)
}

/// The phone tokens' signing key: `configured` (`WEARLAB_PHONE_SIGNING_KEY`) if set, else the
/// key kept in `data_dir/phone_signing_key`, generated on first start (RSA 2048, base64 PKCS#8
/// DER, mode 0600 like the data key).
fn local_phone_key(data_dir: &Path, configured: Option<&str>) -> Result<SigningKey, DomainError> {
    let unusable = |what: &str, e: &dyn std::fmt::Display| {
        DomainError::Rejected(format!("{what} is not a usable signing key: {e}"))
    };
    if let Some(k) = configured {
        return SigningKey::from_base64(k).map_err(|e| unusable("WEARLAB_PHONE_SIGNING_KEY", &e));
    }
    let file = data_dir.join("phone_signing_key");
    if let Ok(saved) = std::fs::read_to_string(&file) {
        return SigningKey::from_base64(&saved).map_err(|e| unusable(&file.display().to_string(), &e));
    }
    let (key, encoded) = SigningKey::generate().map_err(|e| unusable("a new key", &e))?;
    write_private(&file, &encoded).map_err(|e| unusable(&file.display().to_string(), &e))?;
    Ok(key)
}

/// Writes a secret file readable by its owner only (0600 from the start on unix).
fn write_private(file: &Path, text: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    std::io::Write::write_all(&mut options.open(file)?, text.as_bytes())
}

/// The OpenAPI document of the whole API, as `docs/openapi.json` holds it.
pub fn openapi_json() -> String {
    let doc = wearlab_web::openapi(routes());
    let mut json = serde_json::to_string_pretty(&doc).expect("the document serializes");
    json.push('\n');
    json
}

/// The event the hourly rule sends on AWS.
fn serde_json_event() -> serde_json::Value {
    serde_json::json!({"detail-type": "Scheduled Event", "source": "wearlab.local"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_setting_is_mebibytes_within_bounds_or_refused_by_name() {
        assert_eq!(cache_bytes_of(None).unwrap(), wearlab_embedded::DEFAULT_CACHE_BYTES);
        assert_eq!(cache_bytes_of(Some("16")).unwrap(), 16 * 1024 * 1024);
        assert_eq!(cache_bytes_of(Some(" 1 ")).unwrap(), 1024 * 1024);
        for bad in ["0", "-1", "65537", "64MB", ""] {
            let e = cache_bytes_of(Some(bad)).unwrap_err().to_string();
            assert!(e.contains("WEARLAB_CACHE_MB"), "{bad}: {e}");
        }
    }

    fn config(pairs: &[(&str, &str)]) -> Result<LocalConfig, DomainError> {
        let map: std::collections::HashMap<String, String> =
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        LocalConfig::from_vars(move |name| map.get(name).cloned())
    }

    #[test]
    fn the_local_configuration_is_read_once_with_its_defaults() {
        let c = config(&[]).unwrap();
        assert_eq!((c.port, c.data_dir.clone()), (8080, PathBuf::from(".local")));
        assert_eq!(c.settings, Settings::default());
        assert_eq!(config(&[("PORT", "0")]).unwrap().port, 0, "any free port");
        let c = config(&[
            ("PORT", "9000"),
            ("WEARLAB_DATA_DIR", "/tmp/w"),
            ("WEARLAB_PUBLIC_URL", "http://127.0.0.1:9000"),
        ])
        .unwrap();
        assert_eq!((c.port, c.data_dir), (9000, PathBuf::from("/tmp/w")));
        assert_eq!(c.settings.public_url.as_deref(), Some("http://127.0.0.1:9000"));
    }

    #[test]
    fn a_bad_local_setting_stops_the_stack_naming_its_variable() {
        for (name, bad) in [
            ("PORT", "-1"),
            ("PORT", "65536"),
            ("PORT", "http"),
            ("WEARLAB_CACHE_MB", "0"),
            ("WEARLAB_TEAM_RATE_LIMIT", "0"),
            ("WEARLAB_AUDIT_RETENTION_DAYS", "3661"),
            ("WEARLAB_WEBHOOK_IN_FLIGHT", "1001"),
            ("WEARLAB_PUBLIC_URL", "localhost:8080"),
        ] {
            let e = config(&[(name, bad)]).unwrap_err().to_string();
            assert!(e.contains(name), "{name}={bad}: {e}");
        }
    }

    #[test]
    fn the_phone_signing_key_is_kept_in_the_data_dir_owner_only_and_reused() {
        let dir = std::env::temp_dir().join(format!("wearlab-phone-key-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = local_phone_key(&dir, None).unwrap();
        let file = dir.join("phone_signing_key");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let again = local_phone_key(&dir, None).unwrap();
        assert_eq!(again.public_key_der(), first.public_key_der(), "the kept key on the next start");
        let saved = std::fs::read_to_string(&file).unwrap();
        assert_eq!(local_phone_key(&dir, Some(&saved)).unwrap().public_key_der(), first.public_key_der());
        let e = local_phone_key(&dir, Some("c2hvcnQ=")).err().unwrap().to_string();
        assert!(e.contains("WEARLAB_PHONE_SIGNING_KEY") && !e.contains("c2hvcnQ"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
