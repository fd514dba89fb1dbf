//! Idempotency keys: the first answer to a request carrying `X-Idempotency-Key` is kept for
//! 24 hours per team and replayed for a repeat with the same key and the same request. Kept
//! answers are sealed with the data key: some carry secrets shown once (a webhook secret, a link
//! token, a portal code, exported provider tokens), which must not rest in the table in plain
//! text any more than they do elsewhere.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Deps;
use crate::common::crypto::Sealed;
use crate::common::error::DomainError;
use crate::common::ids::TeamId;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key, StoreError, WriteOp};

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

/// The largest body fingerprinted as its JSON value: a plain request body's limit (6 MB). A
/// larger one (a gzipped body can expand to 32 MiB) counts as its bytes: its value in memory
/// would take about ten times its size, more than an API function has (measured: 393 MB at
/// the peak for 31 MiB of samples).
pub const MAX_CANONICAL_BODY_BYTES: usize = 6 * 1024 * 1024;

/// What identifies "the same request": method, path, query and body. A JSON body up to
/// [`MAX_CANONICAL_BODY_BYTES`] counts as its value (key order and spacing aside), so a client
/// that re-serializes its retry still matches; a larger one counts as its bytes, so its retry
/// matches when it sends the same bytes.
pub fn fingerprint(method: &str, path_and_query: &str, body: &[u8]) -> String {
    let canonical = (body.len() <= MAX_CANONICAL_BODY_BYTES)
        .then(|| serde_json::from_slice::<serde_json::Value>(body).ok())
        .flatten()
        .map(|v| v.to_string().into_bytes());
    let body = canonical.as_deref().unwrap_or(body);
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

/// A claim and its kept answer, as stored: one-letter names (records written before them have
/// the long ones, read as well, for the day they live).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Record {
    #[serde(rename = "f", alias = "fingerprint")]
    fingerprint: String,
    #[serde(rename = "a", alias = "claimed_at")]
    claimed_at: DateTime<Utc>,
    #[serde(rename = "r", alias = "response", default, skip_serializing_if = "Option::is_none")]
    response: Option<Kept>,
}

/// A kept answer as stored: its body sealed, bound to the record's key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Kept {
    #[serde(rename = "s", alias = "status")]
    status: u16,
    #[serde(rename = "c", alias = "content_type", default, skip_serializing_if = "Option::is_none")]
    content_type: Option<String>,
    #[serde(rename = "x", alias = "sealed", default, skip_serializing_if = "Option::is_none")]
    sealed: Option<Sealed>,
    /// Answers kept before sealing (gone 24 hours after that version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<String>,
}

fn seal_context(key: &Key) -> String {
    format!("idempotency|{}|{}", key.pk, key.sk)
}

impl Kept {
    fn seal(deps: &Deps, key: &Key, r: StoredResponse) -> Self {
        let sealed = deps.data_key.seal(r.body.as_bytes(), &seal_context(key));
        Self { status: r.status, content_type: r.content_type, sealed: Some(sealed), body: None }
    }

    fn open(self, deps: &Deps, key: &Key) -> Result<StoredResponse, DomainError> {
        let body = match (self.sealed, self.body) {
            (Some(sealed), _) => String::from_utf8(deps.data_key.open(&sealed, &seal_context(key))?)
                .map_err(|_| StoreError::Corrupt("a kept answer is not text".into()))?,
            (None, Some(body)) => body,
            (None, None) => String::new(),
        };
        Ok(StoredResponse { status: self.status, content_type: self.content_type, body })
    }
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
    crate::keys::idempotency(team, &hex::encode(Sha256::digest(key.0.as_bytes())))
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
        Some(r) => Claim::Replay(r.open(deps, &skey)?),
        None => Claim::InProgress,
    })
}

/// The write that keeps `response` as the claim's answer. A use case may put it in the
/// transaction of its change (see [`Completion`]), so a process that dies after the change
/// still leaves the answer for the retry.
pub fn complete_op(deps: &Deps, token: &ClaimToken, response: StoredResponse) -> WriteOp {
    let record = Record {
        fingerprint: token.fingerprint.clone(),
        claimed_at: token.claimed_at,
        response: Some(Kept::seal(deps, &token.key, response)),
    };
    let mut item = Item::new(token.key.clone(), to_body(&record)).with_expiry(Some(expiry(token.claimed_at)));
    item.version = token.version + 1;
    WriteOp::Put { item, condition: Condition::VersionIs(token.version) }
}

/// The claim of the request being served, handed to a use case that keeps its answer in its
/// own transaction: `ops(answer)` gives the writes to add (none without a claim).
#[derive(Debug, Clone, Default)]
pub struct Completion(pub Option<ClaimToken>);

impl Completion {
    pub fn ops<T: Serialize>(&self, deps: &Deps, status: u16, answer: &T) -> Vec<WriteOp> {
        let Some(token) = &self.0 else { return vec![] };
        let body = serde_json::to_string(answer).expect("answers serialize");
        vec![complete_op(
            deps,
            token,
            StoredResponse { status, content_type: Some("application/json".into()), body },
        )]
    }
}

/// Keeps the answer for replay.
pub async fn complete(deps: &Deps, token: ClaimToken, response: StoredResponse) -> Result<(), DomainError> {
    let WriteOp::Put { item, condition } = complete_op(deps, &token, response) else { unreachable!("a put") };
    match deps.table.put(item, condition).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `{"a": 1, "b": [..]}` with its keys in the order given, padded to at least `len` bytes.
    fn body(len: usize, a_first: bool) -> Vec<u8> {
        let pad = "0,".repeat(len / 2);
        let list = format!("[{}0]", pad);
        let text =
            if a_first { format!(r#"{{"a": 1, "b": {list}}}"#) } else { format!(r#"{{"b":{list},"a":1}}"#) };
        text.into_bytes()
    }

    #[test]
    fn a_record_reads_in_both_shapes() {
        let long = serde_json::json!({
            "fingerprint": "ab",
            "claimed_at": "2026-11-28T10:00:00Z",
            "response": {"status": 200, "content_type": "application/json", "sealed": "v1.AAAA"}
        });
        let record: Record = serde_json::from_value(long).unwrap();
        let short = serde_json::to_value(&record).unwrap();
        assert_eq!(
            short,
            serde_json::json!({"f": "ab", "a": "2026-11-28T10:00:00Z",
                "r": {"s": 200, "c": "application/json", "x": "v1.AAAA"}})
        );
        assert_eq!(serde_json::from_value::<Record>(short).unwrap(), record);
        let claim = Record { response: None, ..record };
        assert_eq!(
            serde_json::to_value(&claim).unwrap(),
            serde_json::json!({"f": "ab", "a": "2026-11-28T10:00:00Z"})
        );
        let old_claim =
            serde_json::json!({"fingerprint": "ab", "claimed_at": "2026-11-28T10:00:00Z", "response": null});
        assert_eq!(serde_json::from_value::<Record>(old_claim).unwrap(), claim);
    }

    #[test]
    fn a_re_serialized_body_is_the_same_request() {
        let f = |b: &[u8]| fingerprint("POST", "/v2/user", b);
        assert_eq!(f(&body(100, true)), f(&body(100, false)));
        assert_ne!(f(&body(100, true)), f(br#"{"a": 2}"#));
        assert_ne!(fingerprint("POST", "/v2/user", b"{}"), fingerprint("POST", "/v2/team", b"{}"));
    }

    #[test]
    fn a_body_over_the_plain_limit_counts_as_its_bytes() {
        let f = |b: &[u8]| fingerprint("POST", "/v2/user", b);
        let (first, reordered) =
            (body(MAX_CANONICAL_BODY_BYTES, true), body(MAX_CANONICAL_BODY_BYTES, false));
        assert!(first.len() > MAX_CANONICAL_BODY_BYTES);
        assert_eq!(f(&first), f(&first.clone()), "the same bytes are the same request");
        assert_ne!(f(&first), f(&reordered), "not parsed: its value would not fit in memory");
    }
}
