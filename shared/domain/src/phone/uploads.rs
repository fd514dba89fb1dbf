//! The SDKs' uploads stored with their source, merged into what is stored, deduplicated and
//! announced (docs/MOBILE.md, "Uploads: storage, deduplication and events").
//!
//! - A timeseries point is named by (resource, provider, source type, timestamp) and the latest
//!   value wins (Junction's documentation, `tryVital/docs`
//!   `docs/wearables/providers/data-primary-key.mdx`): a day is kept per source type and an
//!   upload merges into it point by point (`pipeline::store::merge_days`). The iOS SDK's daily
//!   sync sends only what is new since its anchor, and its historical chunks split days by
//!   sample count, so an upload is never a whole day.
//! - A resend stores nothing and announces nothing: the SDKs resend a whole chunk after a
//!   timeout, and re-cover the last 3 days every sync (iOS
//!   `Sources/VitalHealthKit/HealthKit/HealthKitReads.swift`).
//! - Daily stage: `daily.data.{resource}.created` for a day that gained points, `.updated` for
//!   one whose values changed, with the day as the read API answers it (as pulled data's
//!   events). Historical stage: no daily events; one `historical.data.{resource}.created`
//!   after the final chunk (`is_final_chunk` true or absent), once per provider, resource and
//!   stage window (`tryVital/docs` `docs/webhooks/event-structure.mdx`).

use wearlab_models::Resource;
use wearlab_models::data::HistoricalPullCompleted;

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::common::outbox::Staged;
use crate::events::of_user;
use crate::keys::pipeline as keys;
use crate::pipeline::normalize::Entry;
use crate::pipeline::phone::open_wearables::OpenWearablesSync;
use crate::pipeline::phone::summary::{SummaryUpload, sdk_summary};
use crate::pipeline::phone::{
    SourcedSeries, Stage, TimeseriesUpload, UploadBody, UploadEnvelope, sdk_timeseries,
};
use crate::pipeline::store::{self, Change, SourceDay};
use crate::pipeline::{data_events, event_types, preferences};
use crate::ports::{Condition, Item, StoreError, WriteOp, to_body};
use crate::users::{self, UserRecord};

/// What an upload did, in days of one source (and summaries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Uploaded {
    /// Days (and summaries) stored for the first time or that gained points.
    pub created: usize,
    /// Days (and summaries) whose stored values changed.
    pub updated: usize,
    /// Days (and summaries) the upload changed nothing of (a resend).
    pub unchanged: usize,
    /// Whether this upload announced its historical stage (`historical.data.{resource}.created`).
    pub historical_announced: bool,
}

/// `POST /v2/timeseries/{user_id}/{resource}`: `resource` is the SDKs' path name
/// ([`sdk_timeseries`]). An unknown resource is refused at `resource` (as the data API refuses
/// a resource that is not a timeseries), an unknown or deleted user is not found, and a bad body
/// is refused whole with every offending field ([`TimeseriesUpload::parse`]).
pub async fn timeseries(
    deps: &Deps,
    team: TeamId,
    user: UserId,
    resource: &str,
    body: &UploadBody,
) -> Result<Uploaded, DomainError> {
    let resource = sdk_timeseries(resource).ok_or_else(|| {
        DomainError::invalid(&["resource"], "not a timeseries resource the SDKs upload", "enum")
    })?;
    let (user, _) = users::load_active(deps, team, user).await?;
    let upload = TimeseriesUpload::parse(resource, body)?;
    store_timeseries(deps, &user, upload).await
}

/// `POST /v2/summary/{resource}/{user_id}`: `resource` is one of the SDKs' summaries
/// ([`sdk_summary`]); refusals as [`timeseries`]'s, the body read by [`SummaryUpload::parse`].
pub async fn summary(
    deps: &Deps,
    team: TeamId,
    user: UserId,
    resource: &str,
    body: &UploadBody,
) -> Result<Uploaded, DomainError> {
    let resource = sdk_summary(resource).ok_or_else(|| {
        DomainError::invalid(&["resource"], "not a summary resource the SDKs upload", "enum")
    })?;
    let (user, _) = users::load_active(deps, team, user).await?;
    let upload = SummaryUpload::parse(resource, user.user_id, body)?;
    store_upload(deps, &user, &upload.envelope, &upload.resource, &upload.entries).await
}

/// What an Open Wearables sync did: the uploads' sum, and what was not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Synced {
    pub stored: Uploaded,
    /// Records, sleep slices and workouts skipped ([`OpenWearablesSync::skipped`]).
    pub skipped: usize,
}

/// `POST /api/v1/sdk/users/{user_id}/sync`: an Open Wearables SDK's body, read into the same
/// uploads as the Junction SDKs' ([`OpenWearablesSync::parse`]) and stored as they are.
pub async fn open_wearables(
    deps: &Deps,
    team: TeamId,
    user: UserId,
    body: &serde_json::Value,
) -> Result<Synced, DomainError> {
    let (user, _) = users::load_active(deps, team, user).await?;
    let sync = OpenWearablesSync::parse(user.user_id, body)?;
    let mut out = Synced { skipped: sync.skipped, ..Synced::default() };
    let mut add = |done: Uploaded| {
        out.stored.created += done.created;
        out.stored.updated += done.updated;
        out.stored.unchanged += done.unchanged;
    };
    for upload in sync.uploads {
        add(store_timeseries(deps, &user, upload).await?);
    }
    for upload in sync.summaries {
        add(store_upload(deps, &user, &upload.envelope, &upload.resource, &upload.entries).await?);
    }
    Ok(out)
}

/// Stores a timeseries upload (its blood pressure readings included).
async fn store_timeseries(
    deps: &Deps,
    user: &UserRecord,
    upload: TimeseriesUpload,
) -> Result<Uploaded, DomainError> {
    let (envelope, resource) = (upload.envelope.clone(), upload.resource.clone());
    store_upload(deps, user, &envelope, &resource, &upload.into_entries()).await
}

/// Stores an upload's entries of `resource` (days of samples, summaries, a profile, each with
/// its source) and announces them by its stage. The summary uploads plug in here with their
/// parsed entries.
pub async fn store_upload(
    deps: &Deps,
    user: &UserRecord,
    envelope: &UploadEnvelope,
    resource: &Resource,
    entries: &[SourcedSeries],
) -> Result<Uploaded, DomainError> {
    let provider = envelope.provider.as_str();
    let daily = envelope.stage == Stage::Daily;
    let mut out = Uploaded::default();
    let mut changed: Vec<(Resource, Change, serde_json::Value)> = Vec::new();
    let days: Vec<SourceDay<'_>> = entries
        .iter()
        .filter_map(|e| match &e.entry {
            Entry::Series { resource, date, samples } => {
                Some(SourceDay { source: &e.source, resource, date: *date, samples })
            }
            _ => None,
        })
        .collect();
    let plan = store::merge_days(deps, user.user_id, provider, &days, daily).await?;
    out.unchanged += plan.unchanged;
    for m in &plan.merged {
        count(&mut out, m.change);
        if let Some(value) = &m.value {
            changed.push((m.resource.clone(), m.change, value.clone()));
        }
    }
    let staged = if daily { stage(deps, user, &changed, entries).await? } else { Vec::new() };
    plan.write(deps).await?;
    // Summaries and profiles: replaced whole by a later version, as the poll stores them; but a
    // body day keeps the measures a later upload leaves out (Android sends changed records only).
    for e in entries.iter().filter(|e| !matches!(e.entry, Entry::Series { .. })) {
        let (change, value) = match e.entry.resource() {
            Resource::Body => {
                store::put_keeping_stored_measures(deps, user.user_id, provider, &e.entry).await?
            }
            _ => store::put(deps, user.user_id, provider, &e.entry).await?,
        };
        count(&mut out, change);
        if daily && change != Change::Unchanged {
            let staged = stage(deps, user, &[(e.entry.resource().clone(), change, value)], entries).await?;
            publish(deps, staged).await;
        }
    }
    publish(deps, staged).await;
    if let Stage::Historical { start, end } = envelope.stage
        && envelope.is_final_chunk
    {
        out.historical_announced = announce_historical(deps, user, provider, resource, start, end).await?;
    }
    Ok(out)
}

fn count(out: &mut Uploaded, change: Change) {
    match change {
        Change::Created => out.created += 1,
        Change::Updated => out.updated += 1,
        Change::Unchanged => out.unchanged += 1,
    }
}

/// Stages the daily events of `changed` in the outbox (one entry per event: a day of samples
/// may take several events of up to 240 KB each, more than one item holds), before the data is
/// written: a crash after it announces data a resend then stores (at least once), never stored
/// data that is not announced.
async fn stage(
    deps: &Deps,
    user: &UserRecord,
    changed: &[(Resource, Change, serde_json::Value)],
    entries: &[SourcedSeries],
) -> Result<Vec<Staged>, DomainError> {
    if changed.is_empty() {
        return Ok(Vec::new());
    }
    let hypnogram = entries.iter().any(|e| *e.entry.resource() == Resource::SleepCycle)
        && preferences(deps, user.team_id).await?.hypnogram_events;
    let mut staged = Vec::new();
    for (resource, change, value) in changed {
        let kind = if *change == Change::Created { "created" } else { "updated" };
        for t in event_types("daily", resource, hypnogram) {
            let events = data_events(
                &format!("{t}.{kind}"),
                user.team_id,
                user.user_id,
                user.client_user_id.as_str(),
                value,
            );
            staged.extend(events.into_iter().map(|e| Staged::new(deps, user.user_id, vec![e])));
        }
    }
    let items: Vec<Item> = staged
        .iter()
        .filter_map(|s| match s.write_op() {
            WriteOp::Put { item, .. } => Some(item),
            _ => None,
        })
        .collect();
    deps.table.put_all(items).await?;
    Ok(staged)
}

async fn publish(deps: &Deps, staged: Vec<Staged>) {
    for s in staged {
        s.publish(deps).await;
    }
}

/// Announces the historical stage of (`provider`, `resource`, window) unless it was: the
/// marker is written with the staged event in one transaction, on condition that it is not
/// there, so a resent final chunk is not announced twice. Answers whether it announced.
async fn announce_historical(
    deps: &Deps,
    user: &UserRecord,
    provider: &str,
    resource: &Resource,
    start: chrono::DateTime<chrono::Utc>,
    end: chrono::DateTime<chrono::Utc>,
) -> Result<bool, DomainError> {
    let data = to_body(&HistoricalPullCompleted {
        user_id: user.user_id.as_uuid(),
        start_date: start.date_naive(),
        end_date: end.date_naive(),
        provider: provider.to_owned(),
    });
    let events: Vec<_> = event_types("historical", resource, false)
        .into_iter()
        .map(|t| of_user(user, &format!("{t}.created"), data.clone()))
        .collect();
    let staged = Staged::new(deps, user.user_id, events);
    let marker = Item::new(
        keys::phone_historical(user.user_id, provider, resource, start, end),
        serde_json::json!({"announced_at": deps.now().to_rfc3339()}),
    );
    let ops = vec![WriteOp::Put { item: marker, condition: Condition::NotExists }, staged.write_op()];
    match deps.table.transact(ops).await {
        Ok(()) => {
            staged.publish(deps).await;
            Ok(true)
        }
        // The marker is there: announced by an earlier final chunk.
        Err(StoreError::ConditionFailed { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
