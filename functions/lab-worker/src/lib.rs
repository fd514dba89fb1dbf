//! The lab worker: the open-order sweep. A scheduled rule invokes it every few minutes; it
//! advances every open order whose next status change is due, which publishes one
//! `labtest.order.updated` per change. Reads of an order advance it too, so the sweep only
//! decides how late an unread order's events can be.

use serde::Serialize;
use wearlab_domain::lab::{LabNetwork, Links, advance_due};
use wearlab_domain::{Deps, DomainError};

/// What one invocation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Due orders looked at (each advanced, or logged and left for the next run).
    pub orders: usize,
}

/// Runs one sweep, whatever the event (the scheduled rule's "Scheduled Event"; any other
/// trigger is a misconfiguration, and sweeping is always safe). Orders placed before their
/// base URL was kept link to `WEARLAB_PUBLIC_URL` in their events.
pub async fn handle(deps: &Deps, net: &dyn LabNetwork) -> Result<Outcome, DomainError> {
    let orders = advance_due(deps, net, &Links::from_request(None, None)).await?;
    if orders > 0 {
        tracing::info!(orders, "open-order sweep");
    }
    Ok(Outcome { orders })
}
