//! In-process latency of create user and get user: the whole router (auth with a warm key
//! cache, extraction, use case, JSON answer) called with `oneshot` on redb in memory.
//!
//! `cargo bench -p wearlab-bench --bench users`. Criterion prints the mean; the median is in
//! `target/criterion/<id>/new/estimates.json`; `inproc-latency` prints p99.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use wearlab_bench::InProc;

fn users(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let p = rt.block_on(InProc::new(true));
    let mut group = c.benchmark_group("users");
    // Only the request is timed, not building it.
    group.bench_function("get_user", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let p = &p;
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += p.timed(p.get_user_request()).await;
                }
                total
            }
        })
    });
    // Every iteration creates a new user, so the table grows during the run.
    group.bench_function("create_user", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let p = &p;
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += p.timed(p.create_user_request()).await;
                }
                total
            }
        })
    });
    group.finish();
}

criterion_group!(benches, users);
criterion_main!(benches);
