//! The webhook sender port: what delivers a signed event to a team's endpoint.

use async_trait::async_trait;

/// What POSTs a signed event to an endpoint (an HTTP client in the worker; a fake in tests).
#[async_trait]
pub trait WebhookSender: Send + Sync {
    /// The receiver's status code, or why there was none (timeout, connection refused).
    async fn post(
        &self,
        url: &str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    ) -> Result<u16, String>;
}
