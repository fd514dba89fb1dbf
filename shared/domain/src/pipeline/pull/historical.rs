//! The historical pull of a connection.
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
use wearlab_models::data::{DataPullPreferences, HistoricalPullCompleted};
use wearlab_models::{ConnectionStatus, EventEnvelope, Resource};

use super::super::normalize::{Context, Entry, is_summary, produced};
use super::super::{event, event_types, history_days, preferences};
use super::{
    PullJob, account, active_user, connections, context, data_resources, fetch, keys, poll, store,
    stored_birth_year,
};
use crate::Deps;
use crate::common::backoff;
use crate::common::error::DomainError;
use crate::common::ids::TeamId;
use crate::common::metrics;
use crate::common::throttle::{self, Decision};
use crate::linking::connections::ConnectionRecord;
use crate::linking::refresh;
use crate::ports::providers::{DateRange, ProviderAccount, ProviderError};
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key, Outcome, StoreError};
use crate::users::UserRecord;

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
    resources: BTreeMap<Resource, ResourceProgress>,
    done: bool,
    /// Tries in a row that failed on the provider (a 5xx, a timeout); a round that goes
    /// through sets it back to zero.
    #[serde(default)]
    failures: u32,
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
    let key = keys::pull(job.user_id, &job.provider, &job.pull_id);
    let (progress, mut version) = match deps.table.get(&key).await? {
        Some(item) => (Some(item.decode::<Progress>()?), item.version),
        None => (None, 0),
    };
    if progress.as_ref().is_some_and(|p| p.done) {
        return Ok(Outcome::Ack);
    }
    let Some((user, conn)) = usable(deps, job, progress.as_ref()).await? else {
        report(deps, job, false).await?;
        return Ok(Outcome::Ack);
    };
    let p = match progress {
        Some(p) => p,
        None => {
            let p = new_progress(deps, job, &user, &conn).await?;
            save(deps, &key, &p, &mut version).await?;
            p
        }
    };
    // Unique per pull across the team's users (holds a concurrency slot).
    let holder = format!("{}/{}", job.user_id, job.pull_id);
    let mut run = Run { deps, job, user, conn, key, holder, p, version };
    if let Some(wait) = run.take_slot().await? {
        return Ok(Outcome::RetryAfter(wait));
    }
    // Also on a resumed pull: the report may not have been written before a crash.
    report(deps, job, true).await?;
    match run.credentials().await? {
        Ok(account) => run.rounds(account).await,
        Err(outcome) => Ok(outcome),
    }
}

/// The user and connection the pull is for, else `None` (the pull is dropped): the user gone, no
/// connection, or a connection not usable (paused, failing) or replaced since the pull began.
async fn usable(
    deps: &Deps,
    job: &PullJob,
    progress: Option<&Progress>,
) -> Result<Option<(UserRecord, ConnectionRecord)>, DomainError> {
    let (user_id, provider) = (job.user_id, job.provider.as_str());
    let Some(user) = active_user(deps, job.team_id, user_id).await? else {
        tracing::info!(user_id = %user_id, provider, "pull dropped: user gone");
        return Ok(None);
    };
    let Some(conn) = connections::find(deps, user_id, provider).await? else {
        tracing::info!(user_id = %user_id, provider, "pull dropped: no connection");
        return Ok(None);
    };
    if conn.from_phone() {
        tracing::info!(user_id = %user_id, provider, "pull dropped: the phone uploads its history");
        return Ok(None);
    }
    if conn.status != ConnectionStatus::Connected
        || progress.is_some_and(|p| p.connection_created_on != conn.created_on)
    {
        tracing::info!(user_id = %user_id, provider, "pull dropped: connection not usable (paused, failing) or replaced");
        return Ok(None);
    }
    Ok(Some((user, conn)))
}

/// A new pull's progress: the team's history days for the provider back from today, within the
/// user's ingestion bounds, every resource starting at the first day.
async fn new_progress(
    deps: &Deps,
    job: &PullJob,
    user: &UserRecord,
    conn: &ConnectionRecord,
) -> Result<Progress, DomainError> {
    let provider = job.provider.as_str();
    let prefs = preferences(deps, job.team_id).await?;
    let today = deps.now().date_naive();
    let days = u64::from(history_days(&prefs, provider));
    let start = today.checked_sub_days(Days::new(days - 1)).unwrap_or(today);
    let start = user.ingestion_start.map_or(start, |b| start.max(b));
    let end = user.ingestion_end.map_or(today, |b| today.min(b));
    Ok(Progress {
        team_id: job.team_id,
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
    })
}

async fn save(deps: &Deps, key: &Key, progress: &Progress, version: &mut u64) -> Result<(), DomainError> {
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

/// A resource of a round and the provider's error it failed with.
type Failure = (Resource, ProviderError);

/// One historical pull under way: its job, the user and connection it pulls, its progress (with
/// the progress item's key and stored version) and the holder of its throttle slot.
struct Run<'a> {
    deps: &'a Deps,
    job: &'a PullJob,
    user: UserRecord,
    conn: ConnectionRecord,
    key: Key,
    holder: String,
    p: Progress,
    version: u64,
}

impl Run<'_> {
    async fn save(&mut self) -> Result<(), DomainError> {
        save(self.deps, &self.key, &self.p, &mut self.version).await
    }

    /// Takes the team's concurrency slot for the provider, once per pull: `Some(wait)` when
    /// none is free.
    async fn take_slot(&mut self) -> Result<Option<Duration>, DomainError> {
        if self.p.started {
            return Ok(None);
        }
        match throttle::acquire(self.deps, self.job.team_id, &self.job.provider, &self.holder).await? {
            Decision::Wait(wait) => Ok(Some(wait.max(Duration::from_secs(1)))),
            Decision::Granted => {
                self.p.started = true;
                self.save().await?;
                Ok(None)
            }
        }
    }

    /// Credentials that work now, else what the pull does instead: a refused access ends it, a
    /// rate limit waits, another failure counts against [`PROVIDER_FAILURE_BUDGET`].
    async fn credentials(&mut self) -> Result<Result<ProviderAccount, Outcome>, DomainError> {
        let outcome = match account(self.deps, &self.conn).await {
            Ok(a) => return Ok(Ok(a)),
            Err(e @ (ProviderError::Revoked(_) | ProviderError::CredentialError(_))) => {
                let (user_id, provider) = (self.job.user_id, self.job.provider.as_str());
                tracing::warn!(user_id = %user_id, provider, "pull stopped: access revoked");
                refresh::record_refusal(self.deps, &self.conn, &e).await;
                self.finish().await?
            }
            Err(ProviderError::RateLimited { retry_after_secs }) => {
                self.wait_for_provider(backoff::after_rate_limit(retry_after_secs)).await?
            }
            Err(e) => self.provider_failed("credentials", &e).await?,
        };
        Ok(Err(outcome))
    }

    /// Rounds: every resource not done fetches and stores its next chunk, at most
    /// RESOURCES_AT_ONCE at a time, so that their writes share commits; then the progress is
    /// saved once and the resources whose last chunk is stored are announced. The profile goes
    /// alone first: the other resources' entries need its age. Each round moves every resource
    /// it runs a chunk forward (or ends it), so the loop ends.
    async fn rounds(mut self, mut account: ProviderAccount) -> Result<Outcome, DomainError> {
        let prefs = preferences(self.deps, self.job.team_id).await?;
        let mut birth_year = stored_birth_year(self.deps, self.job.user_id, &self.job.provider).await?;
        loop {
            let round = self.next_round();
            if round.is_empty() {
                break;
            }
            let results = self.run_round(round, &account, birth_year).await;
            let (completed, stop) = self.apply(results, &mut account, &mut birth_year)?;
            self.complete(&completed, &prefs).await?;
            match stop {
                Some((resource, e)) => return self.stopped(&resource, e).await,
                None => self.p.failures = 0,
            }
            self.save().await?;
        }
        self.finish().await
    }

    /// The resources of the next round, each with its next chunk's first day and length: the
    /// profile alone while it is not done, else every resource not done.
    fn next_round(&self) -> Vec<(Resource, NaiveDate, u64)> {
        let profile_first = self.p.resources.get(&Resource::Profile).is_some_and(|r| !r.done);
        self.p
            .resources
            .iter()
            .filter(|(name, r)| !r.done && (!profile_first || **name == Resource::Profile))
            .map(|(name, r)| {
                let first = if is_summary(name) { CHUNK_DAYS } else { FIRST_SERIES_CHUNK_DAYS };
                (name.clone(), r.next, r.days.unwrap_or(first))
            })
            .collect()
    }

    /// Fetches and stores the round's chunks, [`RESOURCES_AT_ONCE`] at a time.
    async fn run_round(
        &self,
        round: Vec<(Resource, NaiveDate, u64)>,
        account: &ProviderAccount,
        birth_year: Option<i32>,
    ) -> Vec<(Resource, ChunkResult)> {
        let ctx = context(&self.user, &self.job.provider, birth_year);
        let (deps, start, end) = (self.deps, self.p.start, self.p.end);
        futures_util::stream::iter(round)
            .map(|(resource, next, days)| {
                let (ctx, conn, account) = (&ctx, &self.conn, account.clone());
                async move {
                    let window = Window { next, days, start, end };
                    let result = chunk(deps, conn, account, ctx, &resource, window).await;
                    (resource, result)
                }
            })
            .buffer_unordered(RESOURCES_AT_ONCE)
            .collect()
            .await
    }

    /// Moves each resource of the round on past the chunk it stored (and takes renewed
    /// credentials and a profile's birth year). Returns the resources whose last chunk is now
    /// stored, and the failure that decides what the pull does next ([`worse`]), if any.
    fn apply(
        &mut self,
        results: Vec<(Resource, ChunkResult)>,
        account: &mut ProviderAccount,
        birth_year: &mut Option<i32>,
    ) -> Result<(Vec<Resource>, Option<Failure>), DomainError> {
        let mut completed = Vec::new();
        let mut stop = None;
        for (resource, result) in results {
            match result? {
                Ok(Chunk::Stored { through, account: renewed, birth_year: year, next_days }) => {
                    if let Some(a) = renewed {
                        *account = a;
                    }
                    if year.is_some() {
                        *birth_year = year;
                    }
                    let r = self.p.resources.get_mut(&resource).expect("a resource of the pull");
                    r.next = through.checked_add_days(Days::new(1)).unwrap_or(through);
                    r.days = Some(next_days);
                    if r.next > self.p.end || resource == Resource::Profile {
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
        Ok((completed, stop))
    }

    /// Announces the resources whose last chunk is stored
    /// (`historical.data.<resource>.created`), then marks them done.
    async fn complete(
        &mut self,
        completed: &[Resource],
        prefs: &DataPullPreferences,
    ) -> Result<(), DomainError> {
        let (team, user_id, provider) = (self.job.team_id, self.job.user_id, self.job.provider.as_str());
        let data = to_body(&HistoricalPullCompleted {
            user_id: user_id.as_uuid(),
            start_date: self.p.start,
            end_date: self.p.end,
            provider: provider.to_owned(),
        });
        let client_user_id = self.user.client_user_id.as_str();
        let events: Vec<EventEnvelope> = completed
            .iter()
            .flat_map(produced)
            .flat_map(|r| event_types("historical", &r, prefs.hypnogram_events))
            .map(|t| event(format!("{t}.created"), team, user_id, client_user_id, data.clone()))
            .collect();
        // Announced before they are marked done: a crash in between announces them again
        // (at least once), never not at all. Also when another resource of the round failed:
        // what is whole is announced whatever happens to the rest.
        if !events.is_empty() {
            self.deps.bus.publish(events).await?;
        }
        for resource in completed {
            if let Some(r) = self.p.resources.get_mut(resource) {
                r.done = true;
            }
        }
        Ok(())
    }

    /// A round that failed on the provider at `resource`: a refused access ends the pull, a rate
    /// limit waits, anything else counts against [`PROVIDER_FAILURE_BUDGET`].
    async fn stopped(&mut self, resource: &Resource, e: ProviderError) -> Result<Outcome, DomainError> {
        let (user_id, provider) = (self.job.user_id, self.job.provider.as_str());
        match e {
            e @ (ProviderError::Revoked(_) | ProviderError::CredentialError(_)) => {
                tracing::warn!(user_id = %user_id, provider, resource = %resource, "pull stopped: access revoked");
                refresh::record_refusal(self.deps, &self.conn, &e).await;
                self.finish().await
            }
            ProviderError::RateLimited { retry_after_secs } => {
                tracing::info!(user_id = %user_id, provider, resource = %resource, retry_after_secs, "provider rate limit; pull waits");
                self.wait_for_provider(backoff::after_rate_limit(retry_after_secs)).await
            }
            // What the other resources stored is kept; the failed one starts from its chunk.
            e => self.provider_failed(resource.as_str(), &e).await,
        }
    }

    /// The provider's rate limit, or its failure: the pull gives its concurrency slot back
    /// (others of the team go on meanwhile), keeps its progress, and runs again after `wait`.
    async fn wait_for_provider(&mut self, wait: Duration) -> Result<Outcome, DomainError> {
        self.p.started = false;
        self.save().await?;
        throttle::release(self.deps, self.job.team_id, &self.p.provider, &self.holder).await?;
        Ok(Outcome::RetryAfter(wait.max(Duration::from_secs(1))))
    }

    /// A try that failed on the provider (`what`: a resource, or the credentials): wait and try
    /// again, or, with the budget spent, mark the connection in error and end the pull (what was
    /// stored stays).
    async fn provider_failed(&mut self, what: &str, error: &ProviderError) -> Result<Outcome, DomainError> {
        self.p.failures += 1;
        let (user_id, provider, failures) = (self.conn.user_id, self.conn.provider.as_str(), self.p.failures);
        if failures >= PROVIDER_FAILURE_BUDGET {
            tracing::warn!(user_id = %user_id, provider, what, failures, error_type = %error.link_error_type(), "provider kept failing; connection marked in error");
            refresh::record_failure(self.deps, &self.conn, error, failures).await;
            return self.finish().await;
        }
        let wait = backoff::after_provider_failure(failures);
        tracing::warn!(user_id = %user_id, provider, what, failures, wait_secs = wait.as_secs(), error_type = %error.link_error_type(), "provider failed; pull waits");
        self.wait_for_provider(wait).await
    }

    /// Marks the pull done, hands the connection to the poll and gives the slot back.
    async fn finish(&mut self) -> Result<Outcome, DomainError> {
        let (team, user) = (self.job.team_id, self.job.user_id);
        self.p.done = true;
        self.save().await?;
        // From now on the poll keeps the connection current (it never goes back before the end).
        poll::begin(self.deps, team, user, &self.p.provider, self.p.end).await?;
        throttle::release(self.deps, team, &self.p.provider, &self.holder).await?;
        Ok(Outcome::Ack)
    }
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
fn worse(a: Failure, b: Failure) -> Failure {
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
    resource: &Resource,
    window: Window,
) -> ChunkResult {
    let Window { next, days, start, end } = window;
    if start > end || next > end {
        return Ok(Ok(Chunk::Nothing));
    }
    let (from, to) = if *resource == Resource::Profile {
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

/// Failed tries in a row (the provider's 5xx or timeouts) after which a pull stops and its
/// connection is marked in error (`provider.connection.error`). Between them the pull waits
/// [`backoff::after_provider_failure`] (30 s doubling, jittered): about 7 minutes in all
/// before the fifth try, so a provider's short outage costs no connection.
pub const PROVIDER_FAILURE_BUDGET: u32 = 5;

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

    /// A pull's progress stored while resources were strings reads as typed resources (one a
    /// newer version added kept by its name) and is stored again byte for byte, in name order.
    #[test]
    fn stored_progress_keeps_its_resources_by_name() {
        let stored = r#"{"team_id":"6f1c0d2e-3b4a-4c5d-8e9f-0a1b2c3d4e5f","provider":"oura","connection_created_on":"2026-11-20T08:00:00Z","start":"2026-09-01","end":"2026-11-20","started":true,"resources":{"activity":{"next":"2026-10-01","done":false,"days":30},"dreams":{"next":"2026-09-01","done":false},"heartrate":{"next":"2026-09-01","done":false},"profile":{"next":"2026-09-01","done":true},"sleep":{"next":"2026-11-21","done":true}},"done":false,"failures":0}"#;
        let p: Progress = serde_json::from_str(stored).unwrap();
        assert!(p.resources[&Resource::Profile].done);
        assert_eq!(p.resources[&Resource::Activity].days, Some(30));
        assert!(p.resources.contains_key(&Resource::Other("dreams".into())));
        assert_eq!(serde_json::to_string(&p).unwrap(), stored);
    }
}
