//! The pull worker: one message of the pull queue at a time. The rules (pull progress,
//! throttles, chunks, events, the poll) are in `wearlab_domain::pipeline`; this crate is the
//! queue glue.

use wearlab_domain::Deps;
use wearlab_domain::pipeline::{self, PullMessage};
use wearlab_domain::ports::{Envelope, Outcome, Queue};

/// Handles one queue message: a pull job, a poll job, the scheduled poll of every connection,
/// or a `provider.connection.created` event (which starts the connection's historical pull).
/// The polls of every connection go to `queue` (the pull queue).
pub async fn handle(deps: &Deps, queue: &dyn Queue, envelope: Envelope) -> Outcome {
    let message: PullMessage = match serde_json::from_value(envelope.body) {
        Ok(m) => m,
        Err(e) => return Outcome::Fail(format!("not a pull message: {e}")),
    };
    pipeline::handle(deps, queue, message).await
}
