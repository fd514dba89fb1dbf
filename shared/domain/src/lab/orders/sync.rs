//! Applying the lab's changes to a stored order, on a read or by the open-order sweep.

use uuid::Uuid;

use super::record::{OrderPointer, OrderRecord, ResultsRecord, load, load_of_user, not_found};
use super::wire::{Links, envelope};
use super::{EVENT_UPDATED, SWEEP_MAX};
use crate::Deps;
use crate::common::error::{DomainError, Found};
use crate::common::ids::TeamId;
use crate::common::outbox::Staged;
use crate::common::signing;
use crate::keys::lab as keys;
use crate::ports::LabNetwork;
use crate::ports::lab_network::LabError;
use crate::ports::{Condition, Item, Query, StoreError, WriteOp, query_all, to_body};
use crate::users::load_active;

pub(super) fn lab_error(e: LabError) -> DomainError {
    match e {
        LabError::Rejected(m) | LabError::NotCancellable(m) => DomainError::Rejected(m),
        LabError::Unavailable(m) => DomainError::Busy(format!("the lab is unavailable, retry: {m}")),
    }
}

/// The order of the team, advanced to now: what every read of one order starts with (GET,
/// results, cancel, PSC look-ups).
pub(super) async fn load_synced(
    deps: &Deps,
    network: &dyn LabNetwork,
    team: TeamId,
    order_id: Uuid,
    links: &Links,
) -> Result<(OrderRecord, u64), DomainError> {
    let (rec, version) = load(deps, team, order_id).await?;
    advance(deps, network, rec, version, links).await
}

/// A read advances the order: whoever reads an order (one order, a listing, the portal) or
/// sweeps the open ones first applies the lab's changes that are due by now, so no reader sees
/// a status the lab has moved past and every change is announced once, read or not.
///
/// Nothing due: the order as it is, no lab call. Else one poll, and when something changed one
/// transaction (order, pointer, results, and one `labtest.order.updated` per change staged in
/// the outbox), then the events are published. A concurrent advance wins: its state is read.
pub(super) async fn advance(
    deps: &Deps,
    network: &dyn LabNetwork,
    rec: OrderRecord,
    version: u64,
    links: &Links,
) -> Result<(OrderRecord, u64), DomainError> {
    let now = deps.now();
    if rec.next_due.is_none_or(|d| d > now) {
        return Ok((rec, version));
    }
    let poll = network.poll(&rec.lab_ref(), now).await.map_err(lab_error)?;
    let mut next = rec.clone();
    let first_new = next.events.len();
    for u in poll.updates {
        next.push_event(u.status, u.at);
    }
    next.next_due = poll.next_due;
    if next == rec {
        return Ok((rec, version));
    }
    let mut ops = vec![
        WriteOp::Put { item: next.item(version + 1), condition: Condition::VersionIs(version) },
        WriteOp::Put { item: next.pointer_item(), condition: Condition::None },
    ];
    if next.events.len() > first_new
        && let Some(report) = network.results(&next.lab_ref(), now).await.map_err(lab_error)?
    {
        let item =
            Item::new(keys::order_results(next.user_id, next.id), to_body(&ResultsRecord::from(report)));
        ops.push(WriteOp::Put { item, condition: Condition::None });
    }
    let key = signing::key(deps).await?;
    let mut events = Vec::new();
    for n in first_new + 1..=next.events.len() {
        let mut snapshot = next.clone();
        snapshot.events.truncate(n);
        snapshot.status = snapshot.events[n - 1].status.clone();
        snapshot.updated_at = snapshot.events[n - 1].created_at.max(snapshot.created_at);
        events.push(envelope(&next, EVENT_UPDATED, &snapshot.to_wire(links, &key, now)));
    }
    let updated = (!events.is_empty()).then(|| Staged::new(deps, next.user_id, events));
    ops.extend(updated.iter().map(Staged::write_op));
    match deps.table.transact(ops).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed { .. }) => {
            return load_of_user(deps, rec.user_id, rec.id).await?.ok_or_else(|| not_found(rec.id));
        }
        Err(e) => return Err(e.into()),
    }
    tracing::info!(order_id = %next.id, status = %next.status, "lab order advanced");
    if let Some(updated) = updated {
        updated.publish(deps).await;
    }
    Ok((next, version + 1))
}

/// Advances every open order whose next change is due, as reading it would: the periodic
/// open-order sweep (the minute-worker on AWS, a background task of the local stack), so that
/// `labtest.order.updated` events go out when the lab moves an order, whether or not anyone
/// reads it. Each order's links point where it was placed (`fallback` for orders stored
/// without that). Returns how many due orders were looked at (at most [`SWEEP_MAX`]); an order
/// of a deleted user is left alone (its erasure removes it).
pub async fn advance_due(
    deps: &Deps,
    network: &dyn LabNetwork,
    fallback: &Links,
) -> Result<usize, DomainError> {
    let now = deps.now();
    let upper = keys::open_orders_index_sort(now, Uuid::max());
    let q = Query::gsi1(keys::OPEN_ORDERS_INDEX).between("", upper);
    let mut n = 0;
    for item in query_all(deps.table.as_ref(), q, SWEEP_MAX).await? {
        let Some(order_id) = keys::parse_order_pointer(&item.key.pk) else {
            continue;
        };
        let p: OrderPointer = item.decode()?;
        if load_active(deps, p.team_id, p.user_id).await.found()?.is_none() {
            continue;
        }
        let Some((rec, v)) = load_of_user(deps, p.user_id, order_id).await? else { continue };
        let links = rec.base_url.clone().map(|base_url| Links { base_url });
        n += 1;
        // One order the lab cannot answer for must not hold up the others; the next sweep
        // (or a read) tries it again.
        if let Err(e) = advance(deps, network, rec, v, links.as_ref().unwrap_or(fallback)).await {
            tracing::warn!(order_id = %order_id, error = %e, "open order not advanced");
        }
    }
    Ok(n)
}
