//! The historical-pull throttles, simulated with a manual clock: 1,000 pulls per policy never
//! exceed the limit in any window and finish within 2% of the fastest the limit allows.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use wearlab_domain::Deps;
use wearlab_domain::common::ids::TeamId;
use wearlab_domain::common::throttle::{self, Decision, Policy, ThrottleState};
use wearlab_domain::ports::ManualClock;

use crate::helpers::start_time;

const PULLS: usize = 1_000;
/// How long one pull holds a concurrency slot in the simulation: a multiple of the throttle's
/// 5 s slot poll, so that waiting pulls look again exactly when slots free (the 2% bound stays
/// exact), and short, so that waiting pulls poll few times (10 minutes took ten times the steps).
const PULL_TAKES: Duration = Duration::from_secs(60);

struct Run {
    starts: Vec<DateTime<Utc>>,
    finishes: Vec<DateTime<Utc>>,
}

/// Where the throttle state lives in a simulation: the pure rule on an in-memory state (fast
/// enough for 1,000 pulls whose waiting pulls all retry at their exact times), or the table
/// through the use cases (what workers run).
enum Store<'a> {
    Memory(ThrottleState),
    Table(&'a Deps, TeamId),
}

impl Store<'_> {
    async fn acquire(&mut self, provider: &str, holder: &str, now: DateTime<Utc>) -> Decision {
        match self {
            Store::Memory(state) => throttle::decide(throttle::policy_for(provider), state, holder, now),
            Store::Table(deps, team) => throttle::acquire(deps, *team, provider, holder).await.unwrap(),
        }
    }

    async fn release(&mut self, provider: &str, holder: &str) {
        match self {
            Store::Memory(state) => state.release(holder),
            Store::Table(deps, team) => throttle::release(deps, *team, provider, holder).await.unwrap(),
        }
    }
}

/// Event-driven: each waiting pull retries exactly when the throttle said; slots are released
/// when pulls finish. Bounded by a step budget.
async fn simulate(store: &mut Store<'_>, clock: &ManualClock, provider: &str, pulls: usize) -> Run {
    let t0 = start_time();
    clock.set(t0);
    let mut waiting: BinaryHeap<Reverse<(DateTime<Utc>, usize)>> =
        (0..pulls).map(|i| Reverse((t0, i))).collect();
    let mut running: BinaryHeap<Reverse<(DateTime<Utc>, usize)>> = BinaryHeap::new();
    let slots = matches!(throttle::policy_for(provider), Policy::Concurrency { .. });
    let mut run = Run { starts: vec![], finishes: vec![] };
    for _ in 0..pulls * 1_000 {
        let next_wait = waiting.peek().map(|Reverse(e)| *e);
        let next_done = running.peek().map(|Reverse(e)| *e);
        match (next_wait, next_done) {
            (None, None) => return run,
            (_, Some((at, id))) if next_wait.is_none_or(|(w, _)| at <= w) => {
                running.pop();
                clock.set(at);
                store.release(provider, &id.to_string()).await;
                run.finishes.push(at);
            }
            (Some((at, id)), _) => {
                waiting.pop();
                clock.set(at);
                match store.acquire(provider, &id.to_string(), at).await {
                    Decision::Granted => {
                        run.starts.push(at);
                        if slots {
                            running.push(Reverse((at + chrono::Duration::from_std(PULL_TAKES).unwrap(), id)));
                        }
                    }
                    Decision::Wait(d) => {
                        assert!(d > Duration::ZERO, "a wait is never zero");
                        waiting.push(Reverse((at + chrono::Duration::from_std(d).unwrap(), id)));
                    }
                }
            }
            (None, Some(_)) => unreachable!(),
        }
    }
    panic!("simulation did not finish within its step budget");
}

fn check_rate(run: &Run, limit: u32, window: Duration, pulls: usize) {
    let window = chrono::Duration::from_std(window).unwrap();
    let mut starts = run.starts.clone();
    starts.sort();
    assert_eq!(starts.len(), pulls, "every pull started once");
    let mut j = 0;
    for i in 0..starts.len() {
        while j < starts.len() && starts[j] < starts[i] + window {
            j += 1;
        }
        assert!(j - i <= limit as usize, "{} starts in the window from {}", j - i, starts[i]);
    }
    let fastest = window * ((pulls as i32 - 1) / limit as i32);
    let took = *starts.last().unwrap() - starts[0];
    assert!(
        took.num_milliseconds() as f64 <= fastest.num_milliseconds() as f64 * 1.02,
        "took {took}, the limit allows {fastest}"
    );
}

fn check_slots(run: &Run, limit: u32, pulls: usize) {
    assert_eq!(run.starts.len(), pulls);
    let mut events: Vec<(DateTime<Utc>, i32)> =
        run.starts.iter().map(|t| (*t, 1)).chain(run.finishes.iter().map(|t| (*t, -1))).collect();
    // At equal times a finish frees its slot before a start takes one.
    events.sort();
    let mut in_flight = 0;
    for (_, d) in events {
        in_flight += d;
        assert!(in_flight <= limit as i32, "{in_flight} pulls in flight");
    }
    let waves = pulls.div_ceil(limit as usize) as u32;
    let fastest = PULL_TAKES * waves;
    let took = (*run.finishes.iter().max().unwrap() - run.starts[0]).to_std().unwrap();
    assert!(took.as_secs_f64() <= fastest.as_secs_f64() * 1.02, "took {took:?}, fastest {fastest:?}");
}

async fn embedded() -> (Deps, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(start_time()));
    let stack = wearlab_local::LocalStack::in_memory(clock.clone());
    (stack.deps.clone(), clock)
}

/// `specified` is the specification's number, written here as a literal: the runs are checked
/// against it, not against the table they exercise, so a changed table fails.
async fn policy_holds(provider: &str, specified: Policy) {
    let clock = ManualClock::new(start_time());
    let run = simulate(&mut Store::Memory(ThrottleState::default()), &clock, provider, PULLS).await;
    check(specified, &run, PULLS);
}

fn check(specified: Policy, run: &Run, pulls: usize) {
    match specified {
        Policy::Rate { limit, window } => check_rate(run, limit, window, pulls),
        Policy::Concurrency { limit } => check_slots(run, limit, pulls),
    }
}

const MINUTE: Duration = Duration::from_secs(60);

/// The same simulation through the table, as workers share it: a rate and a slot policy.
#[tokio::test]
async fn policies_hold_through_the_table() {
    for (provider, specified, pulls) in [
        ("garmin", Policy::Rate { limit: 2, window: MINUTE }, 60),
        ("fitbit", Policy::Concurrency { limit: 250 }, 300),
    ] {
        let (deps, clock) = embedded().await;
        let mut store = Store::Table(&deps, TeamId::new_random());
        let run = simulate(&mut store, &clock, provider, pulls).await;
        check(specified, &run, pulls);
    }
}

#[tokio::test]
async fn garmin_two_per_minute() {
    policy_holds("garmin", Policy::Rate { limit: 2, window: MINUTE }).await
}

#[tokio::test]
async fn fitbit_250_in_flight() {
    policy_holds("fitbit", Policy::Concurrency { limit: 250 }).await
}

#[tokio::test]
async fn polar_250_in_flight() {
    policy_holds("polar", Policy::Concurrency { limit: 250 }).await
}

#[tokio::test]
async fn strava_one_per_15_minutes() {
    policy_holds("strava", Policy::Rate { limit: 1, window: Duration::from_secs(15 * 60) }).await
}

#[tokio::test]
async fn oura_150_per_5_minutes() {
    policy_holds("oura", Policy::Rate { limit: 150, window: Duration::from_secs(5 * 60) }).await
}

#[tokio::test]
async fn withings_eight_per_minute() {
    policy_holds("withings", Policy::Rate { limit: 8, window: MINUTE }).await
}

#[tokio::test]
async fn others_eight_per_minute() {
    policy_holds("wahoo", Policy::Rate { limit: 8, window: MINUTE }).await
}

#[tokio::test]
async fn throttles_are_per_team_and_provider() {
    let (deps, _clock) = embedded().await;
    let (a, b) = (TeamId::new_random(), TeamId::new_random());
    for _ in 0..2 {
        assert_eq!(throttle::acquire(&deps, a, "garmin", "x").await.unwrap(), Decision::Granted);
    }
    assert!(matches!(throttle::acquire(&deps, a, "garmin", "x").await.unwrap(), Decision::Wait(_)));
    assert_eq!(throttle::acquire(&deps, b, "garmin", "x").await.unwrap(), Decision::Granted, "another team");
    assert_eq!(
        throttle::acquire(&deps, a, "oura", "x").await.unwrap(),
        Decision::Granted,
        "another provider"
    );
}

/// Concurrent workers sharing the state on DynamoDB never over-grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_workers_share_the_state_on_dynamodb() {
    let (t, _, _) = crate::users_on_dynamodb::on_moto().await;
    let team = TeamId::new_random();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let deps = t.deps.clone();
            tokio::spawn(
                async move { throttle::acquire(&deps, team, "withings", &i.to_string()).await.unwrap() },
            )
        })
        .collect();
    let granted = futures::future::join_all(tasks)
        .await
        .into_iter()
        .filter(|d| matches!(d, Ok(Decision::Granted)))
        .count();
    assert_eq!(granted, 8, "8 per minute, whatever the number of workers");
}
