//! The providers' secrets (OAuth client secrets, push verification tokens) as a deployment keeps
//! them: SSM SecureStrings under one path, read once at init, never environment variables of a
//! function (where `lambda:GetFunctionConfiguration` would show them).
//!
//! `<path>/<slug>/client_secret` answers `WEARLAB_PROVIDER_<SLUG>_CLIENT_SECRET`,
//! `<path>/<slug>/push_token` answers `WEARLAB_PROVIDER_<SLUG>_PUSH_TOKEN` and
//! `<path>/<slug>/subscription_key` answers `WEARLAB_PROVIDER_<SLUG>_SUBSCRIPTION_KEY` (Suunto's
//! API Zone subscription key); every other
//! variable still comes from the environment. [`ProviderVars::get`] is the lookup the providers
//! crate parses its configuration through (`wearlab_providers::from_vars`), so that parsing
//! stays in one place. Without `WEARLAB_PROVIDER_SECRETS_PATH` (the local stack, tests) every
//! variable comes from the environment, secrets included.

use std::collections::BTreeMap;

use crate::LazySdkConfig;

/// The variable naming the SSM path under which the providers' secrets are kept.
pub const PROVIDER_SECRETS_PATH_VAR: &str = "WEARLAB_PROVIDER_SECRETS_PATH";

/// The secrets a provider can have: the last segment of the parameter's name, and the suffix
/// of the variable it answers.
const SECRETS: [(&str, &str); 3] = [
    ("client_secret", "_CLIENT_SECRET"),
    ("push_token", "_PUSH_TOKEN"),
    ("subscription_key", "_SUBSCRIPTION_KEY"),
];

/// Pages of `GetParametersByPath` read at most (10 parameters each): far more than the providers'
/// secrets, a bound on a path holding something else.
const MAX_PAGES: usize = 50;

const PROVIDER_VAR_PREFIX: &str = "WEARLAB_PROVIDER_";

/// Whether `name` is a provider secret's variable (`WEARLAB_PROVIDER_<SLUG>_CLIENT_SECRET`,
/// `..._PUSH_TOKEN` or `..._SUBSCRIPTION_KEY`).
pub fn is_provider_secret_var(name: &str) -> bool {
    name.strip_prefix(PROVIDER_VAR_PREFIX).is_some_and(|rest| {
        SECRETS.iter().any(|(_, suffix)| rest.len() > suffix.len() && rest.ends_with(suffix))
    })
}

/// The providers' variables a function parses its provider configuration from.
#[derive(Clone)]
pub struct ProviderVars {
    env: BTreeMap<String, String>,
    /// The secrets read from SSM; `None`: secrets come from the environment (no path set).
    secrets: Option<BTreeMap<String, String>>,
}

impl std::fmt::Debug for ProviderVars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self.secrets.as_ref().map(|s| s.keys().collect::<Vec<_>>());
        f.debug_struct("ProviderVars").field("secrets_from_ssm", &names).finish_non_exhaustive()
    }
}

impl ProviderVars {
    /// Every variable from `env` (the local stack, tests).
    pub fn plain(env: impl IntoIterator<Item = (String, String)>) -> Self {
        Self { env: env.into_iter().collect(), secrets: None }
    }

    /// The process environment; when it sets `WEARLAB_PROVIDER_SECRETS_PATH`, the secrets from
    /// the SSM parameters under that path (see [`ProviderVars::load`]).
    pub async fn from_env(config: &LazySdkConfig) -> Result<Self, String> {
        Self::load(config, std::env::vars()).await
    }

    /// The variables of `env`; when `env` sets `WEARLAB_PROVIDER_SECRETS_PATH`, every SSM
    /// parameter under that path read with decryption (`GetParametersByPath`, recursive), once.
    ///
    /// Fails, naming a variable or a parameter and never showing a value, when the path is set
    /// and: the environment also holds a secret variable (secrets are never environment
    /// variables of a deployment); a parameter under the path is not `<slug>/client_secret`,
    /// `<slug>/push_token` or `<slug>/subscription_key`; a provider's `..._CLIENT_ID` is configured and its
    /// `<slug>/client_secret` parameter is missing; SSM cannot be read.
    pub async fn load(
        config: &LazySdkConfig,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, String> {
        let env: BTreeMap<String, String> = env.into_iter().collect();
        let Some(path) = env.get(PROVIDER_SECRETS_PATH_VAR).map(|p| p.trim()).filter(|p| !p.is_empty())
        else {
            return Ok(Self { env, secrets: None });
        };
        let path = path.trim_end_matches('/').to_owned();
        if let Some(name) = env.keys().find(|k| is_provider_secret_var(k)) {
            return Err(format!(
                "{name} is set in the environment while {PROVIDER_SECRETS_PATH_VAR} is: the providers' \
                 secrets are SSM SecureStrings under {path}"
            ));
        }
        let mut secrets = BTreeMap::new();
        for (name, value) in read_path(config, &path).await? {
            let var = secret_var(&path, &name).ok_or_else(|| {
                format!(
                    "SSM parameter {name} under {PROVIDER_SECRETS_PATH_VAR} ({path}) is not \
                     {path}/<provider slug>/client_secret, .../push_token or .../subscription_key"
                )
            })?;
            secrets.insert(var, value);
        }
        for (var, value) in &env {
            let Some(slug) = var.strip_prefix(PROVIDER_VAR_PREFIX).and_then(|r| r.strip_suffix("_CLIENT_ID"))
            else {
                continue;
            };
            let secret = format!("{PROVIDER_VAR_PREFIX}{slug}_CLIENT_SECRET");
            if !value.trim().is_empty() && !secrets.contains_key(&secret) {
                return Err(format!(
                    "{var} is set but SSM parameter {path}/{}/client_secret is missing",
                    slug.to_ascii_lowercase()
                ));
            }
        }
        Ok(Self { env, secrets: Some(secrets) })
    }

    /// The value of `name`: a secret from SSM when the path is set, anything else from the
    /// environment.
    pub fn get(&self, name: &str) -> Option<String> {
        match &self.secrets {
            Some(secrets) if is_provider_secret_var(name) => secrets.get(name).cloned(),
            _ => self.env.get(name).cloned(),
        }
    }
}

/// The variable a parameter `name` under `path` answers: `<path>/<slug>/<secret>`, the slug
/// lower-case letters, digits and `_`.
fn secret_var(path: &str, name: &str) -> Option<String> {
    let (slug, secret) = name.strip_prefix(path)?.strip_prefix('/')?.split_once('/')?;
    let valid =
        !slug.is_empty() && slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    let (_, suffix) = SECRETS.iter().find(|(last, _)| *last == secret)?;
    valid.then(|| format!("{PROVIDER_VAR_PREFIX}{}{suffix}", slug.to_ascii_uppercase()))
}

/// Every parameter under `path`, decrypted: (name, value).
async fn read_path(config: &LazySdkConfig, path: &str) -> Result<Vec<(String, String)>, String> {
    let client = aws_sdk_ssm::Client::new(config.get().await);
    let mut out = Vec::new();
    let mut next = None;
    for _ in 0..MAX_PAGES {
        let page = client
            .get_parameters_by_path()
            .path(path)
            .recursive(true)
            .with_decryption(true)
            .set_next_token(next.take())
            .send()
            .await
            .map_err(|e| format!("SSM path {path}: {}", aws_sdk_ssm::error::DisplayErrorContext(&e)))?;
        for p in page.parameters.unwrap_or_default() {
            let name = p.name.unwrap_or_default();
            let value = p.value.ok_or_else(|| format!("SSM parameter {name} has no value"))?;
            out.push((name, value));
        }
        match page.next_token {
            Some(token) if !token.is_empty() => next = Some(token),
            _ => return Ok(out),
        }
    }
    Err(format!("SSM path {path} holds more than {} pages of parameters", MAX_PAGES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_answers_the_variable_of_its_provider_and_secret() {
        let var = |name| secret_var("/wearlab/providers", name);
        assert_eq!(
            var("/wearlab/providers/oura/client_secret").as_deref(),
            Some("WEARLAB_PROVIDER_OURA_CLIENT_SECRET")
        );
        assert_eq!(
            var("/wearlab/providers/google_health/push_token").as_deref(),
            Some("WEARLAB_PROVIDER_GOOGLE_HEALTH_PUSH_TOKEN")
        );
        for other in [
            "/wearlab/providers/oura/client_id",
            "/wearlab/providers/Oura/client_secret",
            "/wearlab/providers/oura/x/client_secret",
            "/wearlab/providers//client_secret",
            "/wearlab/providersx/oura/client_secret",
        ] {
            assert_eq!(var(other), None, "{other}");
        }
        assert_eq!(
            var("/wearlab/providers/suunto/subscription_key").as_deref(),
            Some("WEARLAB_PROVIDER_SUUNTO_SUBSCRIPTION_KEY")
        );
        assert!(is_provider_secret_var("WEARLAB_PROVIDER_SUUNTO_SUBSCRIPTION_KEY"));
        assert!(is_provider_secret_var("WEARLAB_PROVIDER_POLAR_PUSH_TOKEN"));
        assert!(!is_provider_secret_var("WEARLAB_PROVIDER_POLAR_CLIENT_ID"));
        assert!(!is_provider_secret_var("WEARLAB_PROVIDER__PUSH_TOKEN"));
    }

    #[tokio::test]
    async fn without_a_path_every_variable_is_the_environments() {
        let config = LazySdkConfig::given(aws_config::SdkConfig::builder().build());
        let env = [("WEARLAB_PROVIDER_OURA_CLIENT_SECRET".to_owned(), "s".to_owned())];
        let vars = ProviderVars::load(&config, env).await.unwrap();
        assert_eq!(vars.get("WEARLAB_PROVIDER_OURA_CLIENT_SECRET").as_deref(), Some("s"));
        assert_eq!(vars.get("WEARLAB_PROVIDER_OURA_CLIENT_ID"), None);
    }
}
