//! The bulk-worker Lambda: SQS batches of the bulk queue and of its dead-letter queue
//! (`WEARLAB_BULK_DLQ_ARN`), with partial batch responses.

use std::sync::Arc;

use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::{LambdaEvent, service_fn};
use wearlab_domain::ports::QueueName;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, _settings) =
        wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var)).await?;
    let queue = Arc::new(
        wearlab_aws::sqs_queue_from_env(&[QueueName::Bulk, QueueName::Pull], deps.clock.clone()).await?,
    );
    let dead_letter_arn = Some(wearlab_aws::required_var("WEARLAB_BULK_DLQ_ARN")?);
    lambda_runtime::run(service_fn(|event: LambdaEvent<SqsEvent>| {
        let (deps, queue, dlq) = (&deps, &queue, dead_letter_arn.as_deref());
        async move {
            let from_dlq = bulk_worker::from_dead_letter_queue(&event.payload, dlq);
            let response = if from_dlq {
                wearlab_aws::handle_sqs_batch(queue, QueueName::Bulk, event.payload, |env, _| {
                    bulk_worker::handle_dead_letter(deps, env)
                })
                .await
            } else {
                wearlab_aws::handle_sqs_batch(queue, QueueName::Bulk, event.payload, |env, _| {
                    bulk_worker::handle(deps, queue.as_ref(), env)
                })
                .await
            };
            Ok::<_, lambda_runtime::Error>(response)
        }
    }))
    .await
}
