//! Idempotency keys: the first answer to a request carrying `X-Idempotency-Key` is kept for
//! 24 hours per team and replayed for a repeat with the same key and the same request.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Deps;
use crate::error::DomainError;
use crate::ids::TeamId;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key, StoreError};

/// How long an answer is kept for replay.
pub const RETENTION_HOURS: i64 = 24;
/// A claim older than this whose request never finished (a crashed process) may be taken over.
pub const CLAIM_TIMEOUT_SECONDS: i64 = 60;
pub const MAX_KEY_LEN: usize = 255;

/// A key as the client sent it: 1-255 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn parse(raw: &str) -> Result<Self, DomainError> {
        if raw.is_empty() || raw.len() > MAX_KEY_LEN || !raw.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(DomainError::invalid(
                &["header", "X-Idempotency-Key"],
                format!("an idempotency key is 1-{MAX_KEY_LEN} visible ASCII characters"),
                "value_error",
            ));
        }
        Ok(Self(raw.to_owned()))
    }
}

/// What identifies "the same request": method, path, query and body.
pub fn fingerprint(method: &str, path_and_query: &str, body: &[u8]) -> String {
    let mut h = Sha256::new();
    for part in [method.as_bytes(), path_and_query.as_bytes(), body] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part);
    }
    hex::encode(h.finalize())
}

/// A kept answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredResponse {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Record {
    fingerprint: String,
    claimed_at: DateTime<Utc>,
    response: Option<StoredResponse>,
}

/// What to do with a request carrying a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// First of its kind (or taking over a stale claim): run it, then `complete` or `release`.
    Proceed(ClaimToken),
    /// Seen and answered before: answer the same.
    Replay(StoredResponse),
    /// The first request with this key is still running.
    InProgress,
    /// The key was used for a different request.
    Mismatch,
}

/// Proof of a claim, needed to complete or release it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimToken {
    key: Key,
    version: u64,
    fingerprint: String,
    claimed_at: DateTime<Utc>,
}

fn storage_key(team: TeamId, key: &IdempotencyKey) -> Key {
    // Hashed so that any visible ASCII key is a safe storage key.
    Key::new(format!("IDEMPOTENCY#{team}#{}", hex::encode(Sha256::digest(key.0.as_bytes()))), "#")
}

fn expiry(now: DateTime<Utc>) -> i64 {
    (now + Duration::hours(RETENTION_HOURS)).timestamp()
}

pub async fn claim(
    deps: &Deps,
    team: TeamId,
    key: &IdempotencyKey,
    fingerprint: &str,
) -> Result<Claim, DomainError> {
    let skey = storage_key(team, key);
    let now = deps.now();
    let record = Record { fingerprint: fingerprint.to_owned(), claimed_at: now, response: None };
    let item = Item::new(skey.clone(), to_body(&record)).with_expiry(Some(expiry(now)));
    let token = |version| ClaimToken {
        key: skey.clone(),
        version,
        fingerprint: fingerprint.to_owned(),
        claimed_at: now,
    };
    match deps.table.put(item.clone(), Condition::NotExists).await {
        Ok(()) => return Ok(Claim::Proceed(token(1))),
        Err(StoreError::ConditionFailed { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let Some(existing) = deps.table.get(&skey).await? else {
        // Gone between our write and read (expired and purged): a later retry claims it.
        return Ok(Claim::InProgress);
    };
    let stored: Record = existing.decode()?;
    let expired = existing.expires_at.is_some_and(|e| e <= now.timestamp());
    let stale_claim =
        stored.response.is_none() && now - stored.claimed_at > Duration::seconds(CLAIM_TIMEOUT_SECONDS);
    if expired || stale_claim {
        // Take over: an expired record (TTL deletes lazily) or a claim whose request died.
        let mut takeover = item;
        takeover.version = existing.version + 1;
        return match deps.table.put(takeover, Condition::VersionIs(existing.version)).await {
            Ok(()) => Ok(Claim::Proceed(token(existing.version + 1))),
            Err(StoreError::ConditionFailed { .. }) => Ok(Claim::InProgress),
            Err(e) => Err(e.into()),
        };
    }
    if stored.fingerprint != fingerprint {
        return Ok(Claim::Mismatch);
    }
    Ok(match stored.response {
        Some(r) => Claim::Replay(r),
        None => Claim::InProgress,
    })
}

/// Keeps the answer for replay.
pub async fn complete(deps: &Deps, token: ClaimToken, response: StoredResponse) -> Result<(), DomainError> {
    let record =
        Record { fingerprint: token.fingerprint, claimed_at: token.claimed_at, response: Some(response) };
    let mut item = Item::new(token.key, to_body(&record)).with_expiry(Some(expiry(token.claimed_at)));
    item.version = token.version + 1;
    match deps.table.put(item, Condition::VersionIs(token.version)).await {
        // Someone took the claim over after it went stale; their answer wins.
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Gives the key back (the request failed in a way worth retrying).
pub async fn release(deps: &Deps, token: ClaimToken) -> Result<(), DomainError> {
    match deps.table.delete(&token.key, Condition::VersionIs(token.version)).await {
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
