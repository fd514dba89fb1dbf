//! The webhook sender: the `WebhookSender` port on reqwest, each request guarded by the webhook
//! URL policy (`guard`: no private, loopback or link-local address, checked again on the
//! resolved address), with a bounded number of deliveries in flight per endpoint. (The real
//! provider adapters speak HTTP too; they are in `wearlab-providers`.)

pub mod guard;

use std::sync::Arc;

use async_trait::async_trait;
use wearlab_domain::common::per_key::PerKey;
use wearlab_domain::common::settings::DEFAULT_WEBHOOK_IN_FLIGHT;
use wearlab_domain::ports::WebhookSender;
use wearlab_domain::webhooks::TIMEOUT;
use wearlab_domain::webhooks::url::{self as webhook_url, UrlPolicy};

use guard::{GuardedResolver, NOT_ALLOWED};
use tokio::sync::Semaphore;

/// POSTs with a 15 s deadline; redirects are not followed (a receiver must answer itself, and a
/// redirect could point anywhere). Only to destinations the policy allows, checked on the URL
/// and again on every address its host resolves to; no proxy, so that is where it connects.
pub struct HttpSender {
    client: reqwest::Client,
    policy: UrlPolicy,
    /// Per endpoint URL, at most `WEARLAB_WEBHOOK_IN_FLIGHT` POSTs at once from this process; the
    /// others wait for a slot (their time counts against the deadline only once they are sent).
    slots: PerKey<Semaphore>,
}

impl HttpSender {
    pub fn new(policy: UrlPolicy) -> Self {
        Self::with_resolver(policy, GuardedResolver::new(policy))
    }

    /// This sender with at most `n` POSTs at once to one endpoint URL (at least 1): the
    /// settings' `webhook_in_flight`.
    pub fn with_in_flight(mut self, n: usize) -> Self {
        self.slots = slots(n);
        self
    }

    /// A sender whose host names resolve through `resolver` (tests give fixed answers).
    pub fn with_resolver(policy: UrlPolicy, resolver: GuardedResolver) -> Self {
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(resolver))
            .user_agent("Wearlab-Webhooks/1")
            .build()
            .expect("the HTTP client builds");
        Self { client, policy, slots: slots(DEFAULT_WEBHOOK_IN_FLIGHT) }
    }
}

/// A semaphore of `n` slots (at least 1) per endpoint URL.
fn slots(n: usize) -> PerKey<Semaphore> {
    let n = n.max(1);
    PerKey::new(move || Semaphore::new(n))
}

#[async_trait]
impl WebhookSender for HttpSender {
    async fn post(
        &self,
        url: &str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    ) -> Result<u16, String> {
        // Endpoints stored before the policy (or under another one) are checked again here.
        let Ok(url) = webhook_url::check(url, self.policy) else {
            return Err(NOT_ALLOWED.into());
        };
        let slots = self.slots.get(url.as_str());
        let _slot = slots.acquire().await.map_err(|_| "request failed".to_string())?;
        let mut req = self.client.post(url).body(body);
        for (name, value) in headers {
            req = req.header(name, value);
        }
        match req.send().await {
            Ok(res) => Ok(res.status().as_u16()),
            // Only the kind of failure: the URL may carry a token of the team's.
            Err(e) if guard::refused(&e) => Err(NOT_ALLOWED.into()),
            Err(e) if e.is_timeout() => Err("timed out".into()),
            Err(e) if e.is_connect() => Err("connection failed".into()),
            Err(_) => Err("request failed".into()),
        }
    }
}
