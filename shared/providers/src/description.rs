//! What every adapter has in common, said once. A provider is described by data
//! ([`ProviderDescription`]: its slug, the resources it fills, its published limits, its real
//! hosts, its scopes, how its token endpoint authenticates the client, how it refreshes), and
//! [`Api`] does with that description what every adapter would otherwise write again: the
//! consent URL, the code exchange and the refresh at the token endpoint, and the
//! bearer-authenticated GET of the data API. The [`crate::Adapter`] trait's default methods answer
//! from the description, so an adapter holds only what truly differs: how it finds the user's
//! id, its data mappings, its push verification and its quirks.

use chrono::Utc;
use serde::de::DeserializeOwned;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, OauthClient, ProviderCredentials, ProviderError, RateWindow, RequestGate,
};
use wearlab_models::Resource;

use crate::config::{AppConfig, Endpoints};
use crate::http;
use crate::oauth::{self, ClientAuth, TokenAnswer};

/// One provider, as its published documents describe it.
#[derive(Debug)]
pub struct ProviderDescription {
    /// The catalog slug (`oura`, `whoop_v2`, ...); also the prefix of its configuration
    /// (`WEARLAB_PROVIDER_<SLUG>_*`).
    pub slug: &'static str,
    /// The catalog resources the adapter fills; nothing else is offered for this provider.
    pub resources: &'static [Resource],
    /// The published limits for one OAuth application (all its users together).
    pub app_limits: &'static [RateWindow],
    /// The published limits for one of its users; most providers publish none.
    pub user_limits: &'static [RateWindow],
    /// The real consent page, token endpoint and data API base (configuration overrides them).
    pub authorize_url: &'static str,
    pub token_url: &'static str,
    pub api_url: &'static str,
    /// The scopes asked for, written as the provider separates them.
    pub scopes: &'static str,
    /// Query parameters of the consent page beyond RFC 6749's (Google's `access_type`).
    pub authorize_extra: &'static [(&'static str, &'static str)],
    /// How the token endpoint authenticates the client.
    pub client_auth: ClientAuth,
    /// How credentials are renewed.
    pub refresh: Refresh,
}

/// How a provider renews credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// RFC 6749 section 6 with these fields added to the form. A provider that rotates refresh
    /// tokens sends a new one, which is kept; one that sends none leaves the old one in place.
    Token { extra: &'static [(&'static str, &'static str)] },
    /// The provider issues no refresh token: a refused access token cannot be renewed, and the
    /// user links again.
    NotIssued,
}

impl ProviderDescription {
    /// The real hosts.
    pub fn endpoints(&self) -> Endpoints {
        Endpoints {
            authorize: self.authorize_url.to_owned(),
            token: self.token_url.to_owned(),
            api: self.api_url.to_owned(),
        }
    }

    /// This provider's configuration read through `var`, the real hosts as defaults.
    pub fn config(&self, var: impl Fn(&str) -> Option<String>) -> AppConfig {
        AppConfig::from_vars(self.slug, self.endpoints(), var)
    }
}

/// A provider's API as configured: its description, the hosts and apps of its configuration,
/// and the process's HTTP client.
pub struct Api {
    pub description: &'static ProviderDescription,
    pub config: AppConfig,
    pub http: http::SharedClient,
}

impl Api {
    pub fn new(description: &'static ProviderDescription, config: AppConfig) -> Self {
        Self { description, config, http: http::client() }
    }

    fn slug(&self) -> &'static str {
        self.description.slug
    }

    /// The consent page with the description's scopes and extra parameters.
    pub fn authorize_url(&self, request: &AuthorizeRequest) -> Result<String, ProviderError> {
        let d = self.description;
        let url = oauth::authorize_url(d.slug, &self.config.endpoints.authorize, request, d.scopes)?;
        if d.authorize_extra.is_empty() {
            return Ok(url);
        }
        let mut url = url::Url::parse(&url)
            .map_err(|_| ProviderError::Api(format!("{}'s configured authorize URL is not a URL", d.slug)))?;
        url.query_pairs_mut().extend_pairs(d.authorize_extra);
        Ok(url.into())
    }

    /// A POST of `form` to the token endpoint, the client authenticated in the provider's style,
    /// read as `T` (the standard [`TokenAnswer`], or one carrying the provider's own fields). A
    /// refusal (400, 401) is `refusal`'s error.
    pub async fn token<T: DeserializeOwned>(
        &self,
        client: &OauthClient,
        form: Vec<(&str, String)>,
        refusal: fn(String) -> ProviderError,
    ) -> Result<T, ProviderError> {
        let (slug, url) = (self.slug(), &self.config.endpoints.token);
        oauth::token_request_as(slug, &self.http, url, client, self.description.client_auth, form, refusal)
            .await
    }

    /// The token endpoint's answer to the callback's code; a refused code is `CredentialError`.
    pub async fn exchange_answer<T: DeserializeOwned>(
        &self,
        exchange: &CodeExchange,
    ) -> Result<T, ProviderError> {
        let form = oauth::authorization_code_form(exchange);
        self.token(&exchange.client, form, ProviderError::CredentialError).await
    }

    /// The credentials issued for the callback's code.
    pub async fn exchange(&self, exchange: &CodeExchange) -> Result<ProviderCredentials, ProviderError> {
        let now = Utc::now();
        let answer: TokenAnswer = self.exchange_answer(exchange).await?;
        Ok(answer.into_credentials(now, None))
    }

    /// New credentials from the refresh token, as the description says the provider renews them.
    pub async fn refresh(
        &self,
        client: &OauthClient,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        match self.description.refresh {
            Refresh::Token { extra } => {
                let extra = extra.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
                self.refresh_with(client, credentials, extra).await
            }
            Refresh::NotIssued => Err(ProviderError::Revoked(format!(
                "{} issues no refresh token and refused the access token",
                self.slug()
            ))),
        }
    }

    /// A refresh with `extra` form fields known only at the call (Dexcom's `redirect_uri`).
    pub async fn refresh_with(
        &self,
        client: &OauthClient,
        credentials: &ProviderCredentials,
        extra: Vec<(&'static str, String)>,
    ) -> Result<ProviderCredentials, ProviderError> {
        let (slug, url, auth) = (self.slug(), &self.config.endpoints.token, self.description.client_auth);
        oauth::refresh(slug, &self.http, url, client, auth, credentials, extra).await
    }

    /// The data API's URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.endpoints.api)
    }

    /// A GET of `path` with the user's access token, once `gate` admitted it; the answer as it
    /// came (for providers whose errors need a reading of their own, Strava's).
    pub async fn send_get<Q: serde::Serialize + ?Sized>(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        path: &str,
        query: &Q,
    ) -> Result<http::Answer, ProviderError> {
        let request = self.http.get(self.url(path)).bearer_auth(token).query(query);
        http::send_admitted(gate, self.slug(), request).await
    }

    /// [`Api::send_get`], its status read by [`http::check`].
    pub async fn get(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<http::Answer, ProviderError> {
        http::check(self.slug(), self.send_get(gate, token, path, query).await?)
    }

    /// [`Api::get`], the body read as `T`.
    pub async fn get_json<T: DeserializeOwned>(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, ProviderError> {
        self.get(gate, token, path, query).await?.json(self.slug())
    }
}

#[cfg(test)]
mod tests {
    use wearlab_domain::common::crypto::Secret;

    use super::*;

    static EXAMPLE: ProviderDescription = ProviderDescription {
        slug: "example",
        resources: &[Resource::Sleep],
        app_limits: &[],
        user_limits: &[],
        authorize_url: "https://example.com/oauth/authorize",
        token_url: "https://example.com/oauth/token",
        api_url: "https://api.example.com",
        scopes: "a b",
        authorize_extra: &[("access_type", "offline")],
        client_auth: ClientAuth::Body,
        refresh: Refresh::NotIssued,
    };

    fn api(var: impl Fn(&str) -> Option<String>) -> Api {
        Api::new(&EXAMPLE, EXAMPLE.config(var))
    }

    #[test]
    fn the_consent_page_carries_the_scopes_then_the_provider_s_own_parameters() {
        let request = AuthorizeRequest {
            client_id: "id".into(),
            redirect_uri: "https://w/cb".into(),
            state: "s".into(),
        };
        let url = api(|_| None).authorize_url(&request).unwrap();
        assert_eq!(
            url,
            "https://example.com/oauth/authorize?response_type=code&client_id=id&\
             redirect_uri=https%3A%2F%2Fw%2Fcb&scope=a+b&state=s&access_type=offline"
        );
    }

    #[test]
    fn configuration_overrides_the_real_hosts() {
        assert_eq!(api(|_| None).url("/v1/x"), "https://api.example.com/v1/x");
        let local = api(|k| (k == "WEARLAB_PROVIDER_EXAMPLE_API_URL").then(|| "http://127.0.0.1:9/".into()));
        assert_eq!(local.url("/v1/x"), "http://127.0.0.1:9/v1/x");
        assert_eq!(local.config.endpoints.token, EXAMPLE.token_url);
    }

    #[tokio::test]
    async fn a_provider_without_refresh_tokens_answers_revoked_without_a_call() {
        let client = OauthClient { client_id: "id".into(), client_secret: Secret::new("secret") };
        let credentials = ProviderCredentials {
            access_token: Secret::new("at"),
            refresh_token: None,
            expires_at: None,
            scopes: vec![],
        };
        // The token URL is never called: nothing listens there.
        let api = api(|k| (k == "WEARLAB_PROVIDER_EXAMPLE_TOKEN_URL").then(|| "http://127.0.0.1:9/t".into()));
        let refused = api.refresh(&client, &credentials).await.unwrap_err();
        assert!(matches!(&refused, ProviderError::Revoked(why) if why.contains("issues no refresh token")));
    }
}
