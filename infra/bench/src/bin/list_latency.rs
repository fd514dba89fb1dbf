//! `GET /v2/user` page 1 (limit 100) of a large team against a single `GET /v2/user/{id}`,
//! through the router on redb in memory (auth cache warm). The team is filled through the router
//! first; list and get are then timed interleaved, N of each.
//!
//! Usage: `list-latency [USERS] [N]` (defaults 100000 and 2000).

use std::time::{Duration, Instant};

use wearlab_bench::{InProc, print_row};

const DEFAULT_USERS: usize = 100_000;
const DEFAULT_N: usize = 2_000;
const WARM_UP: usize = 100;
const LIMIT: u64 = 100;

#[tokio::main]
async fn main() {
    let arg = |i: usize, default: usize| {
        std::env::args().nth(i).map_or(default, |a| a.parse::<usize>().expect("arguments are numbers"))
    };
    let (users, n) = (arg(1, DEFAULT_USERS).clamp(LIMIT as usize, 1_000_000), arg(2, DEFAULT_N).max(1));
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
    let mut list = Vec::with_capacity(n);
    let mut get = Vec::with_capacity(n);
    for _ in 0..n {
        list.push(p.timed(p.list_users_request(LIMIT)).await);
        get.push(p.timed(p.get_user_request()).await);
    }

    println!(
        "in-process, router oneshot, in-memory redb, auth cache warm; team of {users} users (filled in {:.1} s); \
         N={n} per row, {WARM_UP} warm-up, interleaved",
        fill.as_secs_f64()
    );
    println!("| request | n | mean µs | median µs | p90 µs | p99 µs | max µs |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let l = print_row(&format!("GET /v2/user?limit={LIMIT} (page 1)"), &mut list);
    let g = print_row("GET /v2/user/{id} (get)", &mut get);
    println!(
        "list page 1 / get: {:.2}x (median), {:.2}x (p99)",
        ratio(l.median, g.median),
        ratio(l.p99, g.p99)
    );
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}
