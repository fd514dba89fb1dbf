//! The lab-api Lambda: its router on the AWS adapters and the simulated lab network.

use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, settings) =
        wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var)).await?;
    let app = lab_api::app(wearlab_web::AppState::new(deps, settings), Arc::new(wearlab_sim::SimulatedLab));
    lambda_http::run(app).await
}
