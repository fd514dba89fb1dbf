//! Telemetry set up once per process: every function and the local stack call
//! `init_tracing` first. A crate of its own so that workers need not link the web stack for it.

/// Structured JSON logs to stdout (CloudWatch picks them up on Lambda). `RUST_LOG` filters.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .without_time()
        .try_init();
}
