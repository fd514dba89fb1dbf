//! Adapters that speak HTTP to the outside world: the webhook sender (the `WebhookSender` port,
//! on reqwest). Real provider adapters will live here too.

use async_trait::async_trait;
use wearlab_domain::ports::WebhookSender;
use wearlab_domain::webhooks::TIMEOUT;

/// POSTs with a 15 s deadline; redirects are not followed (a receiver must answer itself).
pub struct HttpSender {
    client: reqwest::Client,
}

impl HttpSender {
    pub fn new() -> Self {
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent("Wearlab-Webhooks/1")
            .build()
            .expect("the HTTP client builds");
        Self { client }
    }
}

impl Default for HttpSender {
    fn default() -> Self {
        Self::new()
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
        let mut req = self.client.post(url).body(body);
        for (name, value) in headers {
            req = req.header(name, value);
        }
        match req.send().await {
            Ok(res) => Ok(res.status().as_u16()),
            // Only the kind of failure: the URL may carry a token of the team's.
            Err(e) if e.is_timeout() => Err("timed out".into()),
            Err(e) if e.is_connect() => Err("connection failed".into()),
            Err(_) => Err("request failed".into()),
        }
    }
}
