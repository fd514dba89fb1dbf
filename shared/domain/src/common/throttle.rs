//! Historical-pull throttles per team and provider, protecting the provider API limits of the
//! team's own OAuth credentials. The state is one table item per (team, provider), changed
//! with optimistic concurrency, so any number of worker instances share it.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::TeamId;
use crate::keys;
use crate::ports::providers::RateWindow;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key, StoreError};

/// A provider's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// At most `limit` pulls start in any window of length `window` (sliding, not calendar).
    Rate { limit: u32, window: Duration },
    /// At most `limit` pulls in flight, no time limit.
    Concurrency { limit: u32 },
}

const MINUTE: Duration = Duration::from_secs(60);

/// The provider policy table (per team and provider).
pub fn policy_for(provider: &str) -> Policy {
    match provider {
        "garmin" => Policy::Rate { limit: 2, window: MINUTE },
        "fitbit" | "polar" => Policy::Concurrency { limit: 250 },
        "strava" => Policy::Rate { limit: 1, window: 15 * MINUTE },
        "oura" => Policy::Rate { limit: 150, window: 5 * MINUTE },
        "withings" => Policy::Rate { limit: 8, window: MINUTE },
        _ => Policy::Rate { limit: 8, window: MINUTE },
    }
}

/// A concurrency slot whose holder never released it (a crashed worker) frees itself after this.
pub const LEASE: Duration = Duration::from_secs(30 * 60);
/// How often a pull waiting for a concurrency slot looks again (no exact wait exists).
pub const SLOT_POLL: Duration = Duration::from_secs(5);
/// Tries of the optimistic update before giving up (the caller retries the message).
const TRIES: u32 = 20;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ThrottleState {
    /// Start times of the most recent pulls, oldest first (at most `limit` kept).
    #[serde(default)]
    starts: VecDeque<DateTime<Utc>>,
    /// Concurrency slots held: (holder, lease expiry).
    #[serde(default)]
    slots: Vec<(String, DateTime<Utc>)>,
    /// Fixed-window request counts of an OAuth app: window length (s) -> (window number since
    /// the epoch, requests counted in it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    counts: BTreeMap<u32, (i64, u32)>,
}

impl ThrottleState {
    /// Frees `holder`'s concurrency slot.
    pub fn release(&mut self, holder: &str) {
        self.slots.retain(|(h, _)| h != holder);
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Start now; `holder` must `release` a concurrency slot when done.
    Granted,
    /// No capacity: try again after exactly this long (rate) or after a short poll (slots).
    Wait(Duration),
}

/// The pure rule: may a pull start at `now`, and the state after it does.
pub fn decide(policy: Policy, state: &mut ThrottleState, holder: &str, now: DateTime<Utc>) -> Decision {
    match policy {
        Policy::Rate { limit, window } => {
            let window = chrono::Duration::from_std(window).expect("windows are small");
            while state.starts.len() > limit as usize {
                state.starts.pop_front();
            }
            if state.starts.len() == limit as usize {
                let oldest = state.starts[0];
                if oldest + window > now {
                    return Decision::Wait((oldest + window - now).to_std().unwrap_or_default());
                }
                state.starts.pop_front();
            }
            state.starts.push_back(now);
            Decision::Granted
        }
        Policy::Concurrency { limit } => {
            state.slots.retain(|(_, expiry)| *expiry > now);
            if state.slots.iter().any(|(h, _)| h == holder) {
                return Decision::Granted; // a redelivered message keeps its slot
            }
            if state.slots.len() >= limit as usize {
                let first_expiry = state.slots.iter().map(|(_, e)| *e).min().unwrap_or(now);
                let until_expiry = (first_expiry - now).to_std().unwrap_or_default();
                return Decision::Wait(until_expiry.min(SLOT_POLL));
            }
            state.slots.push((holder.to_owned(), now + chrono::Duration::from_std(LEASE).expect("small")));
            Decision::Granted
        }
    }
}

/// The pure rule of a provider's published limits for one OAuth app (all its users): one more
/// request at `now` fits every window, or wait until the fullest window turns over. Windows are
/// fixed (calendar-aligned to the epoch), like the providers' own resets.
pub fn decide_app(windows: &[RateWindow], state: &mut ThrottleState, now: DateTime<Utc>) -> Decision {
    let at = now.timestamp();
    let mut wait = 0i64;
    for w in windows.iter().filter(|w| w.window_secs > 0) {
        let secs = i64::from(w.window_secs);
        let number = at.div_euclid(secs);
        let count = state.counts.get(&w.window_secs).filter(|(n, _)| *n == number).map_or(0, |(_, c)| *c);
        if count >= w.requests {
            wait = wait.max((number + 1) * secs - at);
        }
    }
    if wait > 0 {
        return Decision::Wait(Duration::from_secs(wait as u64));
    }
    for w in windows.iter().filter(|w| w.window_secs > 0) {
        let number = at.div_euclid(i64::from(w.window_secs));
        let entry = state.counts.entry(w.window_secs).or_insert((number, 0));
        if entry.0 != number {
            *entry = (number, 0);
        }
        entry.1 += 1;
    }
    Decision::Granted
}

/// Counts one request of the OAuth app `app` (a client id, or `platform`) of `provider` against
/// the provider's published limits, shared by every worker instance.
pub async fn take_app(
    deps: &Deps,
    provider: &str,
    app: &str,
    windows: &[RateWindow],
) -> Result<Decision, DomainError> {
    take_windows(deps, keys::app_limit(provider, app), windows).await
}

/// Counts one request for the provider's user `user` (the provider's id of the user) against
/// the provider's published per-user limits, shared by every worker instance and every
/// connection of that provider user.
pub async fn take_user(
    deps: &Deps,
    provider: &str,
    user: &str,
    windows: &[RateWindow],
) -> Result<Decision, DomainError> {
    take_windows(deps, keys::user_limit(provider, user), windows).await
}

/// One request under `windows` at `key`; nothing is stored when there are no windows.
async fn take_windows(deps: &Deps, key: Key, windows: &[RateWindow]) -> Result<Decision, DomainError> {
    if windows.is_empty() {
        return Ok(Decision::Granted);
    }
    update_at(deps, key, |state, now| decide_app(windows, state, now)).await
}

/// Takes one start under `policy` from the state kept at `key` (any sliding-window limit, e.g.
/// the refreshes of one user): `Wait` says how long until one is free.
pub async fn take(deps: &Deps, key: Key, policy: Policy, holder: &str) -> Result<Decision, DomainError> {
    update_at(deps, key, |state, now| decide(policy, state, holder, now)).await
}

/// Takes capacity for one pull of `holder` (a stable id of the pull, e.g. the user id).
pub async fn acquire(
    deps: &Deps,
    team: TeamId,
    provider: &str,
    holder: &str,
) -> Result<Decision, DomainError> {
    update(deps, team, provider, |state, now| decide(policy_for(provider), state, holder, now)).await
}

/// Gives a concurrency slot back (no-op for rate policies).
pub async fn release(deps: &Deps, team: TeamId, provider: &str, holder: &str) -> Result<(), DomainError> {
    if !matches!(policy_for(provider), Policy::Concurrency { .. }) {
        return Ok(());
    }
    update(deps, team, provider, |state, _| {
        state.release(holder);
        Decision::Granted
    })
    .await
    .map(|_| ())
}

async fn update(
    deps: &Deps,
    team: TeamId,
    provider: &str,
    change: impl Fn(&mut ThrottleState, DateTime<Utc>) -> Decision,
) -> Result<Decision, DomainError> {
    update_at(deps, keys::pull_throttle(team, provider), change).await
}

async fn update_at(
    deps: &Deps,
    k: Key,
    change: impl Fn(&mut ThrottleState, DateTime<Utc>) -> Decision,
) -> Result<Decision, DomainError> {
    // One update of an item at a time in this process: concurrent pulls of one team and provider
    // all read the same version, and all but one of each group of writes would fail its
    // condition and read again (40 pulls at once used up the tries). Other processes still race
    // through the version condition.
    let turn = local_turn(&k);
    let _turn = turn.lock().await;
    for _ in 0..TRIES {
        let now = deps.now();
        let (mut state, version) = match deps.table.get(&k).await? {
            Some(item) => (item.decode::<ThrottleState>()?, Some(item.version)),
            None => (ThrottleState::default(), None),
        };
        let decision = change(&mut state, now);
        if let Decision::Wait(_) = decision {
            return Ok(decision);
        }
        let mut item = Item::new(k.clone(), to_body(&state));
        item.version = version.map_or(1, |v| v + 1);
        let condition = version.map_or(Condition::NotExists, Condition::VersionIs);
        match deps.table.put(item, condition).await {
            Ok(()) => return Ok(decision),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(DomainError::Busy("throttle state contended; retry".into()))
}

/// This process's lock of the throttle item `k`.
fn local_turn(k: &Key) -> std::sync::Arc<tokio::sync::Mutex<()>> {
    static TURNS: std::sync::LazyLock<crate::common::per_key::PerKey<tokio::sync::Mutex<()>>> =
        std::sync::LazyLock::new(|| crate::common::per_key::PerKey::new(Default::default));
    TURNS.get(&format!("{}\u{0}{}", k.pk, k.sk))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::UNIX_EPOCH + chrono::Duration::seconds(secs)
    }

    #[test]
    fn rate_waits_exactly_until_the_oldest_start_leaves_the_window() {
        let p = Policy::Rate { limit: 2, window: MINUTE };
        let mut s = ThrottleState::default();
        assert_eq!(decide(p, &mut s, "a", t(0)), Decision::Granted);
        assert_eq!(decide(p, &mut s, "b", t(10)), Decision::Granted);
        assert_eq!(decide(p, &mut s, "c", t(20)), Decision::Wait(Duration::from_secs(40)));
        assert_eq!(decide(p, &mut s, "c", t(60)), Decision::Granted);
        assert_eq!(decide(p, &mut s, "d", t(61)), Decision::Wait(Duration::from_secs(9)));
    }

    #[test]
    fn app_limits_count_every_window_and_wait_for_the_fullest_to_turn_over() {
        let windows =
            [RateWindow { requests: 2, window_secs: 60 }, RateWindow { requests: 3, window_secs: 3600 }];
        let mut s = ThrottleState::default();
        assert_eq!(decide_app(&windows, &mut s, t(0)), Decision::Granted);
        assert_eq!(decide_app(&windows, &mut s, t(10)), Decision::Granted);
        assert_eq!(decide_app(&windows, &mut s, t(20)), Decision::Wait(Duration::from_secs(40)));
        assert_eq!(decide_app(&windows, &mut s, t(60)), Decision::Granted, "a new minute");
        assert_eq!(
            decide_app(&windows, &mut s, t(61)),
            Decision::Wait(Duration::from_secs(3539)),
            "the hour is full"
        );
        assert_eq!(decide_app(&windows, &mut s, t(3600)), Decision::Granted);
    }

    #[test]
    fn slots_are_held_until_released_or_expired() {
        let p = Policy::Concurrency { limit: 1 };
        let mut s = ThrottleState::default();
        assert_eq!(decide(p, &mut s, "a", t(0)), Decision::Granted);
        assert_eq!(decide(p, &mut s, "a", t(1)), Decision::Granted, "redelivery keeps its slot");
        assert_eq!(decide(p, &mut s, "b", t(1)), Decision::Wait(SLOT_POLL));
        let after_lease = t(LEASE.as_secs() as i64 + 1);
        assert_eq!(decide(p, &mut s, "b", after_lease), Decision::Granted, "a crashed holder's slot expires");
    }
}
