//! Events of a user's lifecycle and of a connection failing, delivered like every other event
//! (the bus, the team's rules, webhooks): `user.deleted`, `user.undo_deleted`, `user.erased`
//! (the erasure proof: how many items went, by kind, never what they held) and
//! `provider.connection.error`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::json;
use wearlab_models::EventEnvelope;

use crate::common::provider_catalog::catalog;
use crate::events::of_user as envelope;
use crate::keys;
use crate::ports::Key;
use crate::users::UserRecord;

pub const USER_DELETED: &str = "user.deleted";
pub const USER_UNDO_DELETED: &str = "user.undo_deleted";
pub const USER_ERASED: &str = "user.erased";
pub const CONNECTION_ERROR: &str = "provider.connection.error";

pub fn deleted(user: &UserRecord, deleted_at: DateTime<Utc>, erase_at: DateTime<Utc>) -> EventEnvelope {
    envelope(
        user,
        USER_DELETED,
        json!({"user_id": user.user_id, "deleted_at": deleted_at, "erase_at": erase_at}),
    )
}

pub fn undo_deleted(user: &UserRecord, at: DateTime<Utc>) -> EventEnvelope {
    envelope(user, USER_UNDO_DELETED, json!({"user_id": user.user_id, "restored_at": at}))
}

/// The erasure proof: `removed` are the keys deleted (the user record included).
pub fn erased(user: &UserRecord, at: DateTime<Utc>, removed: &[Key]) -> EventEnvelope {
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for k in removed {
        *by_kind.entry(keys::erased_kind(k, user.user_id)).or_default() += 1;
    }
    envelope(
        user,
        USER_ERASED,
        json!({"user_id": user.user_id, "erased_at": at, "items_removed": removed.len(), "items_removed_by_kind": by_kind}),
    )
}

pub fn connection_error(
    user: &UserRecord,
    provider: &str,
    error_type: &str,
    at: DateTime<Utc>,
) -> EventEnvelope {
    let reference = catalog().reference(provider);
    envelope(
        user,
        CONNECTION_ERROR,
        json!({"user_id": user.user_id, "provider": reference, "error_type": error_type, "created_on": at}),
    )
}
