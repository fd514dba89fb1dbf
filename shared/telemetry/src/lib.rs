//! Telemetry set up once per process: every function and the local stack call
//! `init_tracing` first. A crate of its own so that workers need not link the web stack for it.

mod emf;

pub use emf::{EmfLayer, METRICS_TARGET, MetricValue, NAMESPACE, emf_line};

use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Structured JSON logs to stdout (CloudWatch picks them up on Lambda). `RUST_LOG` filters.
/// Metric events go out as CloudWatch EMF lines instead (see [`EmfLayer`]), whatever `RUST_LOG`
/// says: they are not log lines.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt::layer()
        .json()
        .with_current_span(false)
        .without_time()
        .with_filter(filter_fn(|m| m.target() != METRICS_TARGET))
        .with_filter(filter);
    let metrics = EmfLayer::new(std::io::stdout).with_filter(filter_fn(|m| m.target() == METRICS_TARGET));
    let _ = tracing_subscriber::registry().with(logs).with(metrics).try_init();
}
