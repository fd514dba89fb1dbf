//! The minute-worker Lambda on the AWS adapters and the simulated lab network.

use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, settings) =
        wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var)).await?;
    let public_url = settings.public_url;
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| {
        let (deps, public_url) = (deps.clone(), public_url.clone());
        async move {
            minute_worker::handle(&deps, &wearlab_sim::SimulatedLab, public_url.as_deref())
                .await
                .map_err(lambda_runtime::Error::from)
        }
    }))
    .await
}
