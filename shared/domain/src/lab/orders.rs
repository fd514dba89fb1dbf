//! Lab orders: placed with a `LabNetwork`, stored in the user's partition, moved along by the
//! lab's status updates. Each read first asks the lab what changed since the last recorded
//! status (only when a change is due), appends every change to `events`, keeps the results
//! the lab reported, and emits `labtest.order.updated` per change.
//!
//! Storage: the order in the user's partition (`LAB#ORDER#<id>`, listed per team through
//! GSI1), its results beside it, and a pointer `ORDER#<id>` from the order id to the user (whose
//! GSI1 entry, while the lab still has changes due, lists it among the open orders for a sweep).

use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use wearlab_models::EventEnvelope;
use wearlab_models::lab::{
    BillingType, CollectionMethod, CreateOrderBody, Interpretation, Order, OrderEvent, OrderPage,
    OrderResults, OrderSet, PatientDetails, Physician, ResultEntry, ResultMetadata, ResultType, UserAddress,
};

use super::catalog::{LabAccount, PageSpec, ResolvedOrderSet, catalog, resolve_order_set};
use super::signing;
use super::validate::{self as v, Issues};
use crate::Deps;
use crate::error::DomainError;
use crate::ids::{TeamId, UserId};
use crate::keys::lab as keys;
use crate::outbox::Staged;
use crate::ports::lab_network::{LabError, LabOrderRef, LabReport, LabRequest, status_group};
use crate::ports::to_body;
use crate::ports::{Condition, Item, Query, StoreError, WriteOp, query_all};
use crate::users::load_active;

/// How long the deprecated `requisition_form_url` stays valid.
pub const REQUISITION_URL_DAYS: i64 = 7;
/// Most orders a team listing reads.
const MAX_LISTED: usize = 100_000;
/// Most orders the open-order sweep advances per run.
pub const SWEEP_MAX: usize = 1_000;

pub const EVENT_CREATED: &str = "labtest.order.created";
pub const EVENT_UPDATED: &str = "labtest.order.updated";

/// The physician who signs orders that name none (the network's own).
pub fn network_physician() -> Physician {
    Physician { first_name: "Alex".into(), last_name: "Morgan".into(), npi: "1234567893".into(), email: None }
}

/// Where links in answers point: the API's public base URL, e.g. `https://api.example.com`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Links {
    pub base_url: String,
}

impl Links {
    /// The base URL: `configured` (the deployment's public URL) when given, else `proto://host`
    /// of the request. The one rule for the API's public address; the edge decides the values
    /// (`wearlab_web::public_links` from a request and `WEARLAB_PUBLIC_URL`).
    pub fn for_host(configured: Option<&str>, host: Option<&str>, proto: Option<&str>) -> Self {
        if let Some(url) = configured
            && !url.trim().is_empty()
        {
            return Self { base_url: url.trim().trim_end_matches('/').to_owned() };
        }
        // Only what a host name or address can hold, so a header cannot bend the links.
        let host = host
            .filter(|h| {
                !h.is_empty() && h.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
            })
            .unwrap_or("localhost");
        let local = host.starts_with("localhost") || host.starts_with("127.") || host.starts_with("[::1]");
        let proto = match proto {
            Some(p @ ("http" | "https")) => p,
            _ if local => "http",
            _ => "https",
        };
        Self { base_url: format!("{proto}://{host}") }
    }
}

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
struct OrderPointer {
    team_id: TeamId,
    user_id: UserId,
}

/// Stored results of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ResultsRecord {
    status: String,
    collected_at: Option<DateTime<Utc>>,
    reported_at: DateTime<Utc>,
    results: Vec<StoredResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StoredResult {
    loinc_code: String,
    name: String,
    slug: String,
    provider_id: String,
    result: String,
    result_type: String,
    value: Option<f64>,
    unit: Option<String>,
    min_range_value: Option<f64>,
    max_range_value: Option<f64>,
    interpretation: String,
    notes: Option<String>,
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
    fn lab_ref(&self) -> LabOrderRef {
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

    fn push_event(&mut self, status: String, at: DateTime<Utc>) {
        let id = self.events.len() as u32 + 1;
        self.events.push(OrderEvent { id, created_at: at, status: status.clone() });
        self.status = status;
        self.updated_at = self.updated_at.max(at);
    }

    fn item(&self, version: u64) -> Item {
        let mut item = Item::new(keys::order(self.user_id, self.id), to_body(self)).with_gsi1(
            keys::team_orders_index(self.team_id),
            keys::team_orders_index_sort(self.created_at, self.id),
        );
        item.version = version;
        item
    }

    fn pointer_item(&self) -> Item {
        let item = Item::new(
            keys::order_pointer(self.id),
            to_body(&OrderPointer { team_id: self.team_id, user_id: self.user_id }),
        );
        match self.next_due {
            Some(due) => item.with_gsi1(keys::OPEN_ORDERS_INDEX, keys::open_orders_index_sort(due, self.id)),
            None => item,
        }
    }

    /// The order as the API shows it. `signing_key` signs the deprecated requisition URL.
    pub fn to_wire(&self, links: &Links, signing_key: &[u8], now: DateTime<Utc>) -> Order {
        let c = catalog();
        let lab_tests: Vec<_> =
            self.lab_test_ids.iter().filter_map(|id| c.lab_test(*id)).map(|t| c.lab_test_wire(t)).collect();
        let lab = c.lab(self.lab_id).cloned().expect("orders name known labs");
        let expires = (now + Duration::days(REQUISITION_URL_DAYS)).timestamp();
        let signature = signing::sign(signing_key, &requisition_message(self.id, expires));
        Order {
            id: self.id,
            team_id: self.team_id.0,
            user_id: self.user_id.0,
            patient_details: self.patient_details.clone(),
            patient_address: self.patient_address.clone(),
            order_set: self.order_set.clone(),
            lab_test: lab_tests.first().cloned(),
            lab_tests,
            lab,
            collection_method: CollectionMethod::from(self.collection_method.as_str()),
            status: self.status.clone(),
            events: self.events.clone(),
            physician: self.physician.clone(),
            priority: self.priority,
            billing_type: self.billing_type.clone(),
            sample_id: self.sample_id.clone(),
            requisition_form_url: Some(format!(
                "{}/v3/order/{}/requisition/pdf?expires={expires}&signature={signature}",
                links.base_url, self.id
            )),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

fn requisition_message(order_id: Uuid, expires: i64) -> String {
    format!("requisition:{order_id}:{expires}")
}

fn lab_error(e: LabError) -> DomainError {
    match e {
        LabError::Rejected(m) | LabError::NotCancellable(m) => DomainError::Rejected(m),
        LabError::Unavailable(m) => DomainError::Busy(format!("the lab is unavailable, retry: {m}")),
    }
}

fn not_found(order_id: Uuid) -> DomainError {
    DomainError::NotFound(format!("Order {order_id} not found."))
}

/// A parsed create request.
#[derive(Debug, Clone)]
pub struct NewOrder {
    pub user_id: UserId,
    pub patient_details: PatientDetails,
    pub patient_address: UserAddress,
    pub order_set: OrderSet,
    pub resolved: ResolvedOrderSet,
    pub collection_method: String,
    pub physician: Physician,
    pub priority: bool,
    pub billing_type: BillingType,
}

impl NewOrder {
    /// Checks every rule; `lab_test_id` (deprecated) becomes a one-test order set.
    pub fn parse(body: CreateOrderBody, today: NaiveDate) -> Result<Self, DomainError> {
        let mut issues = Issues::new();
        let p = &body.patient_details;
        let pd = ["body", "patient_details"];
        v::check_name(&mut issues, &pd, "first_name", &p.first_name);
        v::check_name(&mut issues, &pd, "last_name", &p.last_name);
        v::check_dob(&mut issues, &pd, "dob", p.dob, today);
        v::check_person_gender(&mut issues, &pd, &p.gender);
        v::check_email(&mut issues, &pd, "email", &p.email);
        v::check_phone(&mut issues, &pd, "phone_number", &p.phone_number);
        v::check_address(&mut issues, &["body", "patient_address"], &body.patient_address);
        if !v::is_us(&body.patient_address.country) {
            issues.push(
                &["body", "patient_address", "country"],
                "the lab network serves US addresses only",
                "value_error",
            );
        }
        if let Some(ph) = &body.physician {
            let at = ["body", "physician"];
            v::check_name(&mut issues, &at, "first_name", &ph.first_name);
            v::check_name(&mut issues, &at, "last_name", &ph.last_name);
            if !v::is_npi(&ph.npi) {
                issues.push(
                    &["body", "physician", "npi"],
                    "npi must be 10 digits with a valid check digit",
                    "value_error",
                );
            }
            if let Some(e) = &ph.email {
                v::check_email(&mut issues, &at, "email", e);
            }
        }
        let billing_type = body.billing_type.clone().unwrap_or(BillingType::ClientBill);
        v::check_known(
            &mut issues,
            &["body", "billing_type"],
            BillingType::known(billing_type.as_str()),
            billing_type.as_str(),
            BillingType::KNOWN,
        );
        let (order_set, base): (Option<OrderSet>, [&str; 2]) = match (&body.order_set, body.lab_test_id) {
            (Some(_), Some(_)) => {
                issues.push(
                    &["body", "lab_test_id"],
                    "give either order_set or the deprecated lab_test_id, not both",
                    "value_error",
                );
                (None, ["body", "order_set"])
            }
            (Some(set), None) => (Some(set.clone()), ["body", "order_set"]),
            (None, Some(id)) => {
                (Some(OrderSet { lab_test_ids: Some(vec![id]), add_on: None }), ["body", "lab_test_id"])
            }
            (None, None) => {
                issues.push(&["body", "order_set"], "Field required", "missing");
                (None, ["body", "order_set"])
            }
        };
        let resolved = order_set.as_ref().and_then(|set| {
            let base: &[&str] = if base[1] == "lab_test_id" { &["body"] } else { &base };
            match resolve_order_set(set, None::<&LabAccount>, base, true) {
                Ok(r) => Some(r),
                Err(found) => {
                    let found = found
                        .into_iter()
                        .map(|mut i| {
                            // A deprecated lab_test_id is reported where the client sent it.
                            if body.lab_test_id.is_some() && body.order_set.is_none() {
                                i.loc = vec!["body".into(), "lab_test_id".into()];
                            }
                            i
                        })
                        .collect::<Vec<_>>();
                    issues.list.extend(found);
                    None
                }
            }
        });
        let mut method = String::new();
        if let Some(r) = &resolved {
            let supported: Vec<&str> = r.lab.collection_methods.iter().map(|m| m.as_str()).collect();
            method = match &body.collection_method {
                Some(m) => m.as_str().to_owned(),
                None => r
                    .lab_tests
                    .first()
                    .map(|t| t.method.clone())
                    .unwrap_or_else(|| supported.first().copied().unwrap_or("walk_in_test").to_owned()),
            };
            if CollectionMethod::known(&method).is_none() || !supported.contains(&method.as_str()) {
                issues.push(
                    &["body", "collection_method"],
                    format!("the lab offers: {}", supported.join(", ")),
                    "value_error",
                );
            } else if r.lab_tests.iter().any(|t| t.method != method) {
                issues.push(
                    &["body", "collection_method"],
                    "every lab test of the order must be for this collection method",
                    "value_error",
                );
            }
        }
        issues.into_result()?;
        let resolved = resolved.expect("no issues means the order set resolved");
        Ok(Self {
            user_id: UserId(body.user_id),
            patient_details: body.patient_details,
            patient_address: body.patient_address,
            order_set: order_set.expect("resolved"),
            resolved,
            collection_method: method,
            physician: body.physician.unwrap_or_else(network_physician),
            priority: body.priority.unwrap_or(false),
            billing_type,
        })
    }
}

fn envelope(rec: &OrderRecord, event_type: &str, order: &Order) -> EventEnvelope {
    EventEnvelope {
        event_type: event_type.into(),
        user_id: rec.user_id.0,
        client_user_id: rec.client_user_id.clone(),
        team_id: rec.team_id.0,
        data: to_body(order),
    }
}

/// Places an order for an active user of the team. One user read, the lab call, one
/// transaction (order + pointer), then `labtest.order.created`.
pub async fn create(deps: &Deps, team: TeamId, new: NewOrder, links: &Links) -> Result<Order, DomainError> {
    let (user, _) = load_active(deps, team, new.user_id).await?;
    if new.billing_type == BillingType::CommercialInsurance
        && super::insurance::find_latest(deps, new.user_id, true).await?.is_none()
    {
        return Err(DomainError::invalid(
            &["body", "billing_type"],
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
    let placement = deps.lab_network.place(&request).await.map_err(lab_error)?;
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
    rec.next_due = deps.lab_network.poll(&rec.lab_ref(), now).await.map_err(lab_error)?.next_due;
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
    let (rec, _) = sync(deps, rec, 1, links).await?;
    Ok(rec.to_wire(links, &key, now))
}

/// The order of the team, with its version; 404 for an unknown order, another team's, or one
/// of a deleted user (a deleted user reads as 404 everywhere).
async fn load(deps: &Deps, team: TeamId, order_id: Uuid) -> Result<(OrderRecord, u64), DomainError> {
    let pointer = deps.table.get(&keys::order_pointer(order_id)).await?.ok_or_else(|| not_found(order_id))?;
    let p: OrderPointer = pointer.decode()?;
    if p.team_id != team {
        return Err(not_found(order_id));
    }
    load_active(deps, team, p.user_id).await.map_err(|_| not_found(order_id))?;
    load_of_user(deps, p.user_id, order_id).await?.ok_or_else(|| not_found(order_id))
}

async fn load_of_user(
    deps: &Deps,
    user: UserId,
    order_id: Uuid,
) -> Result<Option<(OrderRecord, u64)>, DomainError> {
    match deps.table.get(&keys::order(user, order_id)).await? {
        Some(item) => Ok(Some((item.decode()?, item.version))),
        None => Ok(None),
    }
}

/// Applies the lab's due status changes: one poll, and when something changed one transaction
/// (order, pointer, results, and one `labtest.order.updated` per change staged in the outbox),
/// then the events are published. A concurrent sync wins: its state is read.
async fn sync(
    deps: &Deps,
    rec: OrderRecord,
    version: u64,
    links: &Links,
) -> Result<(OrderRecord, u64), DomainError> {
    let now = deps.now();
    if rec.next_due.is_none_or(|d| d > now) {
        return Ok((rec, version));
    }
    let poll = deps.lab_network.poll(&rec.lab_ref(), now).await.map_err(lab_error)?;
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
        && let Some(report) = deps.lab_network.results(&next.lab_ref(), now).await.map_err(lab_error)?
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

/// Reads an order, advanced to now.
pub async fn get(deps: &Deps, team: TeamId, order_id: Uuid, links: &Links) -> Result<Order, DomainError> {
    let (rec, v) = load(deps, team, order_id).await?;
    let (rec, _) = sync(deps, rec, v, links).await?;
    let key = signing::key(deps).await?;
    Ok(rec.to_wire(links, &key, deps.now()))
}

/// The stored order of the team, advanced to now (for PSC look-ups and requisitions).
pub async fn record(
    deps: &Deps,
    team: TeamId,
    order_id: Uuid,
    links: &Links,
) -> Result<OrderRecord, DomainError> {
    let (rec, v) = load(deps, team, order_id).await?;
    Ok(sync(deps, rec, v, links).await?.0)
}

/// GET /v3/orders filters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OrderFilter {
    pub user_id: Option<UserId>,
    /// A status group (`received`) or a whole status (`received.walk_in_test.ordered`).
    pub status: Option<String>,
    pub lab_id: Option<i64>,
    pub collection_method: Option<String>,
    /// Created on or after this date (UTC).
    pub start_date: Option<NaiveDate>,
    /// Created on or before this date (UTC).
    pub end_date: Option<NaiveDate>,
    /// Oldest first when true; newest first by default.
    pub ascending: bool,
}

impl OrderFilter {
    fn matches(&self, r: &OrderRecord) -> bool {
        self.user_id.is_none_or(|u| r.user_id == u)
            && self
                .status
                .as_deref()
                .is_none_or(|s| if s.contains('.') { r.status == s } else { status_group(&r.status) == s })
            && self.lab_id.is_none_or(|l| r.lab_id == l)
            && self.collection_method.as_deref().is_none_or(|m| r.collection_method == m)
            && self.start_date.is_none_or(|d| r.created_at.date_naive() >= d)
            && self.end_date.is_none_or(|d| r.created_at.date_naive() <= d)
    }
}

/// The team's orders matching the filter, a page of them. Orders with a due change are
/// advanced first, so status filters see current statuses.
pub async fn list(
    deps: &Deps,
    team: TeamId,
    filter: &OrderFilter,
    spec: PageSpec,
    links: &Links,
) -> Result<OrderPage, DomainError> {
    let now = deps.now();
    let items =
        query_all(deps.table.as_ref(), Query::gsi1(keys::team_orders_index(team)), MAX_LISTED).await?;
    let mut records = Vec::with_capacity(items.len());
    for item in items {
        let rec: OrderRecord = item.decode()?;
        if filter.user_id.is_some_and(|u| u != rec.user_id) {
            continue;
        }
        let rec = if rec.next_due.is_some_and(|d| d <= now) {
            sync(deps, rec, item.version, links).await?.0
        } else {
            rec
        };
        if filter.matches(&rec) {
            records.push(rec);
        }
    }
    if !filter.ascending {
        records.reverse();
    }
    let (page, total, pages) = spec.cut(&records);
    let key = signing::key(deps).await?;
    Ok(OrderPage {
        orders: page.iter().map(|r| r.to_wire(links, &key, now)).collect(),
        total,
        page: spec.page,
        size: spec.size,
        pages,
    })
}

/// Every order of one user, newest first, advanced to now (the portal page).
pub async fn of_user(deps: &Deps, user_id: UserId, links: &Links) -> Result<Vec<Order>, DomainError> {
    let q = Query::partition(crate::keys::user_partition(user_id)).prefix(keys::ORDER_PREFIX);
    let mut out = Vec::new();
    for item in query_all(deps.table.as_ref(), q, 1_000).await? {
        let rec: OrderRecord = item.decode()?;
        out.push(sync(deps, rec, item.version, links).await?.0);
    }
    out.sort_by_key(|o| std::cmp::Reverse(o.created_at));
    let key = signing::key(deps).await?;
    let now = deps.now();
    Ok(out.iter().map(|r| r.to_wire(links, &key, now)).collect())
}

/// Whether `order_id` is an order of `user_id`.
pub async fn belongs_to(deps: &Deps, user_id: UserId, order_id: Uuid) -> Result<bool, DomainError> {
    Ok(deps.table.get(&keys::order(user_id, order_id)).await?.is_some())
}

/// Cancels an order the lab has not started processing (400 otherwise).
pub async fn cancel(deps: &Deps, team: TeamId, order_id: Uuid, links: &Links) -> Result<Order, DomainError> {
    let (rec, v) = load(deps, team, order_id).await?;
    let (rec, v) = sync(deps, rec, v, links).await?;
    if status_group(&rec.status) == "cancelled" {
        return Err(DomainError::Rejected(format!("Order {order_id} is already cancelled.")));
    }
    let now = deps.now();
    let update = deps.lab_network.cancel(&rec.lab_ref(), now).await.map_err(lab_error)?;
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
    team: TeamId,
    order_id: Uuid,
    links: &Links,
) -> Result<OrderResults, DomainError> {
    let rec = record(deps, team, order_id, links).await?;
    let item = deps.table.get(&keys::order_results(rec.user_id, order_id)).await?.ok_or_else(|| {
        DomainError::NotFound(format!("Results of order {order_id} are not available yet."))
    })?;
    let r: ResultsRecord = item.decode()?;
    let p = &rec.patient_details;
    let lab = catalog().lab(rec.lab_id).map(|l| l.name.clone()).unwrap_or_default();
    Ok(OrderResults {
        order_id,
        metadata: ResultMetadata {
            patient: format!("{} {}", p.first_name, p.last_name),
            dob: p.dob,
            laboratory: lab,
            specimen_number: rec.sample_id.clone(),
            date_collected: r.collected_at,
            date_reported: r.reported_at,
            status: r.status.clone(),
        },
        results: r
            .results
            .into_iter()
            .map(|x| {
                let below =
                    x.value.zip(x.min_range_value).map(|(v, lo)| x.result_type == "numeric" && v < lo);
                let above =
                    x.value.zip(x.max_range_value).map(|(v, hi)| x.result_type == "numeric" && v > hi);
                ResultEntry {
                    name: x.name,
                    slug: x.slug.clone(),
                    result: x.result,
                    kind: ResultType::from(x.result_type.as_str()),
                    value: x.value,
                    unit: x.unit,
                    timestamp: r.reported_at,
                    notes: x.notes,
                    min_range_value: x.min_range_value,
                    max_range_value: x.max_range_value,
                    is_above_max_range: above,
                    is_below_min_range: below,
                    interpretation: Interpretation::from(x.interpretation.as_str()),
                    loinc: Some(x.loinc_code),
                    loinc_slug: Some(x.slug),
                    provider_id: Some(x.provider_id),
                }
            })
            .collect(),
    })
}

/// What a requisition form shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Requisition {
    pub order_id: Uuid,
    pub accession_number: String,
    pub created_at: DateTime<Utc>,
    pub patient: PatientDetails,
    pub patient_address: UserAddress,
    pub physician: Physician,
    pub lab_name: String,
    pub lab_address: String,
    pub collection_method: String,
    pub priority: bool,
    pub billing_type: String,
    pub fasting: bool,
    /// (test code, name) of each lab test and add-on marker.
    pub tests: Vec<(String, String)>,
    pub status: String,
}

fn requisition_of(rec: &OrderRecord) -> Requisition {
    let c = catalog();
    let lab = c.lab(rec.lab_id).expect("orders name known labs");
    let mut tests: Vec<(String, String)> = Vec::new();
    let mut fasting = false;
    let mut covered: Vec<i64> = Vec::new();
    for t in rec.lab_test_ids.iter().filter_map(|id| c.lab_test(*id)) {
        fasting |= t.fasting;
        for m in t.marker_ids.iter().filter_map(|id| c.marker(*id)) {
            covered.push(m.id);
            tests.push((m.provider_id.clone(), m.name.clone()));
        }
    }
    for m in rec.marker_ids.iter().filter(|id| !covered.contains(id)).filter_map(|id| c.marker(*id)) {
        tests.push((m.provider_id.clone(), m.name.clone()));
    }
    Requisition {
        order_id: rec.id,
        accession_number: rec.sample_id.clone(),
        created_at: rec.created_at,
        patient: rec.patient_details.clone(),
        patient_address: rec.patient_address.clone(),
        physician: rec.physician.clone(),
        lab_name: lab.name.clone(),
        lab_address: format!("{}, {}, {} {}", lab.first_line_address, lab.city, lab.state, lab.zipcode),
        collection_method: rec.collection_method.clone(),
        priority: rec.priority,
        billing_type: rec.billing_type.to_string(),
        fasting,
        tests,
        status: rec.status.clone(),
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

/// Advances every open order whose next change is due, as reading it would: the periodic
/// open-order sweep (the sweep-worker on AWS, a background task of the local stack), so that
/// `labtest.order.updated` events go out when the lab moves an order, whether or not anyone
/// reads it. Each order's links point where it was placed (`fallback` for orders stored
/// without that). Returns how many due orders were looked at (at most [`SWEEP_MAX`]); an order
/// of a deleted user is left alone (its erasure removes it).
pub async fn advance_due(deps: &Deps, fallback: &Links) -> Result<usize, DomainError> {
    let now = deps.now();
    let upper = keys::open_orders_index_sort(now, Uuid::max());
    let q = Query::gsi1(keys::OPEN_ORDERS_INDEX).between("", upper);
    let mut n = 0;
    for item in query_all(deps.table.as_ref(), q, SWEEP_MAX).await? {
        let Some(order_id) = item.key.pk.strip_prefix("ORDER#").and_then(|s| Uuid::parse_str(s).ok()) else {
            continue;
        };
        let p: OrderPointer = item.decode()?;
        match load_active(deps, p.team_id, p.user_id).await {
            Ok(_) => {}
            Err(DomainError::NotFound(_)) => continue,
            Err(e) => return Err(e),
        }
        let Some((rec, v)) = load_of_user(deps, p.user_id, order_id).await? else { continue };
        let links = rec.base_url.clone().map(|base_url| Links { base_url });
        n += 1;
        // One order the lab cannot answer for must not hold up the others; the next sweep
        // (or a read) tries it again.
        if let Err(e) = sync(deps, rec, v, links.as_ref().unwrap_or(fallback)).await {
            tracing::warn!(order_id = %order_id, error = %e, "open order not advanced");
        }
    }
    Ok(n)
}
