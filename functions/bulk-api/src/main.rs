//! The bulk-api Lambda: the bulk operations router on the AWS adapters, with the bulk and pull
//! queue (`WEARLAB_BULK_QUEUE_URL`).

use std::sync::Arc;

use wearlab_domain::ports::QueueName;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, settings) =
        wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var)).await?;
    let queue = wearlab_aws::sqs_queue_from_env(&[QueueName::Bulk], deps.clock.clone()).await?;
    let app = bulk_api::app(wearlab_web::AppState::new(deps, settings), Arc::new(queue));
    lambda_http::run(app).await
}
