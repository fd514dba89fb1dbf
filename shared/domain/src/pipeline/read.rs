//! The read side: summaries by date range and provider, the profile, grouped timeseries with
//! cursor pagination. Every read checks the user belongs to the team (else 404).

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::de::DeserializeOwned;
use wearlab_models::Resource;
use wearlab_models::data::{GroupedTimeseries, ProfileSummary, SampleGroup};

use super::normalize::{is_summary, upgrade_stored};
use super::store::Stored;
use crate::Deps;
use crate::common::error::{DomainError, issue};
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::catalog;
use crate::keys::{self, pipeline as pkeys};
use crate::ports::{Cursor, Item, Query, StoreError, query_all};
use crate::users;

/// Day-items (one resource, day and provider each) per timeseries page.
pub const SERIES_PAGE: u32 = 7;
/// Most days one summary read may span.
pub const MAX_RANGE_DAYS: i64 = 366 * 2;
/// Most items one summary read answers; a range holding more is a 422 naming this limit.
pub const MAX_ITEMS: usize = 10_000;

/// A validated inclusive range of days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Days {
    pub start: NaiveDate,
    pub end: NaiveDate,
}

/// Parses `start_date` and `end_date` (default: today): each `YYYY-mm-dd`, end not before start.
pub fn parse_days(deps: &Deps, start: &str, end: Option<&str>) -> Result<Days, DomainError> {
    let mut issues = Vec::new();
    let parse = |s: &str, field: &str, issues: &mut Vec<_>| match NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        Ok(d) if s.len() == 10 => Some(d),
        _ => {
            issues.push(issue(
                &[field],
                "Input should be a valid date (YYYY-mm-dd)",
                "date_from_datetime_parsing",
            ));
            None
        }
    };
    let s = parse(start, "start_date", &mut issues);
    let e = match end {
        Some(e) => parse(e, "end_date", &mut issues),
        None => Some(deps.now().date_naive()),
    };
    if let (Some(s), Some(e)) = (s, e) {
        if e < s {
            issues.push(issue(&["end_date"], "end_date must not be before start_date", "value_error"));
        } else if (e - s).num_days() >= MAX_RANGE_DAYS {
            issues.push(issue(
                &["end_date"],
                format!("at most {MAX_RANGE_DAYS} days per request"),
                "value_error",
            ));
        } else if issues.is_empty() {
            return Ok(Days { start: s, end: e });
        }
    }
    Err(DomainError::Validation(issues))
}

async fn check_user(deps: &Deps, team: TeamId, user: UserId) -> Result<(), DomainError> {
    users::load_active(deps, team, user).await.map(|_| ())
}

/// Summaries of `resource` (activity, sleep, sleep_cycle, workouts, body, meal) in `days`,
/// oldest first, optionally of one provider.
pub async fn summaries<T: DeserializeOwned>(
    deps: &Deps,
    team: TeamId,
    user: UserId,
    resource: &Resource,
    days: Days,
    provider: Option<&str>,
) -> Result<Vec<T>, DomainError> {
    check_user(deps, team, user).await?;
    let (from, to) = pkeys::summary_range(resource, days.start, days.end);
    let mut q = Query::partition(keys::user_partition(user)).between(from, to);
    let mut items = Vec::new();
    // The provider is filtered page by page, before the limit is counted: the key orders by
    // day first, so one provider's items may all come after MAX_ITEMS of another's.
    loop {
        let page = deps.table.query(q.clone()).await?;
        items.extend(
            page.items
                .into_iter()
                .filter(|i| provider.is_none_or(|p| pkeys::provider_of(&i.key.sk) == Some(p))),
        );
        if items.len() > MAX_ITEMS {
            // Never a silent cut: the client narrows the range instead.
            return Err(DomainError::Validation(vec![issue(
                &["end_date"],
                format!(
                    "more than {MAX_ITEMS} {resource} summaries in this range, the most one request answers: \
                     ask for fewer days (or one provider)"
                ),
                "value_error",
            )]));
        }
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    items.iter().map(|i| decode_summary(resource, i)).collect()
}

/// A stored summary of `resource`, upgraded to its current shape.
fn decode_summary<T: DeserializeOwned>(resource: &Resource, item: &Item) -> Result<T, DomainError> {
    let mut s: Stored = item.decode()?;
    upgrade_stored(resource, &mut s.v);
    serde_json::from_value(s.v).map_err(|e| StoreError::Corrupt(e.to_string()).into())
}

/// Stored summaries of one resource, oldest first, and where the next ones start.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryPage<T> {
    pub items: Vec<T>,
    /// Pass back as `after` for the summaries that follow; `None` when there are none.
    pub next: Option<String>,
}

/// At most `max` stored summaries of `resource` (each record its own: a night and a nap are
/// two) in `days`, after the position `after` (a previous answer's `next`). The caller has
/// checked the user. One round trip, however many summaries the user holds.
pub async fn summary_page<T: DeserializeOwned>(
    deps: &Deps,
    user: UserId,
    resource: &Resource,
    days: Days,
    after: Option<&str>,
    max: usize,
) -> Result<SummaryPage<T>, DomainError> {
    let partition = keys::user_partition(user);
    let (from, to) = pkeys::summary_range(resource, days.start, days.end);
    let cursor = cursor_within(&partition, &from, &to, after)?;
    let limit = max.clamp(1, SERIES_DAYS_READ as usize) as u32;
    let q = Query::partition(partition).between(&from, &to).limit(limit).after(cursor);
    let page = deps.table.query(q).await?;
    let next = page.next_cursor.as_ref().and(page.items.last()).map(|i| i.key.sk.clone());
    let items = page.items.iter().map(|i| decode_summary(resource, i)).collect::<Result<_, _>>()?;
    Ok(SummaryPage { items, next })
}

/// The table cursor of a position a read answered (`after`, a sort key), which must lie within
/// the range the read walks (`from` to `to`): anything else is not a cursor this server gave.
fn cursor_within(
    partition: &str,
    from: &str,
    to: &str,
    after: Option<&str>,
) -> Result<Option<Cursor>, DomainError> {
    match after {
        Some(sk) if sk > from && sk <= to => {
            Ok(Some(Cursor { pk: partition.to_owned(), sk: sk.to_owned(), gsi1: None }))
        }
        Some(_) => Err(StoreError::InvalidCursor.into()),
        None => Ok(None),
    }
}

/// The user's profile from `provider`, else from the first provider (by slug) that gave one.
pub async fn profile(
    deps: &Deps,
    team: TeamId,
    user: UserId,
    provider: Option<&str>,
) -> Result<ProfileSummary, DomainError> {
    check_user(deps, team, user).await?;
    let q = Query::partition(keys::user_partition(user)).prefix(pkeys::PROFILE_PREFIX);
    let items = query_all(deps.table.as_ref(), q, 1_000).await?;
    let item = items
        .iter()
        .find(|i| provider.is_none_or(|p| pkeys::profile_provider(&i.key.sk) == Some(p)))
        .ok_or_else(|| DomainError::NotFound("No profile data for this user yet.".into()))?;
    let s: Stored = item.decode()?;
    serde_json::from_value(s.v).map_err(|e| StoreError::Corrupt(e.to_string()).into())
}

/// Whether `resource` is a timeseries some provider gives.
pub fn is_timeseries(resource: &Resource) -> bool {
    !is_summary(resource)
        && *resource != Resource::Connection
        && catalog().all().iter().any(|p| p.data_resources().any(|r| r == resource))
}

/// One stored day of a timeseries of one provider (and source): every sample of its parts.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesDay {
    /// The UTC day.
    pub date: NaiveDate,
    pub provider: String,
    pub group: SampleGroup,
}

/// Whole stored days of a timeseries, oldest first, and where the next ones start.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesDays {
    pub days: Vec<SeriesDay>,
    /// Pass back as `after` for the days that follow; `None` when there are none.
    pub next: Option<String>,
}

/// Items one round trip of [`series_days`] asks for.
pub const SERIES_DAYS_READ: u32 = 100;

/// At most `max_days` whole stored days of `resource` in `days`, after the position `after`
/// (a previous answer's `next`), each with every one of its parts. The caller has checked the
/// user. A day is never cut: its parts are read to its end, so a page of N days costs about
/// (their items) / [`SERIES_DAYS_READ`] + 1 round trips, however much else the user holds (a
/// day of 1-second samples is 44 items).
pub async fn series_days(
    deps: &Deps,
    user: UserId,
    resource: &Resource,
    days: Days,
    after: Option<&str>,
    max_days: usize,
) -> Result<SeriesDays, DomainError> {
    let partition = keys::user_partition(user);
    let (from, to) = pkeys::series_range(resource, days.start, days.end);
    let mut cursor = cursor_within(&partition, &from, &to, after)?;
    let mut out: Vec<SeriesDay> = Vec::new();
    // The day being read: its own sort key, its number of parts, what it holds so far.
    let mut current: Option<(String, u32, SeriesDay)> = None;
    let mut previous_sk: Option<String> = None;
    loop {
        // No more items than the days still wanted (and the one that shows the last is whole)
        // could hold: a page's last round trip does not read on into days it will not answer.
        let wanted = (max_days.max(1) - out.len()).min(SERIES_DAYS_READ as usize - 1) as u32 + 1;
        let q = Query::partition(partition.clone()).between(&from, &to).limit(wanted).after(cursor);
        let page = deps.table.query(q).await?;
        for item in &page.items {
            let (part, day_sk) = pkeys::series_part_of(&item.key.sk);
            if part == 1 {
                if let Some((_, _, day)) = current.take() {
                    out.push(day);
                }
                if out.len() >= max_days.max(1) {
                    return Ok(SeriesDays { days: out, next: previous_sk });
                }
                let provider = pkeys::provider_of(&item.key.sk).unwrap_or_default().to_owned();
                let date = pkeys::series_date_of(&item.key.sk)
                    .ok_or_else(|| StoreError::Corrupt(format!("no day in {}", item.key.sk)))?;
                let s: Stored = item.decode()?;
                let parts = s.parts.unwrap_or(1);
                let group = s.into_group(&provider)?;
                current = Some((day_sk.to_owned(), parts, SeriesDay { date, provider, group }));
            } else if let Some((own, parts, day)) = current.as_mut()
                && own.as_str() == day_sk
                && part <= *parts
            {
                // Parts beyond the day's count are left from a day that once had more samples.
                let s: Stored = item.decode()?;
                day.group.data.extend(s.into_group(&day.provider)?.data);
            }
            previous_sk = Some(item.key.sk.clone());
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    if let Some((_, _, day)) = current.take() {
        out.push(day);
    }
    Ok(SeriesDays { days: out, next: None })
}

/// One page of grouped samples of `resource` in `days`.
pub async fn timeseries(
    deps: &Deps,
    team: TeamId,
    user: UserId,
    resource: &Resource,
    days: Days,
    cursor: Option<&str>,
) -> Result<GroupedTimeseries, DomainError> {
    if !is_timeseries(resource) {
        return Err(DomainError::invalid(&["resource"], "not a timeseries resource", "enum"));
    }
    check_user(deps, team, user).await?;
    let partition = keys::user_partition(user);
    let (from, to) = pkeys::series_range(resource, days.start, days.end);
    let cursor = match cursor {
        Some(c) => {
            let c = Cursor::decode(c)?;
            if c.pk != partition || c.sk < from || c.sk > to {
                return Err(StoreError::InvalidCursor.into());
            }
            Some(c)
        }
        None => None,
    };
    let page = deps
        .table
        .query(Query::partition(partition.clone()).between(from, to).limit(SERIES_PAGE).after(cursor))
        .await?;
    let mut groups: BTreeMap<String, Vec<SampleGroup>> = BTreeMap::new();
    // Parts per day (by the day's own sort key), read from the day's own item.
    let mut parts: BTreeMap<String, u32> = BTreeMap::new();
    for item in &page.items {
        let provider = pkeys::provider_of(&item.key.sk).unwrap_or_default().to_owned();
        let s: Stored = item.decode()?;
        let (part, day) = pkeys::series_part_of(&item.key.sk);
        let count = match (part, parts.get(day)) {
            (1, _) => *parts.entry(day.to_owned()).or_insert(s.parts.unwrap_or(1)),
            (_, Some(count)) => *count,
            // A page that starts inside a day: its own item is on an earlier page.
            (_, None) => {
                let own = deps.table.get(&pkeys::series_day(&item.key)).await?;
                let count = match own {
                    Some(own) => own.decode::<Stored>()?.parts.unwrap_or(1),
                    None => 0,
                };
                *parts.entry(day.to_owned()).or_insert(count)
            }
        };
        if part > count {
            continue; // left from a day that once had more samples
        }
        let group: SampleGroup = s.into_group(&provider)?;
        let list = groups.entry(provider).or_default();
        // One group per source: days of the same source are joined.
        match list.iter_mut().find(|g| g.source == group.source) {
            Some(g) => g.data.extend(group.data),
            None => list.push(group),
        }
    }
    Ok(GroupedTimeseries { groups, next_cursor: page.next_cursor.map(|c| c.encode()) })
}
