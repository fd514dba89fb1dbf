//! Building the AWS adapters from the environment (Lambda, `make watch`) or for an emulator.

use std::sync::Arc;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use wearlab_domain::Deps;
use wearlab_domain::common::settings::Settings;
use wearlab_domain::ports::{Providers, QueueName, SystemClock};

use crate::{
    DynamoDbTable, EventBridgeBus, EventBridgeScheduler, LazySdkConfig, ProviderVars, SchedulerTarget,
};

/// The SDK's default chain: region, credentials and endpoint from the environment. The SDK
/// itself honours `AWS_ENDPOINT_URL` (and `AWS_ENDPOINT_URL_DYNAMODB`, `..._SCHEDULER`), which
/// is how the local stack points the same code at an emulator.
pub async fn aws_config_from_env() -> SdkConfig {
    aws_config::load_defaults(BehaviorVersion::latest()).await
}

/// Clients for an emulator such as moto: fixed region and dummy credentials, so nothing from
/// the developer's real AWS profile can leak into (or be used by) tests.
pub async fn clients_for_endpoint(endpoint: &str) -> (aws_sdk_dynamodb::Client, aws_sdk_scheduler::Client) {
    let config = config_for_endpoint(endpoint).await;
    (aws_sdk_dynamodb::Client::new(&config), aws_sdk_scheduler::Client::new(&config))
}

/// Names of the deployed resources, from `WEARLAB_*` variables set by the infrastructure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsEnv {
    pub table_name: String,
    pub schedule_group: String,
    pub erasure_target_arn: String,
    pub scheduler_role_arn: String,
    pub event_bus_name: String,
    /// Where the 32-byte key that seals secrets at rest comes from.
    pub data_key: DataKeySource,
}

/// The data key as the deployment gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataKeySource {
    /// `WEARLAB_DATA_KEY`: the key itself, base64 (local runs against an emulator, benches).
    Plain(String),
    /// `WEARLAB_DATA_KEY_PARAMETER`: the name of an SSM SecureString holding the base64 key,
    /// read once at init. What the template deploys: the key is never an environment variable
    /// of a function, where `lambda:GetFunctionConfiguration` would show it.
    Ssm(String),
}

/// The variable naming the SSM parameter that holds the data key.
pub const DATA_KEY_PARAMETER_VAR: &str = "WEARLAB_DATA_KEY_PARAMETER";

impl DataKeySource {
    /// `WEARLAB_DATA_KEY` when set, else the (then required) `WEARLAB_DATA_KEY_PARAMETER`.
    pub fn from_env() -> Result<Self, String> {
        match required_var("WEARLAB_DATA_KEY") {
            Ok(key) => Ok(Self::Plain(key)),
            Err(_) => Ok(Self::Ssm(required_var(DATA_KEY_PARAMETER_VAR)?)),
        }
    }

    /// The key; for an SSM parameter, one `GetParameter` with decryption on `config`. The error
    /// names the source, never the value.
    pub async fn load(
        &self,
        config: &LazySdkConfig,
    ) -> Result<wearlab_domain::common::crypto::DataKey, String> {
        let (encoded, source) = match self {
            Self::Plain(key) => (key.clone(), "WEARLAB_DATA_KEY".to_owned()),
            Self::Ssm(name) => (read_secure_parameter(config, name).await?, format!("SSM parameter {name}")),
        };
        wearlab_domain::common::crypto::DataKey::from_base64(encoded.trim())
            .map_err(|e| format!("{source}: {e}"))
    }
}

/// The variable holding the phone tokens' signing key itself (base64 PKCS#8 DER of an RSA 2048
/// key): local runs against an emulator, benches.
pub const PHONE_SIGNING_KEY_VAR: &str = "WEARLAB_PHONE_SIGNING_KEY";
/// The variable naming the SSM SecureString that holds the phone tokens' signing key.
pub const PHONE_SIGNING_KEY_PARAMETER_VAR: &str = "WEARLAB_PHONE_SIGNING_KEY_PARAMETER";

/// The phone tokens' signing key as the deployment gives it: `WEARLAB_PHONE_SIGNING_KEY` when
/// set, else the SSM SecureString `WEARLAB_PHONE_SIGNING_KEY_PARAMETER` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhoneKeySource {
    Plain(String),
    Ssm(String),
}

impl PhoneKeySource {
    pub fn from_env() -> Result<Self, String> {
        match required_var(PHONE_SIGNING_KEY_VAR) {
            Ok(key) => Ok(Self::Plain(key)),
            Err(_) => Ok(Self::Ssm(required_var(PHONE_SIGNING_KEY_PARAMETER_VAR)?)),
        }
    }
}

/// The data key and the phone tokens' signing key, the SSM parameters among them read in one
/// `GetParameters` (one round trip at a cold start). Errors name the source, never a value.
pub async fn load_data_and_phone_keys(
    data: &DataKeySource,
    phone: &PhoneKeySource,
    config: &LazySdkConfig,
) -> Result<(wearlab_domain::common::crypto::DataKey, wearlab_domain::common::crypto::SigningKey), String> {
    let names: Vec<String> = [
        match data {
            DataKeySource::Ssm(n) => Some(n.clone()),
            DataKeySource::Plain(_) => None,
        },
        match phone {
            PhoneKeySource::Ssm(n) => Some(n.clone()),
            PhoneKeySource::Plain(_) => None,
        },
    ]
    .into_iter()
    .flatten()
    .collect();
    let fetched =
        if names.is_empty() { Default::default() } else { read_secure_parameters(config, &names).await? };
    let value =
        |name: &str| fetched.get(name).cloned().ok_or_else(|| format!("SSM parameter {name} has no value"));
    let (data_text, data_source) = match data {
        DataKeySource::Plain(k) => (k.clone(), "WEARLAB_DATA_KEY".to_owned()),
        DataKeySource::Ssm(n) => (value(n)?, format!("SSM parameter {n}")),
    };
    let (phone_text, phone_source) = match phone {
        PhoneKeySource::Plain(k) => (k.clone(), PHONE_SIGNING_KEY_VAR.to_owned()),
        PhoneKeySource::Ssm(n) => (value(n)?, format!("SSM parameter {n}")),
    };
    let data_key = wearlab_domain::common::crypto::DataKey::from_base64(data_text.trim())
        .map_err(|e| format!("{data_source}: {e}"))?;
    let phone_key = wearlab_domain::common::crypto::SigningKey::from_base64(phone_text.trim())
        .map_err(|e| format!("{phone_source}: {e}"))?;
    Ok((data_key, phone_key))
}

/// The decrypted values of SSM SecureStrings, by name, in one `GetParameters` (at most 10).
async fn read_secure_parameters(
    config: &LazySdkConfig,
    names: &[String],
) -> Result<std::collections::HashMap<String, String>, String> {
    let client = aws_sdk_ssm::Client::new(config.get().await);
    let out =
        client.get_parameters().set_names(Some(names.to_vec())).with_decryption(true).send().await.map_err(
            |e| format!("SSM parameters {names:?}: {}", aws_sdk_ssm::error::DisplayErrorContext(&e)),
        )?;
    if let Some(missing) = out.invalid_parameters.as_ref().and_then(|m| m.first()) {
        return Err(format!("SSM parameter {missing} does not exist"));
    }
    Ok(out.parameters.unwrap_or_default().into_iter().filter_map(|p| Some((p.name?, p.value?))).collect())
}

/// The decrypted value of an SSM SecureString.
async fn read_secure_parameter(config: &LazySdkConfig, name: &str) -> Result<String, String> {
    let client = aws_sdk_ssm::Client::new(config.get().await);
    let out = client
        .get_parameter()
        .name(name)
        .with_decryption(true)
        .send()
        .await
        .map_err(|e| format!("SSM parameter {name}: {}", aws_sdk_ssm::error::DisplayErrorContext(&e)))?;
    out.parameter.and_then(|p| p.value).ok_or_else(|| format!("SSM parameter {name} has no value"))
}

impl AwsEnv {
    /// Reads every variable; the error names the first one missing or empty.
    pub fn from_env() -> Result<Self, String> {
        let var = required_var;
        Ok(Self {
            table_name: var("WEARLAB_TABLE_NAME")?,
            schedule_group: var("WEARLAB_SCHEDULE_GROUP")?,
            erasure_target_arn: var("WEARLAB_ERASURE_TARGET_ARN")?,
            scheduler_role_arn: var("WEARLAB_SCHEDULER_ROLE_ARN")?,
            event_bus_name: var("WEARLAB_EVENT_BUS_NAME")?,
            data_key: DataKeySource::from_env()?,
        })
    }

    /// The adapters for these resources on `config`, with the `providers` the caller chose.
    /// Fails only on a data key that cannot be read or used.
    pub async fn deps(&self, config: &SdkConfig, providers: Arc<dyn Providers>) -> Result<Deps, String> {
        self.deps_on_first_use(LazySdkConfig::given(config.clone()), providers).await
    }

    /// The adapters for these resources, whose SDK clients are built from `config` when each
    /// is first used (no HTTPS connector, no root certificates for a client never used). The
    /// data key is the exception: read from SSM here, once, so a function that cannot open
    /// its secrets stops at init rather than failing requests. Fails only on a data key that
    /// cannot be read or used.
    pub async fn deps_on_first_use(
        &self,
        config: LazySdkConfig,
        providers: Arc<dyn Providers>,
    ) -> Result<Deps, String> {
        let data_key = self.data_key.load(&config).await?;
        Ok(self.deps_with_key(config, providers, data_key))
    }

    /// The adapters with a data key already read.
    fn deps_with_key(
        &self,
        config: LazySdkConfig,
        providers: Arc<dyn Providers>,
        data_key: wearlab_domain::common::crypto::DataKey,
    ) -> Deps {
        let table = DynamoDbTable::on_first_use(config.clone(), &self.table_name);
        let scheduler = EventBridgeScheduler::on_first_use(
            config.clone(),
            SchedulerTarget {
                group: self.schedule_group.clone(),
                target_arn: self.erasure_target_arn.clone(),
                role_arn: self.scheduler_role_arn.clone(),
            },
        );
        let bus = EventBridgeBus::on_first_use(config, &self.event_bus_name);
        Deps {
            table: Arc::new(table),
            scheduler: Arc::new(scheduler),
            clock: Arc::new(SystemClock),
            bus: Arc::new(bus),
            providers,
            data_key: Arc::new(data_key),
        }
    }
}

/// An SDK configuration for an emulator such as moto (fixed region, dummy credentials), for
/// clients beyond the two of `clients_for_endpoint` (EventBridge, SQS).
pub async fn config_for_endpoint(endpoint: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "wearlab-test"))
        .endpoint_url(endpoint)
        .load()
        .await
}

/// A variable a function cannot start without; the error names it when it is missing or empty.
pub fn required_var(name: &str) -> Result<String, String> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(format!("environment variable {name} is not set")),
    }
}

/// The variable holding a queue's URL, as the template sets it for the functions using it.
pub fn queue_url_var(queue: QueueName) -> &'static str {
    match queue {
        QueueName::Pull => "WEARLAB_PULL_QUEUE_URL",
        QueueName::Bulk => "WEARLAB_BULK_QUEUE_URL",
        QueueName::Webhook => "WEARLAB_WEBHOOK_QUEUE_URL",
    }
}

/// The SQS queues a function uses, each from its `WEARLAB_*_QUEUE_URL` variable
/// ([`queue_url_var`]). Every one of them is required, and only them: a function must not need
/// a queue it never sends to, nor start without one it does (the error names the variable).
pub async fn sqs_queue_from_env(
    queues: &[QueueName],
    clock: Arc<dyn wearlab_domain::ports::Clock>,
) -> Result<crate::SqsQueue, String> {
    let urls = queues
        .iter()
        .map(|&queue| Ok((queue, required_var(queue_url_var(queue))?)))
        .collect::<Result<std::collections::HashMap<_, _>, String>>()?;
    Ok(crate::SqsQueue::on_first_use(LazySdkConfig::from_env(), urls, clock))
}

/// The dead-letter queue of `q`'s queue (URL from the same variable the functions use; the
/// dead-letter queue found by the queue's redrive policy), on the SDK's default configuration.
pub async fn sqs_dead_letters_from_env(
    q: wearlab_domain::ports::QueueName,
) -> Result<crate::SqsDeadLetters, String> {
    let url = required_var(queue_url_var(q))?;
    let client = aws_sdk_sqs::Client::new(&aws_config_from_env().await);
    crate::SqsDeadLetters::for_source(client, q.as_str(), &url).await.map_err(|e| e.to_string())
}

/// The ports every Lambda handler needs and the operator's [`Settings`], both built once per
/// execution environment. Cheap: the SDK configuration is loaded, and each SDK client built, on
/// first use (see [`LazySdkConfig`]), so that a function's init phase does no AWS work beyond
/// reading its secrets (the data key, and the providers' secrets when
/// `WEARLAB_PROVIDER_SECRETS_PATH` is set: [`ProviderVars`]). Every setting is validated here,
/// `WEARLAB_PUBLIC_URL` is required (links handed to users are never derived from a request's
/// headers on a deployment, which a caller controls), and the error names the variable, so a
/// function with a bad value stops at start. `providers` builds the `Providers` port from the
/// variables it is given (each `main.rs` picks the adapters with `wearlab_providers::from_vars`;
/// this crate knows no provider adapter). The queue, the lab network and the webhook sender are
/// not on [`Deps`]: a function that uses one builds it (e.g. [`sqs_queue_from_env`]) and hands
/// it to its app or worker, whose signature asks for it.
pub async fn deps_from_env(
    providers: impl FnOnce(&dyn Fn(&str) -> Option<String>) -> Arc<dyn Providers>,
) -> Result<(Deps, Settings), String> {
    let env = AwsEnv::from_env()?;
    let settings = settings_from_env()?;
    let config = LazySdkConfig::from_env();
    let vars = ProviderVars::from_env(&config).await?;
    let deps = env.deps_on_first_use(config, providers(&|name| vars.get(name))).await?;
    Ok((deps, settings))
}

/// [`deps_from_env`] for the functions that issue or accept the phone's per-user tokens
/// (sdk-api, user-api, data-api): also the signing key (`WEARLAB_PHONE_SIGNING_KEY`, else the
/// SSM SecureString `WEARLAB_PHONE_SIGNING_KEY_PARAMETER` names), read with the data key in one
/// `GetParameters`.
pub async fn deps_with_phone_key_from_env(
    providers: impl FnOnce(&dyn Fn(&str) -> Option<String>) -> Arc<dyn Providers>,
) -> Result<(Deps, Settings, Arc<wearlab_domain::common::crypto::SigningKey>), String> {
    let env = AwsEnv::from_env()?;
    let phone = PhoneKeySource::from_env()?;
    let settings = settings_from_env()?;
    let config = LazySdkConfig::from_env();
    let vars = ProviderVars::from_env(&config).await?;
    let (data_key, phone_key) = load_data_and_phone_keys(&env.data_key, &phone, &config).await?;
    let deps = env.deps_with_key(config, providers(&|name| vars.get(name)), data_key);
    Ok((deps, settings, Arc::new(phone_key)))
}

/// The operator's settings of a deployed function, from the process environment: every one
/// valid and `WEARLAB_PUBLIC_URL` set, else an error naming the variable.
pub fn settings_from_env() -> Result<Settings, String> {
    let settings = Settings::from_vars(|name| std::env::var(name).ok()).map_err(|e| e.to_string())?;
    settings.required_public_url().map_err(|e| e.to_string())?;
    Ok(settings)
}
