//! Key shapes of ingested data and of pull progress. Everything of a user is in the user's
//! partition (`super::user_partition`), so erasure removes it; the poll index is a sparse GSI1
//! entry of the user's sync item, so it goes with it.

use chrono::{DateTime, NaiveDate, Utc};
use wearlab_models::Resource;

use crate::common::ids::{TeamId, UserId};
use crate::ports::Key;

/// A stored summary: one item per (resource, day, provider, record within the day).
pub fn summary(user: UserId, resource: &Resource, date: NaiveDate, provider: &str, n: &str) -> Key {
    Key::new(super::user_partition(user), format!("DATA#SUM#{resource}#{date}#{provider}#{n}"))
}

/// Sort-key bounds of a resource's summaries from `start` to `end` (inclusive).
pub fn summary_range(resource: &Resource, start: NaiveDate, end: NaiveDate) -> (String, String) {
    (format!("DATA#SUM#{resource}#{start}#"), format!("DATA#SUM#{resource}#{end}#~"))
}

/// Where every stored day of samples (and each of its parts) starts its sort key.
pub const SERIES_PREFIX: &str = "DATA#TS#";

/// The samples of one resource, day and provider.
pub fn series(user: UserId, resource: &Resource, date: NaiveDate, provider: &str) -> Key {
    Key::new(super::user_partition(user), format!("{SERIES_PREFIX}{resource}#{date}#{provider}"))
}

/// What joins a provider and a source type in the sort key of a day of one source's samples
/// ([`series_of_source`]): not `#`, so the key keeps the shape of [`series`] and its parts.
pub const SOURCE_SEPARATOR: char = '@';

/// The samples of one resource, day, provider and source type: the phone's data, where one
/// provider has several sources (the watch and the phone, a cuff and a manual entry) whose
/// points of the same time are different points. `source_type` is `[a-z0-9_]+`
/// (`pipeline::phone` refuses any other). The pulled providers keep [`series`].
pub fn series_of_source(
    user: UserId,
    resource: &Resource,
    date: NaiveDate,
    provider: &str,
    source_type: &str,
) -> Key {
    Key::new(
        super::user_partition(user),
        format!("{SERIES_PREFIX}{resource}#{date}#{provider}{SOURCE_SEPARATOR}{source_type}"),
    )
}

/// Part `part` (2 and up) of a day of samples too many for one item: the day's own item
/// ([`series`]) is its first part, and the others follow it in sort order.
pub fn series_part(day: &Key, part: u32) -> Key {
    Key::new(day.pk.clone(), format!("{}#{part:04}", day.sk))
}

/// The part of its day a series sort key names (1 for the day's own item), and the sort key
/// of the day's own item.
pub fn series_part_of(sk: &str) -> (u32, &str) {
    match sk.rsplit_once('#') {
        Some((day, part)) if sk.split('#').count() == 6 => (part.parse().unwrap_or(1), day),
        _ => (1, sk),
    }
}

/// The key of the day's own item of a series part ([`series_part_of`]).
pub fn series_day(part: &Key) -> Key {
    Key::new(part.pk.clone(), series_part_of(&part.sk).1)
}

/// The provider of a stored summary's or day of samples' sort key (of a day of one source's
/// samples too, [`series_of_source`]).
pub fn provider_of(sk: &str) -> Option<&str> {
    sk.split('#').nth(4).map(|p| p.split_once(SOURCE_SEPARATOR).map_or(p, |(provider, _)| provider))
}

/// The UTC day a series sort key (a day's own item or one of its parts) names.
pub fn series_date_of(sk: &str) -> Option<NaiveDate> {
    sk.split('#').nth(3).and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
}

pub fn series_range(resource: &Resource, start: NaiveDate, end: NaiveDate) -> (String, String) {
    (format!("{SERIES_PREFIX}{resource}#{start}#"), format!("{SERIES_PREFIX}{resource}#{end}#~"))
}

/// The user's profile at a provider.
pub fn profile(user: UserId, provider: &str) -> Key {
    Key::new(super::user_partition(user), format!("DATA#PROFILE#{provider}"))
}

pub const PROFILE_PREFIX: &str = "DATA#PROFILE#";

/// The provider of a stored profile's sort key ([`profile`]).
pub fn profile_provider(sk: &str) -> Option<&str> {
    sk.strip_prefix(PROFILE_PREFIX)
}

/// The marker of a phone upload's historical stage announced: one per provider, resource and
/// stage window, written on condition that it is not there, so a resent final chunk is not
/// announced twice.
pub fn phone_historical(
    user: UserId,
    provider: &str,
    resource: &Resource,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Key {
    Key::new(
        super::user_partition(user),
        format!("PHONE#HISTORICAL#{provider}#{resource}#{}#{}", start.timestamp(), end.timestamp()),
    )
}

/// Progress and done marker of one historical pull.
pub fn pull(user: UserId, provider: &str, pull_id: &str) -> Key {
    Key::new(super::user_partition(user), format!("PULL#{provider}#{pull_id}"))
}

/// How far the periodic poll got for a connection; indexed for the poll's fan-out.
pub fn sync(user: UserId, provider: &str) -> Key {
    Key::new(super::user_partition(user), format!("SYNC#{provider}"))
}

/// How many GSI1 partitions the polled connections are spread over. Every poll rewrites its
/// connection's sync item, so at 1,000,000 connections polled each 15 minutes the index takes
/// about 1,100 writes a second: more than one DynamoDB partition accepts (1,000 write units a
/// second), about 17 a second on each of 64. The poll reads them one after the other.
pub const POLL_SHARDS: u32 = 64;

/// The single GSI1 partition that held every polled connection before the shards. Entries still
/// there are read by the poll and move to their shard the next time their connection is polled.
pub const LEGACY_POLL_INDEX: &str = "POLL";

/// GSI1 partition of a user's polled connections: `POLL#00` to `POLL#63`, by the user id's
/// random low bits, so a user's connections share one shard and the shards fill evenly.
pub fn poll_index(user: UserId) -> String {
    let shard = (user.as_uuid().as_u128() % u128::from(POLL_SHARDS)) as u32;
    format!("{LEGACY_POLL_INDEX}#{shard:02}")
}

/// Every GSI1 partition the poll reads: each shard, then the legacy partition.
pub fn poll_index_partitions() -> impl Iterator<Item = String> {
    (0..POLL_SHARDS)
        .map(|shard| format!("{LEGACY_POLL_INDEX}#{shard:02}"))
        .chain([LEGACY_POLL_INDEX.to_string()])
}

pub fn poll_index_sort(team: TeamId, user: UserId, provider: &str) -> String {
    format!("{team}#{user}#{provider}")
}

/// The team's data pull preferences.
pub fn preferences(team: TeamId) -> Key {
    Key::new(super::team(team).pk, "SETTINGS#DATA_PULL")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_parts_follow_their_day_and_name_it() {
        let user = UserId::new_random();
        let day = series(user, &Resource::Heartrate, "2026-03-02".parse().unwrap(), "polar");
        let part = series_part(&day, 12);
        assert_eq!(part.sk, "DATA#TS#heartrate#2026-03-02#polar#0012");
        assert_eq!(series_part_of(&part.sk), (12, day.sk.as_str()));
        assert_eq!(series_part_of(&day.sk), (1, day.sk.as_str()));
        let mut sks = vec![series_part(&day, 10).sk, day.sk.clone(), series_part(&day, 2).sk];
        sks.sort();
        assert_eq!(sks, vec![day.sk.clone(), series_part(&day, 2).sk, series_part(&day, 10).sk]);
        let (from, to) =
            series_range(&Resource::Heartrate, "2026-03-02".parse().unwrap(), "2026-03-02".parse().unwrap());
        assert!(from < day.sk && part.sk < to, "parts are in their day's range");
    }

    #[test]
    fn a_day_of_one_source_is_its_providers_and_keeps_the_shape_of_a_day() {
        let user = UserId::new_random();
        let date = "2026-11-20".parse().unwrap();
        let pulled = series(user, &Resource::Heartrate, date, "apple_health_kit");
        assert_eq!(pulled.sk, "DATA#TS#heartrate#2026-11-20#apple_health_kit", "the pulled key is unchanged");
        let watch = series_of_source(user, &Resource::Heartrate, date, "apple_health_kit", "watch");
        assert_eq!(watch.sk, "DATA#TS#heartrate#2026-11-20#apple_health_kit@watch");
        assert_eq!(provider_of(&watch.sk), Some("apple_health_kit"));
        assert_eq!(provider_of(&pulled.sk), Some("apple_health_kit"));
        let part = series_part(&watch, 3);
        assert_eq!(provider_of(&part.sk), Some("apple_health_kit"));
        assert_eq!(series_part_of(&part.sk), (3, watch.sk.as_str()));
        assert_eq!(series_part_of(&watch.sk), (1, watch.sk.as_str()));
        let (from, to) = series_range(&Resource::Heartrate, date, date);
        assert!(from < watch.sk && part.sk < to);
    }
}
