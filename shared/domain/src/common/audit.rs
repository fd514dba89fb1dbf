//! The audit log of PHI access: who (team, API key id) read or changed which user's health data,
//! demographics, insurance or lab orders, through which route, when, and with what outcome.
//!
//! An entry holds ids, the route template and the status code, never the data, the query string
//! or a body. Entries live in the team's own partition (`keys::audit`), expire after the
//! deployment's retention, and are read back by the team only (`list`). The HTTP edge records
//! them (`wearlab_web::audit`); what happens when recording fails is decided here
//! (`on_failure`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Deps;
use wearlab_models::ValidationIssue;

use crate::common::error::{DomainError, issue};
use crate::common::ids::Caller;
use crate::common::ids::{TeamId, UserId};
use crate::keys::audit as keys;
use crate::ports::{Condition, Cursor, Item, Query, StoreError, to_body};

/// How long entries are kept when the deployment does not say: six years, the retention
/// HIPAA asks of security documentation (45 CFR 164.316(b)(2)).
pub const DEFAULT_RETENTION_DAYS: u32 = 2192;

/// Longest `resource` kept: path values are ids, anything longer is cut rather than stored.
const MAX_RESOURCE_CHARS: usize = 128;

/// How long entries are kept (the deployment's `WEARLAB_AUDIT_RETENTION_DAYS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention(u32);

impl Retention {
    /// 1 to 3,660 days (ten years).
    pub fn parse(days: &str) -> Option<Self> {
        days.trim().parse::<u32>().ok().filter(|d| (1..=3660).contains(d)).map(Self)
    }

    pub fn days(self) -> u32 {
        self.0
    }

    fn duration(self) -> Duration {
        Duration::from_secs(u64::from(self.0) * 86_400)
    }
}

impl Default for Retention {
    fn default() -> Self {
        Self(DEFAULT_RETENTION_DAYS)
    }
}

/// One access, as the edge saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub caller: Caller,
    pub method: String,
    /// The route template (`/v2/summary/sleep/{user_id}`), never the concrete path.
    pub route: String,
    /// The user whose data the route names, when it names one.
    pub user_id: Option<UserId>,
    /// The route's other path values (an order id, a timeseries resource), `/`-joined.
    pub resource: Option<String>,
    pub status: u16,
}

/// A stored entry, as the team reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: String,
    pub at: DateTime<Utc>,
    pub key_id: String,
    pub method: String,
    pub route: String,
    pub user_id: Option<UserId>,
    pub resource: Option<String>,
    pub status: u16,
}

/// What the edge does with an answer whose entry could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// Withhold the answer (503): data is disclosed only when its disclosure is on record.
    /// For reads, which change nothing, so the client simply asks again.
    Withhold,
    /// Keep the answer and log the failure: the change is already committed, and answering
    /// 5xx would report a stored change as failed (a retry would then meet its own result).
    Answer,
}

/// Reads fail closed, changes keep their answer (see [`OnFailure`]).
pub fn on_failure(method: &str) -> OnFailure {
    match method {
        "GET" | "HEAD" => OnFailure::Withhold,
        _ => OnFailure::Answer,
    }
}

/// Writes the entry of one access: one conditional put, in the team's partition and, when the
/// route names a user, in that user's index.
pub async fn record(deps: &Deps, access: Access, retention: Retention) -> Result<(), DomainError> {
    let at = deps.now();
    let id = uuid::Uuid::new_v4().simple().to_string();
    let team = access.caller.team_id;
    let expires = at + retention.duration();
    let entry = AuditEntry {
        id,
        at,
        key_id: access.caller.key_id.to_string(),
        method: access.method,
        route: access.route,
        user_id: access.user_id,
        resource: access.resource.map(|r| r.chars().take(MAX_RESOURCE_CHARS).collect()),
        status: access.status,
    };
    let key = keys::entry(team, at, &entry.id);
    let mut item = Item::new(key.clone(), to_body(&entry)).with_expiry(Some(expires.timestamp()));
    if let Some(user) = entry.user_id {
        item = item.with_gsi1(keys::user_index(team, user), key.sk);
    }
    deps.table.put(item, Condition::NotExists).await?;
    Ok(())
}

/// Which entries a team asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditFilter {
    pub user_id: Option<UserId>,
    /// Entries at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Entries before this time.
    pub until: Option<DateTime<Utc>>,
    pub limit: u32,
    pub cursor: Option<Cursor>,
}

/// The query parameters as they came (`None`: absent).
#[derive(Debug, Clone, Default)]
pub struct RawFilter<'a> {
    pub user_id: Option<&'a str>,
    pub since: Option<&'a str>,
    pub until: Option<&'a str>,
    pub limit: Option<u32>,
    pub next_cursor: Option<&'a str>,
}

pub const DEFAULT_PAGE: u32 = 50;
pub const MAX_PAGE: u32 = 500;

impl AuditFilter {
    /// Checks every parameter and reports every offending one (422).
    pub fn parse(raw: RawFilter<'_>) -> Result<Self, DomainError> {
        let mut issues: Vec<ValidationIssue> = Vec::new();
        let mut bad = |name: &str, msg: &str, kind: &str| issues.push(issue(&[name], msg, kind));
        let user_id = raw.user_id.and_then(|s| {
            let parsed = UserId::parse(s);
            if parsed.is_none() {
                bad("user_id", "user_id must be a UUID", "uuid_parsing");
            }
            parsed
        });
        let mut time = |name: &str, value: Option<&str>| {
            value.and_then(|s| match DateTime::parse_from_rfc3339(s) {
                Ok(t) => Some(t.with_timezone(&Utc)),
                Err(_) => {
                    bad(name, "must be an RFC 3339 date-time with offset", "datetime_parsing");
                    None
                }
            })
        };
        let since = time("since", raw.since);
        let until = time("until", raw.until);
        if let (Some(s), Some(u)) = (since, until)
            && s > u
        {
            bad("until", "until must not be before since", "value_error");
        }
        let limit = raw.limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            bad("limit", "limit must be between 1 and 500", "value_error");
        }
        let cursor = raw.next_cursor.and_then(|c| {
            let parsed = Cursor::decode(c).ok();
            if parsed.is_none() {
                bad("next_cursor", "invalid cursor", "value_error");
            }
            parsed
        });
        if !issues.is_empty() {
            return Err(DomainError::Validation(issues));
        }
        Ok(Self { user_id, since, until, limit, cursor })
    }
}

/// The team's entries, newest first, one page.
pub async fn list(
    deps: &Deps,
    team: TeamId,
    filter: AuditFilter,
) -> Result<(Vec<AuditEntry>, Option<Cursor>), DomainError> {
    let mut query = match filter.user_id {
        Some(user) => Query::gsi1(keys::user_index(team, user)),
        None => Query::partition(keys::team_partition(team)),
    };
    // A cursor is only followed inside the partition it came from: one of another team's (or
    // another filter's) pages is refused, never read.
    if let Some(cursor) = &filter.cursor {
        let own = match filter.user_id {
            Some(_) => {
                cursor.pk == keys::team_partition(team)
                    && cursor.gsi1.as_ref().is_some_and(|(pk, _)| *pk == query.pk)
            }
            None => cursor.pk == query.pk && cursor.gsi1.is_none(),
        };
        if !own {
            return Err(StoreError::InvalidCursor.into());
        }
    }
    // Sort keys start with the time, so the window is a key range: from `since` (inclusive) to
    // `until` (exclusive: "<until>#id" sorts after "<until>").
    let from = filter.since.map(keys::time_bound).unwrap_or_default();
    let to = filter.until.map(keys::time_bound).unwrap_or_else(|| "~".into());
    if filter.since.is_some() || filter.until.is_some() {
        query = query.between(from, to);
    }
    let page = deps.table.query(query.descending().limit(filter.limit).after(filter.cursor)).await?;
    let entries = page.items.iter().map(|i| i.decode()).collect::<Result<Vec<AuditEntry>, _>>()?;
    Ok((entries, page.next_cursor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fail_closed_and_changes_keep_their_answer() {
        assert_eq!(on_failure("GET"), OnFailure::Withhold);
        assert_eq!(on_failure("HEAD"), OnFailure::Withhold);
        for m in ["POST", "PUT", "PATCH", "DELETE"] {
            assert_eq!(on_failure(m), OnFailure::Answer, "{m}");
        }
    }

    #[test]
    fn retention_is_one_day_to_ten_years() {
        assert_eq!(Retention::default().days(), DEFAULT_RETENTION_DAYS);
        assert_eq!(Retention::parse(" 30 ").map(Retention::days), Some(30));
        for bad in ["0", "3661", "-1", "", "ten", "1.5"] {
            assert_eq!(Retention::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_filter_reports_every_offending_parameter() {
        let raw = RawFilter {
            user_id: Some("nope"),
            since: Some("yesterday"),
            until: Some("2026-01-01"),
            limit: Some(0),
            next_cursor: Some("!!"),
        };
        let Err(DomainError::Validation(issues)) = AuditFilter::parse(raw) else { panic!("refused") };
        let names: Vec<String> = issues.iter().map(|i| format!("{:?}", i.loc.last().unwrap())).collect();
        assert_eq!(issues.len(), 5, "{names:?}");
        let ok = AuditFilter::parse(RawFilter {
            since: Some("2026-03-01T00:00:00Z"),
            until: Some("2026-03-02T00:00:00+01:00"),
            ..RawFilter::default()
        })
        .unwrap();
        assert_eq!(ok.limit, DEFAULT_PAGE);
        assert_eq!(ok.until.unwrap().to_rfc3339(), "2026-03-01T23:00:00+00:00");
        let reversed = RawFilter {
            since: Some("2026-03-02T00:00:00Z"),
            until: Some("2026-03-01T00:00:00Z"),
            ..RawFilter::default()
        };
        assert!(AuditFilter::parse(reversed).is_err());
    }
}
