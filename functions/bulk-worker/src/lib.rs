//! The bulk worker: messages of the bulk queue (connection imports, historical pull triggers)
//! and of its dead-letter queue. The rules are in `wearlab_domain::bulk`; this crate is the
//! queue glue.

use aws_lambda_events::sqs::SqsEvent;
use wearlab_domain::Deps;
use wearlab_domain::bulk::{self, BulkMessage};
use wearlab_domain::ports::{Envelope, Outcome, Queue};

fn parse(envelope: Envelope) -> Result<BulkMessage, Outcome> {
    serde_json::from_value(envelope.body).map_err(|e| Outcome::Fail(format!("not a bulk message: {e}")))
}

/// Handles one message of the bulk queue; a trigger's pulls go to `pull_queue`.
pub async fn handle(deps: &Deps, pull_queue: &dyn Queue, envelope: Envelope) -> Outcome {
    match parse(envelope) {
        Ok(m) => bulk::handle(deps, pull_queue, m).await,
        Err(o) => o,
    }
}

/// Handles one message the bulk queue gave up on: the items it still held count as failed,
/// so its operation ends. A message that is not a bulk message at all stays where it is.
pub async fn handle_dead_letter(deps: &Deps, envelope: Envelope) -> Outcome {
    match parse(envelope) {
        Ok(m) => match bulk::dead_lettered(deps, m).await {
            Ok(()) => Outcome::Ack,
            Err(e) => Outcome::Fail(e.to_string()),
        },
        Err(o) => o,
    }
}

/// Whether a Lambda batch comes from the dead-letter queue (each event source mapping
/// delivers batches of one queue).
pub fn from_dead_letter_queue(event: &SqsEvent, dead_letter_arn: Option<&str>) -> bool {
    let source = event.records.first().and_then(|r| r.event_source_arn.as_deref());
    dead_letter_arn.is_some() && source == dead_letter_arn
}
