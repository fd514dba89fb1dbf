//! The periodic poll of a connection for new and changed data, and the poll a refresh runs
//! until a deadline.

use chrono::{DateTime, Days, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::data::DataPullPreferences;
use wearlab_models::{EventEnvelope, Resource};

use super::super::normalize::Entry;
use super::super::store::{self, Change};
use super::super::{Job, PullMessage, data_events, event_types, preferences};
use super::{
    PollJob, account, active_user, connections, context, data_resources, fetch, keys, stored_birth_year,
};
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::linking::connections::ConnectionRecord;
use crate::linking::refresh;
use crate::ports::providers::{DateRange, ProviderAccount, ProviderError};
use crate::ports::to_body;
use crate::ports::{Condition, Item, Outgoing, Query, Queue, QueueName, StoreError};
use crate::users::UserRecord;
use wearlab_models::ConnectionStatus;

/// Days before the last polled day the poll fetches again, to see late changes.
pub const POLL_OVERLAP_DAYS: u64 = 1;
/// The least time between two scheduled polls of a connection whose provider's pushes arrive:
/// its new data comes with the pushes, and the scheduled poll is a daily safety net for a push
/// that was lost.
pub const PUSHED_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);
/// How long after its last push a connection counts as one whose pushes arrive. A connection
/// that has had none for longer (its pushes not set up on this deployment, or lost) is polled at
/// every scheduled run again.
pub const PUSHES_TRUSTED_FOR: chrono::Duration = chrono::Duration::days(7);
/// Most poll jobs sent per scheduled run page.
const POLL_PAGE: u32 = 500;

/// What [`poll_until`] did with one connection.
#[derive(Debug)]
pub enum Polled {
    /// Nothing to poll: no poll state (and no `since`), the user or the connection gone, the
    /// connection not connected, or a range outside the user's ingestion bounds.
    Nothing,
    /// The provider refused the credentials (or renewing them failed, or the deadline passed
    /// while renewing: then `pending`).
    NoAccess { error: Option<ProviderError>, resources: Vec<Resource> },
    /// Per resource of the provider: stored and announced, failed to fetch, or not fetched by
    /// the deadline (the poll state did not move then: polling again fetches them).
    Polled { done: Vec<Resource>, failed: Vec<Resource>, pending: Vec<Resource> },
}

/// The poll's state of a connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SyncRecord {
    team_id: TeamId,
    provider: String,
    /// Last day fetched.
    through: NaiveDate,
    /// When a poll last completed (absent on records from before it was kept): a provider
    /// with a poll interval is not polled again by the schedule before it has passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    polled_at: Option<DateTime<Utc>>,
    /// When a poll a push asked for last completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pushed_at: Option<DateTime<Utc>>,
}

impl SyncRecord {
    /// Whether the scheduled run polls this connection now: not before the provider's own
    /// interval has passed since the last poll, nor before [`PUSHED_POLL_INTERVAL`] while its
    /// pushes arrive.
    fn due(&self, interval: Option<std::time::Duration>, now: DateTime<Utc>) -> bool {
        let pushes_arrive = self.pushed_at.is_some_and(|at| now < at + PUSHES_TRUSTED_FOR);
        let wait = interval.or(pushes_arrive.then_some(PUSHED_POLL_INTERVAL));
        match (wait.and_then(|i| chrono::Duration::from_std(i).ok()), self.polled_at) {
            (Some(interval), Some(at)) => now >= at + interval,
            _ => true,
        }
    }
}

/// Starts polling the connection after its historical pull, from `through` (the pull's last
/// day), unless it is polled already: the poll never goes back before that.
pub(super) async fn begin(
    deps: &Deps,
    team: TeamId,
    user: UserId,
    provider: &str,
    through: NaiveDate,
) -> Result<(), DomainError> {
    if deps.table.get(&keys::sync(user, provider)).await?.is_none() {
        let sync = SyncRecord {
            team_id: team,
            provider: provider.to_owned(),
            through,
            polled_at: None,
            pushed_at: None,
        };
        let item = Item::new(keys::sync(user, provider), to_body(&sync))
            .with_gsi1(keys::poll_index(user), keys::poll_index_sort(team, user, provider));
        deps.table.put(item, Condition::NotExists).await.or_else(|e| match e {
            StoreError::ConditionFailed { .. } => Ok(()),
            e => Err(e),
        })?;
    }
    Ok(())
}

/// The scheduled run: one poll job per polled connection that is due (see
/// [`crate::ports::Providers::poll_interval`]), read shard by shard from the poll index and sent
/// to `queue`. Returns how many were sent.
pub async fn poll_all(deps: &Deps, queue: &dyn Queue) -> Result<usize, DomainError> {
    let now = deps.now();
    let mut sent = 0;
    for partition in keys::poll_index_partitions() {
        let mut cursor = None;
        loop {
            let page =
                deps.table.query(Query::gsi1(partition.clone()).limit(POLL_PAGE).after(cursor)).await?;
            let mut jobs = Vec::new();
            for item in &page.items {
                let Some(user) = crate::keys::parse_user_partition(&item.key.pk) else { continue };
                let s: SyncRecord = item.decode()?;
                if !s.due(deps.providers.poll_interval(&s.provider), now) {
                    continue;
                }
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
                queue.send(QueueName::Pull, jobs).await.map_err(|e| DomainError::Busy(e.to_string()))?;
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
    poll_as(deps, job, false).await
}

/// [`poll`] that a verified push asked for: the connection is marked as one whose pushes
/// arrive (see [`PUSHED_POLL_INTERVAL`]).
pub async fn poll_pushed(deps: &Deps, job: &PollJob) -> Result<(), DomainError> {
    poll_as(deps, job, true).await
}

async fn poll_as(deps: &Deps, job: &PollJob, pushed: bool) -> Result<(), DomainError> {
    if let Polled::NoAccess { error: Some(e), .. } = polled(deps, job, None, pushed).await?
        && let Some(conn) = connections::find(deps, job.user_id, &job.provider).await?
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
    polled(deps, job, deadline, false).await
}

async fn polled(
    deps: &Deps,
    job: &PollJob,
    deadline: Option<tokio::time::Instant>,
    pushed: bool,
) -> Result<Polled, DomainError> {
    let (team, user_id, provider) = (job.team_id, job.user_id, job.provider.as_str());
    let sync_key = keys::sync(user_id, provider);
    // A first poll (no state yet) starts at `since` itself; later ones overlap the last day.
    let (sync, overlap) = match deps.table.get(&sync_key).await? {
        Some(item) => (item.decode::<SyncRecord>()?, POLL_OVERLAP_DAYS),
        None => match job.since {
            Some(since) => (
                SyncRecord {
                    team_id: team,
                    provider: provider.to_owned(),
                    through: since,
                    polled_at: None,
                    pushed_at: None,
                },
                0,
            ),
            None => return Ok(Polled::Nothing),
        },
    };
    let (Some(user), Some(conn)) =
        (active_user(deps, team, user_id).await?, connections::find(deps, user_id, provider).await?)
    else {
        // The connection or the user is gone: stop polling it.
        deps.table.delete(&sync_key, Condition::None).await?;
        return Ok(Polled::Nothing);
    };
    // A connection from the phone has no API to poll: its data is uploaded.
    if conn.status != ConnectionStatus::Connected || conn.from_phone() {
        return Ok(Polled::Nothing);
    }
    let resources = data_resources(deps.providers.as_ref(), provider);
    let account = match until(deadline, account(deps, &conn)).await {
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
    let range = DateRange { start, end };
    let Fetched { done, failed, pending, refused, events } =
        fetch_all(deps, &user, &conn, account, resources, range, deadline).await?;
    deps.bus.publish(events).await?;
    if let Some(e) = refused {
        return Ok(Polled::NoAccess { error: Some(e), resources: failed });
    }
    if pending.is_empty() {
        let now = deps.now();
        let pushed_at = if pushed { Some(now) } else { sync.pushed_at };
        let sync = SyncRecord { through: end, polled_at: Some(now), pushed_at, ..sync };
        let item = Item::new(sync_key, to_body(&sync))
            .with_gsi1(keys::poll_index(user_id), keys::poll_index_sort(team, user_id, provider));
        deps.table.put(item, Condition::None).await?;
    }
    Ok(Polled::Polled { done, failed, pending })
}

/// What one poll fetched: per resource stored and announced (`done`), failed to fetch, or not
/// fetched by the deadline (`pending`); the refused access that stopped it, if any; and the
/// events of what it stored new or changed.
#[derive(Default)]
struct Fetched {
    done: Vec<Resource>,
    failed: Vec<Resource>,
    pending: Vec<Resource>,
    refused: Option<ProviderError>,
    events: Vec<EventEnvelope>,
}

/// Fetches `resources` over `range` one after the other until `deadline` and stores what each
/// gave. After a refused access (refresh token dead, credentials revoked) the rest is not asked
/// for; after the deadline neither.
async fn fetch_all(
    deps: &Deps,
    user: &UserRecord,
    conn: &ConnectionRecord,
    mut account: ProviderAccount,
    resources: Vec<Resource>,
    range: DateRange,
    deadline: Option<tokio::time::Instant>,
) -> Result<Fetched, DomainError> {
    let (user_id, provider) = (user.user_id, conn.provider.as_str());
    let prefs = preferences(deps, user.team_id).await?;
    let mut birth_year = stored_birth_year(deps, user_id, provider).await?;
    let mut out = Fetched::default();
    for resource in resources {
        if out.refused.is_some() {
            out.failed.push(resource);
            continue;
        }
        if !out.pending.is_empty() {
            out.pending.push(resource);
            continue;
        }
        let fetched = match until(deadline, fetch(deps, conn, &mut account, &resource, range)).await {
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                tracing::warn!(user_id = %user_id, provider, resource = %resource, error_type = %e.link_error_type(), "poll fetch failed");
                if matches!(e, ProviderError::Revoked(_) | ProviderError::CredentialError(_)) {
                    out.refused = Some(e);
                }
                out.failed.push(resource);
                continue;
            }
            None => {
                out.pending.push(resource);
                continue;
            }
        };
        let entries = context(user, provider, birth_year).entries(&resource, &fetched.records);
        out.events.extend(store_changes(deps, user, provider, entries, &prefs, &mut birth_year).await?);
        out.done.push(resource);
    }
    Ok(out)
}

/// Stores a resource's entries and returns the events of those new or changed, each announced
/// with its content as the read API answers it. A profile's birth year is kept for the resources
/// after it.
async fn store_changes(
    deps: &Deps,
    user: &UserRecord,
    provider: &str,
    entries: Vec<Entry>,
    prefs: &DataPullPreferences,
    birth_year: &mut Option<i32>,
) -> Result<Vec<EventEnvelope>, DomainError> {
    let mut events = Vec::new();
    for entry in &entries {
        if let Entry::Profile { value } = entry {
            *birth_year = value.get("birth_year").and_then(|y| y.as_i64()).map(|y| y as i32);
        }
    }
    let stored = store::put_many(deps, user.user_id, provider, &entries).await?;
    for (entry, (change, value)) in entries.iter().zip(stored) {
        let kind = match change {
            Change::Unchanged => continue,
            Change::Created => "created",
            Change::Updated => "updated",
        };
        for t in event_types("daily", entry.resource(), prefs.hypnogram_events) {
            events.extend(data_events(
                &format!("{t}.{kind}"),
                user.team_id,
                user.user_id,
                user.client_user_id.as_str(),
                &value,
            ));
        }
    }
    Ok(events)
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
    use chrono::{Duration, TimeZone};

    use super::*;

    fn record(polled: Option<DateTime<Utc>>, pushed: Option<DateTime<Utc>>) -> SyncRecord {
        SyncRecord {
            team_id: TeamId::parse("6c1f0d0e-7b1a-4d55-8b0f-0a1b2c3d4e5f").unwrap(),
            provider: "oura".into(),
            through: NaiveDate::from_ymd_opt(2026, 11, 20).unwrap(),
            polled_at: polled,
            pushed_at: pushed,
        }
    }

    #[test]
    fn a_connection_is_polled_at_every_run_unless_its_pushes_arrive_or_its_provider_waits() {
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
        let polled = Some(now - Duration::minutes(15));
        assert!(record(None, None).due(None, now), "never polled");
        assert!(record(polled, None).due(None, now), "no push: every run");
        // Pushes arrived lately: a day between scheduled polls.
        let pushed = Some(now - Duration::hours(3));
        assert!(!record(polled, pushed).due(None, now));
        assert!(record(Some(now - Duration::hours(25)), pushed).due(None, now));
        // No push for over a week: every run again.
        let stale = Some(now - PUSHES_TRUSTED_FOR - Duration::minutes(1));
        assert!(record(polled, stale).due(None, now));
        // The provider's own interval wins (Ultrahuman: a day).
        let day = Some(std::time::Duration::from_secs(86_400));
        assert!(!record(polled, None).due(day, now));
        assert!(record(Some(now - Duration::hours(24)), None).due(day, now));
    }
}
