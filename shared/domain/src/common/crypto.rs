//! Encryption of secrets at rest (provider credentials, MFA sessions, team OAuth secrets):
//! AES-256-GCM with a random 96-bit nonce per value, bound to the item it is stored in by the
//! associated data, so a sealed value copied into another item does not open.
//!
//! The key comes from the adapters' configuration: `WEARLAB_DATA_KEY` (base64 of 32 bytes) on
//! AWS, or that variable or a key generated once into the local data directory.

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ports::StoreError;

/// Format tag of sealed values, so a later key rotation can tell key generations apart.
const VERSION: &str = "v1";
const NONCE_LEN: usize = 12;

/// A string that must never be logged or shown: passwords, tokens, client secrets.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// An encrypted value as stored: `v1.<base64 of nonce || ciphertext>`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sealed(String);

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealed(..)")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the data key must be base64 of exactly 32 bytes")]
    BadKey,
}

/// The key that seals secrets at rest.
#[derive(Clone)]
pub struct DataKey {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(***)")
    }
}

impl DataKey {
    pub const LEN: usize = 32;

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, KeyError> {
        if bytes.len() != Self::LEN {
            return Err(KeyError::BadKey);
        }
        Ok(Self { cipher: Aes256Gcm::new_from_slice(bytes).map_err(|_| KeyError::BadKey)? })
    }

    /// A key given as base64 (standard alphabet) of 32 bytes, e.g. `openssl rand -base64 32`.
    pub fn from_base64(s: &str) -> Result<Self, KeyError> {
        let bytes = STANDARD.decode(s.trim()).map_err(|_| KeyError::BadKey)?;
        Self::from_bytes(&bytes)
    }

    /// A fresh random key and its base64 form (to keep it).
    pub fn generate() -> (Self, String) {
        let bytes = Aes256Gcm::generate_key(&mut OsRng);
        let encoded = STANDARD.encode(bytes);
        (Self { cipher: Aes256Gcm::new(&bytes) }, encoded)
    }

    /// A random key that lives as long as the process (tests, in-memory stacks).
    pub fn ephemeral() -> Self {
        Self::generate().0
    }

    /// Encrypts `plaintext`, bound to `context` (the storage key of the item that holds it).
    pub fn seal(&self, plaintext: &[u8], context: &str) -> Sealed {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let ciphertext = self
            .cipher
            .encrypt(&nonce, Payload { msg: plaintext, aad: context.as_bytes() })
            .expect("AES-GCM encryption of an in-memory buffer does not fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ciphertext);
        Sealed(format!("{VERSION}.{}", STANDARD.encode(out)))
    }

    pub fn open(&self, sealed: &Sealed, context: &str) -> Result<Vec<u8>, StoreError> {
        let corrupt = || StoreError::Corrupt("a sealed value does not open with the data key".into());
        let body = sealed.0.strip_prefix(VERSION).and_then(|r| r.strip_prefix('.')).ok_or_else(corrupt)?;
        let bytes = STANDARD.decode(body).map_err(|_| corrupt())?;
        if bytes.len() < NONCE_LEN {
            return Err(corrupt());
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        self.cipher
            .decrypt(Nonce::from_slice(nonce), Payload { msg: ciphertext, aad: context.as_bytes() })
            .map_err(|_| corrupt())
    }

    pub fn seal_json<T: Serialize>(&self, value: &T, context: &str) -> Sealed {
        let json = serde_json::to_vec(value).expect("secrets serialize to JSON");
        self.seal(&json, context)
    }

    pub fn open_json<T: DeserializeOwned>(&self, sealed: &Sealed, context: &str) -> Result<T, StoreError> {
        let bytes = self.open(sealed, context)?;
        serde_json::from_slice(&bytes)
            .map_err(|_| StoreError::Corrupt("a sealed value is not readable".into()))
    }
}

/// Errors of the deployment's signing key (the phone's per-user tokens).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigningKeyError {
    #[error("the signing key must be base64 of the DER of an RSA private key of 2048 to 8192 bits")]
    BadKey,
}

/// The deployment's RSA signing key (2048 bits): it signs the phone's per-user tokens with
/// RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 section 3.3) and verifies them. Kept like the
/// data key: base64 of the PKCS#8 DER private key, e.g.
/// `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 | openssl pkcs8 -topk8 -nocrypt
/// -outform DER | base64 -w0` (a PKCS#1 `RSAPrivateKey` DER is read too).
pub struct SigningKey {
    pair: aws_lc_rs::rsa::KeyPair,
    /// The public half as X.509 SubjectPublicKeyInfo DER (what `public_key` hands out).
    public_der: Vec<u8>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(***)")
    }
}

impl SigningKey {
    /// The key from base64 (standard alphabet) of its PKCS#8 DER; under 2048 bits is refused.
    pub fn from_base64(s: &str) -> Result<Self, SigningKeyError> {
        let der = STANDARD.decode(s.trim()).map_err(|_| SigningKeyError::BadKey)?;
        Self::from_pkcs8(&der)
    }

    pub fn from_pkcs8(der: &[u8]) -> Result<Self, SigningKeyError> {
        use aws_lc_rs::encoding::AsDer;
        use aws_lc_rs::signature::KeyPair as _;
        // PKCS#8, or the PKCS#1 `RSAPrivateKey` some `openssl` versions write instead.
        let pair = aws_lc_rs::rsa::KeyPair::from_pkcs8(der)
            .or_else(|_| aws_lc_rs::rsa::KeyPair::from_der(der))
            .map_err(|_| SigningKeyError::BadKey)?;
        if pair.public_modulus_len() < 256 {
            return Err(SigningKeyError::BadKey);
        }
        let public_der = pair.public_key().as_der().map_err(|_| SigningKeyError::BadKey)?.as_ref().to_vec();
        Ok(Self { pair, public_der })
    }

    /// A fresh RSA 2048 key and its base64 PKCS#8 form (to keep it). Slow (tens to hundreds
    /// of milliseconds): once per deployment or local data directory, never per request.
    pub fn generate() -> Result<(Self, String), SigningKeyError> {
        use aws_lc_rs::encoding::AsDer;
        let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048)
            .map_err(|_| SigningKeyError::BadKey)?;
        let der: aws_lc_rs::encoding::Pkcs8V1Der<'_> = pair.as_der().map_err(|_| SigningKeyError::BadKey)?;
        let encoded = STANDARD.encode(der.as_ref());
        Ok((Self::from_pkcs8(der.as_ref())?, encoded))
    }

    /// A fixed key, the same in every process (tests and benchmarks: generating one is slow in
    /// debug builds). Never a deployment's: it is public, in this repository.
    #[cfg(any(test, feature = "test-support"))]
    pub fn fixed_for_tests() -> Self {
        Self::from_base64(Self::FIXED_FOR_TESTS_BASE64).expect("the test key is valid")
    }

    /// [`Self::fixed_for_tests`] as its base64 text (what `WEARLAB_PHONE_SIGNING_KEY` takes).
    #[cfg(any(test, feature = "test-support"))]
    pub const FIXED_FOR_TESTS_BASE64: &str = include_str!("test_signing_key.b64");

    /// The RS256 signature of `message`.
    pub fn sign_rs256(&self, message: &[u8]) -> Vec<u8> {
        let mut signature = vec![0; self.pair.public_modulus_len()];
        let rng = aws_lc_rs::rand::SystemRandom::new();
        self.pair
            .sign(&aws_lc_rs::signature::RSA_PKCS1_SHA256, &rng, message, &mut signature)
            .expect("RSA signing of an in-memory message does not fail");
        signature
    }

    /// Whether `signature` is this key's RS256 signature of `message`.
    pub fn verify_rs256(&self, message: &[u8], signature: &[u8]) -> bool {
        aws_lc_rs::signature::UnparsedPublicKey::new(
            &aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256,
            &self.public_der,
        )
        .verify(message, signature)
        .is_ok()
    }

    /// The public half, X.509 SubjectPublicKeyInfo DER.
    pub fn public_key_der(&self) -> &[u8] {
        &self.public_der
    }
}

/// `n` random bytes from the operating system's generator.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    aws_lc_rs::rand::fill(&mut out).expect("the system random generator does not fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_bound_to_context() {
        let (key, encoded) = DataKey::generate();
        let sealed = key.seal(b"hunter2", "USER#1|CONN#fitbit");
        assert!(!sealed.0.contains("hunter2"));
        assert_eq!(key.open(&sealed, "USER#1|CONN#fitbit").unwrap(), b"hunter2");
        assert!(key.open(&sealed, "USER#2|CONN#fitbit").is_err(), "another item's context");
        let same = DataKey::from_base64(&encoded).unwrap();
        assert_eq!(same.open(&sealed, "USER#1|CONN#fitbit").unwrap(), b"hunter2");
        assert!(DataKey::ephemeral().open(&sealed, "USER#1|CONN#fitbit").is_err(), "another key");
        assert_ne!(key.seal(b"x", "c"), key.seal(b"x", "c"), "fresh nonce each time");
    }

    #[test]
    fn bad_keys_are_refused() {
        assert_eq!(DataKey::from_base64("c2hvcnQ=").unwrap_err(), KeyError::BadKey);
        assert!(DataKey::from_base64("not base64!").is_err());
    }

    #[test]
    fn secrets_do_not_debug_print() {
        assert_eq!(format!("{:?}", Secret::new("pw")), "Secret(***)");
    }
}
