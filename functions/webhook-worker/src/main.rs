//! The webhook-worker Lambda: SQS batches with partial batch responses.

use std::sync::Arc;

use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::{LambdaEvent, service_fn};
use wearlab_domain::ports::QueueName;
use wearlab_domain::webhooks::WebhookPorts;
use wearlab_domain::webhooks::url::UrlPolicy;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, settings) =
        wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var)).await?;
    let queue = Arc::new(wearlab_aws::sqs_queue_from_env(&[QueueName::Webhook], deps.clock.clone()).await?);
    let sender =
        wearlab_http::HttpSender::new(UrlPolicy::Production).with_in_flight(settings.webhook_in_flight);
    lambda_runtime::run(service_fn(|event: LambdaEvent<SqsEvent>| {
        let (deps, queue) = (&deps, &queue);
        let ports = WebhookPorts { queue: queue.as_ref(), sender: &sender };
        async move {
            let response =
                wearlab_aws::handle_sqs_batch(queue, QueueName::Webhook, event.payload, |env, _| {
                    webhook_worker::handle(deps, ports, env)
                })
                .await;
            Ok::<_, lambda_runtime::Error>(response)
        }
    }))
    .await
}
