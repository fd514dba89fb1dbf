//! The `Providers` port: what a wearable or health-data provider does for Wearlab. The
//! simulator (`wearlab-sim`) implements it for every catalog provider; real HTTP adapters plug
//! in behind the same trait.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::{LinkErrorType, MfaMethod, ProviderAvailability, Resource};

use crate::common::crypto::Secret;

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
    pub resource: Resource,
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
    /// The provider refused the access token of a data call (HTTP 401): expired early or
    /// revoked. The caller refreshes the credentials once and retries; a refusal of the
    /// refresh itself is `Revoked`.
    #[error("the provider refused the access token")]
    AccessTokenRefused,
    /// The provider's rate limit (its 429): try again after `retry_after_secs`.
    #[error("the provider's rate limit is reached; retry in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
}

impl ProviderError {
    /// The Link result `error_type` for this refusal.
    pub fn link_error_type(&self) -> LinkErrorType {
        match self {
            Self::CredentialError(_) | Self::Revoked(_) => LinkErrorType::ProviderCredentialError,
            Self::PasswordExpired => LinkErrorType::ProviderPasswordExpired,
            Self::Api(_) | Self::Unsupported(_) | Self::AccessTokenRefused | Self::RateLimited { .. } => {
                LinkErrorType::ProviderApiError
            }
            Self::UnsupportedRegion(_) => LinkErrorType::UnsupportedRegion,
            Self::ScopesNotGranted(_) => LinkErrorType::RequiredScopesNotGranted,
            Self::UserCancelled => LinkErrorType::UserCancelled,
            Self::IncorrectMfaCode => LinkErrorType::IncorrectMfaCode,
        }
    }
}

/// A request a provider sent to Wearlab's push endpoint (`/v2/provider_webhooks/{provider}`),
/// as the edge received it. Header names are lower case; the body is the raw bytes (signatures
/// are computed over them).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PushRequest {
    pub method: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl PushRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// New or changed data at the provider for one of its users: what to fetch again.
#[derive(Debug, Clone, PartialEq)]
pub struct PushNotice {
    /// The user's id at the provider (finds the connection).
    pub external_user_id: String,
    /// Catalog resources to fetch again (e.g. `sleep`, `workouts`).
    pub resources: Vec<Resource>,
    /// The days concerned, when the provider says; else the caller picks a recent window.
    pub range: Option<DateRange>,
}

/// What a push request means.
#[derive(Debug, Clone, PartialEq)]
pub enum PushOutcome {
    /// The provider's verification handshake: answer `status` with the JSON `body` (or an
    /// empty body when `None`).
    Handshake { status: u16, body: Option<serde_json::Value> },
    /// Data changed: fetch again (may be empty, e.g. a deletion Wearlab does not model).
    Notices(Vec<PushNotice>),
    /// Unsigned, badly signed, stale or unreadable: refused, nothing changes. The reason is
    /// for logs and holds no credential.
    Refused(String),
    /// The provider's user took Wearlab's access away at the provider (Strava's athlete
    /// deauthorisation): the user's connections are marked so, and no longer pulled.
    Deauthorized { external_user_id: String },
}

/// One published request limit of a provider's API for one OAuth application (all its users):
/// at most `requests` per `window_secs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateWindow {
    pub requests: u32,
    pub window_secs: u32,
}

/// Admits each HTTP request a provider adapter sends while it fetches: every page, every
/// activity's streams, every day of intraday data is one request, admitted BEFORE it is sent.
/// The pipeline's gate counts each against the provider's published limits for the OAuth app
/// and for the provider's user (`throttle::take_app`, `throttle::take_user`); over them it
/// answers `RateLimited` until the fullest window turns over, and the fetch stops there, as on
/// the provider's own 429.
#[async_trait]
pub trait RequestGate: Send + Sync {
    /// One more request may be sent now, or `RateLimited { retry_after_secs }`.
    async fn admit(&self) -> Result<(), ProviderError>;
}

/// The gate of a caller with no limit to keep (a tool, a test): admits every request.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLimit;

#[async_trait]
impl RequestGate for NoLimit {
    async fn admit(&self) -> Result<(), ProviderError> {
        Ok(())
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

    /// Checks that credentials a team imports were issued to its OAuth application `client`,
    /// by the provider's own means: a refresh with `client` where a refresh token is given
    /// (a token of another application is refused), else one authenticated call. Answers the
    /// credentials of `account` to store: the refreshed ones when the check refreshed them (the provider may
    /// have rotated the refresh token). `CredentialError` when they belong to another
    /// application or do not work; `Api` when the provider could not tell (retry later);
    /// `RateLimited` when the provider's limit is reached.
    async fn verify_app_token(
        &self,
        provider: &str,
        client: &OauthClient,
        account: &ProviderAccount,
    ) -> Result<ProviderCredentials, ProviderError>;

    /// New credentials from the refresh token. `client` is the OAuth application the
    /// credentials were issued to: a team's own app, or `None` for the platform's.
    async fn refresh_credentials(
        &self,
        provider: &str,
        client: Option<&OauthClient>,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError>;

    /// One resource's data for a range of days. Every HTTP request sent to a real provider for
    /// it is admitted by `gate` first (the simulator sends none).
    async fn fetch(
        &self,
        provider: &str,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError>;

    /// Tells the provider Wearlab no longer acts for the user (revokes the credentials).
    /// `client` as for [`Providers::refresh_credentials`].
    /// `account` carries the provider's user id (Withings revokes by it).
    async fn deregister(
        &self,
        provider: &str,
        client: Option<&OauthClient>,
        account: &ProviderAccount,
    ) -> Result<(), ProviderError>;

    /// The provider's published limits for one OAuth app, when `credentials` reach the real
    /// provider (none for the simulator).
    fn app_limits(&self, _provider: &str, _credentials: &ProviderCredentials) -> Vec<RateWindow> {
        vec![]
    }

    /// The provider's published limits for one of its users (all that user's requests, every
    /// app), when `credentials` reach the real provider (none for the simulator and for
    /// providers that publish none).
    fn user_limits(&self, _provider: &str, _credentials: &ProviderCredentials) -> Vec<RateWindow> {
        vec![]
    }

    /// Fetches what checking a push of `provider` needs, before [`Providers::push`] reads it
    /// without I/O (Google Health: the public keys its notifications are signed with). A failure
    /// means the push cannot be checked now; the provider retries it. Nothing by default.
    async fn prepare_push(&self, _provider: &str, _request: &PushRequest) -> Result<(), ProviderError> {
        Ok(())
    }

    /// Reads a request `provider` sent to Wearlab's push endpoint: its handshake, notices of
    /// changed data (signature checked with `client`'s secret: a team's own OAuth app, or the
    /// platform's app when `None`), or a refusal. Providers without push refuse.
    fn push(&self, _provider: &str, _client: Option<&OauthClient>, _request: &PushRequest) -> PushOutcome {
        PushOutcome::Refused("this provider sends no push notifications here".into())
    }

    /// Per-user set-up at a real provider once an OAuth link is stored, e.g. subscribing the
    /// user's notifications to `callback_url` (Withings). Nothing for the simulator and for
    /// providers without such set-up; the caller treats a failure as best effort.
    async fn after_link(
        &self,
        _provider: &str,
        _account: &ProviderAccount,
        _callback_url: &str,
    ) -> Result<(), ProviderError> {
        Ok(())
    }

    /// The provider user id a push claims to be about, read from the request without checking
    /// its signature (nothing is trusted yet): it only names the connections whose OAuth apps'
    /// secrets the signature is then checked with. `None` when the provider's pushes are signed
    /// with the platform's app alone (or name no user before their signature checks).
    fn push_claimed_user(&self, _provider: &str, _request: &PushRequest) -> Option<String> {
        None
    }

    /// When the push says it was sent (Polar's signed `timestamp`), read from the request without
    /// checking it; `None` when the provider's pushes say nothing the push use case can check
    /// (WHOOP's signed timestamp is checked by its adapter). A push that names it is refused
    /// outside the push use case's window (5 minutes either way) and read once.
    fn push_sent_at(&self, _provider: &str, _request: &PushRequest) -> Option<chrono::DateTime<chrono::Utc>> {
        None
    }

    /// The least time between two scheduled polls of a connection of `provider` (a provider
    /// that asks to be polled daily: Ultrahuman). `None`, the default: every scheduled run
    /// polls it. A refresh polls regardless.
    fn poll_interval(&self, _provider: &str) -> Option<std::time::Duration> {
        None
    }

    /// Whether `provider` sends push notifications on this deployment. `false` (a real provider
    /// without webhooks, e.g. Dexcom) makes the push endpoint refuse its pushes as unknown rather
    /// than as unsigned. The simulator, and every provider by default: `true`.
    fn pushes(&self, _provider: &str) -> bool {
        true
    }

    /// Creates or renews the app-wide push subscriptions of every real provider that has them,
    /// pointing at `<public_url>/v2/provider_webhooks/<provider>`. Per provider: how many were
    /// created or renewed, or why not.
    async fn maintain_push_subscriptions(
        &self,
        _public_url: &str,
    ) -> Vec<(String, Result<usize, ProviderError>)> {
        vec![]
    }

    /// How `provider` can be linked on this deployment: `Live` where a real adapter serves it,
    /// else `Simulated` where the deployment lets simulated providers be linked (the local
    /// stack, a demo deployment), else `DemoOnly`: nothing but a demo connection, so that no
    /// user's link ever receives synthetic data presented as theirs. The simulator alone (as
    /// tests and benches use it): `Simulated`.
    fn availability(&self, _provider: &str) -> ProviderAvailability {
        ProviderAvailability::Simulated
    }

    /// Whether `credentials` of `provider` reach the simulator rather than the provider, so the
    /// connection's data is synthetic (the simulator alone: always).
    fn simulates(&self, _provider: &str, _credentials: &ProviderCredentials) -> bool {
        true
    }

    /// The resources a real link of `provider` fills, where this build has an adapter for it
    /// (configured or not); `None` where the catalog's reference data says (the simulator fills
    /// every resource it lists).
    fn resources(&self, _provider: &str) -> Option<&'static [Resource]> {
        None
    }

    /// A demo account whose data is synthetic; `seed` makes it differ per user.
    async fn connect_demo(&self, provider: &str, seed: &str) -> Result<ProviderAccount, ProviderError>;
}
