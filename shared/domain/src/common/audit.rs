//! The audit log of PHI access: who (team, API key id or a user's own token) read or changed which user's health data,
//! demographics, insurance or lab orders, through which route, when, and with what outcome.
//!
//! An entry holds ids, the route template and the status code, never the data, the query string
//! or a body. Entries live in the team's own partitions (`keys::audit`), expire after the
//! deployment's retention, and are read back by the team only (`list`). The HTTP edge records
//! them (`wearlab_web::audit`); what happens when recording fails is decided here
//! (`on_failure`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Deps;
use wearlab_models::ValidationIssue;

use crate::common::error::{DomainError, issue};
use crate::common::ids::{Caller, KeyId, TeamId, UserId};
use crate::keys::audit as keys;
use crate::ports::{Cursor, Item, Page, Query, StoreError, to_body};

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

/// Who made an audited request: a team, with one of its API keys or through one user's own app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Actor {
    pub team_id: TeamId,
    pub credential: Credential,
}

/// The credential of an audited request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// One of the team's API keys.
    ApiKey(KeyId),
    /// The access token a user's phone got from the token exchange (`phone::tokens`): the
    /// user's own app, reading or sending that user's data.
    UserToken(UserId),
}

/// What an entry's `key_id` says for a request made with a user's token.
pub const USER_TOKEN: &str = "user_token";

impl std::fmt::Display for Credential {
    /// The entry's `key_id`: the API key's id, or [`USER_TOKEN`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::ApiKey(key) => key.fmt(f),
            Credential::UserToken(_) => f.write_str(USER_TOKEN),
        }
    }
}

impl From<Caller> for Actor {
    fn from(caller: Caller) -> Self {
        Self { team_id: caller.team_id, credential: Credential::ApiKey(caller.key_id) }
    }
}

/// One access, as the edge saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub actor: Actor,
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

/// Writes the entry of one access: one append (a put without condition: the entry's key holds
/// a fresh id, and the entry never changes), in one of the team's shards (by the entry's id,
/// [`keys::shard_of`]) and, when the route names a user, in that user's index. Durable when this
/// answers ([`crate::ports::Table::append`]).
pub async fn record(deps: &Deps, access: Access, retention: Retention) -> Result<(), DomainError> {
    let id = uuid::Uuid::new_v4().simple().to_string();
    deps.table.append(entry_item(access, deps.now(), id, retention)).await?;
    Ok(())
}

/// The stored item of the entry `id` of one access at `at`: the entry as its body, in one of
/// the team's shards, in the user's index when the route names a user, expiring after
/// `retention`.
pub fn entry_item(access: Access, at: DateTime<Utc>, id: String, retention: Retention) -> Item {
    let team = access.actor.team_id;
    let expires = at + retention.duration();
    let entry = AuditEntry {
        id,
        at,
        key_id: access.actor.credential.to_string(),
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
    item
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
/// Most rounds of shard queries one listing page makes (a page may come short of its limit,
/// with a cursor, after them; the first round fills it unless the shards are uneven).
const MERGE_ROUNDS: usize = 4;
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

/// The team's entries, newest first, one page. Without `user_id` the entries are spread over
/// the team's shards ([`keys::team_partitions`]): each is queried (at once) for about twice its
/// share of the page, and the pages merged newest first (another round, for twice as many, if
/// a shard's share ran short). The cursor is the sort key (time, then id) of the page's last
/// entry, which places it in every shard: the next page is each shard's entries below it.
pub async fn list(
    deps: &Deps,
    team: TeamId,
    filter: AuditFilter,
) -> Result<(Vec<AuditEntry>, Option<Cursor>), DomainError> {
    let pks = match filter.user_id {
        Some(user) => vec![keys::user_index(team, user)],
        None => keys::team_partitions(team),
    };
    let gsi1 = filter.user_id.map(|user| keys::user_index(team, user));
    // A cursor is only followed inside the partitions it came from: one of another team's (or
    // another filter's) pages is refused, never read.
    if let Some(cursor) = &filter.cursor {
        let own = cursor.pk == keys::team_partition(team)
            && cursor.gsi1.as_ref().map(|(pk, _)| pk) == gsi1.as_ref();
        if !own {
            return Err(StoreError::InvalidCursor.into());
        }
    }
    // Sort keys start with the time, so the window is a key range: from `since` (inclusive) to
    // `until` (exclusive: "<until>#id" sorts after "<until>"), and below the cursor's entry.
    let from = filter.since.map(keys::time_bound).unwrap_or_default();
    let mut to = filter.until.map(keys::time_bound).unwrap_or_else(|| "~".into());
    if let Some(cursor) = &filter.cursor {
        to = to.min(keys::below(&cursor.sk));
    }
    if to < from {
        return Ok((vec![], None));
    }
    let query = |pk: &String, to: &String, limit: u32| {
        let q = match gsi1 {
            Some(_) => Query::gsi1(pk.clone()),
            None => Query::partition(pk.clone()),
        };
        q.between(from.clone(), to.clone()).descending().limit(limit)
    };
    // Entries spread evenly over the shards (by a hash of the id), so each is asked for about
    // twice its share; where a shard's share runs short the merge stops early and the next
    // round asks every shard again below the last entry taken, for twice as many.
    let mut per_shard =
        if pks.len() > 1 { filter.limit.div_ceil(pks.len() as u32) * 2 + 2 } else { filter.limit };
    let mut items: Vec<Item> = Vec::new();
    let mut more = false;
    for _ in 0..MERGE_ROUNDS {
        let need = filter.limit as usize - items.len();
        let limit = per_shard.min(need as u32);
        let pages =
            futures_util::future::try_join_all(pks.iter().map(|pk| deps.table.query(query(pk, &to, limit))))
                .await?;
        let (taken, left) = merge(pages, need);
        items.extend(taken);
        more = left;
        match items.last() {
            Some(last) if more && items.len() < filter.limit as usize => to = keys::below(&last.key.sk),
            _ => break,
        }
        per_shard = per_shard.saturating_mul(2);
    }
    let next = match items.last() {
        Some(last) if more => Some(Cursor {
            pk: keys::team_partition(team),
            sk: last.key.sk.clone(),
            gsi1: gsi1.map(|pk| (pk, last.key.sk.clone())),
        }),
        _ => None,
    };
    let entries = items.iter().map(|i| i.decode()).collect::<Result<Vec<AuditEntry>, _>>()?;
    Ok((entries, next))
}

/// The newest `limit` items of pages of several partitions (each newest first), and whether
/// more may follow. A partition whose page ended early (more to read) has nothing unread above
/// its last item: items below it are left for the next page, since that partition's unread
/// ones may come before them.
fn merge(pages: Vec<Page>, limit: usize) -> (Vec<Item>, bool) {
    let cut = pages
        .iter()
        .filter(|p| p.next_cursor.is_some())
        .filter_map(|p| p.items.last().map(|i| i.key.sk.clone()))
        .max();
    let mut more = pages.iter().any(|p| p.next_cursor.is_some());
    let mut items: Vec<Item> = pages.into_iter().flat_map(|p| p.items).collect();
    items.sort_unstable_by(|a, b| b.key.sk.cmp(&a.key.sk));
    let keep = items.iter().take(limit).take_while(|i| cut.as_ref().is_none_or(|c| i.key.sk >= *c)).count();
    more |= keep < items.len();
    items.truncate(keep);
    (items, more)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(sks: &[&str], more: bool) -> Page {
        let items: Vec<Item> =
            sks.iter().map(|sk| Item::new(crate::ports::Key::new("P", *sk), serde_json::json!({}))).collect();
        let next_cursor =
            more.then(|| Cursor { pk: "P".into(), sk: sks.last().unwrap().to_string(), gsi1: None });
        Page { items, next_cursor }
    }

    fn sks(items: &[Item]) -> Vec<&str> {
        items.iter().map(|i| i.key.sk.as_str()).collect()
    }

    #[test]
    fn pages_of_shards_merge_newest_first_and_stop_where_a_shard_has_unread_entries() {
        let (items, more) = merge(vec![page(&["9", "5", "1"], false), page(&["8", "7"], false)], 10);
        assert_eq!((sks(&items), more), (vec!["9", "8", "7", "5", "1"], false));
        let (items, more) = merge(vec![page(&["9", "5", "1"], false), page(&["8", "7"], false)], 3);
        assert_eq!((sks(&items), more), (vec!["9", "8", "7"], true));
        // The second shard's page ended early (1 MB) after 7: its entries below 7 are unread, so
        // 5 and 1 wait for the next page, which starts below 7.
        let (items, more) = merge(vec![page(&["9", "5", "1"], false), page(&["8", "7"], true)], 10);
        assert_eq!((sks(&items), more), (vec!["9", "8", "7"], true));
        assert_eq!(merge(vec![page(&[], false), page(&[], false)], 5).0.len(), 0);
    }

    #[test]
    fn the_bound_below_a_sort_key_takes_every_key_below_it_and_none_above() {
        let at = DateTime::parse_from_rfc3339("2026-03-01T09:00:00Z").unwrap().with_timezone(&Utc);
        let ids = [
            "00000000000000000000000000000000",
            "0000000000000000000000000000000a",
            "0000000000000000000000000000000b",
            "00000000000000000000000000000010",
        ];
        let sorted: Vec<String> = ids.iter().map(|id| keys::entry_sort(at, id)).collect();
        for (n, sk) in sorted.iter().enumerate() {
            let bound = keys::below(sk);
            for (m, other) in sorted.iter().enumerate() {
                assert_eq!(*other <= bound, m < n, "{other} against the bound below {sk}");
            }
        }
    }

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
