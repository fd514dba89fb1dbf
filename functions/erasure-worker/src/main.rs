//! The erasure-worker Lambda on the AWS adapters.

use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, _settings) =
        wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var)).await?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| {
        let deps = deps.clone();
        async move { erasure_worker::handle(&deps, event.payload).await.map_err(lambda_runtime::Error::from) }
    }))
    .await
}
