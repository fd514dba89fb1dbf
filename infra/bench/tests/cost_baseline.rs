//! The cost model in small (`docs/PERFORMANCE.md`, "What a month costs"): one user driven
//! through the scripted month on moto, its figures per user-month compared with the committed
//! `infra/bench/cost-baseline.json`. A change that more than doubles what a user costs on one
//! line (DynamoDB read or write units, stored bytes, SQS requests, EventBridge events, Scheduler
//! invocations, API Gateway requests, Lambda invocations) fails here. Lambda GB-seconds are
//! measured durations (debug build, a shared machine) and are compared by `scripts/bench cost`
//! only.
//!
//! Refresh the baseline after a change that is meant to cost more (or less), and say why in
//! the commit: `COST_BASELINE_WRITE=1 scripts/with-moto cargo nextest run -p wearlab-bench
//! -E 'test(cost)'`.

use wearlab_bench::cost::{self, Sample, Usage};

const BASELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/cost-baseline.json");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cost_line_per_user_doubles_against_the_baseline() {
    let endpoint = std::env::var("WEARLAB_TEST_AWS_ENDPOINT")
        .expect("WEARLAB_TEST_AWS_ENDPOINT is not set: run under scripts/with-moto (make test does)");
    let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml"))
        .expect("the SAM template");
    let sample = Sample { users: 1, days: 1, reads: 5, minute_runs: 2 };
    let measured = cost::measure(&endpoint, &template, &sample, |_| {}).await.expect("the month runs");
    let now = measured.per_user_month().priced();
    assert!(
        now.get(cost::line::API) > 0.0 && now.get(cost::line::DDB_WRITE) > 0.0,
        "nothing counted: {now:?}"
    );
    if std::env::var_os("COST_BASELINE_WRITE").is_some() {
        let text = serde_json::to_string_pretty(&now).expect("serializes") + "\n";
        std::fs::write(BASELINE, text).expect("baseline written");
        return;
    }
    let baseline: Usage =
        serde_json::from_str(&std::fs::read_to_string(BASELINE).expect("the committed baseline"))
            .expect("the baseline parses");
    let doubled = cost::doubled(&baseline, &now);
    assert!(
        doubled.is_empty(),
        "cost lines per user-month more than doubled (refresh the baseline only if that is meant, see this \
         file's header):\n{}",
        doubled.join("\n")
    );
}
