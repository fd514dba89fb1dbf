//! SDK configuration and clients made on first use, so that a Lambda's init phase does no AWS
//! work. Loading the configuration (`aws_config::load_defaults`) and building a client (which
//! builds its HTTPS connector and so reads and parses the system's root certificates) took most
//! of the functions' init time; now the first request that needs a client pays for it, once per
//! execution environment, and a client a request never uses is never built.

use std::fmt;
use std::sync::Arc;

use aws_config::SdkConfig;
use tokio::sync::OnceCell;

use crate::config::aws_config_from_env;

/// The configuration of the environment, loaded once per process by the first client that
/// needs it; every adapter made by `deps_from_env` and `sqs_queue_from_env` shares it.
static ENV_CONFIG: OnceCell<SdkConfig> = OnceCell::const_new();

/// An SDK configuration that clients read when they are first used: the environment's
/// ([`LazySdkConfig::from_env`], loaded on first use) or a given one.
#[derive(Clone, Debug)]
pub struct LazySdkConfig(Source);

#[derive(Clone, Debug)]
enum Source {
    Env,
    Given(Arc<SdkConfig>),
}

impl LazySdkConfig {
    /// The SDK's default chain (see [`aws_config_from_env`]), loaded by the first client that
    /// is used, once per process.
    pub fn from_env() -> Self {
        Self(Source::Env)
    }

    /// A configuration already loaded (an emulator's, a test's).
    pub fn given(config: SdkConfig) -> Self {
        Self(Source::Given(Arc::new(config)))
    }

    /// The configuration, loading it if this is the first use.
    pub async fn get(&self) -> &SdkConfig {
        match &self.0 {
            Source::Env => ENV_CONFIG.get_or_init(aws_config_from_env).await,
            Source::Given(config) => config,
        }
    }
}

impl From<SdkConfig> for LazySdkConfig {
    fn from(config: SdkConfig) -> Self {
        Self::given(config)
    }
}

type Make<C> = Box<dyn Fn(&SdkConfig) -> C + Send + Sync>;

/// A client, given or built from a [`LazySdkConfig`] on first use. Clones share the client.
pub(crate) struct LazyClient<C>(Arc<Inner<C>>);

struct Inner<C> {
    client: OnceCell<C>,
    /// How to build the client; `None` when it was given.
    make: Option<(LazySdkConfig, Make<C>)>,
}

impl<C> LazyClient<C> {
    pub(crate) fn ready(client: C) -> Self {
        Self(Arc::new(Inner { client: OnceCell::new_with(Some(client)), make: None }))
    }

    pub(crate) fn on_first_use(
        config: LazySdkConfig,
        make: impl Fn(&SdkConfig) -> C + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(Inner { client: OnceCell::new(), make: Some((config, Box::new(make))) }))
    }

    /// The client; the first call builds it (concurrent first calls wait for one build).
    pub(crate) async fn get(&self) -> &C {
        if let Some(client) = self.0.client.get() {
            return client;
        }
        let (config, make) = self.0.make.as_ref().expect("a client not given is built from its config");
        self.0.client.get_or_init(|| async { make(config.get().await) }).await
    }

    /// Whether the client exists yet (tests).
    #[cfg(test)]
    pub(crate) fn is_built(&self) -> bool {
        self.0.client.initialized()
    }
}

impl<C> Clone for LazyClient<C> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<C> fmt::Debug for LazyClient<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyClient").field("built", &self.0.client.initialized()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use aws_config::{BehaviorVersion, Region};

    use super::*;

    fn config() -> SdkConfig {
        SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("eu-west-1"))
            .build()
    }

    #[tokio::test]
    async fn clients_are_built_once_on_first_use() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counter = builds.clone();
        let client = LazyClient::on_first_use(LazySdkConfig::given(config()), move |c| {
            counter.fetch_add(1, Ordering::SeqCst);
            c.region().map(|r| r.as_ref().to_owned())
        });
        let copy = client.clone();
        assert!(!client.is_built());
        assert_eq!(builds.load(Ordering::SeqCst), 0);
        assert_eq!(client.get().await.as_deref(), Some("eu-west-1"));
        assert_eq!(copy.get().await.as_deref(), Some("eu-west-1"));
        assert!(copy.is_built());
        assert_eq!(builds.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn given_clients_are_used_as_they_are() {
        let client = LazyClient::ready(7);
        assert!(client.is_built());
        assert_eq!(*client.get().await, 7);
    }
}
