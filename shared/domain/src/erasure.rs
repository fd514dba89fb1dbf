//! Erasure of deleted users once their grace period is over.

use crate::Deps;
use crate::error::DomainError;
use crate::ids::UserId;
use crate::keys;
use crate::lifecycle_events;
use crate::outbox::Staged;
use crate::ports::{Condition, Query, WriteOp, query_all};
use crate::users::{ErasureDue, UserRecord};

/// Items deleted per transaction while erasing.
const CHUNK: usize = 25;
/// Most pending erasures one sweep handles; the next sweep takes the rest.
const SWEEP_MAX: usize = 10_000;
/// Most items erased for one user per call; a larger user is finished by the next sweep.
const USER_MAX_ITEMS: usize = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Erasure {
    /// Every item of the user is gone.
    Erased { items: usize },
    /// Nothing to do: the user was erased before (a duplicate or late schedule).
    AlreadyGone,
    /// The user is active again (deletion undone).
    NotDeleted,
    /// The grace period is not over (a stale schedule of an earlier deletion).
    NotDue,
}

/// Erases every item of a deleted user whose grace period is over. Safe to repeat.
pub async fn erase_user(deps: &Deps, user_id: UserId) -> Result<Erasure, DomainError> {
    let Some(item) = deps.table.get(&keys::user(user_id)).await? else {
        return Ok(Erasure::AlreadyGone);
    };
    let record: UserRecord = item.decode()?;
    let Some(deletion) = record.deletion.clone() else { return Ok(Erasure::NotDeleted) };
    if deletion.erase_at > deps.now() {
        return Ok(Erasure::NotDue);
    }
    let user_root = keys::user(user_id);
    let mut keys_to_delete: Vec<_> =
        query_all(deps.table.as_ref(), Query::partition(keys::user_partition(user_id)), USER_MAX_ITEMS)
            .await?
            .into_iter()
            .map(|i| i.key)
            .filter(|k| *k != user_root)
            .collect();
    keys_to_delete.push(keys::deleted_client_user_id(record.team_id, &record.client_user_id, user_id));
    keys_to_delete.extend(keys::lab::outside_keys(&keys_to_delete));
    // The user record goes last, together with the pending marker: if erasure stops half way,
    // the marker and the record remain and the next run (schedule retry or sweep) finishes it.
    let count = keys_to_delete.len() + 1;
    for chunk in keys_to_delete.chunks(CHUNK) {
        let ops =
            chunk.iter().map(|k| WriteOp::Delete { key: k.clone(), condition: Condition::None }).collect();
        deps.table.transact(ops).await?;
    }
    // The erasure proof is staged with the last write, so it goes out exactly when the user is
    // gone (it is the one item left in the partition until it is published).
    keys_to_delete.push(user_root.clone());
    let proof =
        Staged::new(deps, user_id, vec![lifecycle_events::erased(&record, deps.now(), &keys_to_delete)]);
    deps.table
        .transact(vec![
            WriteOp::Delete { key: user_root, condition: Condition::VersionIs(item.version) },
            WriteOp::Delete {
                key: keys::erasure_due(deletion.erase_at, user_id),
                condition: Condition::None,
            },
            proof.write_op(),
        ])
        .await?;
    proof.publish(deps).await;
    tracing::info!(team_id = %record.team_id, user_id = %user_id, items = count, "user erased");
    Ok(Erasure::Erased { items: count })
}

/// Erases every user whose grace period is over; catches what a schedule missed.
pub async fn sweep(deps: &Deps) -> Result<usize, DomainError> {
    let now = deps.now();
    let upper = keys::erasure_due_sort(now, UserId(uuid::Uuid::max()));
    let q = Query::partition(keys::ERASURE_DUE).between("", upper);
    let mut erased = 0;
    for item in query_all(deps.table.as_ref(), q, SWEEP_MAX).await? {
        let due: ErasureDue = item.decode()?;
        match erase_user(deps, due.user_id).await? {
            crate::erasure::Erasure::Erased { .. } => erased += 1,
            // A marker whose user was erased or restored without it: drop the marker.
            crate::erasure::Erasure::AlreadyGone | crate::erasure::Erasure::NotDeleted => {
                deps.table.delete(&item.key, Condition::None).await?;
            }
            crate::erasure::Erasure::NotDue => {}
        }
    }
    if erased > 0 {
        tracing::info!(erased, "erasure sweep");
    }
    Ok(erased)
}
