//! The minute worker: the four jobs that run every minute. A scheduled rule invokes it; each run
//!
//! - advances every open lab order whose next status change is due (reads of an order advance
//!   it too; the sweep decides how late an unread order's `labtest.order.updated` can be), and
//! - publishes events left staged in the outbox (a crash or a refused publish after the change
//!   they announce was stored), and
//! - retries the revokes at providers of removed connections that are due
//!   (`linking::revokes`), and
//! - once an hour, creates or renews the real providers' push subscriptions to
//!   `WEARLAB_PUBLIC_URL` (only when it is set: providers need a public address).

use serde::Serialize;
use wearlab_domain::lab::{Links, advance_due};
use wearlab_domain::ports::LabNetwork;
use wearlab_domain::{Deps, DomainError, common::outbox};

/// What one invocation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Due orders looked at (each advanced, or logged and left for the next run).
    pub orders: usize,
    /// Staged outbox entries published.
    pub relayed: usize,
    /// Pending provider revokes attempted.
    pub revokes: usize,
}

/// Runs the four jobs, whatever the event (the scheduled rule's "Scheduled Event"; any other
/// trigger is a misconfiguration, and sweeping is always safe). Orders placed before their
/// base URL was kept link to `public_url` (the deployment's `WEARLAB_PUBLIC_URL`, read once at
/// start) in their events. The orders go first, so that what they could not publish is relayed
/// by the next run, not this one; the relay runs even when the order sweep failed (an error of
/// either fails the invocation afterwards). The lab network answers for the open orders.
pub async fn handle(
    deps: &Deps,
    lab_network: &dyn LabNetwork,
    public_url: Option<&str>,
) -> Result<Outcome, DomainError> {
    // No request here: the links use the deployment's public URL (or the local default).
    let orders = advance_due(deps, lab_network, &Links::for_host(public_url, None, None)).await;
    let relayed = outbox::relay(deps).await;
    let revokes = wearlab_domain::linking::revokes::retry_due(deps).await;
    if let Some(url) = public_url.filter(|u| !u.is_empty())
        && let Err(e) = wearlab_domain::linking::subscriptions::maintain_subscriptions(deps, url).await
    {
        tracing::warn!(error = %e, "push subscriptions not looked at");
    }
    let (orders, relayed, revokes) = (orders?, relayed?, revokes?);
    if orders > 0 {
        tracing::info!(orders, "open-order sweep");
    }
    Ok(Outcome { orders, relayed, revokes })
}
