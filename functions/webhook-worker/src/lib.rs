//! The webhook worker: one message of the webhook queue at a time. The rules (fan-out, signing,
//! retry schedule, attempt records) are in `wearlab_domain::webhooks`; the HTTP client is
//! `wearlab_http::HttpSender`; this crate adds the queue glue.

use wearlab_domain::Deps;
use wearlab_domain::ports::{Envelope, Outcome};
use wearlab_domain::webhooks::{self, WebhookJob, WebhookPorts};

/// Handles one queue message: its deliveries and retries go through `ports`.
pub async fn handle(deps: &Deps, ports: WebhookPorts<'_>, envelope: Envelope) -> Outcome {
    let job: WebhookJob = match serde_json::from_value(envelope.body) {
        Ok(job) => job,
        Err(e) => return Outcome::Fail(format!("not a webhook job: {e}")),
    };
    match webhooks::handle(deps, ports, job).await {
        Ok(()) => Outcome::Ack,
        Err(e) => Outcome::Fail(e.to_string()),
    }
}
