//! Teams and their API keys. Keys are shown once and stored only as SHA-256 hashes. The
//! team's brand on the hosted pages is in [`branding`].

pub mod branding;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{Caller, KeyId, TeamId};
use crate::keys;
use crate::ports::{Condition, Item, Query, StoreError, WriteOp, query_all, to_body};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Team {
    pub team_id: TeamId,
    pub name: String,
    pub created_on: DateTime<Utc>,
}

/// What the store keeps of a key: never the key itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKeyRecord {
    pub key_id: String,
    pub team_id: TeamId,
    pub hash: String,
    /// The first characters of the key, to tell keys apart in listings.
    pub prefix: String,
    pub created_on: DateTime<Utc>,
}

/// A freshly issued key. `secret` is shown once and never stored.
#[derive(Debug, Clone)]
pub struct IssuedKey {
    pub key_id: String,
    pub team_id: TeamId,
    pub secret: String,
}

/// SHA-256 of the key, hex. API keys carry 256 random bits, so a fast hash is the right one:
/// there is nothing to brute-force that a slow hash would protect.
pub fn hash_key(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A new random key: `sk_<environment>_<64 hex chars>`.
pub fn new_secret(environment: &str) -> String {
    let a = uuid::Uuid::new_v4();
    let b = uuid::Uuid::new_v4();
    // Two v4 UUIDs give 244 random bits; hashing them spreads the bits over the whole string.
    let mut h = Sha256::new();
    h.update(a.as_bytes());
    h.update(b.as_bytes());
    format!("sk_{environment}_{}", hex::encode(h.finalize()))
}

/// Checks a key for the shape of issued keys before any storage read.
pub fn is_well_formed_key(secret: &str) -> bool {
    secret.len() <= 128 && secret.starts_with("sk_") && secret.is_ascii()
}

pub async fn create_team(deps: &Deps, name: &str) -> Result<Team, DomainError> {
    let name = name.trim();
    if name.is_empty() || name.len() > 200 {
        return Err(DomainError::Rejected("team name must be 1-200 characters".into()));
    }
    let team = Team { team_id: TeamId::new_random(), name: name.to_owned(), created_on: deps.now() };
    put_team(deps, &team).await?;
    Ok(team)
}

/// Stores a team with a chosen id (the local stack's fixed team). Existing teams are kept.
pub async fn ensure_team(deps: &Deps, team_id: TeamId, name: &str) -> Result<Team, DomainError> {
    if let Some(t) = get_team(deps, team_id).await? {
        return Ok(t);
    }
    let team = Team { team_id, name: name.to_owned(), created_on: deps.now() };
    match put_team(deps, &team).await {
        Err(DomainError::Store(StoreError::ConditionFailed { .. })) => {
            get_team(deps, team_id).await?.ok_or_else(|| DomainError::Busy("team".into()))
        }
        r => r.map(|_| team),
    }
}

async fn put_team(deps: &Deps, team: &Team) -> Result<(), DomainError> {
    let item = Item::new(keys::team(team.team_id), to_body(team));
    deps.table.put(item, Condition::NotExists).await?;
    Ok(())
}

pub async fn get_team(deps: &Deps, team_id: TeamId) -> Result<Option<Team>, DomainError> {
    match deps.table.get(&keys::team(team_id)).await? {
        Some(item) => Ok(Some(item.decode()?)),
        None => Ok(None),
    }
}

/// Issues a new random key for the team.
pub async fn issue_key(deps: &Deps, team_id: TeamId, environment: &str) -> Result<IssuedKey, DomainError> {
    let secret = new_secret(environment);
    let key_id = register_key(deps, team_id, &secret).await?;
    Ok(IssuedKey { key_id, team_id, secret })
}

/// Registers a key chosen by the operator (e.g. `WEARLAB_API_KEY` of the local stack).
/// Registering a key the team already has is a no-op that returns its id.
pub async fn register_key(deps: &Deps, team_id: TeamId, secret: &str) -> Result<String, DomainError> {
    if !is_well_formed_key(secret) || secret.len() < 20 {
        return Err(DomainError::Rejected(
            "an API key starts with sk_, is ASCII and 20-128 characters long".into(),
        ));
    }
    if get_team(deps, team_id).await?.is_none() {
        return Err(DomainError::NotFound(format!("team {team_id} not found")));
    }
    let hash = hash_key(secret);
    if let Some(existing) = deps.table.get(&keys::api_key(&hash)).await? {
        let rec: ApiKeyRecord = existing.decode()?;
        if rec.team_id == team_id {
            return Ok(rec.key_id);
        }
        return Err(DomainError::Rejected("that key belongs to another team".into()));
    }
    let rec = ApiKeyRecord {
        key_id: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
        team_id,
        hash: hash.clone(),
        prefix: secret.chars().take(12).collect(),
        created_on: deps.now(),
    };
    let body = to_body(&rec);
    deps.table
        .transact(vec![
            WriteOp::Put {
                item: Item::new(keys::api_key(&hash), body.clone()),
                condition: Condition::NotExists,
            },
            WriteOp::Put {
                item: Item::new(keys::team_api_key(team_id, &rec.key_id), body),
                condition: Condition::NotExists,
            },
        ])
        .await?;
    Ok(rec.key_id)
}

pub async fn list_keys(deps: &Deps, team_id: TeamId) -> Result<Vec<ApiKeyRecord>, DomainError> {
    let q = Query::partition(keys::team(team_id).pk).prefix(keys::team_api_key_prefix());
    query_all(deps.table.as_ref(), q, 10_000)
        .await?
        .iter()
        .map(|i| i.decode().map_err(DomainError::from))
        .collect()
}

pub async fn revoke_key(deps: &Deps, team_id: TeamId, key_id: &str) -> Result<(), DomainError> {
    let team_key = keys::team_api_key(team_id, key_id);
    let Some(item) = deps.table.get(&team_key).await? else {
        return Err(DomainError::NotFound(format!("key {key_id} not found")));
    };
    let rec: ApiKeyRecord = item.decode()?;
    deps.table
        .transact(vec![
            WriteOp::Delete { key: keys::api_key(&rec.hash), condition: Condition::None },
            WriteOp::Delete { key: team_key, condition: Condition::None },
        ])
        .await?;
    Ok(())
}

/// The team a key belongs to; one read.
pub async fn authenticate(deps: &Deps, secret: &str) -> Result<TeamId, DomainError> {
    Ok(identify(deps, secret).await?.team_id)
}

/// The team and key id of an API key: who is calling, for the audit log.
pub async fn identify(deps: &Deps, secret: &str) -> Result<Caller, DomainError> {
    let unknown = || DomainError::Unauthenticated("Invalid API key.".into());
    if !is_well_formed_key(secret) {
        return Err(unknown());
    }
    let item = deps.table.get(&keys::api_key(&hash_key(secret))).await?.ok_or_else(unknown)?;
    let rec: ApiKeyRecord = item.decode()?;
    // Keys are issued with 12 hex-digit ids; one stored otherwise is a corrupt record.
    let key_id = KeyId::parse(&rec.key_id).ok_or_else(|| StoreError::Corrupt("API key id".into()))?;
    Ok(Caller { team_id: rec.team_id, key_id })
}

/// Features an operator switches on per team (off until then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TeamFeatures {
    /// The bulk connection operations (`/v2/link/bulk_*`), link migration endpoints.
    #[serde(default)]
    pub bulk_operations: bool,
}

pub async fn features(deps: &Deps, team_id: TeamId) -> Result<TeamFeatures, DomainError> {
    Ok(match deps.table.get(&keys::bulk::team_features(team_id)).await? {
        Some(item) => item.decode()?,
        None => TeamFeatures::default(),
    })
}

/// Switches bulk operations on or off for a team (operator CLI).
pub async fn set_bulk_operations(
    deps: &Deps,
    team_id: TeamId,
    enabled: bool,
) -> Result<TeamFeatures, DomainError> {
    if get_team(deps, team_id).await?.is_none() {
        return Err(DomainError::NotFound(format!("team {team_id} not found")));
    }
    let mut f = features(deps, team_id).await?;
    f.bulk_operations = enabled;
    deps.table.put(Item::new(keys::bulk::team_features(team_id), to_body(&f)), Condition::None).await?;
    tracing::info!(team_id = %team_id, enabled, "bulk operations switched");
    Ok(f)
}

/// 403 unless the operator enabled bulk operations for the team.
pub async fn require_bulk_operations(deps: &Deps, team_id: TeamId) -> Result<(), DomainError> {
    if features(deps, team_id).await?.bulk_operations {
        Ok(())
    } else {
        Err(DomainError::Forbidden(
            "Bulk operations are not enabled for this team; ask the operator to enable them.".into(),
        ))
    }
}
