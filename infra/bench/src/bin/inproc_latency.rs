//! Per-request latency of create user and get user through the router in memory: N timed
//! requests each (after a warm-up), printed as median and p99, which criterion does not print.
//!
//! Usage: `inproc-latency [N]` (default 10000, at most 1000000).

use wearlab_bench::{InProc, print_row};

const DEFAULT_N: usize = 10_000;
const MAX_N: usize = 1_000_000;
const WARM_UP: usize = 1_000;

#[tokio::main]
async fn main() {
    let n = match std::env::args().nth(1) {
        Some(a) => a.parse::<usize>().expect("N must be a number").clamp(1, MAX_N),
        None => DEFAULT_N,
    };
    let p = InProc::new(true).await;

    for _ in 0..WARM_UP {
        p.timed(p.get_user_request()).await;
        p.timed(p.create_user_request()).await;
    }
    // Interleaved so that both see the same machine state; the table grows by N users.
    let mut get = Vec::with_capacity(n);
    let mut create = Vec::with_capacity(n);
    for _ in 0..n {
        let req = p.create_user_request();
        create.push(p.timed(req).await);
        let req = p.get_user_request();
        get.push(p.timed(req).await);
    }

    println!("in-process, router oneshot, in-memory redb, auth cache warm; N={n} per row, {WARM_UP} warm-up");
    println!("| request | n | mean µs | median µs | p90 µs | p99 µs | max µs |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    print_row("POST /v2/user (create)", &mut create);
    print_row("GET /v2/user/{id} (get)", &mut get);
}
