//! The local stack: every API router and worker in one process, on embedded storage.
//!
//! `make run` starts it; tests build one in memory with a manual clock and drive its jobs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wearlab_domain::ids::TeamId;
use wearlab_domain::ports::{Clock, Scheduler, SystemClock, Table};
use wearlab_domain::{Deps, DomainError, teams};
use wearlab_embedded::{MemoryBus, RedbTable, TableScheduler};
use wearlab_web::{App, AppState};

/// The team of a local stack.
pub const LOCAL_TEAM_ID: TeamId = TeamId(uuid::Uuid::from_u128(0x0000_0000_0000_4000_8000_0000_0000_0001));
/// How often due one-time jobs are looked for.
pub const JOB_POLL: Duration = Duration::from_secs(1);
/// How often the erasure sweep and the expiry purge run, as the hourly rule does on AWS.
pub const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// One process's adapters and workers.
#[derive(Clone)]
pub struct LocalStack {
    pub deps: Deps,
    pub table: RedbTable,
    pub scheduler: TableScheduler,
    /// What the stack published, readable by tests and at `GET /local/events`.
    pub bus: MemoryBus,
}

impl LocalStack {
    /// A stack on a redb file under `data_dir`, on the system clock.
    pub fn open(data_dir: &Path) -> Result<Self, DomainError> {
        let table = RedbTable::open(&data_dir.join("wearlab.redb"))?;
        Ok(Self::with(table, Arc::new(SystemClock)))
    }

    /// A stack in memory on the given clock (tests, benchmarks).
    pub fn in_memory(clock: Arc<dyn Clock>) -> Self {
        Self::with(RedbTable::in_memory(), clock)
    }

    fn with(table: RedbTable, clock: Arc<dyn Clock>) -> Self {
        let shared: Arc<dyn Table> = Arc::new(table.clone());
        let scheduler = TableScheduler::new(shared.clone());
        let bus = MemoryBus::new();
        let deps = Deps {
            table: shared,
            scheduler: Arc::new(scheduler.clone()) as Arc<dyn Scheduler>,
            clock,
            bus: Arc::new(bus.clone()),
        };
        Self { deps, table, scheduler, bus }
    }

    /// Every API router on this stack's adapters.
    pub fn app(&self, state: AppState) -> App {
        app(state)
    }

    pub fn state(&self) -> AppState {
        AppState::new(self.deps.clone())
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

    /// The hourly maintenance: erasure sweep, then the expiry purge DynamoDB's TTL would do.
    pub async fn hourly(&self) -> Result<(), DomainError> {
        let sweep = serde_json_event();
        erasure_worker::handle(&self.deps, sweep).await?;
        self.table.purge_expired(self.deps.now().timestamp()).await?;
        Ok(())
    }

    /// Runs the job poll and the hourly maintenance until the process ends.
    pub fn spawn_workers(&self) {
        let jobs = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(JOB_POLL);
            loop {
                tick.tick().await;
                if let Err(e) = jobs.run_due_jobs().await {
                    tracing::warn!(error = %e, "job poll failed");
                }
            }
        });
        let sweeper = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SWEEP_EVERY);
            loop {
                tick.tick().await;
                if let Err(e) = sweeper.hourly().await {
                    tracing::warn!(error = %e, "hourly maintenance failed");
                }
            }
        });
    }
}

/// Every API function's routes, documented together.
pub fn routes() -> wearlab_web::Routes {
    user_api::routes().merge(link_api::routes()).merge(lab_api::routes())
}

/// Every router of every API function, served together, `/openapi.json` included.
pub fn app(state: AppState) -> App {
    wearlab_web::app(routes(), state)
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

/// Where the local stack keeps its data and its key.
pub fn data_dir() -> PathBuf {
    std::env::var_os("WEARLAB_DATA_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".local"))
}
