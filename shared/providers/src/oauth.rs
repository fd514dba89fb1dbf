//! The OAuth 2 token endpoint as most providers run it (RFC 6749): a form POST with the client
//! authenticated in the body or by HTTP Basic, answered with `{access_token, refresh_token,
//! expires_in, scope}`. Providers that wrap the answer (Withings) parse their own envelope and
//! reuse [`TokenAnswer::into_credentials`].

use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{OauthClient, ProviderCredentials, ProviderError};

use crate::http;

/// How the token endpoint authenticates the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `client_id` and `client_secret` as form fields.
    Body,
    /// `Authorization: Basic base64(client_id:client_secret)`.
    Basic,
    /// The client and every field in the URL's query string, the body empty (Wahoo's documented
    /// token request: https://cloud-api.wahooligan.com, "Authentication").
    Query,
}

/// The token endpoint's answer.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenAnswer {
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    #[serde(default)]
    pub expires_in: Option<i64>,
    /// Space- or comma-separated, as the provider writes it.
    #[serde(default)]
    pub scope: Option<String>,
    /// The provider's own fields beside the standard ones (Polar's `x_user_id`).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl TokenAnswer {
    /// Credentials issued `now`; `previous_refresh` is kept when the provider sent no new
    /// refresh token.
    pub fn into_credentials(
        self,
        now: DateTime<Utc>,
        previous_refresh: Option<&Secret>,
    ) -> ProviderCredentials {
        ProviderCredentials {
            access_token: Secret::new(self.access_token),
            refresh_token: self.refresh_token.map(Secret::new).or_else(|| previous_refresh.cloned()),
            expires_at: self.expires_in.map(|s| now + Duration::seconds(s)),
            scopes: self
                .scope
                .unwrap_or_default()
                .split([' ', ','])
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// POSTs `form` to the token endpoint `url` with `client` authenticated as `auth`. A 400 or
/// 401 (RFC 6749 `invalid_grant`, `invalid_client`) is `Revoked` for a refresh and
/// `CredentialError` for a code exchange, as `refusal` says; 429 and 5xx as any data call.
pub async fn token_request(
    provider: &str,
    http_client: &reqwest::Client,
    url: &str,
    client: &OauthClient,
    auth: ClientAuth,
    form: Vec<(&str, String)>,
    refusal: fn(String) -> ProviderError,
) -> Result<TokenAnswer, ProviderError> {
    token_request_as(provider, http_client, url, client, auth, form, refusal).await
}

/// [`token_request`] read as `T`: for providers whose token answer carries more than the
/// standard fields (Strava's `athlete`).
pub async fn token_request_as<T: serde::de::DeserializeOwned>(
    provider: &str,
    http_client: &reqwest::Client,
    url: &str,
    client: &OauthClient,
    auth: ClientAuth,
    mut form: Vec<(&str, String)>,
    refusal: fn(String) -> ProviderError,
) -> Result<T, ProviderError> {
    let mut request = http_client.post(url).header("accept", "application/json");
    match auth {
        ClientAuth::Body | ClientAuth::Query => {
            form.push(("client_id", client.client_id.clone()));
            form.push(("client_secret", client.client_secret.expose().to_owned()));
        }
        ClientAuth::Basic => {
            request = request.basic_auth(&client.client_id, Some(client.client_secret.expose()));
        }
    }
    let request = if auth == ClientAuth::Query {
        request.query(&form)
    } else {
        let body = serde_urlencoded::to_string(&form).map_err(|e| ProviderError::Api(e.to_string()))?;
        request.header("content-type", "application/x-www-form-urlencoded").body(body)
    };
    let answer = http::send(provider, request).await?;
    let status = answer.status.as_u16();
    if status == 400 || status == 401 {
        return Err(refusal(format!("{provider}'s token endpoint answered {status}")));
    }
    http::check(provider, answer)?.json(provider)
}

/// The consent page URL (RFC 6749 section 4.1.1): `authorize` with `response_type=code`, the
/// client, the callback, `scope` written as the provider separates it, and the state.
pub fn authorize_url(
    provider: &str,
    authorize: &str,
    request: &wearlab_domain::ports::providers::AuthorizeRequest,
    scope: &str,
) -> Result<String, ProviderError> {
    let mut url = url::Url::parse(authorize)
        .map_err(|_| ProviderError::Api(format!("{provider}'s configured authorize URL is not a URL")))?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &request.client_id)
        .append_pair("redirect_uri", &request.redirect_uri)
        .append_pair("scope", scope)
        .append_pair("state", &request.state);
    Ok(url.into())
}

/// The form of a code exchange (RFC 6749 section 4.1.3), without the client: the provider's
/// style adds it ([`token_request`]) or its own envelope does.
pub fn authorization_code_form(
    exchange: &wearlab_domain::ports::providers::CodeExchange,
) -> Vec<(&'static str, String)> {
    vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", exchange.code.expose().to_owned()),
        ("redirect_uri", exchange.redirect_uri.clone()),
    ]
}

/// Revokes with `call` on `credentials`; when the provider refuses the access token (expired),
/// once more on the credentials `refresh` gives. A refused refresh token means the grant is
/// already gone, which is what revoking asks for.
pub async fn revoke_refreshing<C, CF, R, RF>(
    credentials: &ProviderCredentials,
    call: C,
    refresh: R,
) -> Result<(), ProviderError>
where
    C: Fn(ProviderCredentials) -> CF,
    CF: std::future::Future<Output = Result<(), ProviderError>>,
    R: FnOnce() -> RF,
    RF: std::future::Future<Output = Result<ProviderCredentials, ProviderError>>,
{
    match call(credentials.clone()).await {
        Err(ProviderError::AccessTokenRefused) => match refresh().await {
            Ok(fresh) => call(fresh).await,
            Err(ProviderError::Revoked(_)) => Ok(()),
            Err(e) => Err(e),
        },
        other => other,
    }
}

/// A code exchange at the token endpoint `url`, the client authenticated as `auth`: the
/// credentials issued now. A refused code is `CredentialError`.
pub async fn exchange(
    provider: &str,
    http_client: &reqwest::Client,
    url: &str,
    exchange: &wearlab_domain::ports::providers::CodeExchange,
    auth: ClientAuth,
) -> Result<ProviderCredentials, ProviderError> {
    let form = authorization_code_form(exchange);
    let answer = token_request(
        provider,
        http_client,
        url,
        &exchange.client,
        auth,
        form,
        ProviderError::CredentialError,
    )
    .await?;
    Ok(answer.into_credentials(Utc::now(), None))
}

/// A refresh at the token endpoint `url` (RFC 6749 section 6): `grant_type=refresh_token`, the
/// refresh token, and the provider's `extra` fields. The provider's new refresh token is kept,
/// the old one when it returns none; a refused refresh, or credentials without a refresh token,
/// are `Revoked`.
pub async fn refresh(
    provider: &str,
    http_client: &reqwest::Client,
    url: &str,
    client: &OauthClient,
    auth: ClientAuth,
    credentials: &ProviderCredentials,
    extra: Vec<(&'static str, String)>,
) -> Result<ProviderCredentials, ProviderError> {
    let Some(refresh_token) = &credentials.refresh_token else {
        return Err(ProviderError::Revoked(format!("{provider} credentials hold no refresh token")));
    };
    let mut form = vec![
        ("grant_type", "refresh_token".to_owned()),
        ("refresh_token", refresh_token.expose().to_owned()),
    ];
    form.extend(extra);
    let now = Utc::now();
    let answer =
        token_request(provider, http_client, url, client, auth, form, ProviderError::Revoked).await?;
    Ok(answer.into_credentials(now, Some(refresh_token)))
}
