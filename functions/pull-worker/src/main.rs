//! The pull-worker Lambda: SQS batches with partial batch responses; "retry after" (a
//! throttle's exact wait) re-sends the message for later.

use std::sync::Arc;

use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::{LambdaEvent, service_fn};
use wearlab_domain::ports::QueueName;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, _settings) =
        wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var)).await?;
    let queue = Arc::new(wearlab_aws::sqs_queue_from_env(&[QueueName::Pull], deps.clock.clone()).await?);
    lambda_runtime::run(service_fn(|event: LambdaEvent<SqsEvent>| {
        let (deps, queue) = (&deps, &queue);
        async move {
            let response = wearlab_aws::handle_sqs_batch(queue, QueueName::Pull, event.payload, |env, _| {
                pull_worker::handle(deps, queue.as_ref(), env)
            })
            .await;
            Ok::<_, lambda_runtime::Error>(response)
        }
    }))
    .await
}
