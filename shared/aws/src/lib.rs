//! Adapters on AWS: the single table on DynamoDB and one-time jobs on EventBridge Scheduler.
//!
//! Thin by design: every rule lives in `wearlab-domain`; these types only translate the ports
//! into API calls and map AWS errors into `StoreError` / `SchedulerError`. Error messages carry
//! operation names and AWS error codes, never item data.

mod config;
mod dead_letters;
mod dynamodb;
mod error;
mod eventbridge;
mod lazy;
mod meter;
mod provider_secrets;
mod scheduler;
mod sqs;

pub use config::{
    AwsEnv, DATA_KEY_PARAMETER_VAR, DataKeySource, PHONE_SIGNING_KEY_PARAMETER_VAR, PHONE_SIGNING_KEY_VAR,
    PhoneKeySource, aws_config_from_env, clients_for_endpoint, config_for_endpoint, deps_from_env,
    deps_with_phone_key_from_env, load_data_and_phone_keys, queue_url_var, required_var, settings_from_env,
    sqs_dead_letters_from_env, sqs_queue_from_env,
};
pub use dead_letters::{DeadLetterError, SqsDeadLetters};
pub use dynamodb::{DynamoDbTable, GSI1_INDEX, TTL_ATTRIBUTE, ensure_table};
pub use eventbridge::{EVENT_SOURCE, EventBridgeBus};
pub use lazy::LazySdkConfig;
pub use meter::{AwsMeter, CallSpan, Service, Tally, item_size};
pub use provider_secrets::{PROVIDER_SECRETS_PATH_VAR, ProviderVars, is_provider_secret_var};
pub use scheduler::{EventBridgeScheduler, SchedulerTarget, ensure_schedule_group};
pub use sqs::{SqsQueue, handle_sqs_batch, plan_batches};
