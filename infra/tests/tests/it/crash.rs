//! SIGKILL in the middle of historical pulls (issue 18): the local stack on a redb file is killed
//! while it pulls, restarted on the same data, and must finish every pull with nothing lost or
//! doubled. The killed process is this test binary itself, started again to run only
//! [`child_pulls_until_killed`] on the directory the parent prepared.
//!
//! The reference is the same data pulled without a crash: before the child starts, the parent
//! copies the prepared file (users, connections, queued pulls) and drains the copy in process.
//! The simulator's data depends only on the user id and the day, and every process moves its
//! clock to the same noon, so both runs must store the same items.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;
use wearlab_domain::common::ids::UserId;
use wearlab_domain::keys;
use wearlab_domain::ports::{EventEnvelope, Query, QueueName, query_all};
use wearlab_local::{LOCAL_TEAM_ID, LocalStack};

/// Set (to the data directory) only in the child process.
const CHILD_DIR: &str = "WEARLAB_TEST_CRASH_DIR";
/// Set (to the day every process works on) only in the child process.
const CHILD_DAY: &str = "WEARLAB_TEST_CRASH_DAY";
const USERS: usize = 12;
const HISTORY_DAYS: u32 = 20;
const KEY: &str = "sk_crash_test_local_key_0123456789";

/// A stack on the file under `dir`, its clock moved to `day` 12:00 UTC (later than now, so that
/// every process of the test, however long it runs, pulls the same window).
async fn open(dir: &Path, day: chrono::NaiveDate) -> LocalStack {
    let stack = LocalStack::open(dir).expect("the stack opens on its file");
    let noon = day.and_hms_opt(12, 0, 0).unwrap().and_utc();
    let ahead = (noon - chrono::Utc::now()).num_seconds();
    assert!(ahead > 0, "the day is ahead of the system clock");
    stack.clock.advance_seconds(ahead);
    stack
}

async fn call(app: &wearlab_web::App, path: &str, body: Value) -> Value {
    let req = Request::post(path)
        .header(crate::helpers::API_KEY_HEADER, KEY)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    assert!(status.is_success(), "{path}: {status} {}", String::from_utf8_lossy(&bytes));
    serde_json::from_slice(&bytes).unwrap()
}

/// Runs the pull queue until it is empty (bounded); returns how many messages were handled.
async fn drain(stack: &LocalStack) -> usize {
    let mut handled = 0;
    for _ in 0..10_000 {
        let n = stack.run_pulls_once().await.unwrap();
        handled += n;
        if n == 0 && stack.queue.depth(QueueName::Pull).await.unwrap() == 0 {
            return handled;
        }
        if n == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    panic!("the pull queue did not empty: {handled} handled");
}

/// Every stored data item of the users, by user, key and body.
async fn data_items(stack: &LocalStack, users: &[UserId]) -> BTreeMap<(UserId, String), Value> {
    let mut out = BTreeMap::new();
    for &user in users {
        let q = Query::partition(keys::user_partition(user)).prefix("DATA#");
        for item in query_all(stack.deps.table.as_ref(), q, 1_000_000).await.unwrap() {
            out.insert((user, item.key.sk), item.body);
        }
    }
    out
}

/// The `historical.data.*.created` events waiting on the webhook queue (the local bus puts every
/// event there, durably, as EventBridge's rule sends them to SQS), as (user, event type).
async fn historical_events(stack: &LocalStack) -> Vec<(uuid::Uuid, String)> {
    stack
        .queue
        .waiting(QueueName::Webhook)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| serde_json::from_value::<EventEnvelope>(m.body).ok())
        .filter(|e| e.event_type.starts_with("historical.data."))
        .map(|e| (e.user_id, e.event_type))
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("wearlab-crash-{name}-{}", uuid::Uuid::new_v4().simple()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_sigkill_during_historical_pulls_then_restart_loses_and_doubles_nothing() {
    // Tomorrow (UTC): later than now for every process of the test.
    let day = chrono::Utc::now().date_naive() + chrono::Days::new(1);
    let dir = scratch("killed");
    let users = {
        let stack = open(&dir, day).await;
        stack.ensure_team_key(Some(KEY)).await.unwrap();
        let mut prefs = wearlab_models::data::DataPullPreferences::default();
        prefs.history_days.insert("fitbit".into(), HISTORY_DAYS);
        wearlab_domain::pipeline::set_preferences(&stack.deps, LOCAL_TEAM_ID, prefs).await.unwrap();
        let app = stack.app(stack.state());
        let mut users = Vec::new();
        for n in 0..USERS {
            // Pulls stop at yesterday: today's simulated data still grows with the time of day,
            // which differs between the processes.
            let body = json!({"client_user_id": format!("crash-{n}"), "ingestion_end": day.pred_opt()});
            let u = call(&app, "/v2/user", body).await;
            let id = u["user_id"].as_str().unwrap().to_owned();
            call(&app, "/v2/link/connect/demo", json!({"user_id": id, "provider": "fitbit"})).await;
            users.push(UserId::parse(&id).unwrap());
        }
        users
    };
    // The reference: the same prepared data pulled without a crash.
    let reference_dir = scratch("reference");
    copy_dir(&dir, &reference_dir);
    let (expected, expected_events, messages) = {
        let stack = open(&reference_dir, day).await;
        let messages = drain(&stack).await;
        (data_items(&stack, &users).await, historical_events(&stack).await, messages)
    };
    let expected_events: BTreeSet<_> = expected_events.into_iter().collect();
    assert!(!expected.is_empty() && messages >= USERS, "{} items, {messages} messages", expected.len());
    assert!(expected_events.len() >= 2 * USERS, "{expected_events:?}");

    // The child pulls until it is killed with SIGKILL, once about half the resources' histories
    // are announced (so some pulls are done, some half done, some not started).
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["crash::child_pulls_until_killed", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR, &dir)
        .env(CHILD_DAY, day.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let started = Instant::now();
    let mut announced_before_kill = 0;
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("announced ") {
            announced_before_kill = n.trim().parse().unwrap();
            if announced_before_kill >= expected_events.len() / 2 {
                break;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(300), "the child made no progress");
    }
    child.kill().unwrap(); // SIGKILL on Unix: no destructor, no flush, no clean close
    child.wait().unwrap();
    assert!(
        announced_before_kill > 0 && announced_before_kill < expected_events.len(),
        "killed in the middle: {announced_before_kill} of {} histories announced",
        expected_events.len()
    );

    // Restart on the same file. Messages the child had leased come back after their visibility
    // timeout, as SQS's would.
    let stack = open(&dir, day).await;
    let before = data_items(&stack, &users).await.len();
    assert!(before < expected.len(), "the kill came before the last item: {before} of {}", expected.len());
    stack.clock.advance_seconds(wearlab_embedded::VISIBILITY.as_secs() as i64 + 1);
    drain(&stack).await;
    let stored = data_items(&stack, &users).await;
    let missing: Vec<_> = expected.keys().filter(|k| !stored.contains_key(*k)).take(5).collect();
    let extra: Vec<_> = stored.keys().filter(|k| !expected.contains_key(*k)).take(5).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing {missing:?}, extra {extra:?}");
    for (key, body) in &expected {
        assert_eq!(&stored[key], body, "{key:?} stored as in the run without a crash");
    }
    let sent: BTreeSet<_> = historical_events(&stack).await.into_iter().collect();
    let lost: Vec<_> = expected_events.difference(&sent).take(5).collect();
    assert!(lost.is_empty(), "historical events never sent: {lost:?}");
    let announced: BTreeSet<_> = expected_events.iter().map(|(user, _)| user).collect();
    assert_eq!(announced.len(), USERS, "every user's history announced");
    drop(stack);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&reference_dir);
}

/// The killed process: pulls on the parent's directory and prints its running count of handled
/// messages until the parent kills it. Runs only when the parent starts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "started by crash_sigkill_during_historical_pulls_then_restart_loses_and_doubles_nothing"]
async fn child_pulls_until_killed() {
    let (Some(dir), Some(day)) = (std::env::var_os(CHILD_DIR), std::env::var(CHILD_DAY).ok()) else {
        return;
    };
    let stack = open(Path::new(&dir), day.parse().unwrap()).await;
    let pulling = stack.clone();
    tokio::spawn(async move {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(300) {
            if pulling.run_pulls_once().await.unwrap() == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    // Bounded: the parent kills this process long before.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(300) {
        println!("announced {}", historical_events(&stack).await.len());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
