//! The stored order, its pointer and results, and how an order is loaded.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use wearlab_models::lab::{BillingType, OrderEvent, OrderSet, PatientDetails, Physician, UserAddress};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::keys::lab as keys;
use crate::ports::lab_network::{LabOrderRef, LabReport};
use crate::ports::{Item, to_body};
use crate::users::load_active;

/// The stored order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderRecord {
    pub id: Uuid,
    pub team_id: TeamId,
    pub user_id: UserId,
    pub client_user_id: String,
    pub patient_details: PatientDetails,
    pub patient_address: UserAddress,
    pub order_set: OrderSet,
    pub lab_id: i64,
    pub lab_test_ids: Vec<Uuid>,
    pub marker_ids: Vec<i64>,
    pub collection_method: String,
    pub status: String,
    pub events: Vec<OrderEvent>,
    pub physician: Physician,
    pub priority: bool,
    pub billing_type: BillingType,
    pub sample_id: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// When the lab's next status change is due; `None` once it will change no more.
    pub next_due: Option<DateTime<Utc>>,
    /// The public base URL the order was placed through. Links in the events of changes that
    /// no request is behind (the open-order sweep) point there. Absent on orders stored before
    /// it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}
/// Pointer from an order id to its owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct OrderPointer {
    pub(super) team_id: TeamId,
    pub(super) user_id: UserId,
}

/// Stored results of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ResultsRecord {
    pub(super) status: String,
    pub(super) collected_at: Option<DateTime<Utc>>,
    pub(super) reported_at: DateTime<Utc>,
    pub(super) results: Vec<StoredResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct StoredResult {
    pub(super) loinc_code: String,
    pub(super) name: String,
    pub(super) slug: String,
    pub(super) provider_id: String,
    pub(super) result: String,
    pub(super) result_type: String,
    pub(super) value: Option<f64>,
    pub(super) unit: Option<String>,
    pub(super) min_range_value: Option<f64>,
    pub(super) max_range_value: Option<f64>,
    pub(super) interpretation: String,
    pub(super) notes: Option<String>,
}

impl From<LabReport> for ResultsRecord {
    fn from(r: LabReport) -> Self {
        Self {
            status: r.status,
            collected_at: r.collected_at,
            reported_at: r.reported_at,
            results: r
                .results
                .into_iter()
                .map(|x| StoredResult {
                    loinc_code: x.loinc_code,
                    name: x.name,
                    slug: x.slug,
                    provider_id: x.provider_id,
                    result: x.result,
                    result_type: x.result_type,
                    value: x.value,
                    unit: x.unit,
                    min_range_value: x.min_range_value,
                    max_range_value: x.max_range_value,
                    interpretation: x.interpretation,
                    notes: x.notes,
                })
                .collect(),
        }
    }
}

impl OrderRecord {
    pub(super) fn lab_ref(&self) -> LabOrderRef {
        LabOrderRef {
            order_id: self.id,
            lab_id: self.lab_id,
            collection_method: self.collection_method.clone(),
            marker_ids: self.marker_ids.clone(),
            placed_at: self.created_at,
            accession_number: self.sample_id.clone(),
            last_status: self.status.clone(),
        }
    }

    pub(super) fn push_event(&mut self, status: String, at: DateTime<Utc>) {
        let id = self.events.len() as u32 + 1;
        self.events.push(OrderEvent { id, created_at: at, status: status.clone() });
        self.status = status;
        self.updated_at = self.updated_at.max(at);
    }

    pub(super) fn item(&self, version: u64) -> Item {
        let mut item = Item::new(keys::order(self.user_id, self.id), to_body(self)).with_gsi1(
            keys::team_orders_index(self.team_id),
            keys::team_orders_index_sort(self.created_at, self.id),
        );
        item.version = version;
        item
    }

    pub(super) fn pointer_item(&self) -> Item {
        let item = Item::new(
            keys::order_pointer(self.id),
            to_body(&OrderPointer { team_id: self.team_id, user_id: self.user_id }),
        );
        match self.next_due {
            Some(due) => item.with_gsi1(keys::OPEN_ORDERS_INDEX, keys::open_orders_index_sort(due, self.id)),
            None => item,
        }
    }
}

pub(super) fn not_found(order_id: Uuid) -> DomainError {
    DomainError::NotFound(format!("Order {order_id} not found."))
}

/// The order of the team, with its version; 404 for an unknown order, another team's, or one
/// of a deleted user (a deleted user reads as 404 everywhere).
pub(super) async fn load(
    deps: &Deps,
    team: TeamId,
    order_id: Uuid,
) -> Result<(OrderRecord, u64), DomainError> {
    let pointer = deps.table.get(&keys::order_pointer(order_id)).await?.ok_or_else(|| not_found(order_id))?;
    let p: OrderPointer = pointer.decode()?;
    if p.team_id != team {
        return Err(not_found(order_id));
    }
    load_active(deps, team, p.user_id).await.map_err(|_| not_found(order_id))?;
    load_of_user(deps, p.user_id, order_id).await?.ok_or_else(|| not_found(order_id))
}

pub(super) async fn load_of_user(
    deps: &Deps,
    user: UserId,
    order_id: Uuid,
) -> Result<Option<(OrderRecord, u64)>, DomainError> {
    match deps.table.get(&keys::order(user, order_id)).await? {
        Some(item) => Ok(Some((item.decode()?, item.version))),
        None => Ok(None),
    }
}
