//! Per-team fair use: each team may send at most its limit of API requests per minute, across
//! every instance of every function, so that one team's flood does not use up the capacity of the
//! others. A fixed one-minute window per team is counted in the table with an atomic add; each
//! process takes the window's allowance in blocks and spends a block locally, so a request costs
//! a table round trip only once per block. A process never spends more than it took, so a team
//! never gets more than its limit in a window; blocks a process took and did not spend before
//! the window ended are lost to the team (at most one block per process and team).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::TeamId;
use crate::keys;
use crate::ports::{Add, Condition, Item, to_body};

/// Requests per minute of a team that has no limit of its own, when the deployment sets none
/// (`WEARLAB_TEAM_RATE_LIMIT`): half of the API Gateway stage's 100 requests per second, so
/// that no single team can take all of it.
pub const DEFAULT_REQUESTS_PER_MINUTE: u32 = 3_000;
/// The largest limit an operator may set.
pub const MAX_REQUESTS_PER_MINUTE: u32 = 1_000_000_000;
/// The window, seconds.
const WINDOW_SECS: i64 = 60;
/// How long a process trusts the team's limit it read (the operator's change takes this long).
const LIMIT_TTL_SECS: i64 = 60;
/// A window's counter is kept this long after the window, then expires (TTL).
const WINDOW_KEPT_SECS: i64 = 3_600;
/// Teams tracked per process before the map is cleared (a bound on memory).
const MAX_TEAMS: usize = 10_000;

/// A team's own limit, set by the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamRateLimit {
    pub requests_per_minute: u32,
}

/// Sets the team's limit (`None`: back to the deployment's default).
pub async fn set_team_limit(deps: &Deps, team: TeamId, limit: Option<u32>) -> Result<(), DomainError> {
    let key = keys::team_rate_limit(team);
    match limit {
        Some(n) if (1..=MAX_REQUESTS_PER_MINUTE).contains(&n) => {
            let item = Item::new(key, to_body(&TeamRateLimit { requests_per_minute: n }));
            deps.table.put(item, Condition::None).await?;
        }
        Some(_) => {
            return Err(DomainError::Rejected(format!(
                "a team's limit is between 1 and {MAX_REQUESTS_PER_MINUTE} requests per minute"
            )));
        }
        None => deps.table.delete(&key, Condition::None).await?,
    }
    tracing::info!(team_id = %team, requests_per_minute = ?limit, "team rate limit set");
    Ok(())
}

/// The team's own limit, if the operator set one.
pub async fn team_limit(deps: &Deps, team: TeamId) -> Result<Option<u32>, DomainError> {
    let item = deps.table.get(&keys::team_rate_limit(team)).await?;
    Ok(item.map(|i| i.decode::<TeamRateLimit>()).transpose()?.map(|l| l.requests_per_minute))
}

/// What a request was told: allowed or not, and the `RateLimit-*` figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    pub allowed: bool,
    /// The team's requests per minute.
    pub limit: u32,
    /// Requests the team has left in this window, as far as this process knows: what no
    /// process has taken yet plus what this one holds (blocks other processes hold and have not
    /// spent count as spent).
    pub remaining: u32,
    /// Seconds until the window ends (the answer's `Retry-After` when refused).
    pub reset_secs: u64,
}

/// One team's state in this process.
#[derive(Debug, Clone, Copy)]
struct Allowance {
    /// Start of the window (epoch seconds) the rest is about.
    window: i64,
    limit: u32,
    limit_read_at: i64,
    /// Requests this process took from the window and has not spent.
    held: u32,
    /// What no process had taken when this one last took a block.
    untaken: u32,
    /// The window is used up: refuse without asking the table again.
    exhausted: bool,
}

/// The per-process side of fair use: the blocks this process holds, per team.
#[derive(Debug)]
pub struct FairUse {
    default_limit: u32,
    teams: Mutex<HashMap<TeamId, Allowance>>,
    /// One refill at a time per team: requests that find the block empty together wait for one
    /// block instead of each taking one (which would strand the team's allowance in this process).
    refills: Mutex<HashMap<TeamId, Arc<tokio::sync::Mutex<()>>>>,
}

impl FairUse {
    /// `default_limit`: requests per minute of a team without its own limit.
    pub fn new(default_limit: u32) -> Self {
        Self {
            default_limit: default_limit.clamp(1, MAX_REQUESTS_PER_MINUTE),
            teams: Mutex::default(),
            refills: Mutex::default(),
        }
    }

    /// Admits one request of `team` or refuses it. Usually answered from this process's block;
    /// reads the team's limit at most once a minute and takes a block with one atomic add.
    pub async fn admit(&self, deps: &Deps, team: TeamId) -> Result<Admission, DomainError> {
        let now = deps.now();
        let window = window_of(now);
        let reset_secs = reset_after(now, window);
        if let Some(admission) = self.spend_held(team, window, now, reset_secs) {
            return Ok(admission);
        }
        let refill = {
            let mut refills = self.refills.lock().map_err(|_| poisoned())?;
            if refills.len() >= MAX_TEAMS {
                refills.clear();
            }
            refills.entry(team).or_default().clone()
        };
        let _one_at_a_time = refill.lock().await;
        // Whoever held the lock before may have filled the block.
        if let Some(admission) = self.spend_held(team, window, now, reset_secs) {
            return Ok(admission);
        }
        let current = self.teams.lock().ok().and_then(|t| t.get(&team).copied());
        let limit = match current {
            Some(a) if now.timestamp() - a.limit_read_at < LIMIT_TTL_SECS => a.limit,
            _ => team_limit(deps, team).await?.unwrap_or(self.default_limit),
        };
        let limit_read_at = match current {
            Some(a) if a.limit == limit && now.timestamp() - a.limit_read_at < LIMIT_TTL_SECS => {
                a.limit_read_at
            }
            _ => now.timestamp(),
        };
        if current.is_some_and(|a| a.window == window && a.exhausted && a.limit == limit) {
            return Ok(Admission { allowed: false, limit, remaining: 0, reset_secs });
        }
        let block = block_size(limit);
        let add = Add::new(keys::team_rate_window(team, window), "taken", i64::from(block))
            .with_expiry(window + WINDOW_SECS + WINDOW_KEPT_SECS);
        let taken = deps.table.add(add).await?;
        let before = taken - i64::from(block);
        let granted = (i64::from(limit) - before).clamp(0, i64::from(block)) as u32;
        let untaken = (i64::from(limit) - taken).max(0) as u32;
        let allowed = granted > 0;
        let held = granted.saturating_sub(1);
        let state = Allowance { window, limit, limit_read_at, held, untaken, exhausted: !allowed };
        if let Ok(mut teams) = self.teams.lock() {
            if teams.len() >= MAX_TEAMS {
                teams.clear();
            }
            // A concurrent request of this process may have taken a block too: keep both.
            let held = match teams.get(&team) {
                Some(a) if a.window == window && allowed => held + a.held,
                _ => held,
            };
            teams.insert(team, Allowance { held, ..state });
        }
        if !allowed {
            tracing::info!(team_id = %team, limit, "team over its rate limit");
        }
        Ok(Admission { allowed, limit, remaining: untaken + held, reset_secs })
    }

    /// Spends one request of the block this process holds for the current window, if any.
    fn spend_held(
        &self,
        team: TeamId,
        window: i64,
        now: DateTime<Utc>,
        reset_secs: u64,
    ) -> Option<Admission> {
        let mut teams = self.teams.lock().ok()?;
        let a = teams.get_mut(&team)?;
        let fresh = a.window == window && now.timestamp() - a.limit_read_at < LIMIT_TTL_SECS;
        if !fresh || a.held == 0 {
            return None;
        }
        a.held -= 1;
        Some(Admission { allowed: true, limit: a.limit, remaining: a.untaken + a.held, reset_secs })
    }
}

fn poisoned() -> DomainError {
    DomainError::Store(crate::ports::StoreError::Unavailable("fair-use state poisoned".into()))
}

/// Requests taken from the window at once: about a fiftieth of the limit (so a process costs a
/// team at most 2 % of its window), at least 1 and at most 100.
fn block_size(limit: u32) -> u32 {
    (limit / 50).clamp(1, 100)
}

fn window_of(now: DateTime<Utc>) -> i64 {
    now.timestamp().div_euclid(WINDOW_SECS) * WINDOW_SECS
}

/// Whole seconds until the window ends, at least 1 (a client that waits this long is in the next).
fn reset_after(now: DateTime<Utc>, window: i64) -> u64 {
    let end_ms = (window + WINDOW_SECS) * 1_000;
    let left_ms = (end_ms - now.timestamp_millis()).max(0);
    (left_ms as u64).div_ceil(1_000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_a_fiftieth_of_the_limit_within_bounds() {
        assert_eq!(block_size(1), 1);
        assert_eq!(block_size(10), 1);
        assert_eq!(block_size(3_000), 60);
        assert_eq!(block_size(1_000_000_000), 100);
    }

    #[test]
    fn windows_are_whole_minutes_and_reset_rounds_up() {
        let at = |s: i64, ms: u32| DateTime::from_timestamp(s, ms * 1_000_000).unwrap();
        assert_eq!(window_of(at(120, 0)), 120);
        assert_eq!(window_of(at(179, 999)), 120);
        assert_eq!(reset_after(at(120, 0), 120), 60);
        assert_eq!(reset_after(at(178, 500), 120), 2);
        assert_eq!(reset_after(at(179, 999), 120), 1);
    }
}
