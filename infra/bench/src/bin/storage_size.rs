//! Bytes a bare user takes at rest (issue 36): `storage-size [users_embedded] [users_dynamodb]`
//! (defaults 10,000 and 200; run under `scripts/with-moto`, or with `0` DynamoDB users without
//! it). `scripts/bench storage` runs it.
//!
//! A bare user is what a team backend makes with `POST /v2/user {"client_user_id": ...}`: the
//! users are created through the local stack's router, half of them with an
//! `X-Idempotency-Key`, 16 at a time.
//!
//! - **Embedded (redb file):** the file's growth per user once every create is committed; again
//!   after the idempotency records expired (24 hours, purged by the stack's hourly job) and
//!   after redb's compaction of the closed file; every stored entry's key and value bytes by
//!   kind; redb's own accounting of pages.
//! - **DynamoDB (moto):** every item the users added, read back with a Scan, sized as DynamoDB
//!   bills it: attribute names plus values
//!   (<https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html>),
//!   plus 100 bytes of overhead per item for storage, and the same again for the item's GSI1
//!   entry (projection ALL: the index holds the whole item, plus its own 100 bytes;
//!   <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.StorageConsiderations>).

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use futures_util::StreamExt;
use http::{HeaderValue, Method, StatusCode};
use wearlab_bench::{BENCH_KEY, ScratchDir, request, send};
use wearlab_domain::common::fair_use::MAX_REQUESTS_PER_MINUTE;
use wearlab_domain::common::settings::Settings;
use wearlab_domain::teams;
use wearlab_local::LocalStack;
use wearlab_web::{App, AppState};

type Error = Box<dyn std::error::Error>;

/// DynamoDB's per-item storage overhead (bytes), for the table and for each index entry.
const ITEM_OVERHEAD: u64 = 100;
/// Creates in flight at once, as a team backend's workers send them.
const IN_FLIGHT: usize = 16;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let embedded_users: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10_000);
    let dynamodb_users: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(200);
    if embedded_users > 0 {
        embedded(embedded_users).await?;
    }
    if dynamodb_users > 0 {
        dynamodb(dynamodb_users).await?;
    }
    Ok(())
}

/// Creates the bare users numbered `users` through `app`, `IN_FLIGHT` at a time, every other
/// one with an idempotency key.
async fn create_users(app: &App, key: &str, users: std::ops::Range<usize>) -> Result<(), Error> {
    let results = futures_util::stream::iter(users)
        .map(|i| {
            let app = app.clone();
            let key = key.to_owned();
            async move {
                let body = format!(r#"{{"client_user_id":"bench-user-{i:07}"}}"#);
                let mut req = request(Method::POST, "/v2/user", &key, Some(body));
                if i.is_multiple_of(2) {
                    let idem = HeaderValue::from_str(&format!("storage-bench-{i:07}")).expect("ASCII");
                    req.headers_mut().insert("x-idempotency-key", idem);
                }
                let (status, body) = send(&app, req).await;
                if status == StatusCode::OK {
                    Ok(())
                } else {
                    Err(format!("POST /v2/user: {status} {}", String::from_utf8_lossy(&body)))
                }
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    results.into_iter().collect::<Result<Vec<()>, String>>()?;
    Ok(())
}

/// The kind of a stored item, from its key.
fn kind(pk: &str, sk: &str) -> String {
    let first = |s: &str| s.split('#').find(|p| !p.is_empty()).unwrap_or("").to_owned();
    if pk.starts_with("USER#") {
        if sk == "#" { "user".into() } else { format!("user partition: {}", first(sk)) }
    } else if pk.starts_with("TEAM#") && pk.contains("#COUNT#") {
        "team user count shard".into()
    } else if pk.starts_with("TEAM#") && sk.starts_with("CUID#") {
        "client_user_id reservation".into()
    } else if pk.starts_with("IDEMPOTENCY#") {
        "idempotency record".into()
    } else {
        format!("{} / {}", first(pk), first(sk))
    }
}

/// Per kind: how many and how many bytes.
type Tally = BTreeMap<String, (u64, u64)>;

fn minus(after: &Tally, before: &Tally) -> Tally {
    after
        .iter()
        .map(|(k, (n, b))| {
            let (n0, b0) = before.get(k).copied().unwrap_or_default();
            (k.clone(), (n - n0, b - b0))
        })
        .filter(|(_, (n, b))| *n > 0 || *b > 0)
        .collect()
}

fn print_tally(title: &str, tally: &Tally, users: usize) -> f64 {
    let users = users as f64;
    println!("{title}");
    println!("| kind | items per user | bytes per item | bytes per user |");
    println!("|---|---:|---:|---:|");
    let mut total = 0.0;
    for (kind, (n, b)) in tally {
        let per_user = *b as f64 / users;
        total += per_user;
        // An item that existed before (a shard of the team's count) counts what it grew by.
        let per_item = if *n == 0 { "-".to_owned() } else { format!("{:.0}", *b as f64 / *n as f64) };
        println!("| {kind} | {:.3} | {per_item} | {per_user:.1} |", *n as f64 / users);
    }
    println!("| **total** | | | **{total:.1}** |");
    total
}

fn file_bytes(path: &std::path::Path) -> Result<u64, Error> {
    Ok(std::fs::metadata(path)?.len())
}

/// Stored entries by kind: an item's key and value bytes; an index entry under "GSI1 entry: ".
fn redb_tally(stack: &LocalStack) -> Result<Tally, Error> {
    let mut tally = Tally::new();
    for e in stack.table.stored_entries()? {
        let text = String::from_utf8_lossy(&e.key).into_owned();
        let parts: Vec<&str> = text.split('\0').collect();
        // Items: pk, sk. Index entries: gsi pk, gsi sk, pk, sk.
        let k = match (e.index, parts.as_slice()) {
            (false, [pk, sk]) => kind(pk, sk),
            (true, [.., pk, sk]) => format!("GSI1 entry: {}", kind(pk, sk)),
            _ => "unreadable key".into(),
        };
        let t = tally.entry(k).or_default();
        t.0 += 1;
        t.1 += (e.key.len() + e.value_len) as u64;
    }
    Ok(tally)
}

async fn embedded(n: usize) -> Result<(), Error> {
    let dir = ScratchDir::new("wearlab-storage");
    let file = dir.path().join("wearlab.redb");
    let stack = LocalStack::open(dir.path())?;
    let key = stack.ensure_team_key(Some(BENCH_KEY)).await?;
    let state = AppState::new(stack.deps.clone(), Settings::default())
        .with_default_rate_limit(MAX_REQUESTS_PER_MINUTE);
    let app = stack.app(state);
    // One user first, so the team's counter shards and every per-team item exist before the count.
    create_users(&app, &key, 0..1).await?;
    let before_file = file_bytes(&file)?;
    let before = redb_tally(&stack)?;
    let before_stats = stack.table.file_stats()?;
    let started = std::time::Instant::now();
    create_users(&app, &key, 1..n + 1).await?;
    let took = started.elapsed();
    let after_file = file_bytes(&file)?;
    let after = redb_tally(&stack)?;
    let stats = stack.table.file_stats()?;
    println!(
        "embedded (redb file): {n} bare users created in {:.1} s ({:.0}/s), half with an idempotency key",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64()
    );
    let payload = print_tally(
        "stored entries the users added (key + value bytes; redb's per-entry and page overhead not included):",
        &minus(&after, &before),
        n,
    );
    let per = |a: u64, b: u64| (a.saturating_sub(b)) as f64 / n as f64;
    let page = stats.page_size;
    println!(
        "redb's accounting, per user: leaf pages {:.1} B, branch pages {:.1} B, stored (keys + values) {:.1} B, \
         fragmented {:.1} B, allocated {:.1} B (page {page} B)",
        per(stats.leaf_pages * page, before_stats.leaf_pages * page),
        per(stats.branch_pages * page, before_stats.branch_pages * page),
        per(stats.stored_bytes, before_stats.stored_bytes),
        per(stats.fragmented_bytes, before_stats.fragmented_bytes),
        per(stats.allocated_pages * page, before_stats.allocated_pages * page),
    );
    let leaf_fill = stats.stored_bytes as f64 / (stats.leaf_pages * page).max(1) as f64;
    println!("leaf pages filled: {:.0} % (whole file)", leaf_fill * 100.0);
    println!(
        "file: {before_file} B before, {after_file} B after: {:.1} B per user (entries' payload {payload:.1} B)",
        per(after_file, before_file)
    );

    // A day later the hourly job has purged the expired idempotency records.
    let day_later = stack.deps.clock.now().timestamp() + 25 * 3600;
    let purged = stack.table.purge_expired(day_later).await?;
    let expired = redb_tally(&stack)?;
    let purged_file = file_bytes(&file)?;
    let payload_day = print_tally(
        &format!("after the idempotency records expired ({purged} purged):"),
        &minus(&expired, &before),
        n,
    );
    println!(
        "file after the purge: {purged_file} B, {:.1} B per user (entries' payload {payload_day:.1} B)",
        per(purged_file, before_file)
    );
    let purged_stats = stack.table.file_stats()?;
    println!(
        "redb's accounting after the purge, per user: leaf pages {:.1} B, branch pages {:.1} B, allocated {:.1} B; \
         leaves {:.0} % full",
        per(purged_stats.leaf_pages * page, before_stats.leaf_pages * page),
        per(purged_stats.branch_pages * page, before_stats.branch_pages * page),
        per(purged_stats.allocated_pages * page, before_stats.allocated_pages * page),
        purged_stats.stored_bytes as f64 / (purged_stats.leaf_pages * page).max(1) as f64 * 100.0,
    );
    drop(app);
    drop(stack);
    let moved = wearlab_embedded::RedbTable::compact_file(&file)?;
    let compacted = file_bytes(&file)?;
    println!(
        "file after compaction (closed file, redb `compact`, moved: {moved}): {compacted} B, {:.1} B per user \
         (the whole file divided by the users: {:.1} B)",
        per(compacted, before_file),
        compacted as f64 / (n + 1) as f64
    );
    // The compacted file still opens and answers.
    let stack = LocalStack::open(dir.path())?;
    let state = AppState::new(stack.deps.clone(), Settings::default());
    let app = stack.app(state);
    let (status, body) = send(&app, request(Method::GET, "/v2/user?limit=1", &key, None)).await;
    if status != StatusCode::OK {
        return Err(
            format!("GET /v2/user after compaction: {status} {}", String::from_utf8_lossy(&body)).into()
        );
    }
    Ok(())
}

async fn dynamodb(n: usize) -> Result<(), Error> {
    let endpoint = std::env::var("WEARLAB_TEST_AWS_ENDPOINT")
        .map_err(|_| "WEARLAB_TEST_AWS_ENDPOINT is not set: run under scripts/with-moto")?;
    let (deps, table, _) = wearlab_bench::moto_deps().await?;
    let (client, _) = wearlab_aws::clients_for_endpoint(&endpoint).await;
    let team = teams::create_team(&deps, "Bench team").await?.team_id;
    let key = teams::issue_key(&deps, team, "bench").await?.secret;
    let ports = wearlab_local::Ports::on_table(deps.table.clone(), deps.clock.clone());
    let state =
        AppState::new(deps.clone(), Settings::default()).with_default_rate_limit(MAX_REQUESTS_PER_MINUTE);
    let app = wearlab_local::app(state, &ports);
    create_users(&app, &key, 0..1).await?;
    let before = scan(&client, table.table_name()).await?;
    create_users(&app, &key, 1..n + 1).await?;
    let after = scan(&client, table.table_name()).await?;
    let mut items = Tally::new();
    let mut billed = Tally::new();
    for (k, attrs) in &after {
        if before.get(k) == Some(attrs) {
            continue;
        }
        let size = wearlab_aws::item_size(attrs);
        let kind = kind(&k.0, &k.1);
        // A changed item (a counter shard) counts what it grew by.
        let grew = size.saturating_sub(before.get(k).map_or(0, wearlab_aws::item_size));
        let new = u64::from(!before.contains_key(k));
        let t = items.entry(kind.clone()).or_default();
        t.0 += new;
        t.1 += grew;
        let t = billed.entry(kind.clone()).or_default();
        t.0 += new;
        t.1 += grew + new * ITEM_OVERHEAD;
        if attrs.contains_key("GSI1PK") {
            let t = billed.entry(format!("GSI1 entry (projection ALL): {kind}")).or_default();
            t.0 += new;
            t.1 += grew + new * ITEM_OVERHEAD;
        }
    }
    println!("DynamoDB (moto): {n} bare users created, half with an idempotency key");
    print_tally(
        "item sizes the users added (attribute names + values, as DynamoDB counts an item):",
        &items,
        n,
    );
    print_tally("storage billed (item size + 100 B per item, and again per GSI1 entry):", &billed, n);
    let lasting: Tally = billed.into_iter().filter(|(k, _)| !k.contains("idempotency")).collect();
    print_tally("storage billed after the idempotency records expired (TTL, 24 hours):", &lasting, n);
    Ok(())
}

type Attrs = HashMap<String, AttributeValue>;

/// Every item of the table (moto), by (PK, SK).
async fn scan(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<BTreeMap<(String, String), Attrs>, Error> {
    let mut out = BTreeMap::new();
    let mut start = None;
    // At most 10,000 pages.
    for _ in 0..10_000 {
        let page = client.scan().table_name(table).set_exclusive_start_key(start).send().await?;
        for item in page.items.unwrap_or_default() {
            let s = |name: &str| match item.get(name) {
                Some(AttributeValue::S(v)) => v.clone(),
                _ => String::new(),
            };
            out.insert((s("PK"), s("SK")), item);
        }
        start = page.last_evaluated_key;
        if start.is_none() {
            return Ok(out);
        }
    }
    Err("the scan did not end".into())
}
