//! User records and the use cases that only read or write them: create, read, list, change.
//! Linking builds on these; the lifecycle (delete, undo, refresh, erasure) builds on both.

pub mod page_cache;
mod team_count;

pub(crate) use team_count::{
    COUNT_TRIES, ListedUsers, active_total, count_backoff, count_change, counter_made_sure_of, listed_change,
    listed_changed, listed_users, users_busy,
};

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::patch::Patch;
use wearlab_models::{
    CreateUserBody, FallbackBirthDate, FallbackTimeZone, PatchUserBody, User, UserPage, ValidationIssue,
};

use crate::Deps;
use crate::common::error::{DomainError, issue};
use crate::common::idempotency::Completion;
use crate::common::ids::{ClientUserId, TeamId, TimeZoneId, UserId};
use crate::keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Query, RawPage, StoreError, WriteOp};

/// `source_slug` of fallback values set through the API.
pub const MANUAL_SOURCE: &str = "manual";
/// GET /v2/user page size bounds.
pub const DEFAULT_LIMIT: u64 = 100;
pub const MAX_LIMIT: u64 = 500;
/// Most users a listing may skip.
pub const MAX_OFFSET: u64 = 1_000_000;
/// Most items one listing query asks for (DynamoDB also ends a page at 1 MB).
const LIST_QUERY_LIMIT: u64 = 1_000;

/// A deleted user's pending erasure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deletion {
    pub deleted_at: DateTime<Utc>,
    pub erase_at: DateTime<Utc>,
}

/// A connection as the user record lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionRef {
    pub provider: String,
    pub created_on: DateTime<Utc>,
}

/// The stored user. Stored with one-letter field names and without the fields it does not have
/// (a bare user is `{"u":..,"t":..,"c":..,"o":..}`, 146 bytes instead of 310: every user item is
/// stored twice on DynamoDB, in the table and in GSI1); items written before keep their long
/// names, which are read as well (the `alias`es).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserRecord {
    #[serde(rename = "u", alias = "user_id")]
    pub user_id: UserId,
    #[serde(rename = "t", alias = "team_id")]
    pub team_id: TeamId,
    #[serde(rename = "c", alias = "client_user_id")]
    pub client_user_id: ClientUserId,
    #[serde(rename = "o", alias = "created_on", with = "wearlab_models::user::rfc3339")]
    pub created_on: DateTime<Utc>,
    #[serde(rename = "z", alias = "fallback_time_zone", default, skip_serializing_if = "Option::is_none")]
    pub fallback_time_zone: Option<FallbackTimeZone>,
    #[serde(rename = "b", alias = "fallback_birth_date", default, skip_serializing_if = "Option::is_none")]
    pub fallback_birth_date: Option<FallbackBirthDate>,
    #[serde(rename = "s", alias = "ingestion_start", default, skip_serializing_if = "Option::is_none")]
    pub ingestion_start: Option<NaiveDate>,
    #[serde(rename = "e", alias = "ingestion_end", default, skip_serializing_if = "Option::is_none")]
    pub ingestion_end: Option<NaiveDate>,
    #[serde(rename = "d", alias = "deletion", default, skip_serializing_if = "Option::is_none")]
    pub deletion: Option<Deletion>,
    /// The user's provider connections (the items are in the user's partition); written in the
    /// same transaction as them.
    #[serde(rename = "n", alias = "connections", default, skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<ConnectionRef>,
}

impl UserRecord {
    pub fn to_wire(&self) -> User {
        User {
            user_id: self.user_id.as_uuid(),
            team_id: self.team_id.as_uuid(),
            client_user_id: self.client_user_id.to_string(),
            created_on: self.created_on,
            connected_sources: self
                .connections
                .iter()
                .map(|c| {
                    crate::common::provider_catalog::catalog().connected_source(&c.provider, c.created_on)
                })
                .collect(),
            fallback_time_zone: self.fallback_time_zone.clone(),
            fallback_birth_date: self.fallback_birth_date.clone(),
            ingestion_start: self.ingestion_start,
            ingestion_end: self.ingestion_end,
        }
    }

    /// The item for this record at `version`. Active users are listed through GSI1; deleted
    /// ones leave the index and carry the erasure time as expiry (a backstop for the eraser).
    pub(crate) fn to_item(&self, version: u64) -> Item {
        let mut item = Item::new(keys::user(self.user_id), to_body(self));
        item.version = version;
        match &self.deletion {
            None => item.with_gsi1(
                keys::team_users_index(self.team_id),
                keys::team_users_index_sort(self.created_on, self.user_id),
            ),
            Some(d) => item.with_expiry(Some(d.erase_at.timestamp())),
        }
    }
}

/// A parsed create request.
#[derive(Debug, Clone, PartialEq)]
pub struct NewUser {
    pub client_user_id: ClientUserId,
    pub fallback_time_zone: Option<TimeZoneId>,
    pub fallback_birth_date: Option<NaiveDate>,
    pub ingestion_start: Option<NaiveDate>,
    pub ingestion_end: Option<NaiveDate>,
}

impl crate::common::error::FromBody for NewUser {
    type Body = CreateUserBody;
    fn from_body(body: CreateUserBody, today: NaiveDate) -> Result<Self, DomainError> {
        Self::parse(body, today)
    }
}

impl NewUser {
    /// Checks every rule and reports every offending field at once.
    pub fn parse(body: CreateUserBody, today: NaiveDate) -> Result<Self, DomainError> {
        let mut issues = Vec::new();
        let client_user_id = parse_client_user_id(&body.client_user_id, &mut issues);
        let fallback_time_zone = body.fallback_time_zone.as_deref().and_then(|tz| parse_tz(tz, &mut issues));
        check_birth_date(body.fallback_birth_date, today, &mut issues);
        check_ingestion(body.ingestion_start, body.ingestion_end, &mut issues);
        match (client_user_id, issues.is_empty()) {
            (Some(client_user_id), true) => Ok(Self {
                client_user_id,
                fallback_time_zone,
                fallback_birth_date: body.fallback_birth_date,
                ingestion_start: body.ingestion_start,
                ingestion_end: body.ingestion_end,
            }),
            _ => Err(DomainError::Validation(issues)),
        }
    }
}

/// A parsed PATCH: omitted fields keep, `null` clears.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UserChanges {
    pub client_user_id: Option<ClientUserId>,
    pub fallback_time_zone: Patch<TimeZoneId>,
    pub fallback_birth_date: Patch<NaiveDate>,
    pub ingestion_start: Patch<NaiveDate>,
    pub ingestion_end: Patch<NaiveDate>,
}

impl crate::common::error::FromBody for UserChanges {
    type Body = PatchUserBody;
    fn from_body(body: PatchUserBody, today: NaiveDate) -> Result<Self, DomainError> {
        Self::parse(body, today)
    }
}

impl UserChanges {
    pub fn parse(body: PatchUserBody, today: NaiveDate) -> Result<Self, DomainError> {
        let mut issues = Vec::new();
        let client_user_id = match body.client_user_id {
            // The upstream client sends `null` for an id it does not change; a user always has one.
            Patch::Keep | Patch::Clear => None,
            Patch::Set(s) => parse_client_user_id(&s, &mut issues),
        };
        let fallback_time_zone = match body.fallback_time_zone {
            Patch::Keep => Patch::Keep,
            Patch::Clear => Patch::Clear,
            Patch::Set(tz) => parse_tz(&tz, &mut issues).map_or(Patch::Keep, Patch::Set),
        };
        if let Patch::Set(d) = body.fallback_birth_date {
            check_birth_date(Some(d), today, &mut issues);
        }
        if let (Patch::Set(s), Patch::Set(e)) = (&body.ingestion_start, &body.ingestion_end) {
            check_ingestion(Some(*s), Some(*e), &mut issues);
        }
        if !issues.is_empty() {
            return Err(DomainError::Validation(issues));
        }
        Ok(Self {
            client_user_id,
            fallback_time_zone,
            fallback_birth_date: body.fallback_birth_date,
            ingestion_start: body.ingestion_start,
            ingestion_end: body.ingestion_end,
        })
    }
}

fn parse_client_user_id(s: &str, issues: &mut Vec<ValidationIssue>) -> Option<ClientUserId> {
    ClientUserId::parse(s)
        .map_err(|e| issues.push(issue(&["client_user_id"], e.to_string(), "value_error")))
        .ok()
}

fn parse_tz(s: &str, issues: &mut Vec<ValidationIssue>) -> Option<TimeZoneId> {
    let tz = TimeZoneId::parse(s);
    if tz.is_none() {
        issues.push(issue(
            &["fallback_time_zone"],
            "fallback_time_zone must be an IANA time zone identifier, e.g. Europe/London",
            "value_error",
        ));
    }
    tz
}

/// The earliest birth date accepted: before it a date is a typo (or a negative year), and ages
/// computed from it would be nonsense.
const EARLIEST_BIRTH_DATE: NaiveDate = NaiveDate::from_ymd_opt(1900, 1, 1).expect("a valid date");

fn check_birth_date(d: Option<NaiveDate>, today: NaiveDate, issues: &mut Vec<ValidationIssue>) {
    let msg = match d {
        Some(d) if d > today => "fallback_birth_date must not be in the future",
        Some(d) if d < EARLIEST_BIRTH_DATE => "fallback_birth_date must be 1900-01-01 or later",
        _ => return,
    };
    issues.push(issue(&["fallback_birth_date"], msg, "value_error"));
}

fn check_ingestion(start: Option<NaiveDate>, end: Option<NaiveDate>, issues: &mut Vec<ValidationIssue>) {
    if let (Some(s), Some(e)) = (start, end)
        && s > e
    {
        issues.push(issue(
            &["ingestion_end"],
            "ingestion_end must not be before ingestion_start",
            "value_error",
        ));
    }
}

pub fn not_found(user_id: impl std::fmt::Display) -> DomainError {
    DomainError::NotFound(format!("User {user_id} not found."))
}

/// Creates a user: one transaction writing the user and its client_user_id reservation.
pub async fn create(deps: &Deps, team: TeamId, new: NewUser) -> Result<User, DomainError> {
    create_keeping(deps, team, new, &Completion::default()).await
}

/// [`create`], keeping the idempotent answer in the same transaction as the user.
pub async fn create_keeping(
    deps: &Deps,
    team: TeamId,
    new: NewUser,
    completion: &Completion,
) -> Result<User, DomainError> {
    for attempt in 0..COUNT_TRIES {
        let now = deps.now();
        let record = UserRecord {
            user_id: UserId::new_random(),
            team_id: team,
            client_user_id: new.client_user_id.clone(),
            created_on: now,
            fallback_time_zone: new.fallback_time_zone.clone().map(|tz| manual_tz(tz, now)),
            fallback_birth_date: new.fallback_birth_date.map(|d| manual_birth_date(d, now)),
            ingestion_start: new.ingestion_start,
            ingestion_end: new.ingestion_end,
            deletion: None,
            connections: vec![],
        };
        let reserved = Item::new(
            keys::client_user_id(team, &record.client_user_id),
            to_body(&Reservation { user_id: record.user_id, created_on: record.created_on }),
        );
        let user = record.to_wire();
        let mut writes = vec![
            WriteOp::Put { item: record.to_item(1), condition: Condition::NotExists },
            WriteOp::Put { item: reserved, condition: Condition::NotExists },
            count_change(team, record.user_id, 1),
        ];
        writes.extend(completion.ops(deps, 200, &user));
        match deps.table.transact(writes).await {
            Ok(()) => {
                tracing::info!(team_id = %team, user_id = %record.user_id, "user created");
                return Ok(user);
            }
            // The team has no counter item yet: create it, then try again.
            Err(StoreError::ConditionFailed { op: Some(2) }) => {
                active_total(deps, team).await?;
            }
            Err(StoreError::ConditionFailed { op: None })
                if reservation(deps, team, &record.client_user_id).await?.is_none() =>
            {
                active_total(deps, team).await?;
                count_backoff(attempt).await
            }
            Err(StoreError::ConditionFailed { .. }) => {
                return Err(taken(deps, team, &record.client_user_id).await);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(users_busy())
}

/// The error for a `client_user_id` someone holds, naming the holder.
async fn taken(deps: &Deps, team: TeamId, id: &ClientUserId) -> DomainError {
    match reservation(deps, team, id).await {
        Ok(Some(r)) => {
            DomainError::ClientUserIdTaken { user_id: r.user_id.as_uuid(), created_on: r.created_on }
        }
        // The holder was deleted in between: the caller may simply retry.
        Ok(None) => DomainError::Busy("client_user_id changed hands, retry".into()),
        Err(e) => e,
    }
}

/// The item that makes a `client_user_id` unique in its team, naming its holder. Stored with
/// the user record's one-letter names; older items' long names are read as well.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Reservation {
    #[serde(rename = "u", alias = "user_id")]
    pub(crate) user_id: UserId,
    #[serde(rename = "o", alias = "created_on")]
    pub(crate) created_on: DateTime<Utc>,
}

/// Pending erasure, read by the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErasureDue {
    pub team_id: TeamId,
    pub user_id: UserId,
}

/// The payload of an erasure schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErasureJob {
    pub erase_user: UserId,
}

async fn reservation(
    deps: &Deps,
    team: TeamId,
    id: &ClientUserId,
) -> Result<Option<Reservation>, DomainError> {
    match deps.table.get(&keys::client_user_id(team, id)).await? {
        Some(item) => Ok(Some(item.decode()?)),
        None => Ok(None),
    }
}

fn manual_tz(tz: TimeZoneId, now: DateTime<Utc>) -> FallbackTimeZone {
    FallbackTimeZone { id: tz.name().to_owned(), source_slug: MANUAL_SOURCE.into(), updated_at: now }
}

fn manual_birth_date(d: NaiveDate, now: DateTime<Utc>) -> FallbackBirthDate {
    FallbackBirthDate { value: d, source_slug: MANUAL_SOURCE.into(), updated_at: now }
}

/// Reads the stored user with its version, whatever its state, if it belongs to `team`.
pub async fn load(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
) -> Result<Option<(UserRecord, u64)>, DomainError> {
    let Some(item) = deps.table.get_raw(&keys::user(user_id)).await? else { return Ok(None) };
    let (record, version): (UserRecord, u64) = item.decode()?;
    Ok((record.team_id == team).then_some((record, version)))
}

/// An active user of the team, or 404. One read.
pub async fn load_active(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
) -> Result<(UserRecord, u64), DomainError> {
    match load(deps, team, user_id).await? {
        Some((r, v)) if r.deletion.is_none() => Ok((r, v)),
        _ => Err(not_found(user_id)),
    }
}

pub async fn get(deps: &Deps, team: TeamId, user_id: UserId) -> Result<User, DomainError> {
    Ok(load_active(deps, team, user_id).await?.0.to_wire())
}

pub async fn resolve(deps: &Deps, team: TeamId, client_user_id: &str) -> Result<User, DomainError> {
    let missing = || DomainError::NotFound(format!("User with client_user_id {client_user_id} not found."));
    // An id that could never be stored cannot be found either.
    let Ok(id) = ClientUserId::parse(client_user_id) else { return Err(missing()) };
    let r = reservation(deps, team, &id).await?.ok_or_else(missing)?;
    load_active(deps, team, r.user_id).await.map(|(u, _)| u.to_wire()).map_err(|_| missing())
}

/// An offset/limit page request, within bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub offset: u64,
    pub limit: u64,
}

impl PageRequest {
    pub fn parse(offset: Option<u64>, limit: Option<u64>) -> Result<Self, DomainError> {
        let (offset, limit) = (offset.unwrap_or(0), limit.unwrap_or(DEFAULT_LIMIT));
        let mut issues = Vec::new();
        if offset > MAX_OFFSET {
            issues.push(issue(&["offset"], format!("offset must be at most {MAX_OFFSET}"), "value_error"));
        }
        if !(1..=MAX_LIMIT).contains(&limit) {
            issues.push(issue(&["limit"], format!("limit must be between 1 and {MAX_LIMIT}"), "value_error"));
        }
        if issues.is_empty() { Ok(Self { offset, limit }) } else { Err(DomainError::Validation(issues)) }
    }
}

/// Active users, oldest first (by `created_on`, then `user_id`), with the total. Reads the
/// counter item and the team's index partition only as far as `offset + limit`, so a page costs
/// the same in a team of ten users and in one of a million. Page 1 (offset 0, the common case)
/// reads the counter and its users at once: its two reads take the time of one. The items are
/// decoded straight from their stored text into records (`query_raw`). The HTTP answer goes
/// through [`page_cache::list_json`], which keeps pages that have not changed.
pub async fn list(deps: &Deps, team: TeamId, page: PageRequest) -> Result<UserPage, DomainError> {
    Ok(read_page(deps, team, page).await?.0)
}

/// [`list`], with the counter item it read.
async fn read_page(
    deps: &Deps,
    team: TeamId,
    page: PageRequest,
) -> Result<(UserPage, ListedUsers), DomainError> {
    if page.offset == 0 {
        let q = listing_query(team, page);
        let (listed, first) = tokio::join!(listed_users(deps, team), deps.table.query_raw(q.clone()));
        let listed = listed?;
        Ok((collect_page(deps, q, Some(first?), page, listed.active).await?, listed))
    } else {
        let listed = listed_users(deps, team).await?;
        Ok((read_listed(deps, team, page, listed.active).await?, listed))
    }
}

/// The page's users, read from the index after the counter item (which gave `total`). Past the
/// end nothing is read.
async fn read_listed(
    deps: &Deps,
    team: TeamId,
    page: PageRequest,
    total: u64,
) -> Result<UserPage, DomainError> {
    let q = listing_query(team, page);
    let first = if page.offset < total { Some(deps.table.query_raw(q.clone()).await?) } else { None };
    collect_page(deps, q, first, page, total).await
}

/// The index query of a page's first read.
fn listing_query(team: TeamId, page: PageRequest) -> Query {
    let mut q = Query::gsi1(keys::team_users_index(team));
    q.limit = Some((page.offset + page.limit).min(LIST_QUERY_LIMIT) as u32);
    q
}

/// Reads on from the first index page `first` (of `q`) until the page's users are read.
async fn collect_page(
    deps: &Deps,
    mut q: Query,
    first: Option<RawPage>,
    page: PageRequest,
    total: u64,
) -> Result<UserPage, DomainError> {
    let PageRequest { offset, limit } = page;
    let wanted = offset + limit;
    let mut items = Vec::new();
    let mut next = first;
    while let Some(page) = next.take() {
        items.extend(page.items);
        if let Some(c) = page.next_cursor
            && (items.len() as u64) < wanted
        {
            q.cursor = Some(c);
            q.limit = Some((wanted - items.len() as u64).min(LIST_QUERY_LIMIT) as u32);
            next = Some(deps.table.query_raw(q.clone()).await?);
        }
    }
    let users = items
        .iter()
        .skip(offset as usize)
        .take(limit as usize)
        .map(|i| i.decode::<UserRecord>().map(|(r, _)| r.to_wire()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(UserPage { users, total, offset, limit })
}

/// Applies a PATCH. Retries a lost race on the user's version a few times.
pub async fn patch(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    changes: UserChanges,
) -> Result<(), DomainError> {
    for _ in 0..5 {
        let (current, version) = load_active(deps, team, user_id).await?;
        let now = deps.now();
        let mut next = current.clone();
        if let Some(id) = &changes.client_user_id {
            next.client_user_id = id.clone();
        }
        next.fallback_time_zone = changes
            .fallback_time_zone
            .clone()
            .map_patch(|tz| manual_tz(tz, now))
            .apply(current.fallback_time_zone.clone());
        next.fallback_birth_date = changes
            .fallback_birth_date
            .clone()
            .map_patch(|d| manual_birth_date(d, now))
            .apply(current.fallback_birth_date.clone());
        next.ingestion_start = changes.ingestion_start.clone().apply(current.ingestion_start);
        next.ingestion_end = changes.ingestion_end.clone().apply(current.ingestion_end);
        let mut issues = Vec::new();
        check_ingestion(next.ingestion_start, next.ingestion_end, &mut issues);
        if !issues.is_empty() {
            return Err(DomainError::Validation(issues));
        }
        if next == current {
            return Ok(());
        }
        let mut ops =
            vec![WriteOp::Put { item: next.to_item(version + 1), condition: Condition::VersionIs(version) }];
        let id_changed = next.client_user_id != current.client_user_id;
        if id_changed {
            ops.push(WriteOp::Delete {
                key: keys::client_user_id(team, &current.client_user_id),
                condition: Condition::None,
            });
            ops.push(WriteOp::Put {
                item: Item::new(
                    keys::client_user_id(team, &next.client_user_id),
                    to_body(&Reservation { user_id, created_on: current.created_on }),
                ),
                condition: Condition::NotExists,
            });
        }
        let counter = ops.len();
        ops.push(listed_change(team, user_id));
        match deps.table.transact(ops).await {
            Ok(()) => return Ok(()),
            Err(StoreError::ConditionFailed { op: Some(2) }) if id_changed => {
                return Err(taken(deps, team, &next.client_user_id).await);
            }
            Err(StoreError::ConditionFailed { op }) => {
                counter_made_sure_of(deps, team, op, counter).await?;
                // Either our version is stale (retry) or the new id is taken (op unknown).
                if id_changed
                    && op.is_none()
                    && let Some(r) = reservation(deps, team, &next.client_user_id).await?
                    && r.user_id != user_id
                {
                    return Err(DomainError::ClientUserIdTaken {
                        user_id: r.user_id.as_uuid(),
                        created_on: r.created_on,
                    });
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(DomainError::Busy("the user is being changed concurrently, retry".into()))
}

trait MapPatch<T> {
    fn map_patch<U>(self, f: impl FnOnce(T) -> U) -> Patch<U>;
}

impl<T> MapPatch<T> for Patch<T> {
    fn map_patch<U>(self, f: impl FnOnce(T) -> U) -> Patch<U> {
        match self {
            Patch::Keep => Patch::Keep,
            Patch::Clear => Patch::Clear,
            Patch::Set(v) => Patch::Set(f(v)),
        }
    }
}

#[cfg(test)]
mod stored_shape_tests {
    use super::*;

    fn bare() -> UserRecord {
        UserRecord {
            user_id: UserId::parse("0b6d3f4e-2f4a-4c35-9a51-7d1c2e9a8f10").unwrap(),
            team_id: TeamId::parse("00000000-0000-4000-8000-000000000001").unwrap(),
            client_user_id: ClientUserId::parse("bench-user-0000001").unwrap(),
            created_on: "2026-11-28T09:47:08.123456Z".parse().unwrap(),
            fallback_time_zone: None,
            fallback_birth_date: None,
            ingestion_start: None,
            ingestion_end: None,
            deletion: None,
            connections: vec![],
        }
    }

    #[test]
    fn a_bare_user_is_stored_in_its_short_shape() {
        let body = to_body(&bare());
        assert_eq!(
            body,
            serde_json::json!({
                "u": "0b6d3f4e-2f4a-4c35-9a51-7d1c2e9a8f10",
                "t": "00000000-0000-4000-8000-000000000001",
                "c": "bench-user-0000001",
                "o": "2026-11-28T09:47:08.123456Z"
            })
        );
        assert_eq!(body.to_string().len(), 146, "310 with the long names, the nulls and []");
        let item = bare().to_item(1);
        assert_eq!(item.decode::<UserRecord>().unwrap(), bare());
    }

    #[test]
    fn every_field_survives_the_short_shape() {
        let at: DateTime<Utc> = "2026-11-28T10:00:00Z".parse().unwrap();
        let full = UserRecord {
            fallback_time_zone: Some(manual_tz(TimeZoneId::parse("Europe/London").unwrap(), at)),
            fallback_birth_date: Some(manual_birth_date(NaiveDate::from_ymd_opt(1980, 2, 29).unwrap(), at)),
            ingestion_start: NaiveDate::from_ymd_opt(2026, 1, 1),
            ingestion_end: NaiveDate::from_ymd_opt(2026, 12, 31),
            deletion: Some(Deletion { deleted_at: at, erase_at: at + chrono::Duration::days(7) }),
            connections: vec![ConnectionRef { provider: "oura".into(), created_on: at }],
            ..bare()
        };
        let item = full.to_item(3);
        assert_eq!(item.decode::<UserRecord>().unwrap(), full);
    }

    /// Items written before the short names stay readable, as they were written.
    #[test]
    fn a_user_item_of_the_long_shape_reads_the_same() {
        let old = serde_json::json!({
            "user_id": "0b6d3f4e-2f4a-4c35-9a51-7d1c2e9a8f10",
            "team_id": "00000000-0000-4000-8000-000000000001",
            "client_user_id": "bench-user-0000001",
            "created_on": "2026-11-28T09:47:08.123456Z",
            "fallback_time_zone": {"id": "Europe/London", "source_slug": "manual", "updated_at": "2026-11-28T10:00:00Z"},
            "fallback_birth_date": null,
            "ingestion_start": "2026-01-01",
            "ingestion_end": null,
            "deletion": {"deleted_at": "2026-11-28T10:00:00Z", "erase_at": "2026-12-05T10:00:00Z"},
            "connections": [{"provider": "oura", "created_on": "2026-11-28T10:00:00Z"}]
        });
        let at: DateTime<Utc> = "2026-11-28T10:00:00Z".parse().unwrap();
        let want = UserRecord {
            fallback_time_zone: Some(manual_tz(TimeZoneId::parse("Europe/London").unwrap(), at)),
            ingestion_start: NaiveDate::from_ymd_opt(2026, 1, 1),
            deletion: Some(Deletion { deleted_at: at, erase_at: at + chrono::Duration::days(7) }),
            connections: vec![ConnectionRef { provider: "oura".into(), created_on: at }],
            ..bare()
        };
        let item = Item::new(keys::user(want.user_id), old);
        assert_eq!(item.decode::<UserRecord>().unwrap(), want);
        let raw = crate::ports::RawItem::from_item(&item);
        assert_eq!(raw.decode::<UserRecord>().unwrap().0, want);
        // The oldest shape had neither `deletion` nor `connections`.
        let oldest = serde_json::json!({
            "user_id": "0b6d3f4e-2f4a-4c35-9a51-7d1c2e9a8f10",
            "team_id": "00000000-0000-4000-8000-000000000001",
            "client_user_id": "bench-user-0000001",
            "created_on": "2026-11-28T09:47:08.123456Z",
            "fallback_time_zone": null,
            "fallback_birth_date": null,
            "ingestion_start": null,
            "ingestion_end": null
        });
        assert_eq!(Item::new(keys::user(want.user_id), oldest).decode::<UserRecord>().unwrap(), bare());
    }

    #[test]
    fn a_reservation_reads_in_both_shapes() {
        let r = Reservation { user_id: bare().user_id, created_on: bare().created_on };
        let short = to_body(&r);
        assert_eq!(
            short,
            serde_json::json!({"u": "0b6d3f4e-2f4a-4c35-9a51-7d1c2e9a8f10", "o": "2026-11-28T09:47:08.123456Z"})
        );
        let long = serde_json::json!({
            "user_id": "0b6d3f4e-2f4a-4c35-9a51-7d1c2e9a8f10",
            "created_on": "2026-11-28T09:47:08.123456Z"
        });
        for body in [short, long] {
            assert_eq!(serde_json::from_value::<Reservation>(body).unwrap(), r);
        }
    }
}
