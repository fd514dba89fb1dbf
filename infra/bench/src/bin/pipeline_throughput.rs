//! Pipeline throughput of the local stack, in one process on a redb file in a temporary
//! directory (as `make run` keeps its data):
//! 1. historical pulls: N users, each with a demo fitbit connection (fitbit's policy is 250 in
//!    flight, no time limit, so the run is not throttle-bound); connections per second from the
//!    first connection until the pull queue is empty, and the process's peak memory;
//! 2. events through the bus and webhook delivery to a receiver on 127.0.0.1: events per second
//!    from publishing until every delivery is done.
//!
//! Usage: pipeline-throughput [USERS=1000] [EVENTS=2000]. `BENCH_HISTORY_DAYS` (default 90, the
//! product's default) sets the days each connection pulls: shorter histories make a run of
//! 10,000 connections quicker and smaller (a 90-day connection takes about 2.2 MB of redb file).
//! Every loop is bounded.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use wearlab_bench::rss_mib;
use wearlab_domain::ports::{EventEnvelope, QueueName};
use wearlab_local::LocalStack;

const DEADLINE: Duration = Duration::from_secs(900);

fn peak_rss_mib() -> f64 {
    rss_mib("VmHWM:")
}

/// The local stack's allocator, as `wearlab-local` runs it.
#[global_allocator]
static ALLOCATOR: wearlab_local::Allocator = wearlab_local::Allocator;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let users: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let events: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    // Removed when dropped, after the stack (declared later, dropped first).
    let dir = wearlab_bench::ScratchDir::new("wearlab-pipeline-bench");
    let stack = LocalStack::open(dir.path()).expect("stack opens");
    let key = stack.ensure_team_key(None).await.expect("team");
    let app = stack.app(stack.state());
    println!("baseline peak RSS: {:.1} MiB", peak_rss_mib());
    let days: u32 = std::env::var("BENCH_HISTORY_DAYS").ok().and_then(|d| d.parse().ok()).unwrap_or(90);
    wearlab_bench::call_json(
        &app,
        &key,
        "PUT",
        "/v2/team/data_pull_preferences",
        serde_json::json!({ "default_history_days": days }),
    )
    .await;
    println!("history: {days} days per connection");

    // 1. Historical pulls.
    let mut ids = Vec::with_capacity(users);
    for n in 0..users {
        let u = wearlab_bench::call_json(
            &app,
            &key,
            "POST",
            "/v2/user",
            serde_json::json!({ "client_user_id": format!("bench-{n}") }),
        )
        .await;
        ids.push(u["user_id"].as_str().expect("user id").to_owned());
    }
    let started = Instant::now();
    for id in &ids {
        wearlab_bench::call_json(
            &app,
            &key,
            "POST",
            "/v2/link/connect/demo",
            serde_json::json!({ "user_id": id, "provider": "fitbit" }),
        )
        .await;
    }
    // As the local stack runs them (`LocalStack::consume`): QUEUE_CONSUMERS consumers, each a
    // task of its own taking a batch at a time, so that they spread over the runtime's threads.
    let handled = Arc::new(AtomicUsize::new(0));
    let consumer = move |stack: LocalStack, handled: Arc<AtomicUsize>| async move {
        while started.elapsed() < DEADLINE {
            let n = stack.run_pulls_once().await.expect("pull queue");
            handled.fetch_add(n, Ordering::Relaxed);
            if n == 0 && stack.queue.depth(QueueName::Pull).await.expect("depth") == 0 {
                break;
            }
            if n == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let consumers: Vec<_> = (0..wearlab_local::QUEUE_CONSUMERS)
        .map(|_| tokio::spawn(consumer(stack.clone(), handled.clone())))
        .collect();
    let progress = async {
        // Each connection's pull is one message (unless it fails or waits), so handled
        // messages are about the connections done.
        while started.elapsed() < DEADLINE {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let done = handled.load(Ordering::Relaxed).min(users);
            let rate = done as f64 / started.elapsed().as_secs_f64();
            let eta = if rate > 0.0 { (users - done) as f64 / rate } else { f64::INFINITY };
            eprintln!(
                "  pulls: {done} / {users} connections, {rate:.1}/s, ETA {eta:.0} s; RSS {:.1} MiB (peak {:.1})",
                rss_mib("VmRSS:"),
                peak_rss_mib()
            );
            if done >= users {
                break;
            }
        }
    };
    tokio::select! {
        done = futures_util::future::join_all(consumers) => {
            done.into_iter().collect::<Result<Vec<()>, _>>().expect("a pull consumer panicked");
        }
        _ = async { progress.await; std::future::pending::<()>().await } => {}
    }
    let handled = handled.load(Ordering::Relaxed);
    let took = started.elapsed();
    let rss = peak_rss_mib();
    // Every event waits on the webhook queue (counted after the timing, a page at a time).
    let historical = stack
        .queue
        .count_waiting(QueueName::Webhook, |m| {
            m.body["event_type"].as_str().is_some_and(|t| t.starts_with("historical."))
        })
        .await
        .expect("webhook queue");
    println!(
        "pulls: {users} connections, {handled} pull messages, {historical} historical events in {:.2} s = {:.1} connections/s; peak RSS {:.1} MiB",
        took.as_secs_f64(),
        users as f64 / took.as_secs_f64(),
        rss
    );

    // 2. Events through the bus to a webhook receiver.
    let received = Arc::new(AtomicUsize::new(0));
    let counter = received.clone();
    let receiver = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let c = counter.clone();
            async move {
                c.fetch_add(1, Ordering::Relaxed);
                http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, receiver).await.expect("receiver") });
    wearlab_bench::call_json(
        &app,
        &key,
        "POST",
        "/v2/team/webhooks",
        serde_json::json!({ "url": format!("http://{addr}/hook"), "event_types": ["bench.event"] }),
    )
    .await;
    // Drain what the pulls queued for webhooks first (no endpoint matched them).
    for _ in 0..10_000 {
        if stack.run_webhooks_once().await.expect("webhook queue") == 0 {
            break;
        }
    }
    let team = wearlab_local::LOCAL_TEAM_ID.as_uuid();
    let user = ids[0].parse().expect("uuid");
    let started = Instant::now();
    for chunk in (0..events).collect::<Vec<_>>().chunks(100) {
        let batch = chunk
            .iter()
            .map(|n| EventEnvelope {
                event_type: "bench.event".into(),
                user_id: user,
                client_user_id: "bench-0".into(),
                team_id: team,
                data: serde_json::json!({ "n": n }),
            })
            .collect();
        wearlab_domain::ports::EventBus::publish(stack.deps.bus.as_ref(), batch).await.expect("publish");
    }
    let consumer = || async {
        while received.load(Ordering::Relaxed) < events && started.elapsed() < DEADLINE {
            if stack.run_webhooks_once().await.expect("webhook queue") == 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    futures_util::future::join_all((0..wearlab_local::QUEUE_CONSUMERS).map(|_| consumer())).await;
    let took = started.elapsed();
    println!(
        "webhooks: {} of {events} events delivered in {:.2} s = {:.1} events/s; peak RSS {:.1} MiB",
        received.load(Ordering::Relaxed),
        took.as_secs_f64(),
        received.load(Ordering::Relaxed) as f64 / took.as_secs_f64(),
        peak_rss_mib()
    );
}
