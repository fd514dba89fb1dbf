//! What a month of one team costs on AWS: the scripted month of `docs/PERFORMANCE.md` ("What a
//! month costs") driven through the handlers on moto with every AWS call counted, for two
//! sample sizes (the per-user figures should agree), priced with the us-east-1 list prices.
//!
//! `scripts/with-moto target/release/cost-model [users_small users_large days reads minute_runs]`
//! (defaults 10 20 2 20 4).

use wearlab_bench::cost::{self, Measured, Sample};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let arg = |i: usize, d: usize| args.get(i).copied().unwrap_or(d);
    let (small, large, days, reads, minute_runs) = (arg(0, 10), arg(1, 20), arg(2, 2), arg(3, 20), arg(4, 4));
    let endpoint = std::env::var("WEARLAB_TEST_AWS_ENDPOINT")
        .map_err(|_| "WEARLAB_TEST_AWS_ENDPOINT is not set: run under scripts/with-moto")?;
    let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml"))?;
    let mut measured: Vec<Measured> = Vec::new();
    for users in [small, large] {
        let sample = Sample { users, days, reads, minute_runs };
        let started = std::time::Instant::now();
        let m = cost::measure(&endpoint, &template, &sample, |phase| {
            eprintln!("  [{users} users] {phase} ({:.0} s)", started.elapsed().as_secs_f64())
        })
        .await?;
        eprintln!("  [{users} users] done in {:.0} s", started.elapsed().as_secs_f64());
        measured.push(m);
    }

    println!(
        "sample: {days} days, {reads} API reads per user-day driven (scaled to {}), {minute_runs} minute-worker runs",
        cost::READS_PER_USER_DAY
    );
    println!();
    println!("per user-month at two sample sizes (the month's figures scale from these):");
    println!("| line | {small} users | {large} users | change |");
    println!("|---|---:|---:|---:|");
    let (a, b) = (measured[0].per_user_month(), measured[1].per_user_month());
    for p in cost::PRICES.iter() {
        let (x, y) = (a.get(p.line), b.get(p.line));
        let change = if x > 0.0 { format!("{:+.1}%", (y - x) / x * 100.0) } else { "-".to_owned() };
        println!("| {} | {x:.2} | {y:.2} | {change} |", p.line);
    }
    println!(
        "| dollars | {:.5} | {:.5} | {:+.1}% |",
        a.total_dollars(),
        b.total_dollars(),
        (b.total_dollars() - a.total_dollars()) / a.total_dollars() * 100.0
    );

    let m = &measured[1];
    let month = m.month();
    println!();
    println!("a month of {} users (from the {large}-user sample):", cost::MONTH_USERS);
    cost::print_month(&month);
    println!();
    cost::print_phases(m);
    println!();
    println!("AWS calls per user-month, the most frequent:");
    let per_user = month.scaled(1.0 / cost::MONTH_USERS);
    let mut calls: Vec<(&String, &f64)> =
        per_user.0.iter().filter(|(k, _)| k.starts_with("calls/")).collect();
    calls.sort_by(|x, y| y.1.total_cmp(x.1));
    for (k, v) in calls.into_iter().take(12) {
        println!("  {:>10.1}  {}", v, k.trim_start_matches("calls/"));
    }
    Ok(())
}
