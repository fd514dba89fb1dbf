//! The link-api Lambda: its router on the AWS adapters. Providers are the simulator until real
//! provider adapters exist, so its consent page is served here too.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    wearlab_telemetry::init_tracing();
    let deps = wearlab_aws::deps_from_env(wearlab_sim::providers()).await?;
    let routes = link_api::routes().merge(wearlab_web::Routes::from(wearlab_sim::routes()));
    let app = wearlab_web::app(routes, wearlab_web::AppState::new(deps));
    lambda_http::run(app).await
}
