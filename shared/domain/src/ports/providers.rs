//! The `Providers` port: what a wearable or health-data provider does for Wearlab. The
//! simulator (`wearlab-sim`) implements it for every catalog provider; real HTTP adapters plug
//! in behind the same trait.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::{LinkErrorType, MfaMethod};

use crate::crypto::Secret;

/// What Wearlab holds to act for the user at the provider. Stored only sealed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderCredentials {
    pub access_token: Secret,
    #[serde(default)]
    pub refresh_token: Option<Secret>,
    /// When the access token stops working; `None` for tokens that do not expire.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// A provider account Wearlab can act for.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderAccount {
    /// The user's id at the provider.
    pub external_user_id: String,
    pub credentials: ProviderCredentials,
}

/// Username and password as the end user typed them (never stored, never logged).
#[derive(Debug, Clone)]
pub struct PasswordLogin {
    pub username: Secret,
    pub password: Secret,
    pub region: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LoginOutcome {
    Connected(ProviderAccount),
    /// The provider sent a one-time code; `session` continues the login with it.
    MfaRequired {
        method: MfaMethod,
        hint: String,
        session: Secret,
    },
}

/// An OAuth application: the platform's own or a team's.
#[derive(Debug, Clone, PartialEq)]
pub struct OauthClient {
    pub client_id: String,
    pub client_secret: Secret,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AuthorizeRequest {
    pub client_id: String,
    /// Wearlab's callback; the provider sends the browser back there.
    pub redirect_uri: String,
    /// Opaque value the provider returns unchanged on the callback.
    pub state: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CodeExchange {
    pub code: Secret,
    pub redirect_uri: String,
    pub client: OauthClient,
}

/// Inclusive range of calendar days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateRange {
    pub start: NaiveDate,
    pub end: NaiveDate,
}

impl DateRange {
    pub fn days(&self) -> impl Iterator<Item = NaiveDate> {
        let (start, end) = (self.start, self.end);
        start.iter_days().take_while(move |d| *d <= end)
    }
}

/// Data of one resource for a date range, as the provider gave it (normalised JSON records,
/// each with a `date` or a `timestamp`).
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedResource {
    pub resource: String,
    pub records: Vec<serde_json::Value>,
}

/// Why a provider refused. Messages never carry credentials or personal data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    #[error("the provider refused the credentials: {0}")]
    CredentialError(String),
    #[error("the provider requires a password change before login")]
    PasswordExpired,
    #[error("the provider's API failed: {0}")]
    Api(String),
    #[error("the provider does not serve region {0}")]
    UnsupportedRegion(String),
    #[error("required scopes were not granted: {}", .0.join(", "))]
    ScopesNotGranted(Vec<String>),
    #[error("the user cancelled at the provider")]
    UserCancelled,
    #[error("the one-time code is not the one the provider sent")]
    IncorrectMfaCode,
    /// The stored credentials no longer work (access revoked by the user, refresh token expired).
    #[error("the provider revoked access: {0}")]
    Revoked(String),
    /// The provider does not do this (e.g. password login to an OAuth provider).
    #[error("not supported by this provider: {0}")]
    Unsupported(String),
}

impl ProviderError {
    /// The Link result `error_type` for this refusal.
    pub fn link_error_type(&self) -> LinkErrorType {
        match self {
            Self::CredentialError(_) | Self::Revoked(_) => LinkErrorType::ProviderCredentialError,
            Self::PasswordExpired => LinkErrorType::ProviderPasswordExpired,
            Self::Api(_) | Self::Unsupported(_) => LinkErrorType::ProviderApiError,
            Self::UnsupportedRegion(_) => LinkErrorType::UnsupportedRegion,
            Self::ScopesNotGranted(_) => LinkErrorType::RequiredScopesNotGranted,
            Self::UserCancelled => LinkErrorType::UserCancelled,
            Self::IncorrectMfaCode => LinkErrorType::IncorrectMfaCode,
        }
    }
}

#[async_trait]
pub trait Providers: Send + Sync + 'static {
    /// Logs in with username and password; the provider may ask for a one-time code.
    async fn password_login(
        &self,
        provider: &str,
        login: PasswordLogin,
    ) -> Result<LoginOutcome, ProviderError>;

    /// Continues a login that asked for a one-time code.
    async fn complete_mfa(
        &self,
        provider: &str,
        session: &Secret,
        code: &str,
    ) -> Result<ProviderAccount, ProviderError>;

    /// The platform's own OAuth application for `provider`, if it has one (team_oauth
    /// providers have none: the team must register its own).
    fn platform_oauth_client(&self, provider: &str) -> Option<OauthClient>;

    /// Where to send the end user's browser to grant access.
    fn authorize_url(&self, provider: &str, request: &AuthorizeRequest) -> Result<String, ProviderError>;

    /// Exchanges the code the callback received for credentials.
    async fn exchange_code(
        &self,
        provider: &str,
        exchange: CodeExchange,
    ) -> Result<ProviderAccount, ProviderError>;

    /// Checks that credentials a team imports were issued to its OAuth application `client`
    /// (token introspection). `CredentialError` when they belong to another application or
    /// do not work; `Api` when the provider could not tell (retry later).
    async fn verify_app_token(
        &self,
        provider: &str,
        client: &OauthClient,
        credentials: &ProviderCredentials,
    ) -> Result<(), ProviderError>;

    /// New credentials from the refresh token.
    async fn refresh_credentials(
        &self,
        provider: &str,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError>;

    /// One resource's data for a range of days.
    async fn fetch(
        &self,
        provider: &str,
        account: &ProviderAccount,
        resource: &str,
        range: DateRange,
    ) -> Result<FetchedResource, ProviderError>;

    /// Tells the provider Wearlab no longer acts for the user (revokes the credentials).
    async fn deregister(
        &self,
        provider: &str,
        credentials: &ProviderCredentials,
    ) -> Result<(), ProviderError>;

    /// A demo account whose data is synthetic; `seed` makes it differ per user.
    async fn connect_demo(&self, provider: &str, seed: &str) -> Result<ProviderAccount, ProviderError>;
}
