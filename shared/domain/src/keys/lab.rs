//! Keys of lab ordering. Everything of a user (demographics, insurance, orders, results, portal
//! links) lives in the user's partition under sort keys starting with `LAB#`; two small pointer
//! items live outside it (an order by id, a short portal link by code), and erasure removes
//! them with `outside_keys`.

use chrono::{DateTime, SecondsFormat, Utc};
use uuid::Uuid;

use crate::common::ids::{TeamId, UserId};
use crate::ports::Key;

const ROOT: &str = "#";

pub fn demographics(user: UserId) -> Key {
    Key::new(super::user_partition(user), "LAB#INFO")
}

pub const INSURANCE_PREFIX: &str = "LAB#INSURANCE#";

/// One stored insurance; sort keys order them by creation time.
pub fn insurance(user: UserId, created_at: DateTime<Utc>, id: Uuid) -> Key {
    Key::new(
        super::user_partition(user),
        format!("{INSURANCE_PREFIX}{}#{id}", created_at.to_rfc3339_opts(SecondsFormat::Micros, true)),
    )
}

pub const ORDER_PREFIX: &str = "LAB#ORDER#";

/// The order record, in the user's partition.
pub fn order(user: UserId, order_id: Uuid) -> Key {
    Key::new(super::user_partition(user), format!("{ORDER_PREFIX}{order_id}"))
}

/// GSI1 partition of the team's orders, by creation time.
pub fn team_orders_index(team: TeamId) -> String {
    format!("TEAM#{team}#ORDERS")
}

pub fn team_orders_index_sort(created_at: DateTime<Utc>, order_id: Uuid) -> String {
    format!("{}#{order_id}", created_at.to_rfc3339_opts(SecondsFormat::Micros, true))
}

/// The order's results, in the user's partition.
pub fn order_results(user: UserId, order_id: Uuid) -> Key {
    Key::new(super::user_partition(user), format!("LAB#RESULT#{order_id}"))
}

/// Pointer from an order id to its user and team (outside the user's partition).
pub fn order_pointer(order_id: Uuid) -> Key {
    Key::new(format!("ORDER#{order_id}"), ROOT)
}

/// The order an order pointer's partition key ([`order_pointer`]) names.
pub fn parse_order_pointer(pk: &str) -> Option<Uuid> {
    pk.strip_prefix("ORDER#").and_then(|s| Uuid::parse_str(s).ok())
}

/// GSI1 partition of orders the lab will still change, by when the next change is due
/// (a sparse index on the order pointers; a sweep may advance them).
pub const OPEN_ORDERS_INDEX: &str = "LAB#OPEN_ORDERS";

pub fn open_orders_index_sort(due: DateTime<Utc>, order_id: Uuid) -> String {
    format!("{}#{order_id}", due.to_rfc3339_opts(SecondsFormat::Secs, true))
}

pub const PORTAL_PREFIX: &str = "LAB#PORTAL#";

/// Record of a short portal link, in the user's partition (so erasure finds its pointer).
pub fn portal_link(user: UserId, code: &str) -> Key {
    Key::new(super::user_partition(user), format!("{PORTAL_PREFIX}{code}"))
}

/// The pending identity check of a communications portal link (in the user's partition, so
/// erasure removes it), by a hash of the link's code.
pub fn portal_verification(user: UserId, link_hash: &str) -> Key {
    Key::new(super::user_partition(user), format!("LAB#PORTAL_VERIFY#{link_hash}"))
}

/// A short portal link by its code (outside the user's partition).
pub fn portal_pointer(code: &str) -> Key {
    Key::new(format!("PORTAL#{code}"), ROOT)
}

/// The deployment's key for signed links (portal links, requisition URLs).
pub fn signing_key() -> Key {
    Key::new("CONFIG#LAB_SIGNING_KEY", ROOT)
}

/// The items outside the user's partition that belong to items inside it: erasure deletes them
/// with the partition.
pub fn outside_keys(partition_keys: &[Key]) -> Vec<Key> {
    partition_keys
        .iter()
        .filter_map(|k| {
            if let Some(id) = k.sk.strip_prefix(ORDER_PREFIX) {
                Uuid::parse_str(id).ok().map(order_pointer)
            } else {
                k.sk.strip_prefix(PORTAL_PREFIX).map(portal_pointer)
            }
        })
        .collect()
}
