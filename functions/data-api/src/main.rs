//! The data-api Lambda: the summary and timeseries router on the AWS adapters.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, settings, phone_key) = wearlab_aws::deps_with_phone_key_from_env(|var| {
        wearlab_providers::from_vars(wearlab_sim::providers(), var)
    })
    .await?;
    // The phone's per-user tokens read the user's own data.
    let app = data_api::app(wearlab_web::AppState::new(deps, settings).with_phone_key(phone_key));
    lambda_http::run(app).await
}
