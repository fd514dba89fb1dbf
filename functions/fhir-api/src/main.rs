//! The fhir-api Lambda: the FHIR R4 router on the AWS adapters.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    wearlab_telemetry::init_tracing();
    let (deps, settings) =
        wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var)).await?;
    let app = fhir_api::app(wearlab_web::AppState::new(deps, settings));
    lambda_http::run(app).await
}
