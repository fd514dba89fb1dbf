//! A team's orders (filtered, paged) and a user's orders, each advanced to now.

use chrono::NaiveDate;
use wearlab_models::lab::{Order, OrderPage};

use super::record::OrderRecord;
use super::sync::advance;
use super::wire::Links;
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::common::signing;
use crate::keys::lab as keys;
use crate::lab::test_catalog::PageSpec;
use crate::ports::LabNetwork;
use crate::ports::lab_network::status_group;
use crate::ports::{Query, query_all};

/// Most orders a team listing reads.
const MAX_LISTED: usize = 100_000;

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
    network: &dyn LabNetwork,
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
        let rec = advance(deps, network, rec, item.version, links).await?.0;
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
pub async fn of_user(
    deps: &Deps,
    network: &dyn LabNetwork,
    user_id: UserId,
    links: &Links,
) -> Result<Vec<Order>, DomainError> {
    let q = Query::partition(crate::keys::user_partition(user_id)).prefix(keys::ORDER_PREFIX);
    let mut out = Vec::new();
    for item in query_all(deps.table.as_ref(), q, 1_000).await? {
        let rec: OrderRecord = item.decode()?;
        out.push(advance(deps, network, rec, item.version, links).await?.0);
    }
    out.sort_by_key(|o| std::cmp::Reverse(o.created_at));
    let key = signing::key(deps).await?;
    let now = deps.now();
    Ok(out.iter().map(|r| r.to_wire(links, &key, now)).collect())
}

/// Every order of one user as stored, oldest first, without asking the lab (reads that change
/// nothing: the FHIR API; see [`super::stored`]). One query of the user's orders.
pub async fn stored_of_user(deps: &Deps, user_id: UserId) -> Result<Vec<OrderRecord>, DomainError> {
    let q = Query::partition(crate::keys::user_partition(user_id)).prefix(keys::ORDER_PREFIX);
    let mut out = Vec::new();
    for item in query_all(deps.table.as_ref(), q, 1_000).await? {
        out.push(item.decode::<OrderRecord>()?);
    }
    out.sort_by_key(|o| o.created_at);
    Ok(out)
}
