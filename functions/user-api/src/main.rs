//! The user-api Lambda: the users router on the AWS adapters, with the pull queue
//! (`WEARLAB_PULL_QUEUE_URL`) for on-demand historical pulls.

use std::sync::Arc;

use wearlab_domain::ports::QueueName;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, settings, phone_key) = wearlab_aws::deps_with_phone_key_from_env(|var| {
        wearlab_providers::from_vars(wearlab_sim::providers(), var)
    })
    .await?;
    let queue = wearlab_aws::sqs_queue_from_env(&[QueueName::Pull], deps.clock.clone()).await?;
    // The phone's per-user tokens open the user's connections.
    let state = wearlab_web::AppState::new(deps, settings).with_phone_key(phone_key);
    let app = user_api::app(state, Arc::new(queue));
    lambda_http::run(app).await
}
