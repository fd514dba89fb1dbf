//! Metrics as CloudWatch Embedded Metric Format: each metric event (`tracing` target
//! [`METRICS_TARGET`], reported by `wearlab_domain::common::metrics`) becomes one JSON line on stdout
//! whose `_aws` member tells CloudWatch Logs to extract the metrics, so no metrics API call and
//! no agent is needed. String fields are dimensions, numeric fields values; a field ending in
//! `_ms` is in milliseconds, any other a count. Names are CamelCased (`records_stored` becomes
//! `RecordsStored`, `pull_duration_ms` becomes `PullDuration`).

use std::io::Write;

use serde_json::{Map, Value, json};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, Layer};

/// The `tracing` target of metric events; the same string as `wearlab_domain::common::metrics::TARGET`
/// (this crate does not depend on the domain; the integration test of metrics checks both).
pub const METRICS_TARGET: &str = "wearlab_metrics";

/// The CloudWatch namespace of every Wearlab metric.
pub const NAMESPACE: &str = "Wearlab";

/// Writes every metric event as one EMF line to `writer` (stdout in the functions).
pub struct EmfLayer<W> {
    writer: W,
}

impl<W> EmfLayer<W> {
    pub fn new(writer: W) -> Self {
        Self { writer }
    }
}

impl<S, W> Layer<S> for EmfLayer<W>
where
    S: Subscriber,
    W: for<'a> MakeWriter<'a> + 'static,
{
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != METRICS_TARGET {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let mut line = emf_line(now.as_millis() as u64, &fields.dimensions, &fields.values).to_string();
        line.push('\n');
        // One write per line, so lines of concurrent requests do not interleave.
        let _ = self.writer.make_writer().write_all(line.as_bytes());
    }
}

/// A metric's value and unit.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricValue {
    pub name: String,
    pub value: f64,
    pub unit: &'static str,
}

#[derive(Default)]
struct Fields {
    dimensions: Vec<(String, String)>,
    values: Vec<MetricValue>,
}

impl Fields {
    fn number(&mut self, field: &Field, value: f64) {
        let (name, unit) = match field.name().strip_suffix("_ms") {
            Some(base) => (base, "Milliseconds"),
            None => (field.name(), "Count"),
        };
        self.values.push(MetricValue { name: camel(name), value, unit });
    }
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.number(field, value as f64);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.number(field, value as f64);
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.number(field, value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.dimensions.push((camel(field.name()), value.to_owned()));
    }

    // The event's message, if any, is no dimension; other values are not metric fields.
    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

/// `records_stored` → `RecordsStored`.
fn camel(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

/// One EMF document: the metrics with one dimension set (all the dimensions given).
pub fn emf_line(timestamp_ms: u64, dimensions: &[(String, String)], values: &[MetricValue]) -> Value {
    let mut doc = Map::new();
    doc.insert(
        "_aws".into(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [dimensions.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>()],
                "Metrics": values.iter().map(|v| json!({"Name": v.name, "Unit": v.unit})).collect::<Vec<_>>(),
            }],
        }),
    );
    for (k, v) in dimensions {
        doc.insert(k.clone(), Value::String(v.clone()));
    }
    for v in values {
        doc.insert(v.name.clone(), json!(v.value));
    }
    Value::Object(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_camel_cased() {
        assert_eq!(camel("records_stored"), "RecordsStored");
        assert_eq!(camel("provider"), "Provider");
    }
}
