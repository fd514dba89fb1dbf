//! The sweep-worker Lambda on the AWS adapters and the simulated lab network.

use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;
use wearlab_sim::SimulatedLab;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    wearlab_telemetry::init_tracing();
    let deps = wearlab_aws::deps_from_env(wearlab_providers::from_env(wearlab_sim::providers())).await?;
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| {
        let deps = deps.clone();
        async move { sweep_worker::handle(&deps, &SimulatedLab).await.map_err(lambda_runtime::Error::from) }
    }))
    .await
}
