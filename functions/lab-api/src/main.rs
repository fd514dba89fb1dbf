//! The lab-api Lambda: its router on the AWS adapters and the simulated lab network.

use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    wearlab_telemetry::init_tracing();
    let deps = wearlab_aws::deps_from_env(wearlab_providers::from_env(wearlab_sim::providers())).await?;
    let network = Arc::new(wearlab_sim::SimulatedLab);
    let app = lab_api::app_with(wearlab_web::AppState::new(deps), network);
    lambda_http::run(app).await
}
