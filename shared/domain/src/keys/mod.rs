//! Every storage key shape, in one place (one file per area). See docs/ARCHITECTURE.md for the
//! access patterns. Everything that belongs to a user lives in the partition
//! `user_partition(user_id)`, which erasure removes whole.

pub mod audit;
pub mod bulk;
pub mod lab;
pub mod linking;
pub mod phone;
pub mod phone_sync;
pub mod pipeline;
pub mod webhooks;

use chrono::{DateTime, SecondsFormat, Utc};

use crate::common::ids::{ClientUserId, TeamId, UserId};
use crate::ports::Key;

/// Sort key of a partition's single "header" record.
const ROOT: &str = "#";

pub fn team(team: TeamId) -> Key {
    Key::new(format!("TEAM#{team}"), ROOT)
}

/// The team a partition key ([`team`]'s) names, if it names one.
pub fn parse_team_partition(pk: &str) -> Option<TeamId> {
    pk.strip_prefix("TEAM#").and_then(TeamId::parse)
}

/// Escapes `%` and `#` so that no value is a prefix-match of another inside a key.
fn escape(s: &str) -> String {
    s.replace('%', "%25").replace('#', "%23")
}

/// The inverse of [`escape`].
fn unescape(s: &str) -> String {
    s.replace("%23", "#").replace("%25", "%")
}

/// The team's brand on the hosted pages: display name, logo, accent colour.
pub fn team_brand(team: TeamId) -> Key {
    Key::new(format!("TEAM#{team}"), "SETTINGS#BRAND")
}

/// An uploaded brand logo, by the SHA-256 (hex) of its bytes: its own partition, so the hosted
/// pages serve it by that id alone.
pub fn brand_logo(sha256_hex: &str) -> Key {
    Key::new(format!("BRANDLOGO#{sha256_hex}"), ROOT)
}

/// API key lookup by the key's SHA-256 hash (hex).
pub fn api_key(hash_hex: &str) -> Key {
    Key::new(format!("APIKEY#{hash_hex}"), ROOT)
}

/// The team's record of one of its keys, to revoke by key id.
pub fn team_api_key(team: TeamId, key_id: &str) -> Key {
    Key::new(format!("TEAM#{team}"), format!("APIKEY#{key_id}"))
}

pub fn team_api_key_prefix() -> &'static str {
    "APIKEY#"
}

/// The user's own partition: the user record and every item that belongs to the user, so that
/// erasure is one partition query.
pub fn user_partition(user: UserId) -> String {
    format!("USER#{user}")
}

/// The user a partition key ([`user_partition`]) names, if it names one.
pub fn parse_user_partition(pk: &str) -> Option<UserId> {
    pk.strip_prefix("USER#").and_then(UserId::parse)
}

/// The kind of an item erased with `user` (the erasure proof counts them by kind): inside the
/// user's partition the sort key's first part (`conn`, `data`, `pull`...), outside it the
/// partition key's (`order`...); the user record itself is `user`.
pub fn erased_kind(key: &Key, user: UserId) -> String {
    let name = if key.pk == user_partition(user) { &key.sk } else { &key.pk };
    name.split('#').find(|s| !s.is_empty()).unwrap_or("USER").to_ascii_lowercase()
}

pub fn user(user: UserId) -> Key {
    Key::new(user_partition(user), ROOT)
}

/// The user's recent refresh starts (the 8-per-hour limit); in the user's partition, so erased
/// with the user.
/// The operator's request limit of a team (fair use).
pub fn team_rate_limit(team: TeamId) -> Key {
    Key::new(format!("TEAM#{team}"), "SETTINGS#RATE_LIMIT")
}

/// A team's API requests of one one-minute window (`window`: its start, epoch seconds).
pub fn team_rate_window(team: TeamId, window: i64) -> Key {
    Key::new(format!("RATE#{team}#{window}"), ROOT)
}

pub fn refresh_rate(user: UserId) -> Key {
    Key::new(user_partition(user), "REFRESH#RATE")
}

/// GSI1 partition listing the team's active users, by creation time.
pub fn team_users_index(team: TeamId) -> String {
    format!("TEAM#{team}#USERS")
}

pub fn team_users_index_sort(created_on: DateTime<Utc>, user: UserId) -> String {
    format!("{}#{user}", created_on.to_rfc3339_opts(SecondsFormat::Micros, true))
}

/// Shards of the team's count of active users: every change of a listed user writes one of
/// them, so one team's changes spread over this many partitions (about 1,000 writes a second
/// each on DynamoDB) instead of queueing on one item.
pub const TEAM_USER_COUNT_SHARDS: u8 = 16;

/// One shard of the team's count of active users (what `GET /v2/user` answers as `total` is
/// the sum of the shards), changed in the same transaction as every change of the active set.
/// Each shard is its own partition.
pub fn team_user_count(team: TeamId, shard: u8) -> Key {
    Key::new(format!("TEAM#{team}#COUNT#{shard:02}"), "COUNT#USERS")
}

/// Every shard of the team's count, shard 0 first.
pub fn team_user_counts(team: TeamId) -> Vec<Key> {
    (0..TEAM_USER_COUNT_SHARDS).map(|shard| team_user_count(team, shard)).collect()
}

/// The shard of the count that a user's changes write: always the same for one user.
pub fn team_user_count_shard(user: UserId) -> u8 {
    user.as_uuid().as_bytes()[15] % TEAM_USER_COUNT_SHARDS
}

/// The team's single counter item of before the shards: deleted when the shards are created
/// (the team is then counted once from its index).
pub fn team_user_count_unsharded(team: TeamId) -> Key {
    Key::new(format!("TEAM#{team}"), "COUNT#USERS")
}

/// Reservation making `client_user_id` unique among the team's active users.
pub fn client_user_id(team: TeamId, id: &ClientUserId) -> Key {
    Key::new(format!("TEAM#{team}"), format!("CUID#{}", id.key_part()))
}

/// Memory of a deleted user's `client_user_id`, for undo by client id during the grace period.
pub fn deleted_client_user_id(team: TeamId, id: &ClientUserId, user: UserId) -> Key {
    Key::new(format!("TEAM#{team}"), format!("DELETED_CUID#{}#{user}", id.key_part()))
}

pub fn deleted_client_user_id_prefix(id: &ClientUserId) -> String {
    format!("DELETED_CUID#{}#", id.key_part())
}

/// The partition of pending erasures, sorted by due time, read by the hourly sweep.
pub const ERASURE_DUE: &str = "ERASURE_DUE";

pub fn erasure_due(erase_at: DateTime<Utc>, user: UserId) -> Key {
    Key::new(ERASURE_DUE, erasure_due_sort(erase_at, user))
}

pub fn erasure_due_sort(erase_at: DateTime<Utc>, user: UserId) -> String {
    format!("{}#{user}", erase_at.to_rfc3339_opts(SecondsFormat::Secs, true))
}

/// Name of the one-time schedule that erases a user.
pub fn erasure_schedule_name(user: UserId) -> String {
    format!("erase-user-{user}")
}

/// Events staged with the change they announce until they are published (`crate::common::outbox`).
/// In the user's partition, so erasure takes what is still staged.
pub fn outbox(user: UserId, at: DateTime<Utc>, id: uuid::Uuid) -> Key {
    Key::new(user_partition(user), format!("OUTBOX#{}", outbox_index_sort(at, id)))
}

/// GSI1 partitions of staged events: the relay reads each for what is overdue. Spread by the
/// staging's id so that no one index partition takes every write.
pub const OUTBOX_SHARDS: u8 = 16;

pub fn outbox_index(id: uuid::Uuid) -> String {
    outbox_shard_index(id.as_bytes()[15] % OUTBOX_SHARDS)
}

pub fn outbox_shard_index(shard: u8) -> String {
    format!("OUTBOX#{shard:02}")
}

pub fn outbox_index_sort(at: DateTime<Utc>, id: uuid::Uuid) -> String {
    format!("{}#{id}", at.to_rfc3339_opts(SecondsFormat::Micros, true))
}

/// The concurrency throttle of a team's historical pulls from one provider.
pub fn pull_throttle(team: TeamId, provider: &str) -> Key {
    Key::new(format!("THROTTLE#{team}#{provider}"), ROOT)
}

/// The request windows of one OAuth app (`app`: its client id, or `platform`) at a provider,
/// shared by all its users.
pub fn app_limit(provider: &str, app: &str) -> Key {
    Key::new(format!("APPLIMIT#{provider}#{}", escape(app)), ROOT)
}

/// The request windows of one provider's user (`user`: the provider's id of the user).
pub fn user_limit(provider: &str, user: &str) -> Key {
    Key::new(format!("USERLIMIT#{provider}#{}", escape(user)), ROOT)
}

/// A team's claim of an idempotency key, by the SHA-256 (hex) of the key: any visible ASCII
/// key is then a safe storage key.
pub fn idempotency(team: TeamId, key_sha256_hex: &str) -> Key {
    Key::new(format!("IDEMPOTENCY#{team}#{key_sha256_hex}"), ROOT)
}
