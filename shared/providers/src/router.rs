//! The `Providers` port over real adapters and the simulator. A provider with an active
//! adapter is real: its OAuth links, refreshes, fetches and revokes go to the provider's API.
//! Everything else goes to the simulator: password providers, providers without an adapter,
//! and every demo connection (its credentials are the simulator's, whichever the provider).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, FetchedResource, LoginOutcome, NoLimit, OauthClient,
    PasswordLogin, ProviderAccount, ProviderCredentials, ProviderError, Providers, PushOutcome, PushRequest,
    RateWindow, RequestGate,
};
use wearlab_models::{ProviderAvailability, Resource};

use crate::adapter::Adapter;
use crate::config::AppConfig;

/// One active real provider.
#[derive(Clone)]
pub struct Route {
    pub adapter: Arc<dyn Adapter>,
    pub config: AppConfig,
}

pub struct RealProviders {
    sim: Arc<dyn Providers>,
    routes: HashMap<&'static str, Route>,
    /// Providers with an adapter in this build, active or not, with the resources it fills.
    available: HashMap<&'static str, &'static [Resource]>,
    /// Whether providers without an active adapter may be linked to the simulator
    /// (`WEARLAB_SIMULATED_PROVIDERS`); demo connections are offered either way.
    simulated_links: bool,
}

impl RealProviders {
    /// Routes to `routes`; every other provider is demo only until [`Self::simulating`].
    pub fn new(sim: Arc<dyn Providers>, routes: Vec<Route>) -> Self {
        let routes: HashMap<_, _> = routes.into_iter().map(|r| (r.adapter.slug(), r)).collect();
        let available = routes.iter().map(|(slug, r)| (*slug, r.adapter.resources())).collect();
        Self { sim, available, routes, simulated_links: false }
    }

    /// Lets providers without an active adapter be linked to the simulator (their data is
    /// synthetic): the local stack, demo and staging deployments.
    pub fn simulating(mut self, on: bool) -> Self {
        self.simulated_links = on;
        self
    }

    /// Names the adapters in this build, active or not, so that providers without an OAuth app
    /// configured are listed as demo only, and every provider with an adapter offers the
    /// resources its adapter fills.
    pub fn with_available(mut self, adapters: &[Arc<dyn Adapter>]) -> Self {
        self.available = adapters.iter().map(|a| (a.slug(), a.resources())).collect();
        self
    }

    /// The active adapter of `provider`, if it is real.
    pub fn route(&self, provider: &str) -> Option<&Route> {
        self.routes.get(provider)
    }

    /// The adapter for credentials of `provider`: `None` for the simulator's own credentials
    /// (demo connections), which stay simulated whatever the provider.
    fn real(&self, provider: &str, credentials: &ProviderCredentials) -> Option<&Route> {
        if wearlab_sim::is_simulated(credentials) {
            return None;
        }
        self.route(provider)
    }

    /// The OAuth app a real provider's credentials were issued to: the team's own when the
    /// caller names it, else the platform's.
    fn app<'a>(route: &'a Route, client: Option<&'a OauthClient>) -> Result<&'a OauthClient, ProviderError> {
        client.or(route.config.platform_client.as_ref()).ok_or_else(|| {
            ProviderError::Revoked("no OAuth application is configured for this provider".into())
        })
    }
}

#[async_trait]
impl Providers for RealProviders {
    async fn password_login(
        &self,
        provider: &str,
        login: PasswordLogin,
    ) -> Result<LoginOutcome, ProviderError> {
        self.sim.password_login(provider, login).await
    }

    async fn complete_mfa(
        &self,
        provider: &str,
        session: &Secret,
        code: &str,
    ) -> Result<ProviderAccount, ProviderError> {
        self.sim.complete_mfa(provider, session, code).await
    }

    fn platform_oauth_client(&self, provider: &str) -> Option<OauthClient> {
        match self.route(provider) {
            Some(route) => route.config.platform_client.clone(),
            None => self.sim.platform_oauth_client(provider),
        }
    }

    fn authorize_url(&self, provider: &str, request: &AuthorizeRequest) -> Result<String, ProviderError> {
        match self.route(provider) {
            Some(route) => route.adapter.authorize_url(request),
            None => self.sim.authorize_url(provider, request),
        }
    }

    async fn exchange_code(
        &self,
        provider: &str,
        exchange: CodeExchange,
    ) -> Result<ProviderAccount, ProviderError> {
        match self.route(provider) {
            Some(route) => route.adapter.exchange_code(&exchange).await,
            None => self.sim.exchange_code(provider, exchange).await,
        }
    }

    async fn verify_app_token(
        &self,
        provider: &str,
        client: &OauthClient,
        account: &ProviderAccount,
    ) -> Result<ProviderCredentials, ProviderError> {
        let credentials = &account.credentials;
        let Some(route) = self.real(provider, credentials) else {
            return self.sim.verify_app_token(provider, client, account).await;
        };
        // None of the real providers publishes token introspection. A refresh token is refreshed
        // with the team's app: the provider refuses one issued to another app. An access token
        // alone can only be shown to work, by one authenticated call.
        if credentials.refresh_token.is_some() {
            return route.adapter.refresh(client, credentials).await.map_err(|e| match e {
                ProviderError::Revoked(why) | ProviderError::CredentialError(why) => {
                    ProviderError::CredentialError(format!(
                        "the provider refused the refresh token with the team's OAuth application \
                         (issued to another application, or revoked): {why}"
                    ))
                }
                other => other,
            });
        }
        let Some(resource) = route.adapter.resources().first() else { return Ok(credentials.clone()) };
        let today = chrono::Utc::now().date_naive();
        let range = DateRange { start: today.pred_opt().unwrap_or(today), end: today };
        // The caller counted this one request against the app's limits (bulk import does).
        match route.adapter.fetch(account, resource, range, &NoLimit).await {
            Ok(_) => Ok(credentials.clone()),
            Err(ProviderError::AccessTokenRefused) => Err(ProviderError::CredentialError(
                "the provider refused the access token (expired or revoked) and no refresh token was given"
                    .into(),
            )),
            Err(e) => Err(e),
        }
    }

    async fn refresh_credentials(
        &self,
        provider: &str,
        client: Option<&OauthClient>,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        match self.real(provider, credentials) {
            Some(route) => route.adapter.refresh(Self::app(route, client)?, credentials).await,
            None => self.sim.refresh_credentials(provider, client, credentials).await,
        }
    }

    async fn fetch(
        &self,
        provider: &str,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        match self.real(provider, &account.credentials) {
            Some(route) => route.adapter.fetch(account, resource, range, gate).await,
            None => self.sim.fetch(provider, account, resource, range, gate).await,
        }
    }

    async fn deregister(
        &self,
        provider: &str,
        client: Option<&OauthClient>,
        account: &ProviderAccount,
    ) -> Result<(), ProviderError> {
        match self.real(provider, &account.credentials) {
            Some(route) => route.adapter.revoke(Self::app(route, client)?, account).await,
            None => self.sim.deregister(provider, client, account).await,
        }
    }

    fn app_limits(&self, provider: &str, credentials: &ProviderCredentials) -> Vec<RateWindow> {
        self.real(provider, credentials).map(|r| r.adapter.app_limits().to_vec()).unwrap_or_default()
    }

    fn user_limits(&self, provider: &str, credentials: &ProviderCredentials) -> Vec<RateWindow> {
        self.real(provider, credentials).map(|r| r.adapter.user_limits().to_vec()).unwrap_or_default()
    }

    async fn prepare_push(&self, provider: &str, request: &PushRequest) -> Result<(), ProviderError> {
        match self.route(provider) {
            Some(route) => route.adapter.prepare_push(request).await,
            None => self.sim.prepare_push(provider, request).await,
        }
    }

    fn push(&self, provider: &str, client: Option<&OauthClient>, request: &PushRequest) -> PushOutcome {
        let Some(route) = self.route(provider) else {
            return self.sim.push(provider, client, request);
        };
        let token = route.config.push_token.as_ref().map(Secret::expose);
        if let Some(outcome) = route.adapter.push_unsigned(token, request) {
            return outcome;
        }
        // Signed with the app named (a team's own), else the platform's.
        let Some(client) = client.or(route.config.platform_client.as_ref()) else {
            return PushOutcome::Refused("no OAuth application is configured for this provider".into());
        };
        route.adapter.push(client, token, request)
    }

    async fn after_link(
        &self,
        provider: &str,
        account: &ProviderAccount,
        callback_url: &str,
    ) -> Result<(), ProviderError> {
        match self.real(provider, &account.credentials) {
            Some(route) => route.adapter.after_link(account, callback_url).await,
            None => self.sim.after_link(provider, account, callback_url).await,
        }
    }

    fn push_claimed_user(&self, provider: &str, request: &PushRequest) -> Option<String> {
        match self.route(provider) {
            Some(route) => route.adapter.push_claimed_user(request),
            None => self.sim.push_claimed_user(provider, request),
        }
    }

    fn push_sent_at(&self, provider: &str, request: &PushRequest) -> Option<chrono::DateTime<chrono::Utc>> {
        match self.route(provider) {
            Some(route) => route.adapter.push_sent_at(request),
            None => self.sim.push_sent_at(provider, request),
        }
    }

    fn poll_interval(&self, provider: &str) -> Option<std::time::Duration> {
        self.route(provider).and_then(|route| route.adapter.poll_interval())
    }

    fn pushes(&self, provider: &str) -> bool {
        match self.route(provider) {
            Some(route) => route.adapter.pushes(),
            None => self.sim.pushes(provider),
        }
    }

    async fn maintain_push_subscriptions(
        &self,
        public_url: &str,
    ) -> Vec<(String, Result<usize, ProviderError>)> {
        let mut out = Vec::new();
        for (slug, route) in &self.routes {
            let Some(client) = &route.config.platform_client else { continue };
            let callback = wearlab_domain::linking::subscriptions::callback_url(public_url, slug);
            let token = route.config.push_token.as_ref().map(Secret::expose);
            out.push((
                (*slug).to_owned(),
                route.adapter.ensure_subscriptions(client, &callback, token).await,
            ));
        }
        out
    }

    fn availability(&self, provider: &str) -> ProviderAvailability {
        if self.routes.contains_key(provider) {
            ProviderAvailability::Live
        } else if self.simulated_links {
            ProviderAvailability::Simulated
        } else {
            ProviderAvailability::DemoOnly
        }
    }

    fn simulates(&self, provider: &str, credentials: &ProviderCredentials) -> bool {
        self.real(provider, credentials).is_none()
    }

    fn resources(&self, provider: &str) -> Option<&'static [Resource]> {
        self.available.get(provider).copied()
    }

    async fn connect_demo(&self, provider: &str, seed: &str) -> Result<ProviderAccount, ProviderError> {
        self.sim.connect_demo(provider, seed).await
    }
}
