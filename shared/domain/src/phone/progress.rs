//! Sync progress reports: the SDKs send theirs when a sync ends and `reporting_interval` has
//! passed (iOS `Sources/VitalHealthKit/HealthKit/Storage/SyncProgressReporter.swift`; Android
//! `VitalHealthCore/.../syncProgress/SyncProgressReporter.kt`). The latest per user and provider
//! is kept (one item in the user's partition, erased with the user) and the team reads it back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::ValidationIssue;
use wearlab_models::phone_sync::{ProgressEvent, SyncProgressBody, SyncProgressReport};

use crate::Deps;
use crate::common::error::{DomainError, issue};
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::catalog;
use crate::keys;
use crate::ports::{Condition, Item, to_body};
use crate::users;

/// Largest report kept, as compact JSON: one DynamoDB item holds 400 KB, with room for the key
/// and the rest of the record. The iOS SDK keeps at most 51 syncs and 26 system events per type.
pub const MAX_REPORT_BYTES: usize = 256 * 1024;
/// Highest sync status code (12: connection destroyed).
const MAX_STATUS: i64 = 12;
/// Highest sync tag code (10: app terminating).
const MAX_TAG: i64 = 10;

/// A report that passed its checks.
#[derive(Debug, Clone)]
pub struct Report(SyncProgressBody);

/// Why a report is not kept.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// Over [`MAX_REPORT_BYTES`] (413).
    #[error("A sync progress report holds at most {MAX_REPORT_BYTES} bytes of JSON; this one has {0}.")]
    TooLarge(usize),
    #[error(transparent)]
    Invalid(#[from] DomainError),
}

fn is_instant(s: &str) -> bool {
    DateTime::parse_from_rfc3339(s).is_ok()
}

/// The checks of one report, each finding at its place in the body.
struct Findings(Vec<ValidationIssue>);

impl Findings {
    fn add(&mut self, loc: &[String], msg: impl Into<String>, kind: &str) {
        let loc: Vec<&str> = loc.iter().map(String::as_str).collect();
        self.0.push(issue(&loc, msg, kind));
    }

    fn instant(&mut self, loc: &[String], value: Option<&String>) {
        if value.is_some_and(|v| !is_instant(v)) {
            self.add(loc, "Input should be a valid datetime", "datetime_parsing");
        }
    }

    fn code(&mut self, loc: &[String], value: i64, max: i64) {
        if !(0..=max).contains(&value) {
            self.add(loc, format!("Input should be between 0 and {max}"), "less_than_equal");
        }
    }

    fn event(&mut self, loc: &[String], e: &ProgressEvent, max_type: i64) {
        self.instant(&at(loc, &["timestamp"]), Some(&e.timestamp));
        self.code(&at(loc, &["type"]), e.kind, max_type);
    }
}

/// `loc` followed by `more`.
fn at(loc: &[String], more: &[&str]) -> Vec<String> {
    loc.iter().cloned().chain(more.iter().map(|s| (*s).to_owned())).collect()
}

impl Report {
    /// Checks the size and every time and code of `body`.
    pub fn parse(body: SyncProgressBody) -> Result<Self, Refused> {
        let bytes = serde_json::to_vec(&body).map(|b| b.len()).unwrap_or(usize::MAX);
        if bytes > MAX_REPORT_BYTES {
            return Err(Refused::TooLarge(bytes));
        }
        let mut f = Findings(Vec::new());
        for (name, t) in &body.sync_progress.backfill_types {
            let base = at(&[], &["sync_progress", "backfill_types", name]);
            for (i, sync) in t.syncs.iter().enumerate() {
                let sync_loc = at(&base, &["syncs", &i.to_string()]);
                f.instant(&at(&sync_loc, &["start"]), Some(&sync.start));
                f.instant(&at(&sync_loc, &["end"]), sync.end.as_ref());
                for (j, tag) in sync.tags.iter().enumerate() {
                    f.code(&at(&sync_loc, &["tags", &j.to_string()]), *tag, MAX_TAG);
                }
                for (j, s) in sync.statuses.iter().enumerate() {
                    f.event(&at(&sync_loc, &["statuses", &j.to_string()]), s, MAX_STATUS);
                }
            }
            for (j, e) in t.system_events.iter().enumerate() {
                f.event(&at(&base, &["system_events", &j.to_string()]), e, i64::MAX);
            }
            f.instant(&at(&base, &["first_asked"]), t.first_asked.as_ref());
        }
        if f.0.is_empty() { Ok(Self(body)) } else { Err(DomainError::Validation(f.0).into()) }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    team_id: TeamId,
    provider: String,
    received_at: DateTime<Utc>,
    report: SyncProgressBody,
}

/// Keeps `report` as the latest of the user's (of `team`) `sdk` provider `provider`.
pub async fn record(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    provider: &str,
    report: Report,
) -> Result<(), DomainError> {
    let slug = catalog().sdk(provider)?.slug.clone();
    users::load_active(deps, team, user_id).await?;
    let stored = Stored { team_id: team, provider: slug.clone(), received_at: deps.now(), report: report.0 };
    deps.table
        .put(Item::new(keys::phone_sync::progress(user_id, &slug), to_body(&stored)), Condition::None)
        .await?;
    tracing::info!(team_id = %team, user_id = %user_id, provider = slug, "sync progress recorded");
    Ok(())
}

/// The latest report of the user's `sdk` provider `provider`, 404 when none.
pub async fn latest(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    provider: &str,
) -> Result<SyncProgressReport, DomainError> {
    let slug = catalog().sdk(provider)?.slug.as_str();
    users::load_active(deps, team, user_id).await?;
    let stored: Stored = match deps.table.get(&keys::phone_sync::progress(user_id, slug)).await? {
        Some(item) => item.decode()?,
        None => {
            return Err(DomainError::NotFound(format!(
                "User {user_id} has sent no sync progress report for {slug}."
            )));
        }
    };
    Ok(SyncProgressReport {
        user_id: user_id.as_uuid(),
        provider: stored.provider,
        received_at: stored.received_at,
        sync_progress: stored.report.sync_progress,
        device_info: stored.report.device_info,
    })
}
