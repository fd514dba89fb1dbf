//! What one real provider adapter does. The router ([`crate::RealProviders`]) turns the
//! `Providers` port's calls into these; the domain never sees an adapter directly.

use async_trait::async_trait;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, FetchedResource, OauthClient, ProviderAccount,
    ProviderCredentials, ProviderError, PushOutcome, PushRequest, RateWindow, RequestGate,
};
use wearlab_models::Resource;

use crate::description::Api;

#[async_trait]
pub trait Adapter: Send + Sync + 'static {
    /// The provider's API: its description ([`crate::description::ProviderDescription`]) and
    /// configuration. The methods below answer from it unless the adapter says otherwise.
    fn api(&self) -> &Api;

    /// The catalog slug this adapter serves (`oura`, `whoop_v2`, `withings`, ...).
    fn slug(&self) -> &'static str {
        self.api().description.slug
    }

    /// The catalog resources `fetch` fills; nothing else is offered for this provider.
    fn resources(&self) -> &'static [Resource] {
        self.api().description.resources
    }

    /// The provider's published limits for one OAuth application (all its users together).
    fn app_limits(&self) -> &'static [RateWindow] {
        self.api().description.app_limits
    }

    /// The provider's published limits for one of its users (Google Health: 300 a minute).
    fn user_limits(&self) -> &'static [RateWindow] {
        self.api().description.user_limits
    }

    /// The consent page at the provider, with this provider's scopes.
    fn authorize_url(&self, request: &AuthorizeRequest) -> Result<String, ProviderError> {
        self.api().authorize_url(request)
    }

    /// Exchanges the callback's code (client authentication in the provider's style, see
    /// [`Api::exchange`]) and resolves the provider's user id: each provider names its user
    /// its own way.
    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError>;

    /// New credentials from the refresh token, issued to `client`. A refused refresh token is
    /// `Revoked`. Providers that rotate refresh tokens return the new one; when a provider
    /// returns none, the old one is kept. By default as the description says ([`Api::refresh`]).
    async fn refresh(
        &self,
        client: &OauthClient,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        self.api().refresh(client, credentials).await
    }

    /// One resource's records for a range of days, every page followed to the end, mapped to
    /// normalised records (units converted). Each HTTP request it sends (every page, every
    /// stream, every day of intraday data) is admitted by `gate` before it is sent; a refusal
    /// ends the fetch with it. A 401 is `AccessTokenRefused`, a 429 `RateLimited` with the
    /// provider's reset.
    async fn fetch(
        &self,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError>;

    /// Revokes Wearlab's access at the provider (where it has an endpoint; `Ok` otherwise).
    async fn revoke(&self, client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError>;

    /// Reads a request the provider sent to the push endpoint: its handshake, or notices of
    /// changed data once the signature (made with `client`'s secret, where the provider signs)
    /// checks. `verification_token` is the value Wearlab gave the provider when subscribing
    /// (Oura's handshake), when there is one.
    fn push(
        &self,
        client: &OauthClient,
        verification_token: Option<&str>,
        request: &PushRequest,
    ) -> PushOutcome;

    /// Fetches what checking `request` needs before [`Adapter::push`] reads it without I/O
    /// (Google Health: the public keys its notifications are signed with). Nothing by default.
    async fn prepare_push(&self, _request: &PushRequest) -> Result<(), ProviderError> {
        Ok(())
    }

    /// The least time between two scheduled polls of one connection, when the provider asks
    /// for fewer polls than the schedule's (see [`Providers::poll_interval`]). `None` by default.
    ///
    /// [`Providers::poll_interval`]: wearlab_domain::ports::Providers::poll_interval
    fn poll_interval(&self) -> Option<std::time::Duration> {
        None
    }

    /// Whether the provider sends push notifications at all. A provider without (Dexcom) has
    /// its pushes refused as such, not as badly signed ones.
    fn pushes(&self) -> bool {
        true
    }

    /// Per-user set-up once the account is linked (and again when it is relinked): Withings
    /// subscribes the user's notifications to `callback_url`. Nothing by default.
    async fn after_link(&self, _account: &ProviderAccount, _callback_url: &str) -> Result<(), ProviderError> {
        Ok(())
    }

    /// Reads a push without any OAuth app, for providers that sign no push (Strava: the
    /// handshake's verify token is the only check, and the user a notice names is looked up).
    /// `None`, the default: the push needs an app's secret, and [`Adapter::push`] reads it.
    fn push_unsigned(
        &self,
        _verification_token: Option<&str>,
        _request: &PushRequest,
    ) -> Option<PushOutcome> {
        None
    }

    /// The provider user id a push names, read without checking the signature (see
    /// `Providers::push_claimed_user`); `None` where pushes are signed by the platform's app
    /// alone.
    fn push_claimed_user(&self, _request: &PushRequest) -> Option<String> {
        None
    }

    /// When the push says it was sent, read without checking the signature (see
    /// `Providers::push_sent_at`); `None` where the push names no such time.
    fn push_sent_at(&self, _request: &PushRequest) -> Option<chrono::DateTime<chrono::Utc>> {
        None
    }

    /// Makes sure the provider pushes to `callback_url` for `client`'s users, where the
    /// provider has an API for app-wide subscriptions (Oura): creates the missing ones and
    /// renews those about to expire. Returns how many it created or renewed. Providers
    /// subscribed per user, or in a dashboard, do nothing here.
    async fn ensure_subscriptions(
        &self,
        _client: &OauthClient,
        _callback_url: &str,
        _verification_token: Option<&str>,
    ) -> Result<usize, ProviderError> {
        Ok(0)
    }
}

/// A provider's sport name as a Wearlab sport slug (the one rule, shared with the phone's
/// uploads).
pub use wearlab_domain::pipeline::sport::sport_slug;
