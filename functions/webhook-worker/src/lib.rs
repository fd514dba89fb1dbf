//! The webhook worker: one message of the webhook queue at a time. The rules (fan-out, signing,
//! retry schedule, attempt records) are in `wearlab_domain::webhooks`; this crate adds the HTTP
//! client and the queue glue.

use async_trait::async_trait;
use wearlab_domain::Deps;
use wearlab_domain::ports::WebhookSender;
use wearlab_domain::ports::{Envelope, Outcome, Queue};
use wearlab_domain::webhooks::{self, TIMEOUT, WebhookJob};

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

/// Handles one queue message.
pub async fn handle(
    deps: &Deps,
    queue: &dyn Queue,
    sender: &dyn WebhookSender,
    envelope: Envelope,
) -> Outcome {
    let job: WebhookJob = match serde_json::from_value(envelope.body) {
        Ok(job) => job,
        Err(e) => return Outcome::Fail(format!("not a webhook job: {e}")),
    };
    match webhooks::handle(deps, queue, sender, job).await {
        Ok(()) => Outcome::Ack,
        Err(e) => Outcome::Fail(e.to_string()),
    }
}
