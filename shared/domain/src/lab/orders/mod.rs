//! Lab orders: placed with a `LabNetwork`, stored in the user's partition, moved along by the
//! lab's status updates. Each read first asks the lab what changed since the last recorded
//! status (only when a change is due), appends every change to `events`, keeps the results
//! the lab reported, and emits `labtest.order.updated` per change.
//!
//! Storage: the order in the user's partition (`LAB#ORDER#<id>`, listed per team through
//! GSI1), its results beside it, and a pointer `ORDER#<id>` from the order id to the user (whose
//! GSI1 entry, while the lab still has changes due, lists it among the open orders for a sweep).
//!
//! The rooms: `new_order` (parsing a create request), `record` (what is stored and how it is
//! loaded), `sync` (a read advances the order: applying the lab's due changes), `wire` (the order as the API and its events
//! show it), `listing` (a team's or a user's orders); the use cases are here.

mod listing;
mod new_order;
mod record;
mod sync;
mod wire;

use uuid::Uuid;
use wearlab_models::lab::{BillingType, Order, OrderResults};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::common::outbox::Staged;
use crate::common::signing;
use crate::keys::lab as keys;
use crate::ports::LabNetwork;
use crate::ports::lab_network::{LabRequest, status_group};
use crate::ports::{Condition, StoreError, WriteOp};
use crate::users::load_active;

pub use listing::{OrderFilter, list, of_user, stored_of_user};
pub use new_order::{NewOrder, network_physician};
pub use record::OrderRecord;
pub use sync::advance_due;
pub use wire::{Links, Requisition};

use record::{OrderPointer, ResultsRecord, load, load_of_user, not_found};
use sync::{advance, lab_error, load_synced};
use wire::{envelope, requisition_message, requisition_of};

/// How long the deprecated `requisition_form_url` stays valid.
pub const REQUISITION_URL_DAYS: i64 = 7;
/// Most orders the open-order sweep advances per run.
pub const SWEEP_MAX: usize = 1_000;

pub const EVENT_CREATED: &str = "labtest.order.created";
pub const EVENT_UPDATED: &str = "labtest.order.updated";

/// Places an order for an active user of the team. One user read, the lab call, one
/// transaction (order + pointer), then `labtest.order.created`.
pub async fn create(
    deps: &Deps,
    network: &dyn LabNetwork,
    team: TeamId,
    new: NewOrder,
    links: &Links,
) -> Result<Order, DomainError> {
    let (user, _) = load_active(deps, team, new.user_id).await?;
    if new.billing_type == BillingType::CommercialInsurance
        && super::insurance::find_latest(deps, new.user_id, true).await?.is_none()
    {
        return Err(DomainError::invalid(
            &["billing_type"],
            "commercial_insurance needs a primary insurance of the user: POST /v2/user/{user_id}/insurance first",
            "value_error",
        ));
    }
    let now = deps.now();
    let id = Uuid::new_v4();
    let markers = new.resolved.markers();
    let request = LabRequest {
        order_id: id,
        lab_id: new.resolved.lab.id,
        lab_slug: new.resolved.lab.slug.clone(),
        collection_method: new.collection_method.clone(),
        marker_ids: markers.iter().map(|m| m.id).collect(),
        patient_zip: new.patient_address.zip.clone(),
        placed_at: now,
    };
    let placement = network.place(&request).await.map_err(lab_error)?;
    let mut rec = OrderRecord {
        id,
        team_id: team,
        user_id: new.user_id,
        client_user_id: user.client_user_id.to_string(),
        patient_details: new.patient_details,
        patient_address: new.patient_address,
        order_set: new.order_set,
        lab_id: new.resolved.lab.id,
        lab_test_ids: new.resolved.lab_tests.iter().map(|t| t.id).collect(),
        marker_ids: request.marker_ids.clone(),
        collection_method: new.collection_method,
        status: String::new(),
        events: vec![],
        physician: new.physician,
        priority: new.priority,
        billing_type: new.billing_type,
        sample_id: placement.accession_number,
        created_at: now,
        updated_at: now,
        next_due: None,
        base_url: Some(links.base_url.clone()),
    };
    rec.push_event(placement.status, now);
    rec.next_due = network.poll(&rec.lab_ref(), now).await.map_err(lab_error)?.next_due;
    let key = signing::key(deps).await?;
    let order = rec.to_wire(links, &key, now);
    let created = Staged::new(deps, rec.user_id, vec![envelope(&rec, EVENT_CREATED, &order)]);
    deps.table
        .transact(vec![
            WriteOp::Put { item: rec.item(1), condition: Condition::NotExists },
            WriteOp::Put { item: rec.pointer_item(), condition: Condition::NotExists },
            created.write_op(),
        ])
        .await?;
    tracing::info!(team_id = %team, user_id = %rec.user_id, order_id = %id, "lab order placed");
    created.publish(deps).await;
    // A lab whose first changes are immediate moves the order at once.
    let (rec, _) = advance(deps, network, rec, 1, links).await?;
    Ok(rec.to_wire(links, &key, now))
}

/// Reads an order, advanced to now.
pub async fn get(
    deps: &Deps,
    network: &dyn LabNetwork,
    team: TeamId,
    order_id: Uuid,
    links: &Links,
) -> Result<Order, DomainError> {
    let (rec, _) = load_synced(deps, network, team, order_id, links).await?;
    let key = signing::key(deps).await?;
    Ok(rec.to_wire(links, &key, deps.now()))
}

/// The stored order of the team, advanced to now (for PSC look-ups and requisitions).
pub async fn record(
    deps: &Deps,
    network: &dyn LabNetwork,
    team: TeamId,
    order_id: Uuid,
    links: &Links,
) -> Result<OrderRecord, DomainError> {
    Ok(load_synced(deps, network, team, order_id, links).await?.0)
}

/// Whether `order_id` is an order of `user_id`.
pub async fn belongs_to(deps: &Deps, user_id: UserId, order_id: Uuid) -> Result<bool, DomainError> {
    Ok(deps.table.get(&keys::order(user_id, order_id)).await?.is_some())
}

/// Cancels an order the lab has not started processing (400 otherwise).
pub async fn cancel(
    deps: &Deps,
    network: &dyn LabNetwork,
    team: TeamId,
    order_id: Uuid,
    links: &Links,
) -> Result<Order, DomainError> {
    let (rec, v) = load_synced(deps, network, team, order_id, links).await?;
    if status_group(&rec.status) == "cancelled" {
        return Err(DomainError::Rejected(format!("Order {order_id} is already cancelled.")));
    }
    let now = deps.now();
    let update = network.cancel(&rec.lab_ref(), now).await.map_err(lab_error)?;
    let mut next = rec.clone();
    next.push_event(update.status, update.at);
    next.next_due = None;
    let key = signing::key(deps).await?;
    let order = next.to_wire(links, &key, now);
    let cancelled = Staged::new(deps, next.user_id, vec![envelope(&next, EVENT_UPDATED, &order)]);
    match deps
        .table
        .transact(vec![
            WriteOp::Put { item: next.item(v + 1), condition: Condition::VersionIs(v) },
            WriteOp::Put { item: next.pointer_item(), condition: Condition::None },
            cancelled.write_op(),
        ])
        .await
    {
        Ok(()) => {}
        Err(StoreError::ConditionFailed { .. }) => {
            return Err(DomainError::Busy("the order changed meanwhile, retry".into()));
        }
        Err(e) => return Err(e.into()),
    }
    tracing::info!(team_id = %team, order_id = %order_id, "lab order cancelled");
    cancelled.publish(deps).await;
    Ok(order)
}

/// The order's results as reported so far (404 before the lab reports any).
pub async fn results(
    deps: &Deps,
    network: &dyn LabNetwork,
    team: TeamId,
    order_id: Uuid,
    links: &Links,
) -> Result<OrderResults, DomainError> {
    let rec = record(deps, network, team, order_id, links).await?;
    let item = deps.table.get(&keys::order_results(rec.user_id, order_id)).await?.ok_or_else(|| {
        DomainError::NotFound(format!("Results of order {order_id} are not available yet."))
    })?;
    Ok(item.decode::<ResultsRecord>()?.into_wire(&rec))
}

/// An order of the team and its results as stored (`None` before the lab reported any),
/// without asking the lab: for reads that change nothing (the FHIR API). The minute sweep
/// applies the lab's due changes, so what is stored is at most about a minute behind. Two or
/// three reads (the pointer, the user, the order; the results).
pub async fn stored(
    deps: &Deps,
    team: TeamId,
    order_id: Uuid,
) -> Result<(OrderRecord, Option<OrderResults>), DomainError> {
    let (rec, _) = load(deps, team, order_id).await?;
    let results = stored_results(deps, &rec).await?;
    Ok((rec, results))
}

/// The results stored for an order, if the lab reported any.
pub async fn stored_results(deps: &Deps, rec: &OrderRecord) -> Result<Option<OrderResults>, DomainError> {
    match deps.table.get(&keys::order_results(rec.user_id, rec.id)).await? {
        Some(item) => Ok(Some(item.decode::<ResultsRecord>()?.into_wire(rec))),
        None => Ok(None),
    }
}

/// The requisition of a team's order.
pub async fn requisition(deps: &Deps, team: TeamId, order_id: Uuid) -> Result<Requisition, DomainError> {
    let (rec, _) = load(deps, team, order_id).await?;
    Ok(requisition_of(&rec))
}

/// The requisition behind a signed URL (the deprecated `requisition_form_url`): no API key,
/// the signature and its expiry decide. A bad or expired signature reads as not found.
pub async fn requisition_signed(
    deps: &Deps,
    order_id: Uuid,
    expires: i64,
    signature: &str,
) -> Result<Requisition, DomainError> {
    let key = signing::key(deps).await?;
    if expires < deps.now().timestamp()
        || !signing::verify(&key, &requisition_message(order_id, expires), signature)
    {
        return Err(DomainError::NotFound(format!(
            "The link to the requisition of order {order_id} is invalid or expired."
        )));
    }
    let pointer = deps.table.get(&keys::order_pointer(order_id)).await?.ok_or_else(|| not_found(order_id))?;
    let p: OrderPointer = pointer.decode()?;
    let (rec, _) = load_of_user(deps, p.user_id, order_id).await?.ok_or_else(|| not_found(order_id))?;
    Ok(requisition_of(&rec))
}
