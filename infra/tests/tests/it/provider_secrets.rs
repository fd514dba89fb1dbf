//! The providers' secrets on a deployment: SSM SecureStrings under `WEARLAB_PROVIDER_SECRETS_PATH`,
//! read once at init (`wearlab_aws::ProviderVars`) and handed to the one parser of provider
//! configuration (`wearlab_providers::from_vars`); on moto.

use aws_sdk_ssm::types::ParameterType;
use wearlab_aws::{LazySdkConfig, PROVIDER_SECRETS_PATH_VAR, ProviderVars};
use wearlab_models::ProviderAvailability;

use crate::helpers::moto_endpoint;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[tokio::test]
async fn a_provider_is_live_with_its_secret_read_from_an_ssm_secure_string() {
    let config = wearlab_aws::config_for_endpoint(&moto_endpoint()).await;
    let ssm = aws_sdk_ssm::Client::new(&config);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let path = format!("/wearlab-test-{nanos}/providers");
    for (name, value) in [
        ("oura/client_secret", "oura-secret-value"),
        ("strava/push_token", "strava-verify"),
        ("suunto/subscription_key", "suunto-key-value"),
    ] {
        ssm.put_parameter()
            .name(format!("{path}/{name}"))
            .value(value)
            .r#type(ParameterType::SecureString)
            .send()
            .await
            .unwrap();
    }
    let lazy = LazySdkConfig::given(config.clone());
    let deployed = env(&[
        (PROVIDER_SECRETS_PATH_VAR, &path),
        ("WEARLAB_PROVIDER_OURA_CLIENT_ID", "oura-id"),
        ("WEARLAB_PROVIDER_STRAVA_ENABLED", "true"),
    ]);
    let vars = ProviderVars::load(&lazy, deployed.clone()).await.unwrap();
    assert_eq!(vars.get("WEARLAB_PROVIDER_OURA_CLIENT_SECRET").as_deref(), Some("oura-secret-value"));
    assert_eq!(vars.get("WEARLAB_PROVIDER_STRAVA_PUSH_TOKEN").as_deref(), Some("strava-verify"));
    assert_eq!(vars.get("WEARLAB_PROVIDER_POLAR_PUSH_TOKEN"), None);
    assert_eq!(vars.get("WEARLAB_PROVIDER_SUUNTO_SUBSCRIPTION_KEY").as_deref(), Some("suunto-key-value"));
    assert!(!format!("{vars:?}").contains("oura-secret-value"), "{vars:?}");
    let providers = wearlab_providers::from_vars(wearlab_sim::providers(), |k| vars.get(k));
    assert_eq!(providers.availability("oura"), ProviderAvailability::Live);
    let client = providers.platform_oauth_client("oura").unwrap();
    assert_eq!((client.client_id.as_str(), client.client_secret.expose()), ("oura-id", "oura-secret-value"));
    assert_eq!(providers.availability("polar"), ProviderAvailability::DemoOnly);

    // A client id whose secret is missing stops the function, naming the parameter.
    let mut polar = deployed.clone();
    polar.push(("WEARLAB_PROVIDER_POLAR_CLIENT_ID".into(), "polar-id".into()));
    let err = ProviderVars::load(&lazy, polar).await.unwrap_err();
    assert!(err.contains(&format!("{path}/polar/client_secret")), "{err}");

    // A secret left in the environment of a deployment stops it too, naming the variable only.
    let mut leaked = deployed.clone();
    leaked.push(("WEARLAB_PROVIDER_OURA_PUSH_TOKEN".into(), "leaked-token".into()));
    let err = ProviderVars::load(&lazy, leaked).await.unwrap_err();
    assert!(err.contains("WEARLAB_PROVIDER_OURA_PUSH_TOKEN") && !err.contains("leaked-token"), "{err}");

    // Anything else under the path is refused by name, never by value.
    ssm.put_parameter()
        .name(format!("{path}/oura/client_id"))
        .value("misplaced-value")
        .r#type(ParameterType::SecureString)
        .send()
        .await
        .unwrap();
    let err = ProviderVars::load(&lazy, deployed).await.unwrap_err();
    assert!(err.contains(&format!("{path}/oura/client_id")) && !err.contains("misplaced-value"), "{err}");
}
