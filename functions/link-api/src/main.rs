//! The link-api Lambda: its router on the AWS adapters. Providers are real where the operator
//! configured their OAuth app (`wearlab_providers::from_vars`, its secrets read from SSM by
//! `wearlab_aws::deps_from_env`); the others can be linked to the simulator, whose consent page
//! is then served here, only when the template's `SimulatedProviders` parameter says so
//! (`WEARLAB_SIMULATED_PROVIDERS`).

use std::sync::Arc;

use wearlab_domain::ports::QueueName;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, settings) =
        wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var)).await?;
    // A provider's push notification queues polls on the pull queue.
    let queue = Arc::new(wearlab_aws::sqs_queue_from_env(&[QueueName::Pull], deps.clock.clone()).await?);
    let simulated = wearlab_providers::simulated_links(|k| std::env::var(k).ok())?;
    let app = link_api::app(wearlab_web::AppState::new(deps, settings), queue, simulated);
    lambda_http::run(app).await
}
