//! The erasure-worker Lambda on the AWS adapters.

use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    wearlab_telemetry::init_tracing();
    let deps = wearlab_aws::deps_from_env(wearlab_providers::from_env(wearlab_sim::providers())).await?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| {
        let deps = deps.clone();
        async move { erasure_worker::handle(&deps, event.payload).await.map_err(lambda_runtime::Error::from) }
    }))
    .await
}
