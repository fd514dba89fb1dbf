//! Historical pulls and the periodic poll.
//!
//! A historical pull of (user, provider) keeps a progress item in the user's partition
//! (`PULL#<provider>#<pull_id>`): whether it holds throttle capacity, and per resource the next
//! chunk to fetch and whether it is done. Each chunk is stored, then the progress is saved; only
//! after a resource's last chunk is its `historical.data.<resource>.created` emitted and the
//! resource marked done. A redelivered message resumes where the last one stopped, takes no
//! second throttle capacity, stores the same items again (same keys, so nothing twice) and
//! emits nothing a second time.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{Days, NaiveDate};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use wearlab_models::data::HistoricalPullCompleted;
use wearlab_models::{ConnectionStatus, EventEnvelope};

use super::normalize::{Context, Entry, is_modelled, is_summary, produced};
use super::store::{self, Change};
use super::{Job, PullMessage, data_events, event, event_types, history_days, preferences};
use crate::Deps;
use crate::common::backoff;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, TimeZoneId, UserId};
use crate::common::metrics;
use crate::common::provider_catalog::catalog;
use crate::common::throttle::{self, Decision};
use crate::keys::pipeline as keys;
use crate::linking::connections::{CONNECTION_CREATED, ConnectionRecord};
use crate::linking::refresh;
use crate::ports::providers::{
    DateRange, FetchedResource, ProviderAccount, ProviderError, Providers, RateWindow, RequestGate,
};
use crate::ports::to_body;
use crate::ports::{Condition, Item, Outcome, Outgoing, Query, QueueName, StoreError};
use crate::users::{self, UserRecord};

/// Most days fetched per chunk.
pub const CHUNK_DAYS: u64 = 30;
/// Days of a timeseries' first chunk: its density is not known yet, and a day of 1-second
/// samples is 86,400 records, which a pull must hold in memory at once.
pub const FIRST_SERIES_CHUNK_DAYS: u64 = 1;
/// About how many records a chunk should hold: after each chunk the next one's length is chosen
/// from the records per day it had (1-second heart rate: one day; hourly samples and summaries:
/// [`CHUNK_DAYS`]). Bounds a pull's memory whatever the resolution (see docs/PERFORMANCE.md).
pub const CHUNK_RECORDS: u64 = 100_000;

/// The length of a resource's next chunk, from the last chunk's records over its days. A chunk
/// with no records says nothing of the density (the user did not wear the device): the next
/// one is only twice as long, so dense data after a gap is met a few days at a time.
fn next_chunk_days(records: usize, days: u64) -> u64 {
    let days = days.max(1);
    match records as u64 {
        0 => days.saturating_mul(2).min(CHUNK_DAYS),
        n => (CHUNK_RECORDS.saturating_mul(days) / n).clamp(1, CHUNK_DAYS),
    }
}

/// Days before the last polled day the poll fetches again, to see late changes.
pub const POLL_OVERLAP_DAYS: u64 = 1;
/// Most poll jobs sent per scheduled run page.
const POLL_PAGE: u32 = 500;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PullJob {
    pub team_id: TeamId,
    pub user_id: UserId,
    pub provider: String,
    /// Names the pull: the same id is the same pull (duplicates are no-ops).
    pub pull_id: String,
    /// The bulk trigger that asked for this pull: told when it starts (or cannot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk_op: Option<crate::bulk::ledger::OpRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PollJob {
    pub team_id: TeamId,
    pub user_id: UserId,
    pub provider: String,
    /// The first day to fetch when the connection has no poll state yet (a refresh before its
    /// historical pull finished); without it such a connection is not polled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<NaiveDate>,
}

/// What [`poll_until`] did with one connection.
#[derive(Debug)]
pub enum Polled {
    /// Nothing to poll: no poll state (and no `since`), the user or the connection gone, the
    /// connection not connected, or a range outside the user's ingestion bounds.
    Nothing,
    /// The provider refused the credentials (or renewing them failed, or the deadline passed
    /// while renewing: then `pending`).
    NoAccess { error: Option<ProviderError>, resources: Vec<String> },
    /// Per resource of the provider: stored and announced, failed to fetch, or not fetched by
    /// the deadline (the poll state did not move then: polling again fetches them).
    Polled { done: Vec<String>, failed: Vec<String>, pending: Vec<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ResourceProgress {
    next: NaiveDate,
    done: bool,
    /// Days of the next chunk ([`next_chunk_days`]); absent before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    days: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Progress {
    team_id: TeamId,
    provider: String,
    /// The connection this pull belongs to (a relink starts another pull).
    connection_created_on: chrono::DateTime<chrono::Utc>,
    start: NaiveDate,
    end: NaiveDate,
    /// Throttle capacity was taken (never twice for one pull).
    started: bool,
    resources: BTreeMap<String, ResourceProgress>,
    done: bool,
    /// Tries in a row that failed on the provider (a 5xx, a timeout); a round that goes
    /// through sets it back to zero.
    #[serde(default)]
    failures: u32,
}

/// The poll's state of a connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SyncRecord {
    team_id: TeamId,
    provider: String,
    /// Last day fetched.
    through: NaiveDate,
}

/// Queues a historical pull of the user's connection to `provider` (on demand). Returns its id.
pub async fn start(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    provider: &str,
) -> Result<String, DomainError> {
    users::load_active(deps, team, user_id).await?;
    let Some(conn) = load_connection(deps, user_id, provider).await? else {
        return Err(DomainError::NotFound(format!("The user has no connection to {provider}.")));
    };
    if conn.status != ConnectionStatus::Connected {
        return Err(DomainError::Rejected(format!(
            "The user's connection to {provider} is {}: link it again to pull its history.",
            conn.status
        )));
    }
    let pull_id = format!("req-{}", deps.now().timestamp_micros());
    let job = PullJob {
        team_id: team,
        user_id,
        provider: provider.to_owned(),
        pull_id: pull_id.clone(),
        bulk_op: None,
    };
    send(deps, Job::Pull(job)).await?;
    Ok(pull_id)
}

async fn send(deps: &Deps, job: Job) -> Result<(), DomainError> {
    deps.queue
        .send(QueueName::Pull, vec![Outgoing::now(PullMessage::Job(job).body())])
        .await
        .map_err(|e| DomainError::Busy(e.to_string()))
}

/// Handles one message of the pull queue.
pub async fn handle(deps: &Deps, message: PullMessage) -> Outcome {
    let result = match message {
        PullMessage::Event(e) => on_event(deps, e).await,
        PullMessage::Job(Job::Pull(job)) => metered_pull(deps, &job).await,
        PullMessage::Job(Job::Poll(job)) => poll(deps, &job).await.map(|()| Outcome::Ack),
        PullMessage::Job(Job::PollAll {}) => poll_all(deps).await.map(|_| Outcome::Ack),
    };
    result.unwrap_or_else(|e| Outcome::Fail(e.to_string()))
}

/// [`pull`], reported as a metric: how long this message took, and whether it failed.
async fn metered_pull(deps: &Deps, job: &PullJob) -> Result<Outcome, DomainError> {
    let started = deps.now();
    let result = pull(deps, job).await;
    let took = (deps.now() - started).num_milliseconds().max(0) as u64;
    metrics::pull_handled(&job.provider, took, matches!(result, Err(_) | Ok(Outcome::Fail(_))));
    result
}

/// `provider.connection.created` starts the connection's historical pull; other events are
/// not for this queue.
async fn on_event(deps: &Deps, e: EventEnvelope) -> Result<Outcome, DomainError> {
    if e.event_type != CONNECTION_CREATED {
        return Ok(Outcome::Ack);
    }
    let Some(provider) =
        e.data.get("provider").and_then(|p| p.get("slug").or(Some(p))).and_then(|p| p.as_str())
    else {
        return Ok(Outcome::Ack);
    };
    let user_id = UserId::from_uuid(e.user_id);
    let Some(conn) = load_connection(deps, user_id, provider).await? else { return Ok(Outcome::Ack) };
    // One pull per connection: a duplicate event names the same pull.
    let pull_id = format!("conn-{}", conn.created_on.timestamp_micros());
    let job = PullJob {
        team_id: TeamId::from_uuid(e.team_id),
        user_id,
        provider: provider.to_owned(),
        pull_id,
        bulk_op: None,
    };
    metered_pull(deps, &job).await
}

async fn load_connection(
    deps: &Deps,
    user: UserId,
    provider: &str,
) -> Result<Option<ConnectionRecord>, DomainError> {
    Ok(match deps.table.get(&crate::keys::linking::connection(user, provider)).await? {
        Some(item) => Some(item.decode()?),
        None => None,
    })
}

/// The user's active record of the team, else `None` (deleted or another team's: drop the work).
async fn active_user(deps: &Deps, team: TeamId, user: UserId) -> Result<Option<UserRecord>, DomainError> {
    Ok(users::load(deps, team, user).await?.map(|(u, _)| u).filter(|u| u.deletion.is_none()))
}

/// The resources a pull or poll of `provider` fetches on this deployment (those its adapter
/// fills where it has one: `Catalog::resources_on`), the profile first.
pub fn data_resources(providers: &dyn Providers, provider: &str) -> Vec<String> {
    let mut out: Vec<String> = catalog()
        .data_resources_on(providers, provider)
        .iter()
        .map(|r| r.as_str().to_owned())
        .filter(|r| is_modelled(r))
        .collect();
    // The profile first: workouts need its age.
    out.sort_by_key(|r| r != "profile");
    out
}

fn context(user: &UserRecord, provider: &str, birth_year: Option<i32>) -> Context {
    Context {
        user_id: user.user_id,
        provider: provider.to_owned(),
        fallback_tz: user
            .fallback_time_zone
            .as_ref()
            .and_then(|t| TimeZoneId::parse(&t.id))
            .unwrap_or_else(TimeZoneId::utc),
        birth_year,
        birth_date: user.fallback_birth_date.as_ref().map(|b| b.value),
    }
}

async fn stored_birth_year(deps: &Deps, user: UserId, provider: &str) -> Result<Option<i32>, DomainError> {
    Ok(match deps.table.get(&keys::profile(user, provider)).await? {
        Some(item) => {
            item.decode::<store::Stored>()?.v.get("birth_year").and_then(|y| y.as_i64()).map(|y| y as i32)
        }
        None => None,
    })
}

/// Credentials that work now: refreshed (once, whoever else needs them too, and saved on the
/// connection) when expired.
async fn account(deps: &Deps, conn: &ConnectionRecord) -> Result<ProviderAccount, ProviderError> {
    refresh::usable_account(deps, conn, None).await
}

/// One fetch, each HTTP request it sends within the provider's limits for the OAuth app (all
/// its users, every instance) and for the provider's user ([`ConnectionGate`]: over them the
/// fetch stops `RateLimited` until the window turns over, as a 429 would); an access token the
/// provider refused (expired early, rotated elsewhere) is refreshed and the fetch tried once more.
async fn fetch(
    deps: &Deps,
    conn: &ConnectionRecord,
    account: &mut ProviderAccount,
    resource: &str,
    range: DateRange,
) -> Result<FetchedResource, ProviderError> {
    let gate = ConnectionGate::new(deps, conn, account);
    match deps.providers.fetch(&conn.provider, account, resource, range, &gate).await {
        Err(ProviderError::AccessTokenRefused) => {
            *account = refresh::usable_account(deps, conn, Some(&account.credentials.access_token)).await?;
            let gate = ConnectionGate::new(deps, conn, account);
            deps.providers.fetch(&conn.provider, account, resource, range, &gate).await
        }
        other => other,
    }
}

/// The gate of one connection's fetches: each request the adapter sends takes one from the
/// provider's published limits for the connection's OAuth app (a team's own, else the
/// platform's) and one from those for the provider's user, before it is sent.
struct ConnectionGate<'a> {
    deps: &'a Deps,
    provider: &'a str,
    app: &'a str,
    app_limits: Vec<RateWindow>,
    user: String,
    user_limits: Vec<RateWindow>,
}

impl<'a> ConnectionGate<'a> {
    fn new(deps: &'a Deps, conn: &'a ConnectionRecord, account: &ProviderAccount) -> Self {
        Self {
            deps,
            provider: &conn.provider,
            app: conn.team_app_client_id.as_deref().unwrap_or("platform"),
            app_limits: deps.providers.app_limits(&conn.provider, &account.credentials),
            user: account.external_user_id.clone(),
            user_limits: deps.providers.user_limits(&conn.provider, &account.credentials),
        }
    }
}

#[async_trait::async_trait]
impl RequestGate for ConnectionGate<'_> {
    async fn admit(&self) -> Result<(), ProviderError> {
        within(throttle::take_app(self.deps, self.provider, self.app, &self.app_limits).await)?;
        within(throttle::take_user(self.deps, self.provider, &self.user, &self.user_limits).await)
    }
}

/// A throttle's decision as a fetch's: a wait is the provider's 429 until the window turns over.
fn within(decision: Result<Decision, DomainError>) -> Result<(), ProviderError> {
    match decision {
        Ok(Decision::Granted) => Ok(()),
        Ok(Decision::Wait(wait)) => {
            Err(ProviderError::RateLimited { retry_after_secs: wait.as_secs().max(1) })
        }
        Err(e) => Err(ProviderError::Api(e.to_string())),
    }
}

async fn save(
    deps: &Deps,
    key: &crate::ports::Key,
    progress: &Progress,
    version: &mut u64,
) -> Result<(), DomainError> {
    let mut item = Item::new(key.clone(), to_body(progress));
    item.version = *version + 1;
    let condition = if *version == 0 { Condition::NotExists } else { Condition::VersionIs(*version) };
    match deps.table.put(item, condition).await {
        Ok(()) => {
            *version += 1;
            Ok(())
        }
        Err(StoreError::ConditionFailed { .. }) => {
            Err(DomainError::Busy("pull progressed elsewhere; retry".into()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Tells the bulk trigger behind the job (if any) whether the user's pull started.
async fn report(deps: &Deps, job: &PullJob, started: bool) -> Result<(), DomainError> {
    match &job.bulk_op {
        Some(op) => crate::bulk::ledger::record_pull(deps, op, job.user_id, started).await,
        None => Ok(()),
    }
}

/// Runs (or resumes) one historical pull.
pub async fn pull(deps: &Deps, job: &PullJob) -> Result<Outcome, DomainError> {
    let (team, user_id, provider) = (job.team_id, job.user_id, job.provider.as_str());
    let key = keys::pull(user_id, provider, &job.pull_id);
    let (mut progress, mut version) = match deps.table.get(&key).await? {
        Some(item) => (Some(item.decode::<Progress>()?), item.version),
        None => (None, 0),
    };
    if progress.as_ref().is_some_and(|p| p.done) {
        return Ok(Outcome::Ack);
    }
    let Some(user) = active_user(deps, team, user_id).await? else {
        tracing::info!(user_id = %user_id, provider, "pull dropped: user gone");
        report(deps, job, false).await?;
        return Ok(Outcome::Ack);
    };
    let Some(conn) = load_connection(deps, user_id, provider).await? else {
        tracing::info!(user_id = %user_id, provider, "pull dropped: no connection");
        report(deps, job, false).await?;
        return Ok(Outcome::Ack);
    };
    if conn.status != ConnectionStatus::Connected
        || progress.as_ref().is_some_and(|p| p.connection_created_on != conn.created_on)
    {
        tracing::info!(user_id = %user_id, provider, "pull dropped: connection not usable (paused, failing) or replaced");
        report(deps, job, false).await?;
        return Ok(Outcome::Ack);
    }
    let mut p = match progress.take() {
        Some(p) => p,
        None => {
            let prefs = preferences(deps, team).await?;
            let today = deps.now().date_naive();
            let days = u64::from(history_days(&prefs, provider));
            let start = today.checked_sub_days(Days::new(days - 1)).unwrap_or(today);
            let start = user.ingestion_start.map_or(start, |b| start.max(b));
            let end = user.ingestion_end.map_or(today, |b| today.min(b));
            let p = Progress {
                team_id: team,
                provider: provider.to_owned(),
                connection_created_on: conn.created_on,
                start,
                end,
                started: false,
                resources: data_resources(deps.providers.as_ref(), provider)
                    .into_iter()
                    .map(|r| (r, ResourceProgress { next: start, done: false, days: None }))
                    .collect(),
                done: false,
                failures: 0,
            };
            save(deps, &key, &p, &mut version).await?;
            p
        }
    };
    // Unique per pull across the team's users (holds a concurrency slot).
    let holder = format!("{user_id}/{}", job.pull_id);
    if !p.started {
        match throttle::acquire(deps, team, provider, &holder).await? {
            Decision::Wait(wait) => return Ok(Outcome::RetryAfter(wait.max(Duration::from_secs(1)))),
            Decision::Granted => {
                p.started = true;
                save(deps, &key, &p, &mut version).await?;
            }
        }
    }
    // Also on a resumed pull: the report may not have been written before a crash.
    report(deps, job, true).await?;
    let mut account = match account(deps, &conn).await {
        Ok(a) => a,
        Err(e @ (ProviderError::Revoked(_) | ProviderError::CredentialError(_))) => {
            tracing::warn!(user_id = %user_id, provider, "pull stopped: access revoked");
            refresh::record_refusal(deps, &conn, &e).await;
            return finish(deps, team, user_id, &holder, &key, &mut p, &mut version).await;
        }
        Err(ProviderError::RateLimited { retry_after_secs }) => {
            let wait = backoff::after_rate_limit(retry_after_secs);
            return wait_for_provider(deps, team, &holder, &key, &mut p, &mut version, wait).await;
        }
        Err(e) => {
            let at = Failed { conn: &conn, holder: &holder, key: &key, what: "credentials" };
            return provider_failed(deps, at, &mut p, &mut version, &e).await;
        }
    };
    let prefs = preferences(deps, team).await?;
    let mut birth_year = stored_birth_year(deps, user_id, provider).await?;
    // Rounds: every resource not done fetches and stores its next chunk, at most
    // RESOURCES_AT_ONCE at a time, so that their writes share commits; then the progress is
    // saved once and the resources whose last chunk is stored are announced. The profile goes
    // alone first: the other resources' entries need its age. Each round moves every resource
    // it runs a chunk forward (or ends it), so the loop ends.
    loop {
        let profile_first = p.resources.get("profile").is_some_and(|r| !r.done);
        let round: Vec<(String, NaiveDate, u64)> = p
            .resources
            .iter()
            .filter(|(name, r)| !r.done && (!profile_first || name.as_str() == "profile"))
            .map(|(name, r)| {
                let first = if is_summary(name) { CHUNK_DAYS } else { FIRST_SERIES_CHUNK_DAYS };
                (name.clone(), r.next, r.days.unwrap_or(first))
            })
            .collect();
        if round.is_empty() {
            break;
        }
        let ctx = context(&user, provider, birth_year);
        let (start, end) = (p.start, p.end);
        let results: Vec<(String, ChunkResult)> = futures_util::stream::iter(round)
            .map(|(resource, next, days)| {
                let (ctx, conn, account) = (&ctx, &conn, account.clone());
                async move {
                    let window = Window { next, days, start, end };
                    let result = chunk(deps, conn, account, ctx, &resource, window).await;
                    (resource, result)
                }
            })
            .buffer_unordered(RESOURCES_AT_ONCE)
            .collect()
            .await;
        let mut completed = Vec::new();
        let mut stop = None;
        for (resource, result) in results {
            match result? {
                Ok(Chunk::Stored { through, account: renewed, birth_year: year, next_days }) => {
                    if let Some(a) = renewed {
                        account = a;
                    }
                    if year.is_some() {
                        birth_year = year;
                    }
                    let r = p.resources.get_mut(&resource).expect("a resource of the pull");
                    r.next = through.checked_add_days(Days::new(1)).unwrap_or(through);
                    r.days = Some(next_days);
                    if r.next > end || resource == "profile" {
                        completed.push(resource);
                    }
                }
                Ok(Chunk::Nothing) => completed.push(resource),
                Err(e) => {
                    let failed = (resource, e);
                    stop = Some(match stop.take() {
                        Some(other) => worse(other, failed),
                        None => failed,
                    });
                }
            }
        }
        let data = to_body(&HistoricalPullCompleted {
            user_id: user_id.as_uuid(),
            start_date: p.start,
            end_date: p.end,
            provider: provider.to_owned(),
        });
        let events: Vec<EventEnvelope> = completed
            .iter()
            .flat_map(|resource| produced(resource))
            .flat_map(|r| event_types("historical", r, prefs.hypnogram_events))
            .map(|t| event(format!("{t}.created"), team, user_id, user.client_user_id.as_str(), data.clone()))
            .collect();
        // Announced before they are marked done: a crash in between announces them again
        // (at least once), never not at all. Also when another resource of the round failed:
        // what is whole is announced whatever happens to the rest.
        if !events.is_empty() {
            deps.bus.publish(events).await?;
        }
        for resource in &completed {
            if let Some(r) = p.resources.get_mut(resource) {
                r.done = true;
            }
        }
        match stop {
            Some((resource, e @ (ProviderError::Revoked(_) | ProviderError::CredentialError(_)))) => {
                tracing::warn!(user_id = %user_id, provider, resource, "pull stopped: access revoked");
                refresh::record_refusal(deps, &conn, &e).await;
                return finish(deps, team, user_id, &holder, &key, &mut p, &mut version).await;
            }
            Some((resource, ProviderError::RateLimited { retry_after_secs })) => {
                tracing::info!(user_id = %user_id, provider, resource, retry_after_secs, "provider rate limit; pull waits");
                let wait = backoff::after_rate_limit(retry_after_secs);
                return wait_for_provider(deps, team, &holder, &key, &mut p, &mut version, wait).await;
            }
            Some((resource, e)) => {
                // What the other resources stored is kept; the failed one starts from its chunk.
                let at = Failed { conn: &conn, holder: &holder, key: &key, what: &resource };
                return provider_failed(deps, at, &mut p, &mut version, &e).await;
            }
            None => p.failures = 0,
        }
        save(deps, &key, &p, &mut version).await?;
    }
    finish(deps, team, user_id, &holder, &key, &mut p, &mut version).await
}

/// A chunk's outcome: the outer error is the table's (the message is retried), the inner one the
/// provider's.
type ChunkResult = Result<Result<Chunk, ProviderError>, DomainError>;

/// Resources of one pull whose chunks are fetched and stored at once.
const RESOURCES_AT_ONCE: usize = 8;

/// What one chunk of one resource gave.
enum Chunk {
    /// Stored through `through` (the whole window for the profile). `account` is set when the
    /// credentials were renewed on the way; `birth_year` when the chunk held a profile's;
    /// `next_days` is the length of the resource's next chunk.
    Stored { through: NaiveDate, account: Option<ProviderAccount>, birth_year: Option<i32>, next_days: u64 },
    /// Nothing to pull: not served, a scope the user did not grant (Strava's activities), or
    /// an empty window.
    Nothing,
}

/// The error that decides what a round's pull does when several resources failed: a refused
/// access ends the pull, a rate limit waits (the longest), anything else retries.
fn worse(a: (String, ProviderError), b: (String, ProviderError)) -> (String, ProviderError) {
    let weight = |e: &ProviderError| match e {
        ProviderError::Revoked(_) | ProviderError::CredentialError(_) => (2, 0),
        ProviderError::RateLimited { retry_after_secs } => (1, *retry_after_secs),
        _ => (0, 0),
    };
    if weight(&b.1) > weight(&a.1) { b } else { a }
}

/// A chunk's place in its pull: `days` from `next`, within the pull's `start..=end`.
struct Window {
    next: NaiveDate,
    days: u64,
    start: NaiveDate,
    end: NaiveDate,
}

/// Fetches and stores `resource`'s chunk of `window` (the whole pull's range for the profile).
/// The outer error is the table's (the message is retried), the inner one the provider's.
async fn chunk(
    deps: &Deps,
    conn: &ConnectionRecord,
    mut account: ProviderAccount,
    ctx: &Context,
    resource: &str,
    window: Window,
) -> ChunkResult {
    let Window { next, days, start, end } = window;
    if start > end || next > end {
        return Ok(Ok(Chunk::Nothing));
    }
    let (from, to) = if resource == "profile" {
        (start, end)
    } else {
        (next, next.checked_add_days(Days::new(days.max(1) - 1)).unwrap_or(end).min(end))
    };
    let token = account.credentials.access_token.clone();
    let fetched = match fetch(deps, conn, &mut account, resource, DateRange { start: from, end: to }).await {
        Ok(f) => f,
        Err(ProviderError::Unsupported(_) | ProviderError::ScopesNotGranted(_)) => {
            return Ok(Ok(Chunk::Nothing));
        }
        Err(e) => return Ok(Err(e)),
    };
    let next_days = next_chunk_days(fetched.records.len(), (to - from).num_days() as u64 + 1);
    let entries = ctx.entries(resource, &fetched.records);
    // The provider's records are not needed once normalised: not held while storing.
    drop(fetched);
    let birth_year = entries.iter().find_map(|entry| match entry {
        Entry::Profile { value } => value.get("birth_year").and_then(|y| y.as_i64()).map(|y| y as i32),
        _ => None,
    });
    let stored = entries.len();
    store::overwrite_all(deps, ctx.user_id, &conn.provider, entries).await?;
    metrics::pull_records_stored(&conn.provider, stored);
    let renewed = (account.credentials.access_token != token).then_some(account);
    Ok(Ok(Chunk::Stored { through: to, account: renewed, birth_year, next_days }))
}

/// The provider's rate limit, or its failure: the pull gives its concurrency slot back (others
/// of the team go on meanwhile), keeps its progress, and runs again after `wait`.
async fn wait_for_provider(
    deps: &Deps,
    team: TeamId,
    holder: &str,
    key: &crate::ports::Key,
    p: &mut Progress,
    version: &mut u64,
    wait: Duration,
) -> Result<Outcome, DomainError> {
    p.started = false;
    save(deps, key, p, version).await?;
    throttle::release(deps, team, &p.provider, holder).await?;
    Ok(Outcome::RetryAfter(wait.max(Duration::from_secs(1))))
}

/// Failed tries in a row (the provider's 5xx or timeouts) after which a pull stops and its
/// connection is marked in error (`provider.connection.error`). Between them the pull waits
/// [`backoff::after_provider_failure`] (30 s doubling, jittered): about 7 minutes in all
/// before the fifth try, so a provider's short outage costs no connection.
pub const PROVIDER_FAILURE_BUDGET: u32 = 5;

/// Where a pull's try failed: the connection, the pull's throttle holder and progress key, and
/// what failed (a resource, or the credentials).
struct Failed<'a> {
    conn: &'a ConnectionRecord,
    holder: &'a str,
    key: &'a crate::ports::Key,
    what: &'a str,
}

/// A try that failed on the provider: wait and try again, or, with the budget spent, mark the
/// connection in error and end the pull (what was stored stays).
async fn provider_failed(
    deps: &Deps,
    at: Failed<'_>,
    p: &mut Progress,
    version: &mut u64,
    error: &ProviderError,
) -> Result<Outcome, DomainError> {
    let (conn, what) = (at.conn, at.what);
    p.failures += 1;
    let (user_id, provider, failures) = (conn.user_id, conn.provider.as_str(), p.failures);
    if failures >= PROVIDER_FAILURE_BUDGET {
        tracing::warn!(user_id = %user_id, provider, what, failures, error_type = %error.link_error_type(), "provider kept failing; connection marked in error");
        refresh::record_failure(deps, conn, error, failures).await;
        return finish(deps, conn.team_id, user_id, at.holder, at.key, p, version).await;
    }
    let wait = backoff::after_provider_failure(failures);
    tracing::warn!(user_id = %user_id, provider, what, failures, wait_secs = wait.as_secs(), error_type = %error.link_error_type(), "provider failed; pull waits");
    wait_for_provider(deps, conn.team_id, at.holder, at.key, p, version, wait).await
}

async fn finish(
    deps: &Deps,
    team: TeamId,
    user: UserId,
    holder: &str,
    key: &crate::ports::Key,
    p: &mut Progress,
    version: &mut u64,
) -> Result<Outcome, DomainError> {
    let provider = p.provider.clone();
    p.done = true;
    save(deps, key, p, version).await?;
    // From now on the poll keeps the connection current (it never goes back before the end).
    if deps.table.get(&keys::sync(user, &provider)).await?.is_none() {
        let sync = SyncRecord { team_id: team, provider: provider.clone(), through: p.end };
        let item = Item::new(keys::sync(user, &provider), to_body(&sync))
            .with_gsi1(keys::poll_index(user), keys::poll_index_sort(team, user, &provider));
        deps.table.put(item, Condition::NotExists).await.or_else(|e| match e {
            StoreError::ConditionFailed { .. } => Ok(()),
            e => Err(e),
        })?;
    }
    throttle::release(deps, team, &provider, holder).await?;
    Ok(Outcome::Ack)
}

/// The scheduled run: one poll job per polled connection, read shard by shard from the poll
/// index. Returns how many were sent.
pub async fn poll_all(deps: &Deps) -> Result<usize, DomainError> {
    let mut sent = 0;
    for partition in keys::poll_index_partitions() {
        let mut cursor = None;
        loop {
            let page =
                deps.table.query(Query::gsi1(partition.clone()).limit(POLL_PAGE).after(cursor)).await?;
            let mut jobs = Vec::new();
            for item in &page.items {
                let Some(user) = item.key.pk.strip_prefix("USER#").and_then(UserId::parse) else { continue };
                let s: SyncRecord = item.decode()?;
                jobs.push(Outgoing::now(
                    PullMessage::Job(Job::Poll(PollJob {
                        team_id: s.team_id,
                        user_id: user,
                        provider: s.provider,
                        since: None,
                    }))
                    .body(),
                ));
            }
            sent += jobs.len();
            if !jobs.is_empty() {
                deps.queue.send(QueueName::Pull, jobs).await.map_err(|e| DomainError::Busy(e.to_string()))?;
            }
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
    }
    Ok(sent)
}

/// Polls one connection: fetches from shortly before the last polled day to today, stores what
/// is new or changed, and emits `daily.data.<resource>.created` / `.updated` (updated only when
/// content changed) for each such item with the item as `data` (a summary or profile, or a
/// timeseries day `{source, data: [samples]}`, split when over the event size limit). A repeated
/// poll with nothing new emits nothing.
pub async fn poll(deps: &Deps, job: &PollJob) -> Result<(), DomainError> {
    if let Polled::NoAccess { error: Some(e), .. } = poll_until(deps, job, None).await?
        && let Some(conn) = load_connection(deps, job.user_id, &job.provider).await?
    {
        // A dead refresh token or revoked access: the connection is marked and not polled again.
        refresh::record_refusal(deps, &conn, &e).await;
    }
    Ok(())
}

/// [`poll`] that stops fetching at `deadline`: the resources fetched by then are stored and
/// announced, the others are reported pending and the poll state does not move (the next poll
/// of the connection fetches them; what was stored meanwhile is unchanged then and not announced
/// twice). A refresh runs this for each connection of the user.
pub async fn poll_until(
    deps: &Deps,
    job: &PollJob,
    deadline: Option<tokio::time::Instant>,
) -> Result<Polled, DomainError> {
    let (team, user_id, provider) = (job.team_id, job.user_id, job.provider.as_str());
    let sync_key = keys::sync(user_id, provider);
    // A first poll (no state yet) starts at `since` itself; later ones overlap the last day.
    let (sync, overlap) = match deps.table.get(&sync_key).await? {
        Some(item) => (item.decode::<SyncRecord>()?, POLL_OVERLAP_DAYS),
        None => match job.since {
            Some(since) => (SyncRecord { team_id: team, provider: provider.to_owned(), through: since }, 0),
            None => return Ok(Polled::Nothing),
        },
    };
    let (Some(user), Some(conn)) =
        (active_user(deps, team, user_id).await?, load_connection(deps, user_id, provider).await?)
    else {
        // The connection or the user is gone: stop polling it.
        deps.table.delete(&sync_key, Condition::None).await?;
        return Ok(Polled::Nothing);
    };
    if conn.status != ConnectionStatus::Connected {
        return Ok(Polled::Nothing);
    }
    let resources = data_resources(deps.providers.as_ref(), provider);
    let mut account = match until(deadline, account(deps, &conn)).await {
        Some(Ok(a)) => a,
        Some(Err(e)) => {
            tracing::warn!(user_id = %user_id, provider, error_type = %e.link_error_type(), "poll skipped");
            return Ok(Polled::NoAccess { error: Some(e), resources });
        }
        None => return Ok(Polled::NoAccess { error: None, resources }),
    };
    let today = deps.now().date_naive();
    let start = sync.through.checked_sub_days(Days::new(overlap)).unwrap_or(sync.through);
    let start = user.ingestion_start.map_or(start, |b| start.max(b));
    let end = user.ingestion_end.map_or(today, |b| today.min(b));
    if start > end {
        return Ok(Polled::Nothing);
    }
    let prefs = preferences(deps, team).await?;
    let mut birth_year = stored_birth_year(deps, user_id, provider).await?;
    let mut events = Vec::new();
    let (mut done, mut failed, mut pending) = (Vec::new(), Vec::new(), Vec::new());
    // Access refused (refresh token dead, credentials revoked): the rest is not asked for.
    let mut refused = None;
    for resource in resources {
        if refused.is_some() {
            failed.push(resource);
            continue;
        }
        if !pending.is_empty() {
            pending.push(resource);
            continue;
        }
        let fetched = match until(
            deadline,
            fetch(deps, &conn, &mut account, &resource, DateRange { start, end }),
        )
        .await
        {
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                tracing::warn!(user_id = %user_id, provider, resource, error_type = %e.link_error_type(), "poll fetch failed");
                if matches!(e, ProviderError::Revoked(_) | ProviderError::CredentialError(_)) {
                    refused = Some(e);
                }
                failed.push(resource);
                continue;
            }
            None => {
                pending.push(resource);
                continue;
            }
        };
        let ctx = context(&user, provider, birth_year);
        for entry in ctx.entries(&resource, &fetched.records) {
            if let Entry::Profile { value } = &entry {
                birth_year = value.get("birth_year").and_then(|y| y.as_i64()).map(|y| y as i32);
            }
            let (change, value) = store::put(deps, user_id, provider, &entry).await?;
            let kind = match change {
                Change::Unchanged => continue,
                Change::Created => "created",
                Change::Updated => "updated",
            };
            // Each changed item is announced with its content, as the read API answers it.
            for t in event_types("daily", entry.resource(), prefs.hypnogram_events) {
                events.extend(data_events(
                    &format!("{t}.{kind}"),
                    team,
                    user_id,
                    user.client_user_id.as_str(),
                    &value,
                ));
            }
        }
        done.push(resource);
    }
    deps.bus.publish(events).await?;
    if let Some(e) = refused {
        return Ok(Polled::NoAccess { error: Some(e), resources: failed });
    }
    if pending.is_empty() {
        let sync = SyncRecord { through: end, ..sync };
        let item = Item::new(sync_key, to_body(&sync))
            .with_gsi1(keys::poll_index(user_id), keys::poll_index_sort(team, user_id, provider));
        deps.table.put(item, Condition::None).await?;
    }
    Ok(Polled::Polled { done, failed, pending })
}

/// `work`, unless `deadline` passes first (`None`).
async fn until<T>(deadline: Option<tokio::time::Instant>, work: impl Future<Output = T>) -> Option<T> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d, work).await.ok(),
        None => Some(work.await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_holds_about_chunk_records_whatever_the_resolution() {
        // 1-second samples: a day a chunk; 1-minute: 30 days; hourly and daily: 30 days.
        assert_eq!(next_chunk_days(86_400, 1), 1);
        assert_eq!(next_chunk_days(1_440, 1), CHUNK_DAYS);
        assert_eq!(next_chunk_days(24 * 30, 30), CHUNK_DAYS);
        // 10-second samples over a day: 8,640 a day, so 11 days hold about 100,000.
        assert_eq!(next_chunk_days(8_640, 1), 11);
        // Nothing fetched (a gap in the data): twice as long, up to the most.
        assert_eq!(next_chunk_days(0, 1), 2);
        assert_eq!(next_chunk_days(0, 8), 16);
        assert_eq!(next_chunk_days(0, 20), CHUNK_DAYS);
        // More than the target in one day still moves a day at a time.
        assert_eq!(next_chunk_days(500_000, 1), 1);
    }
}
