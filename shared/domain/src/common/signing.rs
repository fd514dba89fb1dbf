//! Signed links (portal links, requisition URLs): HMAC-SHA256 with a random key the deployment
//! creates on first use and keeps in the table, so every function instance signs and checks
//! with the same key without extra configuration.

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Deps;
use crate::common::error::DomainError;
use crate::keys::lab as keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item, StoreError};

const BLOCK: usize = 64;

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(message);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner);
    outer.finalize().into()
}

/// Lower-case hex of the HMAC-SHA256 of `message` with `key`: how Polar, Hammerhead and Suunto
/// sign their pushes (each provider's module says which bytes and which secret).
pub fn hex_hmac_sha256(key: &[u8], message: &[u8]) -> String {
    hex::encode(hmac_sha256(key, message))
}

/// Whether `given` is [`hex_hmac_sha256`] of `message` with `key`, in either case (surrounding
/// blanks ignored), compared in constant time.
pub fn hex_hmac_matches(key: &[u8], message: &[u8], given: &str) -> bool {
    constant_time_eq(hex_hmac_sha256(key, message).as_bytes(), given.trim().to_ascii_lowercase().as_bytes())
}

/// Equality in time independent of where the inputs differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SigningKeyRecord {
    /// Hex of 32 random bytes.
    key: String,
}

/// The deployment's signing key: read, or created once (the first writer wins).
pub async fn key(deps: &Deps) -> Result<Vec<u8>, DomainError> {
    if let Some(item) = deps.table.get(&keys::signing_key()).await? {
        let r: SigningKeyRecord = item.decode()?;
        return hex::decode(r.key).map_err(|e| StoreError::Corrupt(format!("signing key: {e}")).into());
    }
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    let fresh = Sha256::digest(&bytes).to_vec();
    let record = SigningKeyRecord { key: hex::encode(&fresh) };
    match deps.table.put(Item::new(keys::signing_key(), to_body(&record)), Condition::NotExists).await {
        Ok(()) => Ok(fresh),
        // Another instance created it meanwhile: use theirs.
        Err(StoreError::ConditionFailed { .. }) => Box::pin(key(deps)).await,
        Err(e) => Err(e.into()),
    }
}

/// `message` signed: base64url of the HMAC.
pub fn sign(key: &[u8], message: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hmac_sha256(key, message.as_bytes()))
}

/// Whether `signature` is `sign(key, message)`.
pub fn verify(key: &[u8], message: &str, signature: &str) -> bool {
    match base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(signature) {
        Ok(sig) => constant_time_eq(&sig, &hmac_sha256(key, message.as_bytes())),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(hex::encode(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    #[test]
    fn long_keys_are_hashed_first() {
        // RFC 4231 test case 6.
        let key = [0xaau8; 131];
        let mac = hmac_sha256(&key, b"Test Using Larger Than Block-Size Key - Hash Key First");
        assert_eq!(hex::encode(mac), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    }

    #[test]
    fn verify_round_trip() {
        let sig = sign(b"k", "m");
        assert!(verify(b"k", "m", &sig));
        assert!(!verify(b"k", "n", &sig));
        assert!(!verify(b"k", "m", "not base64!"));
    }
}
