//! The phone's timeseries uploads on the local stack (a redb file): 90 days of one-minute heart
//! rate from an Apple Watch (129,600 samples) posted as the iOS SDK's historical stage does, in
//! chunks of CHUNK samples (`health_kit_params.query_chunk_sizes_background.timeseries` 2,500,
//! foreground 10,000: `tryVital/vital-ios` `Sources/VitalHealthKit/HealthKit/Models/LocalSyncState.swift`),
//! each sample in the shape `LocalQuantitySample(_:unit:)` builds
//! (`Sources/VitalHealthKit/HealthKit/Models/CoreModels+Extensions.swift`), then the same chunks
//! again (the SDK's resend). Requests go through the app (`POST /v2/timeseries/{user_id}/heartrate`).
//!
//! Prints samples per second for the first pass and the resend, and the peak RSS. The bodies
//! are written (as JSON text, uncompressed) before the clock starts.
//!
//! Usage: phone-ingest [CHUNK=2500]. Every loop is bounded.

use std::time::Instant;

use axum::body::{Body, Bytes};
use http::Request;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;
use wearlab_bench::{API_KEY_HEADER, rss_mib};
use wearlab_local::LocalStack;

const SAMPLES: i64 = 90 * 24 * 60;

/// Sample `m` (minutes from the window's start) as iOS writes it.
fn sample(start: chrono::DateTime<chrono::Utc>, m: i64) -> Value {
    let at = (start + chrono::Duration::minutes(m)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    json!({
        "value": 55 + m % 40, "start_date": at, "end_date": at,
        "source_bundle": "com.apple.health.8C1F2A53-9B0E-4C1D-A6B2-3E7F5D9C0A11",
        "product_type": "Watch7,1", "unit": "bpm",
        "metadata": {"_DMO": "Watch", "_DMA": "Apple Inc.", "_DHV": "Watch7,1", "_DSV": "11.1"}
    })
}

/// The chunks' bodies as JSON text, built one chunk at a time.
fn chunks(chunk: usize) -> Vec<Bytes> {
    let start = chrono::DateTime::parse_from_rfc3339("2026-08-22T00:00:00Z").expect("a time").to_utc();
    let count = (SAMPLES as usize).div_ceil(chunk);
    (0..count)
        .map(|i| {
            let from = (i * chunk) as i64;
            let data: Vec<Value> = (from..(from + chunk as i64).min(SAMPLES)).map(|m| sample(start, m)).collect();
            let body = json!({
                "stage": "historical", "start_date": "2026-08-22T00:00:00Z", "end_date": "2026-11-20T00:00:00Z",
                "time_zone": "Europe/Berlin", "provider": "apple_health_kit", "data": data,
                "is_final_chunk": i + 1 == count
            });
            Bytes::from(body.to_string())
        })
        .collect()
}

#[tokio::main]
async fn main() {
    let chunk: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_500);
    // Removed when dropped, after the stack (declared later, dropped first).
    let dir = wearlab_bench::ScratchDir::new("wearlab-phone-bench");
    let stack = LocalStack::open(dir.path()).expect("stack opens");
    let key = stack.ensure_team_key(None).await.expect("team");
    let app = stack.app(stack.state());
    let user =
        wearlab_bench::call_json(&app, &key, "POST", "/v2/user", json!({"client_user_id": "phone-bench"}))
            .await;
    let user_id = user["user_id"].as_str().expect("user id").to_uppercase();
    let bodies = chunks(chunk.max(1));
    let before = rss_mib("VmHWM:");
    let path = format!("/v2/timeseries/{user_id}/heartrate");
    for pass in ["first", "resend"] {
        let started = Instant::now();
        let mut stored = 0u64;
        for body in &bodies {
            let req = Request::post(path.as_str())
                .header(API_KEY_HEADER, key.as_str())
                .header("content-type", "application/json")
                .body(Body::from(body.clone()))
                .expect("request builds");
            let res = app.clone().oneshot(req).await.expect("router answers");
            assert!(res.status().is_success(), "{}", res.status());
            let bytes = res.into_body().collect().await.expect("body").to_bytes();
            let done: Value = serde_json::from_slice(&bytes).expect("the answer");
            stored += done["created"].as_u64().unwrap_or(0) + done["updated"].as_u64().unwrap_or(0);
        }
        let took = started.elapsed().as_secs_f64();
        println!(
            "{pass} pass: {SAMPLES} samples in {} chunks of {chunk} in {took:.2} s: {:.0} samples/s ({stored} days created or changed)",
            bodies.len(),
            SAMPLES as f64 / took
        );
    }
    let peak = rss_mib("VmHWM:");
    println!("peak RSS {peak:.1} MiB (bodies built: {before:.1} MiB)");
    drop(stack);
}
