//! Providers that behave like other providers except where a test or a benchmark says otherwise:
//! a fetch that fails or waits, denser data than the simulator gives, a revocation that fails.
//! Every method of the port is passed on here, once, so an alteration names only what it changes.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::NaiveDate;
use serde_json::Value;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::*;
use wearlab_models::{ProviderAvailability, Resource};

/// What an [`Altered`] changes about the providers it wraps. Each default changes nothing.
#[async_trait]
pub trait Alteration: Send + Sync + 'static {
    /// Runs before a fetch reaches the wrapped providers; an error is the fetch's answer.
    async fn before_fetch(
        &self,
        _provider: &str,
        _resource: &Resource,
        _range: DateRange,
    ) -> Result<(), ProviderError> {
        Ok(())
    }

    /// What the fetch answers, from what the wrapped providers answered.
    fn after_fetch(
        &self,
        _provider: &str,
        _resource: &Resource,
        _range: DateRange,
        fetched: FetchedResource,
    ) -> FetchedResource {
        fetched
    }

    /// Runs before a deregistration reaches the wrapped providers; an error is its answer.
    fn before_deregister(&self, _provider: &str) -> Result<(), ProviderError> {
        Ok(())
    }

    /// Runs after the wrapped providers deregistered.
    fn after_deregister(&self, _provider: &str) {}
}

/// `inner` with `alteration` applied. Derefs to the alteration, so a test reads its counters
/// through the same handle it gave the dependencies.
pub struct Altered<A> {
    inner: Arc<dyn Providers>,
    alteration: A,
}

impl<A: Alteration> Altered<A> {
    pub fn new(inner: Arc<dyn Providers>, alteration: A) -> Self {
        Self { inner, alteration }
    }
}

impl<A> std::ops::Deref for Altered<A> {
    type Target = A;

    fn deref(&self) -> &A {
        &self.alteration
    }
}

#[async_trait]
impl<A: Alteration> Providers for Altered<A> {
    async fn password_login(&self, p: &str, login: PasswordLogin) -> Result<LoginOutcome, ProviderError> {
        self.inner.password_login(p, login).await
    }

    async fn complete_mfa(
        &self,
        p: &str,
        session: &Secret,
        code: &str,
    ) -> Result<ProviderAccount, ProviderError> {
        self.inner.complete_mfa(p, session, code).await
    }

    fn platform_oauth_client(&self, p: &str) -> Option<OauthClient> {
        self.inner.platform_oauth_client(p)
    }

    fn authorize_url(&self, p: &str, request: &AuthorizeRequest) -> Result<String, ProviderError> {
        self.inner.authorize_url(p, request)
    }

    async fn exchange_code(&self, p: &str, exchange: CodeExchange) -> Result<ProviderAccount, ProviderError> {
        self.inner.exchange_code(p, exchange).await
    }

    async fn verify_app_token(
        &self,
        p: &str,
        client: &OauthClient,
        account: &ProviderAccount,
    ) -> Result<ProviderCredentials, ProviderError> {
        self.inner.verify_app_token(p, client, account).await
    }

    async fn refresh_credentials(
        &self,
        p: &str,
        client: Option<&OauthClient>,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        self.inner.refresh_credentials(p, client, credentials).await
    }

    async fn fetch(
        &self,
        p: &str,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        self.alteration.before_fetch(p, resource, range).await?;
        let fetched = self.inner.fetch(p, account, resource, range, gate).await?;
        Ok(self.alteration.after_fetch(p, resource, range, fetched))
    }

    async fn deregister(
        &self,
        p: &str,
        client: Option<&OauthClient>,
        account: &ProviderAccount,
    ) -> Result<(), ProviderError> {
        self.alteration.before_deregister(p)?;
        self.inner.deregister(p, client, account).await?;
        self.alteration.after_deregister(p);
        Ok(())
    }

    fn app_limits(&self, p: &str, credentials: &ProviderCredentials) -> Vec<RateWindow> {
        self.inner.app_limits(p, credentials)
    }

    fn user_limits(&self, p: &str, credentials: &ProviderCredentials) -> Vec<RateWindow> {
        self.inner.user_limits(p, credentials)
    }

    async fn prepare_push(&self, p: &str, request: &PushRequest) -> Result<(), ProviderError> {
        self.inner.prepare_push(p, request).await
    }

    fn push(&self, p: &str, client: Option<&OauthClient>, request: &PushRequest) -> PushOutcome {
        self.inner.push(p, client, request)
    }

    async fn after_link(
        &self,
        p: &str,
        account: &ProviderAccount,
        callback_url: &str,
    ) -> Result<(), ProviderError> {
        self.inner.after_link(p, account, callback_url).await
    }

    fn push_claimed_user(&self, p: &str, request: &PushRequest) -> Option<String> {
        self.inner.push_claimed_user(p, request)
    }

    fn push_sent_at(&self, p: &str, request: &PushRequest) -> Option<chrono::DateTime<chrono::Utc>> {
        self.inner.push_sent_at(p, request)
    }

    fn pushes(&self, p: &str) -> bool {
        self.inner.pushes(p)
    }

    async fn maintain_push_subscriptions(
        &self,
        public_url: &str,
    ) -> Vec<(String, Result<usize, ProviderError>)> {
        self.inner.maintain_push_subscriptions(public_url).await
    }

    fn availability(&self, p: &str) -> ProviderAvailability {
        self.inner.availability(p)
    }

    fn simulates(&self, p: &str, credentials: &ProviderCredentials) -> bool {
        self.inner.simulates(p, credentials)
    }

    fn resources(&self, p: &str) -> Option<&'static [Resource]> {
        self.inner.resources(p)
    }

    async fn connect_demo(&self, p: &str, seed: &str) -> Result<ProviderAccount, ProviderError> {
        self.inner.connect_demo(p, seed).await
    }
}

/// The simulator's hourly samples (`{timestamp, ...}` records) of the days `dense` picks as one
/// sample a second: each hour's record copied 3,600 times, a second apart. Other records stay.
pub fn one_second_samples(records: Vec<Value>, dense: impl Fn(NaiveDate) -> bool) -> Vec<Value> {
    records
        .into_iter()
        .flat_map(|hourly| {
            let at = hourly["timestamp"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
            let copies = match at {
                Some(at) if dense(at.date_naive()) => 3600,
                _ => 1,
            };
            (0..copies).map(move |s| {
                let mut record = hourly.clone();
                if let (Some(at), true) = (at, s > 0) {
                    record["timestamp"] = (at + chrono::Duration::seconds(s)).to_rfc3339().into();
                }
                record
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_second_samples_expand_only_the_dense_days() {
        let records = vec![
            serde_json::json!({"timestamp": "2026-03-01T10:00:00+00:00", "value": 60}),
            serde_json::json!({"timestamp": "2026-03-02T10:00:00+00:00", "value": 61}),
        ];
        let day: NaiveDate = "2026-03-02".parse().unwrap();
        let out = one_second_samples(records, |d| d == day);
        assert_eq!(out.len(), 1 + 3600);
        assert_eq!(out[0]["timestamp"], "2026-03-01T10:00:00+00:00");
        assert_eq!(out[1]["timestamp"], "2026-03-02T10:00:00+00:00");
        assert_eq!(out[3600]["timestamp"], "2026-03-02T10:59:59+00:00");
        assert!(out[1..].iter().all(|r| r["value"] == 61));
    }
}
