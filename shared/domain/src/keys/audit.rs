//! Key shapes of the audit log of PHI access. Outside the user's partition on purpose: an
//! entry holds ids only, and the record of who read a user's data outlives the user's erasure
//! (it expires with the team's retention instead).

use chrono::{DateTime, SecondsFormat, Utc};

use crate::common::ids::{TeamId, UserId};
use crate::ports::Key;

/// Partitions of a team's entries: each entry goes to one (by its id), so one team's audited
/// requests spread over this many partitions (about 1,000 writes a second each on DynamoDB).
pub const SHARDS: u8 = 16;

/// The team's entries of before the shards, ordered by time; read as one more shard until they
/// expire. Also the partition a listing's cursor names (whichever shard its entry is in).
pub fn team_partition(team: TeamId) -> String {
    format!("AUDIT#{team}")
}

/// One shard of the team's entries, ordered by time.
pub fn shard_partition(team: TeamId, shard: u8) -> String {
    format!("AUDIT#{team}#{shard:02}")
}

/// Every partition that holds the team's entries: the shards, then the unsharded one.
pub fn team_partitions(team: TeamId) -> Vec<String> {
    (0..SHARDS).map(|shard| shard_partition(team, shard)).chain([team_partition(team)]).collect()
}

/// The shard of the entry `id` (an FNV-1a hash of it, so any id spreads evenly).
pub fn shard_of(id: &str) -> u8 {
    let hash =
        id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    (hash % u64::from(SHARDS)) as u8
}

/// GSI1 partition of the team's entries about one user, ordered by time.
pub fn user_index(team: TeamId, user: UserId) -> String {
    format!("AUDIT#{team}#USER#{user}")
}

/// Sort key (and GSI1 sort key) of an entry: the time first, so `since`/`until` are a range.
pub fn entry_sort(at: DateTime<Utc>, id: &str) -> String {
    format!("{}#{id}", time_bound(at))
}

/// Where entries of `at` begin in the sort order.
pub fn time_bound(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub fn entry(team: TeamId, at: DateTime<Utc>, id: &str) -> Key {
    Key::new(shard_partition(team, shard_of(id)), entry_sort(at, id))
}

/// The greatest range bound below the sort key `sk` of an entry (inclusive bounds): its last
/// character one lower, then `~`. Sort keys of entries all have one length ([`entry_sort`]:
/// the time to the microsecond, `#`, a 32-digit hex id) and no character above `~`, so an
/// entry's key is at most this bound exactly when it is below `sk`.
pub fn below(sk: &str) -> String {
    let mut bound = sk.to_owned();
    match bound.pop() {
        Some(last) => {
            if let Some(lower) = char::from_u32(u32::from(last).saturating_sub(1)).filter(|c| *c < last) {
                bound.push(lower);
                bound.push('~');
            }
            bound
        }
        None => bound,
    }
}
