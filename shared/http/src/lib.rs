//! Adapters that speak HTTP to the outside world: the webhook sender (the `WebhookSender` port,
//! on reqwest), guarded by the webhook URL policy. Real provider adapters will live here too.

pub mod guard;

use std::sync::Arc;

use async_trait::async_trait;
use wearlab_domain::ports::WebhookSender;
use wearlab_domain::webhook_url::{self, UrlPolicy};
use wearlab_domain::webhooks::TIMEOUT;

use guard::{GuardedResolver, NOT_ALLOWED};

/// POSTs with a 15 s deadline; redirects are not followed (a receiver must answer itself, and a
/// redirect could point anywhere). Only to destinations the policy allows, checked on the URL
/// and again on every address its host resolves to; no proxy, so that is where it connects.
pub struct HttpSender {
    client: reqwest::Client,
    policy: UrlPolicy,
}

impl HttpSender {
    pub fn new(policy: UrlPolicy) -> Self {
        Self::with_resolver(policy, GuardedResolver::new(policy))
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
        Self { client, policy }
    }
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
