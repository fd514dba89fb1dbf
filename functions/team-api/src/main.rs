//! The team-api Lambda: the team's settings and audit log on the AWS adapters. It queues no
//! work: none of its use cases sends to a queue.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, settings) =
        wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var)).await?;
    lambda_http::run(team_api::app(wearlab_web::AppState::new(deps, settings))).await
}
