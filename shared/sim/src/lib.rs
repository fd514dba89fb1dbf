//! Simulated providers: the `Providers` port for every provider of the catalog, deterministic,
//! so that `make run`, the tests and demo connections need no provider account. Which inputs
//! lead to which outcome is documented in `docs/SIMULATED_PROVIDERS.md`; the constants below
//! are the single source of those inputs.
//!
//! The OAuth consent "at the provider" is a page of this crate ([`routes`]), served by the API
//! process under `/v2/link/sim/oauth/{provider}/authorize`. `Altered` (the `test-support`
//! feature) wraps providers for tests and benchmarks that need one to fail, wait or give denser
//! data.

#[cfg(feature = "test-support")]
mod altered;
mod consent;
#[cfg(feature = "consent")]
mod consent_page;
mod data;
mod lab;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Duration as Span;
use sha2::{Digest, Sha256};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::provider_catalog::catalog;
use wearlab_domain::ports::Clock;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, FetchedResource, LoginOutcome, OauthClient, PasswordLogin,
    ProviderAccount, ProviderCredentials, ProviderError, Providers, RequestGate,
};
use wearlab_models::{AuthType, MfaMethod, Resource};

#[cfg(feature = "test-support")]
pub use altered::{Alteration, Altered, one_second_samples};
pub use consent::CONSENT_PATH;
#[cfg(feature = "consent")]
pub use consent_page::routes;
pub use lab::{REFUSED_ZIP, SimulatedLab};

/// Username fragments (case-insensitive) that decide a password login.
pub const BAD_CREDENTIALS: &str = "bad-credentials";
pub const PASSWORD_EXPIRED: &str = "password-expired";
pub const API_ERROR: &str = "api-error";
pub const MFA_SMS: &str = "mfa-sms";
pub const MFA_EMAIL: &str = "mfa-email";
/// A password that is always refused.
pub const WRONG_PASSWORD: &str = "wrong-password";
/// The one-time code that completes MFA; `MFA_CODE_API_ERROR` makes the provider fail.
pub const MFA_CODE: &str = "123456";
pub const MFA_CODE_API_ERROR: &str = "000000";
/// Behaviour flags: in a password username or an OAuth consent's `account`, they shape what
/// the connection does later.
pub const FLAG_REFRESH_REVOKED: &str = "refresh-revoked";
pub const FLAG_FETCH_ERROR: &str = "fetch-error";
pub const FLAG_SLOW: &str = "slow";
pub const FLAG_DEREGISTER_ERROR: &str = "deregister-error";
/// The provider's token introspection fails (a transient error) for such a token.
pub const FLAG_VERIFY_ERROR: &str = "verify-error";
const FLAGS: [&str; 5] =
    [FLAG_REFRESH_REVOKED, FLAG_FETCH_ERROR, FLAG_SLOW, FLAG_DEREGISTER_ERROR, FLAG_VERIFY_ERROR];
/// How long a `slow` account takes per resource fetch.
pub const SLOW_FETCH: Duration = Duration::from_secs(20);
/// Lifetime of simulated access tokens.
pub const ACCESS_TOKEN_MINUTES: i64 = 60;
/// Secret of the simulated platform OAuth apps.
const PLATFORM_SECRET: &str = "sim-platform-secret";

/// The simulator. Times (token expiry) follow `clock`, so tests on a manual clock see tokens
/// expire when they move it.
#[derive(Clone)]
pub struct SimProviders {
    clock: Arc<dyn Clock>,
}

impl SimProviders {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self { clock }
    }
}

/// The simulator on the system clock: what every deployment uses until real provider adapters
/// exist (each `main.rs` passes it to `wearlab_aws::deps_from_env`).
pub fn providers() -> Arc<dyn Providers> {
    Arc::new(SimProviders::new(Arc::new(wearlab_domain::ports::SystemClock)))
}

pub(crate) fn short_hash(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())[..12].to_owned()
}

fn flags_of(s: &str) -> Vec<&'static str> {
    let s = s.to_ascii_lowercase();
    FLAGS.iter().copied().filter(|f| s.contains(f)).collect()
}

/// What an access token says about its account: `sim:<provider>:<flags>:<nonce>[:<client_id>]`,
/// the client id naming the OAuth application it was issued to (none for password and demo
/// accounts). Flags are `-` or `+`-joined behaviour flags.
struct TokenInfo {
    provider: String,
    flags: Vec<String>,
    client_id: Option<String>,
}

fn parse_token(token: &str) -> Option<TokenInfo> {
    let mut parts = token.splitn(5, ':');
    if parts.next()? != "sim" {
        return None;
    }
    let provider = parts.next()?.to_owned();
    let flags = parts.next()?.split('+').filter(|f| !f.is_empty() && *f != "-").map(str::to_owned).collect();
    parts.next()?;
    let client_id = parts.next().map(str::to_owned);
    Some(TokenInfo { provider, flags, client_id })
}

/// Credentials the simulator issued (demo, password and simulated OAuth accounts): they stay
/// with the simulator even when a real adapter serves their provider.
pub fn is_simulated(credentials: &ProviderCredentials) -> bool {
    credentials.access_token.expose().starts_with("sim:")
}

/// An access token of `provider` issued to the OAuth application `client_id`, as a team's own
/// systems would hold it before a bulk import (tests and the documentation use it).
pub fn app_access_token(provider: &str, client_id: &str, flags: &[&str], account: &str) -> String {
    let flag_text = if flags.is_empty() { "-".to_owned() } else { flags.join("+") };
    format!("sim:{provider}:{flag_text}:{}:{client_id}", short_hash(&[provider, account]))
}

impl SimProviders {
    fn credentials(
        &self,
        provider: &str,
        flags: &[&str],
        expiring: bool,
        client_id: Option<&str>,
    ) -> ProviderCredentials {
        let now = self.clock.now();
        let flag_text = if flags.is_empty() { "-".to_owned() } else { flags.join("+") };
        let nonce = short_hash(&[provider, &flag_text, &uuid_like()]);
        let client = client_id.map(|c| format!(":{c}")).unwrap_or_default();
        let expires_at = if !expiring {
            None
        } else if flags.contains(&FLAG_REFRESH_REVOKED) {
            // Already expired: the first refresh renews it, and the renewal is refused.
            Some(now - Span::seconds(1))
        } else {
            Some(now + Span::minutes(ACCESS_TOKEN_MINUTES))
        };
        ProviderCredentials {
            access_token: Secret::new(format!("sim:{provider}:{flag_text}:{nonce}{client}")),
            refresh_token: expiring.then(|| Secret::new(format!("simr:{provider}:{flag_text}:{nonce}"))),
            expires_at,
            scopes: vec!["read".into()],
        }
    }

    fn account(
        &self,
        provider: &str,
        identity: &str,
        flags: &[&str],
        client_id: Option<&str>,
    ) -> ProviderAccount {
        ProviderAccount {
            external_user_id: format!(
                "{provider}-{}",
                short_hash(&[provider, &identity.to_ascii_lowercase()])
            ),
            credentials: self.credentials(provider, flags, true, client_id),
        }
    }
}

/// Random enough for token nonces (not a secret: the simulator's tokens grant nothing).
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{t}-{n}")
}

fn known(
    provider: &str,
) -> Result<&'static wearlab_domain::common::provider_catalog::ProviderInfo, ProviderError> {
    catalog().get(provider).ok_or_else(|| ProviderError::Unsupported(format!("unknown provider {provider}")))
}

/// `+1 *** *** **NN` with two digits that depend on the username.
fn sms_hint(username: &str) -> String {
    let h = short_hash(&["sms", &username.to_ascii_lowercase()]);
    let n = u8::from_str_radix(&h[..2], 16).unwrap_or(0) % 100;
    format!("+1 *** *** **{n:02}")
}

/// The username's address with all but its first letters hidden (`j***@e******.com`), or a
/// fixed redacted address when the username is not an address.
fn email_hint(username: &str) -> String {
    let redact = |s: &str| {
        let mut c = s.chars();
        match c.next() {
            Some(first) => format!("{first}{}", "*".repeat(c.count().max(3))),
            None => "***".into(),
        }
    };
    match username.split_once('@') {
        Some((local, domain)) if !local.is_empty() && domain.contains('.') => {
            let (name, tld) = domain.rsplit_once('.').unwrap_or((domain, ""));
            format!("{}@{}.{tld}", redact(local), redact(name))
        }
        _ => "u***@e******.com".into(),
    }
}

#[async_trait]
impl Providers for SimProviders {
    async fn password_login(
        &self,
        provider: &str,
        login: PasswordLogin,
    ) -> Result<LoginOutcome, ProviderError> {
        let p = known(provider)?;
        if !p.is(&AuthType::Password) {
            return Err(ProviderError::Unsupported(format!("{provider} does not log in by password")));
        }
        let username = login.username.expose().to_ascii_lowercase();
        if username.contains(BAD_CREDENTIALS) || login.password.expose() == WRONG_PASSWORD {
            return Err(ProviderError::CredentialError("username or password not recognised".into()));
        }
        if username.contains(PASSWORD_EXPIRED) {
            return Err(ProviderError::PasswordExpired);
        }
        if username.contains(API_ERROR) {
            return Err(ProviderError::Api("the provider answered 503".into()));
        }
        if let Some(region) = &login.region
            && let Some(served) = &p.regions
            && !served.iter().any(|r| r == region)
        {
            return Err(ProviderError::UnsupportedRegion(region.clone()));
        }
        let method = if username.contains(MFA_SMS) {
            Some(MfaMethod::Sms)
        } else if username.contains(MFA_EMAIL) {
            Some(MfaMethod::Email)
        } else {
            None
        };
        match method {
            Some(method) => {
                let hint = if method == MfaMethod::Sms { sms_hint(&username) } else { email_hint(&username) };
                let session = format!("mfa:{provider}:{}", hex::encode(username.as_bytes()));
                Ok(LoginOutcome::MfaRequired { method, hint, session: Secret::new(session) })
            }
            None => {
                Ok(LoginOutcome::Connected(self.account(provider, &username, &flags_of(&username), None)))
            }
        }
    }

    async fn complete_mfa(
        &self,
        provider: &str,
        session: &Secret,
        code: &str,
    ) -> Result<ProviderAccount, ProviderError> {
        let mut parts = session.expose().splitn(3, ':');
        let (Some("mfa"), Some(p), Some(user_hex)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(ProviderError::Api("unknown MFA session".into()));
        };
        if p != provider {
            return Err(ProviderError::Api("MFA session of another provider".into()));
        }
        let username = hex::decode(user_hex)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| ProviderError::Api("unknown MFA session".into()))?;
        match code {
            MFA_CODE => Ok(self.account(provider, &username, &flags_of(&username), None)),
            MFA_CODE_API_ERROR => Err(ProviderError::Api("the provider failed to check the code".into())),
            _ => Err(ProviderError::IncorrectMfaCode),
        }
    }

    fn platform_oauth_client(&self, provider: &str) -> Option<OauthClient> {
        let p = catalog().get(provider)?;
        p.is(&AuthType::Oauth).then(|| OauthClient {
            client_id: format!("wearlab-sim-{provider}"),
            client_secret: Secret::new(PLATFORM_SECRET),
        })
    }

    fn authorize_url(&self, provider: &str, request: &AuthorizeRequest) -> Result<String, ProviderError> {
        let p = known(provider)?;
        if !p.is_oauth() {
            return Err(ProviderError::Unsupported(format!("{provider} does not link by OAuth")));
        }
        Ok(consent::authorize_url(provider, request))
    }

    async fn exchange_code(
        &self,
        provider: &str,
        exchange: CodeExchange,
    ) -> Result<ProviderAccount, ProviderError> {
        known(provider)?;
        let grant = consent::Grant::decode(exchange.code.expose())
            .ok_or_else(|| ProviderError::Api("invalid_grant: unknown authorization code".into()))?;
        if grant.provider != provider || grant.client_id != exchange.client.client_id {
            return Err(ProviderError::Api("invalid_grant: code issued to another client".into()));
        }
        if exchange.client.client_secret.expose().is_empty() {
            return Err(ProviderError::Api("invalid_client".into()));
        }
        match grant.decision.as_str() {
            consent::ALLOW => {
                let flags = flags_of(&grant.account);
                Ok(self.account(provider, &grant.account, &flags, Some(&exchange.client.client_id)))
            }
            consent::PARTIAL => Err(ProviderError::ScopesNotGranted(vec!["read_health".into()])),
            _ => Err(ProviderError::Api("the provider's token endpoint answered 500".into())),
        }
    }

    async fn refresh_credentials(
        &self,
        provider: &str,
        _client: Option<&OauthClient>,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        let info = parse_token(credentials.access_token.expose())
            .filter(|t| t.provider == provider)
            .ok_or_else(|| ProviderError::Revoked("unknown token".into()))?;
        if info.flags.iter().any(|f| f == FLAG_REFRESH_REVOKED) {
            return Err(ProviderError::Revoked("the user revoked access".into()));
        }
        let flags: Vec<&str> = FLAGS.iter().copied().filter(|f| info.flags.iter().any(|g| g == f)).collect();
        Ok(self.credentials(provider, &flags, credentials.refresh_token.is_some(), info.client_id.as_deref()))
    }

    async fn verify_app_token(
        &self,
        provider: &str,
        client: &OauthClient,
        account: &ProviderAccount,
    ) -> Result<ProviderCredentials, ProviderError> {
        known(provider)?;
        let credentials = &account.credentials;
        let info = parse_token(credentials.access_token.expose())
            .ok_or_else(|| ProviderError::CredentialError("the provider does not know this token".into()))?;
        if info.flags.iter().any(|f| f == FLAG_VERIFY_ERROR) {
            return Err(ProviderError::Api("the provider's token introspection answered 500".into()));
        }
        if info.provider != provider {
            return Err(ProviderError::CredentialError("the token is for another provider".into()));
        }
        if info.client_id.as_deref() != Some(client.client_id.as_str()) {
            return Err(ProviderError::CredentialError(
                "the token was not issued to the team's OAuth application".into(),
            ));
        }
        Ok(credentials.clone())
    }

    async fn fetch(
        &self,
        provider: &str,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        _gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        let p = known(provider)?;
        let info = parse_token(account.credentials.access_token.expose())
            .filter(|t| t.provider == provider)
            .ok_or_else(|| ProviderError::Revoked("unknown token".into()))?;
        if account.credentials.expires_at.is_some_and(|t| t <= self.clock.now()) {
            return Err(ProviderError::Revoked("access token expired".into()));
        }
        if !p.supported_resources.contains(resource) {
            return Err(ProviderError::Unsupported(format!("{provider} has no {resource}")));
        }
        if info.flags.iter().any(|f| f == FLAG_SLOW) {
            tokio::time::sleep(SLOW_FETCH).await;
        }
        if info.flags.iter().any(|f| f == FLAG_FETCH_ERROR) {
            return Err(ProviderError::Api("the provider's data API answered 500".into()));
        }
        let mut records = data::records(provider, &account.external_user_id, resource, range);
        data::as_of(resource, &mut records, self.clock.now());
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    async fn deregister(
        &self,
        provider: &str,
        _client: Option<&OauthClient>,
        account: &ProviderAccount,
    ) -> Result<(), ProviderError> {
        let info = parse_token(account.credentials.access_token.expose())
            .filter(|t| t.provider == provider)
            .ok_or_else(|| ProviderError::Api("unknown token".into()))?;
        if info.flags.iter().any(|f| f == FLAG_DEREGISTER_ERROR) {
            return Err(ProviderError::Api("the provider's deauthorization endpoint answered 500".into()));
        }
        Ok(())
    }

    async fn connect_demo(&self, provider: &str, seed: &str) -> Result<ProviderAccount, ProviderError> {
        known(provider)?;
        Ok(ProviderAccount {
            external_user_id: format!("demo-{provider}-{}", short_hash(&["demo", provider, seed])),
            credentials: self.credentials(provider, &[], false, None),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wearlab_domain::ports::ManualClock;
    use wearlab_domain::ports::providers::NoLimit;

    fn sim() -> SimProviders {
        SimProviders::new(Arc::new(ManualClock::new(chrono::Utc::now())))
    }

    fn login(username: &str, password: &str) -> PasswordLogin {
        PasswordLogin { username: Secret::new(username), password: Secret::new(password), region: None }
    }

    #[tokio::test]
    async fn password_outcomes() {
        let s = sim();
        let ok = s.password_login("peloton", login("jane", "pw")).await.unwrap();
        let LoginOutcome::Connected(a) = ok else { panic!("{ok:?}") };
        let LoginOutcome::Connected(b) = s.password_login("peloton", login("JANE", "other")).await.unwrap()
        else {
            panic!()
        };
        assert_eq!(a.external_user_id, b.external_user_id, "same account for the same username");
        for (user, pw, want) in [
            (
                "bad-credentials",
                "pw",
                ProviderError::CredentialError("username or password not recognised".into()),
            ),
            (
                "x",
                WRONG_PASSWORD,
                ProviderError::CredentialError("username or password not recognised".into()),
            ),
            ("password-expired", "pw", ProviderError::PasswordExpired),
            ("api-error", "pw", ProviderError::Api("the provider answered 503".into())),
        ] {
            assert_eq!(s.password_login("zwift", login(user, pw)).await.unwrap_err(), want);
        }
        assert!(matches!(
            s.password_login("oura", login("jane", "pw")).await.unwrap_err(),
            ProviderError::Unsupported(_)
        ));
    }

    #[tokio::test]
    async fn mfa_round_trip() {
        let s = sim();
        let out = s.password_login("whoop", login("jane.mfa-email@example.com", "pw")).await.unwrap();
        let LoginOutcome::MfaRequired { method, hint, session } = out else { panic!() };
        assert_eq!(method, MfaMethod::Email);
        assert_eq!(hint, "j*************@e******.com");
        assert!(!format!("{session:?}").contains("jane"));
        assert_eq!(
            s.complete_mfa("whoop", &session, "111111").await.unwrap_err(),
            ProviderError::IncorrectMfaCode
        );
        assert!(matches!(
            s.complete_mfa("whoop", &session, MFA_CODE_API_ERROR).await,
            Err(ProviderError::Api(_))
        ));
        let a = s.complete_mfa("whoop", &session, MFA_CODE).await.unwrap();
        assert!(a.external_user_id.starts_with("whoop-"));
        let sms = s.password_login("whoop", login("mfa-sms", "pw")).await.unwrap();
        let LoginOutcome::MfaRequired { method, hint, .. } = sms else { panic!() };
        assert_eq!(method, MfaMethod::Sms);
        assert!(hint.starts_with("+1 *** *** **"));
    }

    #[tokio::test]
    async fn fetch_is_deterministic_and_flags_apply() {
        let s = sim();
        let LoginOutcome::Connected(a) = s.password_login("renpho", login("jane", "pw")).await.unwrap()
        else {
            panic!()
        };
        let d = |s: &str| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        let range = DateRange { start: d("2026-01-01"), end: d("2026-01-03") };
        let one = s.fetch("renpho", &a, &Resource::Weight, range, &NoLimit).await.unwrap();
        let two = s.fetch("renpho", &a, &Resource::Weight, range, &NoLimit).await.unwrap();
        assert_eq!(one, two);
        assert_eq!(one.records.len(), 3 * 24);
        let body = s.fetch("renpho", &a, &Resource::Body, range, &NoLimit).await.unwrap();
        assert_eq!(body.records.len(), 3);
        assert!(
            s.fetch("renpho", &a, &Resource::Sleep, range, &NoLimit).await.is_err(),
            "unsupported resource"
        );
        let LoginOutcome::Connected(bad) =
            s.password_login("renpho", login("x-fetch-error", "pw")).await.unwrap()
        else {
            panic!()
        };
        assert!(matches!(
            s.fetch("renpho", &bad, &Resource::Weight, range, &NoLimit).await,
            Err(ProviderError::Api(_))
        ));
        let LoginOutcome::Connected(rev) =
            s.password_login("renpho", login("refresh-revoked", "pw")).await.unwrap()
        else {
            panic!()
        };
        assert!(matches!(
            s.refresh_credentials("renpho", None, &rev.credentials).await,
            Err(ProviderError::Revoked(_))
        ));
        let fresh = s.refresh_credentials("renpho", None, &a.credentials).await.unwrap();
        assert_ne!(fresh.access_token, a.credentials.access_token);
    }

    #[test]
    fn hints_are_redacted() {
        assert_eq!(email_hint("ab@cd.org"), "a***@c***.org");
        assert_eq!(email_hint("plain"), "u***@e******.com");
        assert!(!sms_hint("whoever").contains("whoever"));
    }
}
