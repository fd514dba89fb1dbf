//! Bulk operations on the local stack, in one process on a redb file in a temporary directory
//! (as `make run` keeps its data):
//! 1. time from sending a bulk import of 1,000 / 10,000 / 25,000 connection recipes to its 202
//!    (validation, the operation record, sealing and queueing every recipe), several runs each;
//! 2. with `WEARLAB_TEST_AWS_ENDPOINT` set (moto): the same 10,000 on the SQS adapter, counting
//!    SendMessageBatch calls;
//! 3. import throughput of the worker: N users with valid team-app tokens, connections per
//!    second from the first message until the bulk queue is empty.
//!
//! Recipes are compact (about 200 bytes: 25,000 must fit the 6 MB request limit).
//!
//! Usage: bulk-throughput [IMPORT_USERS=2000] [RUNS=5]. Every loop is bounded.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use tower::ServiceExt;
use wearlab_domain::common::settings::Settings;
use wearlab_domain::linking::team_apps::{NewOauthApp, put_oauth_app};
use wearlab_domain::ports::QueueName;
use wearlab_domain::teams;
use wearlab_local::{LOCAL_TEAM_ID, LocalStack};
use wearlab_models::OauthAppBody;
use wearlab_web::AppState;

const KEY_HEADER: &str = "x-service-api-key";
const CLIENT_ID: &str = "bench-fitbit-app";
const DEADLINE: Duration = Duration::from_secs(900);

fn recipe(user: &str, n: usize) -> serde_json::Value {
    serde_json::json!({
        "user_id": user,
        "access_token": wearlab_sim::app_access_token("fitbit", CLIENT_ID, &[], &n.to_string()),
        "refresh_token": format!("r{n:07}"),
        "provider_id": format!("fb{n:07}"),
        "expires_at": 1_900_000_000,
        "oauth_scopes": ["activity"],
    })
}

fn import_body(users: &[String]) -> String {
    let connections: Vec<_> = users.iter().enumerate().map(|(n, u)| recipe(u, n)).collect();
    serde_json::json!({"provider": "fitbit", "connections": connections}).to_string()
}

async fn send(
    app: &wearlab_web::App,
    key: &str,
    method: &str,
    path: &str,
    body: String,
) -> (StatusCode, Vec<u8>) {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(KEY_HEADER, key)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .expect("request builds");
    let res = app.clone().oneshot(req).await.expect("router answers");
    let status = res.status();
    (status, res.into_body().collect().await.expect("body").to_bytes().to_vec())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let import_users: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    // Removed when dropped, after the stack (declared later, dropped first).
    let dir = wearlab_bench::ScratchDir::new("wearlab-bulk-bench");
    std::fs::create_dir_all(dir.path()).expect("temp dir");
    let stack = LocalStack::open(dir.path()).expect("local stack opens");
    let key = stack.ensure_team_key(None).await.expect("team key");
    teams::set_bulk_operations(&stack.deps, LOCAL_TEAM_ID, true).await.expect("bulk on");
    let app_body = OauthAppBody { client_id: CLIENT_ID.into(), client_secret: "bench-secret".into() };
    put_oauth_app(&stack.deps, LOCAL_TEAM_ID, "fitbit", NewOauthApp::parse(app_body).expect("valid app"))
        .await
        .expect("app set");
    let app = stack.app(stack.state());

    println!("time to 202 of POST /v2/link/bulk_import (local stack, redb file, {runs} runs each):");
    for n in [1_000usize, 10_000, 25_000] {
        let users: Vec<String> = (0..n).map(|_| uuid::Uuid::new_v4().to_string()).collect();
        let body = import_body(&users);
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let started = Instant::now();
            let (status, text) = send(&app, &key, "POST", "/v2/link/bulk_import", body.clone()).await;
            times.push(started.elapsed().as_secs_f64() * 1e3);
            assert_eq!(status, StatusCode::ACCEPTED, "{}", String::from_utf8_lossy(&text));
        }
        let messages = stack.queue.depth(QueueName::Bulk).await.expect("depth");
        println!(
            "  {n:>6} connections ({:.1} MB body): median {:.0} ms, max {:.0} ms; {} queue messages per request",
            body.len() as f64 / 1e6,
            median(times.clone()),
            times.iter().copied().fold(0.0, f64::max),
            messages / runs
        );
        // Drop the queued work of this step (unknown users) so the next step starts clean.
        let table = stack.deps.table.clone();
        let q = wearlab_domain::ports::Query::partition(format!("QUEUE#{}", QueueName::Bulk.as_str()));
        for item in wearlab_domain::ports::query_all(table.as_ref(), q, 10_000_000).await.unwrap_or_default()
        {
            let _ = table.delete(&item.key, wearlab_domain::ports::Condition::None).await;
        }
    }

    match std::env::var("WEARLAB_TEST_AWS_ENDPOINT") {
        Ok(endpoint) => {
            let config = wearlab_aws::config_for_endpoint(&endpoint).await;
            let client = aws_sdk_sqs::Client::new(&config);
            let name = format!("wearlab-bulk-bench-{}", uuid::Uuid::new_v4().simple());
            let url = client
                .create_queue()
                .queue_name(name)
                .send()
                .await
                .expect("queue")
                .queue_url()
                .unwrap()
                .to_owned();
            let sqs = wearlab_aws::SqsQueue::new(
                client,
                HashMap::from([(QueueName::Bulk, url)]),
                stack.deps.clock.clone(),
            );
            let ports = wearlab_local::Ports { queue: Arc::new(sqs.clone()), ..stack.ports() };
            let app = stack.app_on(AppState::new(stack.deps.clone(), Settings::default()), &ports);
            let users: Vec<String> = (0..10_000).map(|_| uuid::Uuid::new_v4().to_string()).collect();
            let started = Instant::now();
            let (status, _) = send(&app, &key, "POST", "/v2/link/bulk_import", import_body(&users)).await;
            assert_eq!(status, StatusCode::ACCEPTED);
            println!(
                "SQS (moto): 10,000 connections in {} SendMessageBatch calls; 202 after {:.0} ms",
                sqs.send_batch_calls(),
                started.elapsed().as_secs_f64() * 1e3
            );
        }
        Err(_) => println!("SQS: skipped (set WEARLAB_TEST_AWS_ENDPOINT to a moto server)"),
    }

    let mut users = Vec::with_capacity(import_users);
    for n in 0..import_users {
        let (status, body) = send(
            &app,
            &key,
            "POST",
            "/v2/user",
            serde_json::json!({"client_user_id": format!("bulk-bench-{n}")}).to_string(),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
        users.push(v["user_id"].as_str().expect("user_id").to_owned());
    }
    let (status, _) = send(&app, &key, "POST", "/v2/link/bulk_import", import_body(&users)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let started = Instant::now();
    // The operation's estimate (`estimated_completion_at`) when a quarter, half and three
    // quarters are done, read every 50 ms while the worker runs, compared below with when the
    // operation ended.
    let mut estimates: Vec<(u64, chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>)> = Vec::new();
    let finished = std::sync::atomic::AtomicBool::new(false);
    let worker = async {
        while stack.queue.depth(QueueName::Bulk).await.expect("depth") > 0 && started.elapsed() < DEADLINE {
            stack.run_bulk_once().await.expect("bulk worker");
        }
        finished.store(true, std::sync::atomic::Ordering::Relaxed);
    };
    let sampler = async {
        while !finished.load(std::sync::atomic::Ordering::Relaxed) && started.elapsed() < DEADLINE {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let (_, body) = send(&app, &key, "GET", "/v2/link/bulk_op?page_size=1", String::new()).await;
            let page: wearlab_models::bulk::BulkOpPage = serde_json::from_slice(&body).expect("bulk op page");
            let Some(op) = page.data.first() else { continue };
            let done_pct = (op.processed * 100).checked_div(op.processed + op.pending).unwrap_or(0);
            let next_mark = [25, 50, 75].into_iter().find(|m| estimates.iter().all(|(at, ..)| at != m));
            if let (Some(mark), Some(eta)) = (next_mark, op.estimated_completion_at)
                && done_pct >= mark
            {
                estimates.push((mark, chrono::Utc::now(), eta));
            }
        }
    };
    tokio::join!(worker, sampler);
    let secs = started.elapsed().as_secs_f64();
    // From the operation (the local bus keeps only its latest 10,000 events).
    let (_, body) = send(&app, &key, "GET", "/v2/link/bulk_op?page_size=1", String::new()).await;
    let page: wearlab_models::bulk::BulkOpPage = serde_json::from_slice(&body).expect("bulk op page");
    let op = page.data.first().expect("the import's operation");
    let imported = op.processed - op.failed;
    // The estimate is of the operation's end as the team sees it (`ended_at`).
    let ended = op.ended_at.unwrap_or_else(chrono::Utc::now);
    for (mark, at, eta) in &estimates {
        let (predicted, actual) = ((*eta - *at).num_milliseconds(), (ended - *at).num_milliseconds());
        let error = (predicted - actual) as f64 / actual.max(1) as f64 * 100.0;
        println!(
            "bulk_op estimate at {mark}% done: the rest in {:.1} s, took {:.1} s ({error:+.0}%)",
            predicted as f64 / 1e3,
            actual as f64 / 1e3
        );
    }
    println!(
        "import worker: {imported} of {import_users} connections in {secs:.1} s = {:.0} connections/s (16 at once per message)",
        imported as f64 / secs
    );
    drop(stack);
}
