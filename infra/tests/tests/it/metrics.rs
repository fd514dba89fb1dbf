//! Metrics of pulls, webhook deliveries and bulk progress leave as CloudWatch Embedded Metric
//! Format lines: one JSON document per metric set, valid EMF, with the values the use case saw.

use std::sync::{Arc, Mutex};

use http::StatusCode;
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;
use wearlab_domain::common::metrics::{self, Delivery};
use wearlab_telemetry::{EmfLayer, METRICS_TARGET, NAMESPACE};

use crate::helpers::TestApp;

/// What the layer wrote, shared with the test.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink {
    /// The lines written so far, each checked to be one valid EMF document.
    fn documents(&self) -> Vec<Value> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        assert!(text.is_empty() || text.ends_with('\n'), "whole lines");
        text.lines().map(|l| valid_emf(serde_json::from_str(l).expect("one JSON document a line"))).collect()
    }
}

/// A subscriber with only the EMF layer, writing into the returned sink.
fn capture() -> (tracing::subscriber::DefaultGuard, Sink) {
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::registry().with(EmfLayer::new(move || writer.clone()));
    (tracing::subscriber::set_default(subscriber), sink)
}

/// The EMF specification's rules for a document: `_aws` with an integer `Timestamp` and
/// `CloudWatchMetrics` directives, each with a namespace, dimension sets whose names are
/// top-level strings, and metrics whose names are top-level numbers, with a CloudWatch unit.
fn valid_emf(doc: Value) -> Value {
    let aws = &doc["_aws"];
    assert!(aws["Timestamp"].is_u64(), "Timestamp in epoch ms: {doc}");
    let directives = aws["CloudWatchMetrics"].as_array().expect("CloudWatchMetrics");
    assert!(!directives.is_empty());
    for d in directives {
        assert!(d["Namespace"].as_str().is_some_and(|n| !n.is_empty() && n.len() <= 255), "{doc}");
        for set in d["Dimensions"].as_array().expect("Dimensions") {
            let set = set.as_array().expect("a dimension set is an array");
            assert!(set.len() <= 30, "{doc}");
            for name in set {
                assert!(
                    doc[name.as_str().unwrap()].is_string(),
                    "dimension {name} is a top-level string: {doc}"
                );
            }
        }
        let list = d["Metrics"].as_array().expect("Metrics");
        assert!(!list.is_empty() && list.len() <= 100, "{doc}");
        for m in list {
            let name = m["Name"].as_str().expect("Name");
            assert!(doc[name].is_number(), "metric {name} is a top-level number: {doc}");
            assert!(["Count", "Milliseconds"].contains(&m["Unit"].as_str().unwrap()), "{doc}");
        }
    }
    doc
}

/// The metric set of a document: dimensions set, then each metric's (name, unit, value).
fn set(doc: &Value) -> (Value, Vec<(String, String, f64)>) {
    let d = &doc["_aws"]["CloudWatchMetrics"][0];
    let metrics = d["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let name = m["Name"].as_str().unwrap().to_owned();
            (name.clone(), m["Unit"].as_str().unwrap().to_owned(), doc[&name].as_f64().unwrap())
        })
        .collect();
    (d["Dimensions"].clone(), metrics)
}

fn m(name: &str, unit: &str, value: f64) -> (String, String, f64) {
    (name.into(), unit.into(), value)
}

#[test]
fn every_fact_is_one_valid_emf_line() {
    assert_eq!(METRICS_TARGET, metrics::TARGET, "the layer listens where the domain reports");
    let (_guard, sink) = capture();
    metrics::pull_records_stored("fitbit", 12);
    metrics::pull_handled("fitbit", 250, false);
    metrics::webhook_attempt(Delivery::DeadLettered, 8);
    metrics::bulk_progress("import", 16, 2, true);
    // An ordinary log line is not a metric.
    tracing::info!(user_id = "u", "not a metric");

    let docs = sink.documents();
    assert_eq!(docs.len(), 4);
    assert!(docs.iter().all(|d| d["_aws"]["CloudWatchMetrics"][0]["Namespace"] == NAMESPACE));
    assert_eq!(set(&docs[0]), (json!([["Provider"]]), vec![m("RecordsStored", "Count", 12.0)]));
    assert_eq!(docs[0]["Provider"], "fitbit");
    assert_eq!(
        set(&docs[1]),
        (
            json!([["Provider"]]),
            vec![m("PullDuration", "Milliseconds", 250.0), m("PullFailures", "Count", 0.0)]
        )
    );
    assert_eq!(
        set(&docs[2]),
        (
            json!([[]]),
            vec![
                m("WebhookDelivered", "Count", 0.0),
                m("WebhookFailed", "Count", 1.0),
                m("WebhookDeadLettered", "Count", 1.0),
                m("WebhookAttempts", "Count", 8.0),
            ]
        )
    );
    assert_eq!(
        set(&docs[3]),
        (
            json!([["OpType"]]),
            vec![
                m("BulkItemsProcessed", "Count", 16.0),
                m("BulkItemsFailed", "Count", 2.0),
                m("BulkOperationsEnded", "Count", 1.0),
            ]
        )
    );
    assert_eq!(docs[3]["OpType"], "import");
}

/// A historical pull on the embedded stack reports what it stored and how it went.
#[tokio::test]
async fn a_historical_pull_reports_records_stored_and_its_outcome() {
    let t = TestApp::embedded().await;
    let (_guard, sink) = capture();
    let user = t.create_user("metered").await;
    let a = t.post("/v2/link/connect/demo", json!({"user_id": user, "provider": "oura"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let stack = t.stack.as_ref().unwrap();
    for _ in 0..50 {
        if stack.run_pulls_once().await.unwrap() == 0 {
            break;
        }
    }
    let docs = sink.documents();
    let stored: f64 =
        docs.iter().filter(|d| d["Provider"] == "oura").filter_map(|d| d["RecordsStored"].as_f64()).sum();
    assert!(stored > 0.0, "records stored: {docs:?}");
    let handled: Vec<&Value> = docs.iter().filter(|d| d.get("PullDuration").is_some()).collect();
    assert!(!handled.is_empty(), "{docs:?}");
    assert!(handled.iter().all(|d| d["PullFailures"] == 0.0 && d["Provider"] == "oura"), "{docs:?}");
}
