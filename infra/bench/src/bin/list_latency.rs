//! `GET /v2/user` page 1 (limit 100) of a large team against a single `GET /v2/user/{id}`.
//!
//! - `list-latency [USERS] [N]` (defaults 100000 and 2000): the local stack on redb in memory
//!   (auth cache warm), the team filled through the router; timed interleaved, N of each: page 1
//!   as the process keeps it, page 1 right after a PATCH of a user (untimed; the page is read
//!   again), and a get; first through the router in process (`oneshot`), then over HTTP/1.1 on
//!   loopback (the same router served as `wearlab-local` serves it, one keep-alive connection).
//! - `list-latency --moto [USERS] [N]` (defaults 1000 and 200; under `scripts/with-moto`): the
//!   same requests through the router on a DynamoDB table on moto (page 1 kept once the index
//!   lag has passed, then page 1 after each of N changes), timed and with the DynamoDB round
//!   trips of each request counted.
//! - `list-latency --audit [ENTRIES] [N]` (defaults 10000 and 500; add `--moto` after it to run
//!   on moto): the audit listing (`GET /v2/team/audit_log`'s read, newest first, limits 50 and
//!   500) of a team of ENTRIES entries, against the read of the same entries kept in one
//!   partition (the listing before the shards: one query), with DynamoDB round trips counted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use wearlab_bench::{HttpConnection, InProc, print_row, request, send, serve_http, user_id_of};
use wearlab_domain::common::fair_use::{FairUse, MAX_REQUESTS_PER_MINUTE};
use wearlab_domain::common::ids::ClientUserId;
use wearlab_domain::common::settings::Settings;
use wearlab_domain::teams;
use wearlab_domain::users::{self, NewUser};
use wearlab_web::AppState;

const WARM_UP: usize = 100;
const LIMIT: u64 = 100;

/// The local stack's allocator, as `wearlab-local` runs it.
#[global_allocator]
static ALLOCATOR: wearlab_local::Allocator = wearlab_local::Allocator;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let moto = args.first().is_some_and(|a| a == "--moto");
    if moto {
        args.remove(0);
    }
    if args.first().is_some_and(|a| a == "--audit") {
        args.remove(0);
        let on_moto = args.first().is_some_and(|a| a == "--moto");
        if on_moto {
            args.remove(0);
        }
        let arg =
            |i: usize, default: usize| args.get(i).map_or(default, |a| a.parse::<usize>().expect("a number"));
        return audit_listing(arg(0, 10_000), arg(1, 500).max(1), on_moto).await;
    }
    let arg = |i: usize, default: usize| {
        args.get(i).map_or(default, |a| a.parse::<usize>().expect("arguments are numbers"))
    };
    if moto {
        let (users, n) = (arg(0, 1_000).clamp(LIMIT as usize, 100_000), arg(1, 200).max(1));
        return on_moto(users, n).await;
    }
    let (users, n) = (arg(0, 100_000).clamp(LIMIT as usize, 1_000_000), arg(1, 2_000).max(1));
    let p = InProc::new(true).await;
    let filling = Instant::now();
    // InProc::new made one user.
    for _ in 1..users {
        p.timed(p.create_user_request()).await;
    }
    let fill = filling.elapsed();
    let (_, page) = p.send(p.list_users_request(LIMIT)).await;
    let page: serde_json::Value = serde_json::from_slice(&page).expect("a JSON page");
    assert_eq!(page["total"], users as u64, "the team has {users} users");
    assert_eq!(page["users"].as_array().map(Vec::len), Some(LIMIT as usize));

    for _ in 0..WARM_UP {
        p.timed(p.list_users_request(LIMIT)).await;
        p.timed(p.get_user_request()).await;
    }
    let (mut list, mut changed, mut get) =
        (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        list.push(p.timed(p.list_users_request(LIMIT)).await);
        p.send(change_request(&p, i)).await;
        changed.push(p.timed(p.list_users_request(LIMIT)).await);
        get.push(p.timed(p.get_user_request()).await);
    }
    println!(
        "in-process, router oneshot, in-memory redb, auth cache warm; team of {users} users (filled in {:.1} s); \
         N={n} per row, {WARM_UP} warm-up, interleaved",
        fill.as_secs_f64()
    );
    table(&mut list, &mut changed, &mut get);

    let addr = serve_http(p.app.clone()).await;
    let mut conn = HttpConnection::open(addr).await;
    let (list_path, get_path) = (format!("/v2/user?limit={LIMIT}"), format!("/v2/user/{}", p.user_id));
    for _ in 0..WARM_UP {
        conn.timed_get(&list_path, &p.key).await;
        conn.timed_get(&get_path, &p.key).await;
    }
    let (mut list, mut changed, mut get) =
        (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        list.push(conn.timed_get(&list_path, &p.key).await);
        p.send(change_request(&p, i)).await;
        changed.push(conn.timed_get(&list_path, &p.key).await);
        get.push(conn.timed_get(&get_path, &p.key).await);
    }
    println!();
    println!(
        "HTTP/1.1 on loopback ({addr}), one keep-alive connection, same stack; N={n} per row, interleaved"
    );
    table(&mut list, &mut changed, &mut get);

    // What fair use adds to each request: one admission of the team, from this process's block
    // (a table add once per block of limit / 50).
    let fair_use = FairUse::new(MAX_REQUESTS_PER_MINUTE);
    let team = wearlab_domain::teams::authenticate(&p.stack.deps, &p.key).await?;
    let admissions = 200_000;
    let start = Instant::now();
    for _ in 0..admissions {
        assert!(fair_use.admit(&p.stack.deps, team).await?.allowed);
    }
    println!();
    println!(
        "fair use: {:.0} ns per admission (mean of {admissions}; the highest limit: blocks of 100)",
        start.elapsed().as_secs_f64() * 1e9 / f64::from(admissions)
    );
    Ok(())
}

/// The same requests through the router on DynamoDB (moto), with round trips per request.
async fn on_moto(users: usize, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let (deps, ddb, endpoint) = wearlab_bench::moto_deps().await?;
    let team = teams::create_team(&deps, "Bench team").await?.team_id;
    let key = teams::issue_key(&deps, team, "bench").await?.secret;
    let filling = Instant::now();
    // 16 creates at once: the team's count is an add, so they do not contend.
    let deps = Arc::new(deps);
    let mut first = None;
    for chunk in (0..users).collect::<Vec<_>>().chunks(16) {
        let mut creates = tokio::task::JoinSet::new();
        for &i in chunk {
            let deps = deps.clone();
            creates.spawn(async move {
                let new = NewUser {
                    client_user_id: ClientUserId::parse(&format!("bench-{i:06}")).expect("an id"),
                    fallback_time_zone: None,
                    fallback_birth_date: None,
                    ingestion_start: None,
                    ingestion_end: None,
                };
                users::create(&deps, team, new).await.map(|u| u.user_id)
            });
        }
        while let Some(created) = creates.join_next().await {
            first.get_or_insert(created??);
        }
    }
    let fill = filling.elapsed();
    let user_id = first.expect("one user at least");
    let ports = wearlab_local::Ports::on_table(deps.table.clone(), deps.clock.clone());
    let app = wearlab_local::app(
        AppState::new((*deps).clone(), Settings::default()).with_default_rate_limit(MAX_REQUESTS_PER_MINUTE),
        &ports,
    );
    let (list_path, get_path) = (format!("/v2/user?limit={LIMIT}"), format!("/v2/user/{user_id}"));
    let call = |path: &str| send(&app, request(Method::GET, path, &key, None));
    let (_, body) = call(&list_path).await;
    let page: serde_json::Value = serde_json::from_slice(&body)?;
    assert_eq!(page["total"], users as u64, "the team has {users} users");
    user_id_of(&serde_json::to_vec(&page["users"][0])?);
    for _ in 0..10 {
        call(&list_path).await;
        call(&get_path).await;
    }
    // A page is kept once read the index's lag after the team's last change.
    tokio::time::sleep(deps.table.index_lag()).await;
    call(&list_path).await;
    // Kept pages: list and get interleaved.
    let (mut list, mut get) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut list_trips, mut get_trips) = (0, 0);
    for _ in 0..n {
        for (path, times, trips) in
            [(&list_path, &mut list, &mut list_trips), (&get_path, &mut get, &mut get_trips)]
        {
            let before = ddb.round_trips();
            let start = Instant::now();
            let (status, _) = call(path).await;
            times.push(start.elapsed());
            assert_eq!(status, http::StatusCode::OK);
            *trips += ddb.round_trips() - before;
        }
    }
    // After a change of a listed user (a PATCH, not timed) the page is read again.
    let (mut changed, mut changed_trips) = (Vec::with_capacity(n), 0);
    let patch_path = format!("/v2/user/{user_id}");
    for i in 0..n {
        let (status, _) = send(&app, request(Method::PATCH, &patch_path, &key, Some(change_body(i)))).await;
        assert_eq!(status, http::StatusCode::NO_CONTENT);
        let before = ddb.round_trips();
        let start = Instant::now();
        let (status, _) = call(&list_path).await;
        changed.push(start.elapsed());
        assert_eq!(status, http::StatusCode::OK);
        changed_trips += ddb.round_trips() - before;
    }
    println!(
        "router oneshot on DynamoDB (moto at {endpoint}), auth cache warm; team of {users} users (filled in {:.1} s); \
         N={n} per row, 10 warm-up; kept page and get interleaved, then the changed page",
        fill.as_secs_f64()
    );
    table(&mut list, &mut changed, &mut get);
    println!(
        "DynamoDB round trips per request: list page 1 kept {:.2}, after a change {:.2}, get {:.2}",
        list_trips as f64 / n as f64,
        changed_trips as f64 / n as f64,
        get_trips as f64 / n as f64
    );
    Ok(())
}

/// The audit listing of a team of `entries` entries (written over a minute, 16 at once), sharded
/// as recorded, against one query of the same entries kept in one partition, as the listing
/// read before the shards.
async fn audit_listing(entries: usize, n: usize, on_moto: bool) -> Result<(), Box<dyn std::error::Error>> {
    use wearlab_domain::common::audit::{self, Access, AuditEntry, AuditFilter, Retention};
    use wearlab_domain::common::ids::{Caller, KeyId};
    use wearlab_domain::keys::audit as keys;
    use wearlab_domain::ports::{Condition, Item, Query};

    let (deps, ddb, _local) = if on_moto {
        let (deps, ddb, _) = wearlab_bench::moto_deps().await?;
        (deps, Some(ddb), None)
    } else {
        let p = InProc::new(true).await;
        (p.stack.deps.clone(), None, Some(p))
    };
    let team = teams::create_team(&deps, "Audit bench").await?.team_id;
    let unsharded = teams::create_team(&deps, "Audit bench, one partition").await?.team_id;
    let caller = Caller { team_id: team, key_id: KeyId::parse("0123456789ab").expect("a key id") };
    let filling = Instant::now();
    for chunk in (0..entries).collect::<Vec<_>>().chunks(16) {
        let records = chunk.iter().map(|i| {
            let access = Access {
                actor: caller.into(),
                method: "GET".into(),
                route: "/v2/summary/sleep/{user_id}".into(),
                user_id: None,
                resource: Some(format!("r{i}")),
                status: 200,
            };
            audit::record(&deps, access, Retention::default())
        });
        futures_util::future::try_join_all(records).await?;
    }
    // The same entries in one partition of another team, as they were stored before the shards.
    for pk in keys::team_partitions(team) {
        let items =
            wearlab_domain::ports::query_all(deps.table.as_ref(), Query::partition(pk), entries).await?;
        for item in items {
            let moved = Item::new(
                wearlab_domain::ports::Key::new(keys::team_partition(unsharded), item.key.sk.clone()),
                item.body.clone(),
            );
            deps.table.put(moved, Condition::None).await?;
        }
    }
    let fill = filling.elapsed();
    println!(
        "audit listing, {} ({entries} entries of one team, written in {:.1} s); N={n} per row, 10 warm-up",
        if on_moto { "DynamoDB on moto" } else { "in-memory redb" },
        fill.as_secs_f64()
    );
    println!("| read | n | mean µs | median µs | p90 µs | p99 µs | max µs |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let trips = || ddb.as_ref().map_or(0, |d| d.round_trips());
    let mut notes = Vec::new();
    for limit in [50_u32, 500] {
        let filter = || AuditFilter { user_id: None, since: None, until: None, limit, cursor: None };
        let one = || async {
            let q = Query::partition(keys::team_partition(unsharded)).descending().limit(limit);
            let page = deps.table.query(q).await.expect("a page");
            let decoded: Vec<AuditEntry> = page.items.iter().map(|i| i.decode().expect("an entry")).collect();
            assert_eq!(decoded.len(), limit as usize);
        };
        let sharded = || async {
            let (page, next) = audit::list(&deps, team, filter()).await.expect("a page");
            assert_eq!((page.len(), next.is_some()), (limit as usize, true));
        };
        for _ in 0..10 {
            one().await;
            sharded().await;
        }
        let (mut before, mut after) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut before_trips, mut after_trips) = (0, 0);
        for _ in 0..n {
            let (t0, start) = (trips(), Instant::now());
            one().await;
            before.push(start.elapsed());
            before_trips += trips() - t0;
            let (t0, start) = (trips(), Instant::now());
            sharded().await;
            after.push(start.elapsed());
            after_trips += trips() - t0;
        }
        let b = print_row(&format!("limit {limit}, one partition (before the shards)"), &mut before);
        let a = print_row(
            &format!("limit {limit}, {} shards and the unsharded partition, merged", keys::SHARDS),
            &mut after,
        );
        notes.push(format!(
            "limit {limit}: sharded / one partition {:.2}x (median); round trips per listing {:.2} vs {:.2}",
            ratio(a.median, b.median),
            after_trips as f64 / n as f64,
            before_trips as f64 / n as f64
        ));
    }
    for note in notes {
        println!("{note}");
    }
    Ok(())
}

/// A PATCH of the bench's user that changes what page 1 shows (its fallback time zone), so
/// that the next page is read, not answered from the kept pages.
fn change_request(p: &InProc, i: usize) -> http::Request<axum::body::Body> {
    request(Method::PATCH, &format!("/v2/user/{}", p.user_id), &p.key, Some(change_body(i)))
}

/// The `i`th change's PATCH body: the fallback time zone, back and forth.
fn change_body(i: usize) -> String {
    let zone = if i.is_multiple_of(2) { "Asia/Tokyo" } else { "Europe/Berlin" };
    serde_json::json!({ "fallback_time_zone": zone }).to_string()
}

fn table(list: &mut [Duration], changed: &mut [Duration], get: &mut [Duration]) {
    println!("| request | n | mean µs | median µs | p90 µs | p99 µs | max µs |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let l = print_row(&format!("GET /v2/user?limit={LIMIT} (page 1, kept)"), list);
    let c = print_row(&format!("GET /v2/user?limit={LIMIT} (page 1 after a change)"), changed);
    let g = print_row("GET /v2/user/{id} (get)", get);
    for (name, s) in [("page 1 kept", l), ("page 1 after a change", c)] {
        println!(
            "{name} / get: {:.2}x (median), {:.2}x (p99)",
            ratio(s.median, g.median),
            ratio(s.p99, g.p99)
        );
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}
