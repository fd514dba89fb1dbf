//! Revoking removed connections at their providers, durably.
//!
//! The transaction that removes connections (`connections::deregister`, user deletion) also
//! writes one pending-revoke item holding every removed connection's credentials, sealed with
//! the data key bound to that item's key. After the commit the caller attempts the revokes at
//! once; what fails (or is never attempted: a crash after the commit) is retried by the sweep
//! worker from the due-time index, with backoff [`BACKOFF`]. The item goes when every revoke
//! succeeded or the budget ends (then a warning with ids only): its sealed credentials with it.
//!
//! One item per removal, not per connection: user deletion removes up to `MAX_CONNECTIONS`
//! (45) connections with their markers (90 writes) plus 6 other writes; one more keeps the
//! transaction within DynamoDB's 100 writes, 45 more would not.
//!
//! The item is in the user's partition, so erasure removes it; the budget (about 14.6 hours)
//! ends well inside the 7-day grace period, so erasure does not cut retries short in practice.
//!
//! Whoever attempts first claims the item by a conditional write on its version (pushing its
//! next attempt time out), so concurrent sweeps do not revoke twice.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::connections::ConnectionRecord;
use super::team_apps;
use crate::Deps;
use crate::common::crypto::Sealed;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::keys;
use crate::ports::providers::{ProviderAccount, ProviderCredentials, ProviderError};
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key, Query, StoreError, WriteOp};

/// Waits before each retry after the first attempt (which runs right after the removal). Five
/// retries, the last about 14.6 hours after the removal; then the item is dropped.
pub const BACKOFF: [Duration; 5] = [
    Duration::minutes(1),
    Duration::minutes(5),
    Duration::minutes(30),
    Duration::hours(2),
    Duration::hours(12),
];
/// Most pending items one sweep run takes; the next run takes the rest.
const SWEEP_MAX: u32 = 100;

/// One connection to revoke.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Entry {
    provider: String,
    external_user_id: String,
    /// The client id of the team's own OAuth app the credentials were issued to.
    team_app_client_id: Option<String>,
    /// `ProviderCredentials`, sealed with the data key bound to the item's key and provider.
    credentials: Sealed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PendingRecord {
    team_id: TeamId,
    user_id: UserId,
    id: Uuid,
    /// Attempts made so far (claims).
    attempts: u32,
    next_at: DateTime<Utc>,
    entries: Vec<Entry>,
}

fn key(user: UserId, id: Uuid) -> Key {
    keys::linking::revoke(user, id)
}

fn seal_context(key: &Key, provider: &str) -> String {
    format!("{}|{}|{provider}", key.pk, key.sk)
}

impl PendingRecord {
    fn key(&self) -> Key {
        key(self.user_id, self.id)
    }

    fn to_item(&self, version: u64) -> Item {
        let mut item = Item::new(self.key(), to_body(self)).with_gsi1(
            keys::linking::REVOKES_DUE_INDEX,
            keys::linking::revoke_due_sort(self.next_at, self.id),
        );
        item.version = version;
        item
    }
}

/// Revokes staged with the removal of connections: write [`Pending::write_op`] in the removing
/// transaction, then [`Pending::attempt`] once it committed.
#[derive(Debug, Clone)]
#[must_use = "write the pending revokes with the removal, then attempt them"]
pub struct Pending {
    record: Option<PendingRecord>,
}

impl Pending {
    pub fn new(
        deps: &Deps,
        team: TeamId,
        user: UserId,
        conns: &[ConnectionRecord],
    ) -> Result<Self, DomainError> {
        // A connection from the phone has nothing to revoke: no provider issued it credentials.
        let conns: Vec<&ConnectionRecord> = conns.iter().filter(|c| !c.from_phone()).collect();
        if conns.is_empty() {
            return Ok(Self { record: None });
        }
        let id = Uuid::new_v4();
        let k = key(user, id);
        let mut entries = Vec::with_capacity(conns.len());
        for c in conns {
            let creds: ProviderCredentials = c.credentials(deps)?;
            entries.push(Entry {
                provider: c.provider.clone(),
                external_user_id: c.external_user_id.clone(),
                team_app_client_id: c.team_app_client_id.clone(),
                credentials: deps.data_key.seal_json(&creds, &seal_context(&k, &c.provider)),
            });
        }
        let record =
            PendingRecord { team_id: team, user_id: user, id, attempts: 0, next_at: deps.now(), entries };
        Ok(Self { record: Some(record) })
    }

    /// The write storing the pending revokes (none when nothing was removed).
    pub fn write_op(&self) -> Option<WriteOp> {
        self.record.as_ref().map(|r| WriteOp::Put { item: r.to_item(1), condition: Condition::NotExists })
    }

    /// After the removal committed: the first attempt. What fails is left to the sweep.
    pub async fn attempt(self, deps: &Deps) {
        if let Some(record) = self.record {
            let user_id = record.user_id;
            if let Err(e) = process(deps, record, 1).await {
                tracing::warn!(user_id = %user_id, error = %e, "revokes not attempted; the sweep retries them");
            }
        }
    }
}

/// Claims the item (version `version`), attempts every entry, and stores what is left (or drops
/// the item). `Ok(false)`: someone else claimed it first.
async fn process(deps: &Deps, mut record: PendingRecord, version: u64) -> Result<bool, DomainError> {
    let now = deps.now();
    let old_key = record.key();
    let retries_left = (record.attempts as usize) < BACKOFF.len();
    // The claim: the next attempt moves to when this one's result would schedule it, so a
    // concurrent sweep neither finds it due nor can write it.
    record.next_at = now + BACKOFF.get(record.attempts as usize).copied().unwrap_or(Duration::hours(1));
    record.attempts += 1;
    let claimed = version + 1;
    match deps.table.put(record.to_item(claimed), Condition::VersionIs(version)).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed { .. }) => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    // The providers are told at the same time (at most `MAX_CONNECTIONS` of them).
    let mut tasks = tokio::task::JoinSet::new();
    for (i, entry) in record.entries.iter().enumerate() {
        let (deps, team, key, entry) = (deps.clone(), record.team_id, old_key.clone(), entry.clone());
        tasks.spawn(async move { (i, revoke(&deps, team, &key, &entry).await) });
    }
    let mut revoked = vec![false; record.entries.len()];
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok((i, Ok(()))) => {
                revoked[i] = true;
                tracing::info!(user_id = %record.user_id, provider = %record.entries[i].provider, "deregistered at provider")
            }
            Ok((i, Err(e))) => {
                tracing::warn!(user_id = %record.user_id, provider = %record.entries[i].provider, attempt = record.attempts, error = %e, "deregistration at provider failed");
            }
            // A task that panicked: its entry is not known here; every entry not reported done
            // is kept below.
            Err(e) => tracing::warn!(user_id = %record.user_id, error = %e, "deregistration task failed"),
        }
    }
    let left: Vec<Entry> = std::mem::take(&mut record.entries)
        .into_iter()
        .zip(revoked)
        .filter_map(|(e, r)| (!r).then_some(e))
        .collect();
    if left.is_empty() || !retries_left {
        for entry in &left {
            tracing::warn!(
                team_id = %record.team_id, user_id = %record.user_id, provider = %entry.provider,
                "deregistration at provider given up after the retry budget; credentials dropped"
            );
        }
        deps.table.delete(&old_key, Condition::VersionIs(claimed)).await?;
    } else {
        record.entries = left;
        deps.table.put(record.to_item(claimed + 1), Condition::VersionIs(claimed)).await?;
    }
    Ok(true)
}

/// Why one revoke did not go through (ids and provider errors only: no credentials).
#[derive(Debug, thiserror::Error)]
enum RevokeFailure {
    #[error("the sealed credentials do not open with the data key")]
    Sealed,
    #[error("the team's OAuth app: {0}")]
    Client(DomainError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

async fn revoke(deps: &Deps, team: TeamId, k: &Key, entry: &Entry) -> Result<(), RevokeFailure> {
    let credentials: ProviderCredentials = deps
        .data_key
        .open_json(&entry.credentials, &seal_context(k, &entry.provider))
        .map_err(|_| RevokeFailure::Sealed)?;
    let client = match entry.team_app_client_id {
        Some(_) => {
            team_apps::team_client(deps, team, &entry.provider).await.map_err(RevokeFailure::Client)?
        }
        None => None,
    };
    let account = ProviderAccount { external_user_id: entry.external_user_id.clone(), credentials };
    Ok(deps.providers.deregister(&entry.provider, client.as_ref(), &account).await?)
}

/// The sweep: attempts every pending revoke whose next attempt is due (at most [`SWEEP_MAX`]
/// per run). Returns how many items this run claimed.
pub async fn retry_due(deps: &Deps) -> Result<usize, DomainError> {
    let upper = keys::linking::revoke_due_sort(deps.now(), Uuid::max());
    let q = Query::gsi1(keys::linking::REVOKES_DUE_INDEX).between("", upper).limit(SWEEP_MAX);
    let page = deps.table.query(q).await?;
    let mut claimed = 0;
    for item in page.items {
        let record: PendingRecord = match item.decode() {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "pending revoke does not read; left in place");
                continue;
            }
        };
        let user_id = record.user_id;
        // One item's store error (or its erasure meanwhile) does not stop the others.
        match process(deps, record, item.version).await {
            Ok(true) => claimed += 1,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(user_id = %user_id, error = %e, "pending revoke not stored back; retried when due")
            }
        }
    }
    Ok(claimed)
}
