//! Peak memory of the pull worker on the largest chunk it meets: one historical pull of a
//! connection whose heart rate comes at 1-second resolution (86,400 samples a day) over DAYS
//! days, handled as the pull-worker Lambda handles a message (`pull_worker::handle`, the system
//! allocator, as its binary has), on a redb file with the default bounded cache. The simulator's
//! oura account stands in for the provider; its hourly heart rate is expanded to one sample a
//! second (each hour's record copied 3,600 times, a second apart), the other resources as they are.
//!
//! Prints the peak RSS (VmHWM) before and after the pull, the samples stored and the time.
//!
//! Usage: chunk-memory [DAYS=30]. Every loop is bounded.

use std::sync::Arc;
use std::time::Instant;

use wearlab_bench::rss_mib;
use wearlab_domain::Deps;
use wearlab_domain::ports::QueueName;
use wearlab_domain::ports::providers::{DateRange, FetchedResource};
use wearlab_local::LocalStack;
use wearlab_models::Resource;
use wearlab_sim::{Alteration, Altered, one_second_samples};

/// The simulator with heart rate at one sample a second.
struct OneSecondHeartRate;

impl Alteration for OneSecondHeartRate {
    fn after_fetch(
        &self,
        _p: &str,
        resource: &Resource,
        _range: DateRange,
        mut fetched: FetchedResource,
    ) -> FetchedResource {
        if *resource == Resource::Heartrate {
            fetched.records = one_second_samples(fetched.records, |_| true);
        }
        fetched
    }
}

#[tokio::main]
async fn main() {
    let days: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    // Removed when dropped, after the stack (declared later, dropped first).
    let dir = wearlab_bench::ScratchDir::new("wearlab-chunk-bench");
    let stack = LocalStack::open(dir.path()).expect("stack opens");
    let key = stack.ensure_team_key(None).await.expect("team");
    let deps = Deps {
        providers: Arc::new(Altered::new(stack.deps.providers.clone(), OneSecondHeartRate)),
        ..stack.deps.clone()
    };
    let team = wearlab_local::LOCAL_TEAM_ID;
    let mut prefs = wearlab_models::data::DataPullPreferences::default();
    prefs.history_days.insert("oura".into(), days);
    wearlab_domain::pipeline::set_preferences(&deps, team, prefs).await.expect("preferences");
    let app = stack.app(stack.state());
    let user = wearlab_bench::call_json(
        &app,
        &key,
        "POST",
        "/v2/user",
        serde_json::json!({"client_user_id": "chunk-bench"}),
    )
    .await;
    let user_id = user["user_id"].as_str().expect("user id").to_owned();
    wearlab_bench::call_json(
        &app,
        &key,
        "POST",
        "/v2/link/connect/demo",
        serde_json::json!({ "user_id": user_id, "provider": "oura" }),
    )
    .await;
    let before = rss_mib("VmHWM:");
    println!("before the pull: peak RSS {before:.1} MiB (current {:.1} MiB)", rss_mib("VmRSS:"));
    let started = Instant::now();
    let mut messages = 0;
    for _ in 0..1_000 {
        let n = stack
            .queue
            .run_once(QueueName::Pull, |env, _| pull_worker::handle(&deps, &stack.queue, env))
            .await
            .expect("pull queue");
        messages += n;
        if n == 0 {
            break;
        }
    }
    let took = started.elapsed();
    // Read before counting what was stored: the count reads it back, a page at a time.
    let peak = rss_mib("VmHWM:");
    let user_id = wearlab_domain::common::ids::UserId::parse(&user_id).expect("user id");
    let mut q = wearlab_domain::ports::Query::partition(wearlab_domain::keys::user_partition(user_id))
        .prefix("DATA#TS#heartrate#")
        .limit(50);
    let (mut items, mut samples) = (0, 0);
    for _ in 0..100_000 {
        let page = deps.table.query(q.clone()).await.expect("items");
        items += page.items.len();
        // A day in columns has one value per sample (`c.v`); a day stored before, `v.data`.
        samples += page
            .items
            .iter()
            .map(|i| i.body["c"]["v"].as_array().or(i.body["v"]["data"].as_array()).map_or(0, Vec::len))
            .sum::<usize>();
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    println!(
        "pull of {days} days: {messages} messages in {:.1} s; {items} heart-rate items, {samples} samples stored; peak RSS {peak:.1} MiB (+{:.1} MiB over the baseline)",
        took.as_secs_f64(),
        peak - before
    );
    drop(stack);
}
