//! Public keysets and signatures in Tink's formats, as Google publishes them for the Google
//! Health API's webhook notifications: a JSON keyset (Tink `proto/tink.proto` `Keyset` in JSON:
//! `{primaryKeyId, key: [{keyData: {typeUrl, value, keyMaterialType}, status, keyId,
//! outputPrefixType}]}`) whose keys' `value` is a base64 `EcdsaPublicKey` protobuf (Tink
//! `proto/ecdsa.proto`: `version` 1, `params` 2 = `EcdsaParams {hash_type 1, curve 2, encoding
//! 3}`, `x` 3, `y` 4 as big-endian integers), and signatures that start with the key's prefix
//! (`TINK`: byte 0x01 then the key id, 4 bytes big-endian; `RAW`: none) followed by the
//! signature in the key's encoding (DER or IEEE P1363 `r || s`). Only ECDSA over NIST P-256
//! with SHA-256 is read; other keys are skipped. Source: repository `tink-crypto/tink-java`,
//! `proto/tink.proto`, `proto/ecdsa.proto`, `proto/common.proto`.

use base64::Engine;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use serde::Deserialize;

const ECDSA_PUBLIC_KEY: &str = "type.googleapis.com/google.crypto.tink.EcdsaPublicKey";
/// Tink `HashType.SHA256`, `EllipticCurveType.NIST_P256`, `EcdsaSignatureEncoding`.
const SHA256: u64 = 3;
const NIST_P256: u64 = 2;
const IEEE_P1363: u64 = 1;
const DER: u64 = 2;
/// The first byte of a `TINK`-prefixed signature.
const TINK_PREFIX: u8 = 0x01;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeysetError {
    #[error("the keyset is not a Tink JSON keyset: {0}")]
    Unreadable(String),
    #[error("the keyset has no enabled ECDSA P-256 SHA-256 public key")]
    NoUsableKey,
}

#[derive(Debug, Clone)]
struct Key {
    id: u32,
    /// `TINK` output prefix (else `RAW`).
    prefixed: bool,
    der: bool,
    key: VerifyingKey,
}

/// The usable keys of a public keyset.
#[derive(Debug, Clone, Default)]
pub struct PublicKeyset {
    keys: Vec<Key>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonKeyset {
    #[serde(default)]
    key: Vec<JsonKey>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonKey {
    key_data: JsonKeyData,
    #[serde(default)]
    status: String,
    key_id: u32,
    #[serde(default)]
    output_prefix_type: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonKeyData {
    type_url: String,
    value: String,
}

/// One protobuf field: its number and its value (a varint, or the bytes of a length-delimited
/// field); fixed-width fields are skipped.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The fields of a protobuf message, in order; `None` when it is malformed.
fn fields(data: &[u8]) -> Option<Vec<(u64, Field<'_>)>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let tag = varint(data, &mut pos)?;
        let field = match tag & 7 {
            0 => Field::Varint(varint(data, &mut pos)?),
            2 => {
                let len = usize::try_from(varint(data, &mut pos)?).ok()?;
                let bytes = data.get(pos..pos.checked_add(len)?)?;
                pos += len;
                Field::Bytes(bytes)
            }
            1 => {
                pos += 8;
                continue;
            }
            5 => {
                pos += 4;
                continue;
            }
            _ => return None,
        };
        out.push((tag >> 3, field));
    }
    Some(out)
}

fn varint_of(fields: &[(u64, Field<'_>)], number: u64) -> u64 {
    fields
        .iter()
        .find_map(|(n, f)| match f {
            Field::Varint(v) if *n == number => Some(*v),
            _ => None,
        })
        .unwrap_or(0)
}

fn bytes_of<'a>(fields: &[(u64, Field<'a>)], number: u64) -> Option<&'a [u8]> {
    fields.iter().find_map(|(n, f)| match f {
        Field::Bytes(b) if *n == number => Some(*b),
        _ => None,
    })
}

/// A big-endian coordinate as 32 bytes (Tink writes it as a signed integer: a leading zero byte
/// when the high bit is set).
fn coordinate(bytes: &[u8]) -> Option<[u8; 32]> {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    let digits = &bytes[start..];
    let mut out = [0u8; 32];
    out.get_mut(32usize.checked_sub(digits.len())?..)?.copy_from_slice(digits);
    Some(out)
}

/// An `EcdsaPublicKey` protobuf as a P-256 key and whether it signs in DER; `None` for another
/// curve or hash, or a malformed key.
fn ecdsa_public_key(value: &[u8]) -> Option<(VerifyingKey, bool)> {
    let key = fields(value)?;
    let params = fields(bytes_of(&key, 2)?)?;
    if varint_of(&params, 1) != SHA256 || varint_of(&params, 2) != NIST_P256 {
        return None;
    }
    let der = match varint_of(&params, 3) {
        DER => true,
        IEEE_P1363 => false,
        _ => return None,
    };
    let (x, y) = (coordinate(bytes_of(&key, 3)?)?, coordinate(bytes_of(&key, 4)?)?);
    let mut sec1 = vec![0x04];
    sec1.extend_from_slice(&x);
    sec1.extend_from_slice(&y);
    Some((VerifyingKey::from_sec1_bytes(&sec1).ok()?, der))
}

/// The key id a `TINK`-prefixed signature names.
pub fn key_id(signature: &[u8]) -> Option<u32> {
    match signature {
        [TINK_PREFIX, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

impl PublicKeyset {
    /// The enabled ECDSA P-256 SHA-256 keys of a JSON keyset with the `TINK` or `RAW` prefix;
    /// an error when there is none.
    pub fn parse(json: &[u8]) -> Result<Self, KeysetError> {
        let keyset: JsonKeyset =
            serde_json::from_slice(json).map_err(|e| KeysetError::Unreadable(e.to_string()))?;
        let keys: Vec<Key> = keyset
            .key
            .into_iter()
            .filter(|k| k.status == "ENABLED" && k.key_data.type_url == ECDSA_PUBLIC_KEY)
            .filter_map(|k| {
                let prefixed = match k.output_prefix_type.as_str() {
                    "TINK" => true,
                    "RAW" => false,
                    _ => return None,
                };
                let value = base64::engine::general_purpose::STANDARD.decode(k.key_data.value.trim()).ok()?;
                let (key, der) = ecdsa_public_key(&value)?;
                Some(Key { id: k.key_id, prefixed, der, key })
            })
            .collect();
        if keys.is_empty() {
            return Err(KeysetError::NoUsableKey);
        }
        Ok(Self { keys })
    }

    /// Whether a key this signature could be checked with is in the set (its key id, for a
    /// prefixed signature).
    pub fn knows(&self, signature: &[u8]) -> bool {
        let id = key_id(signature);
        self.keys.iter().any(|k| !k.prefixed || Some(k.id) == id)
    }

    /// Whether `signature` is a valid signature of `message` by one of the set's keys.
    pub fn verify(&self, signature: &[u8], message: &[u8]) -> bool {
        self.keys.iter().any(|k| {
            let body = if k.prefixed {
                match signature.split_first() {
                    Some((&TINK_PREFIX, rest)) if key_id(signature) == Some(k.id) => {
                        &rest[4.min(rest.len())..]
                    }
                    _ => return false,
                }
            } else {
                signature
            };
            let parsed = if k.der { Signature::from_der(body) } else { Signature::from_slice(body) };
            parsed.is_ok_and(|s| k.key.verify(message, &s).is_ok())
        })
    }
}

/// A JSON keyset of one enabled `TINK`-prefixed ECDSA P-256 SHA-256 DER key (for fakes).
pub fn keyset_json(id: u32, key: &VerifyingKey) -> String {
    let point = key.to_encoded_point(false);
    let (x, y) = (
        point.x().map(|x| x.to_vec()).unwrap_or_default(),
        point.y().map(|y| y.to_vec()).unwrap_or_default(),
    );
    let field = |number: u8, bytes: &[u8]| {
        let mut out = vec![(number << 3) | 2, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    };
    let params = [0x08, SHA256 as u8, 0x10, NIST_P256 as u8, 0x18, DER as u8];
    let mut value = field(2, &params);
    value.extend(field(3, &x));
    value.extend(field(4, &y));
    serde_json::json!({
        "primaryKeyId": id,
        "key": [{
            "keyData": {
                "typeUrl": ECDSA_PUBLIC_KEY,
                "value": base64::engine::general_purpose::STANDARD.encode(value),
                "keyMaterialType": "ASYMMETRIC_PUBLIC"
            },
            "status": "ENABLED",
            "keyId": id,
            "outputPrefixType": "TINK"
        }]
    })
    .to_string()
}

/// A `TINK`-prefixed DER signature of `message` (for fakes).
pub fn sign(id: u32, key: &SigningKey, message: &[u8]) -> Vec<u8> {
    let signature: Signature = key.sign(message);
    let mut out = vec![TINK_PREFIX];
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(signature.to_der().as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_slice(&[seed; 32]).unwrap()
    }

    #[test]
    fn a_signature_checks_with_its_keys_key_only_over_the_same_bytes() {
        let (a, b) = (key(7), key(9));
        let set = PublicKeyset::parse(keyset_json(42, a.verifying_key()).as_bytes()).unwrap();
        let sig = sign(42, &a, b"{\"data\":1}");
        assert_eq!(key_id(&sig), Some(42));
        assert!(set.knows(&sig));
        assert!(set.verify(&sig, b"{\"data\":1}"));
        assert!(!set.verify(&sig, b"{\"data\":2}"), "another body");
        assert!(!set.verify(&sign(42, &b, b"{\"data\":1}"), b"{\"data\":1}"), "another key");
        let other_id = sign(43, &a, b"{\"data\":1}");
        assert!(!set.knows(&other_id) && !set.verify(&other_id, b"{\"data\":1}"), "an unknown key id");
        assert!(!set.verify(&sig[5..], b"{\"data\":1}"), "without its prefix");
        assert!(!set.verify(b"", b"{\"data\":1}"));
    }

    #[test]
    fn coordinates_with_a_sign_byte_and_unusable_keysets() {
        assert_eq!(coordinate(&[0u8; 33]), Some([0u8; 32]));
        let mut high = vec![0u8];
        high.extend([0xff; 32]);
        assert_eq!(coordinate(&high), Some([0xff; 32]));
        assert_eq!(coordinate(&[1u8; 33]), None);
        assert!(matches!(PublicKeyset::parse(b"not json"), Err(KeysetError::Unreadable(_))));
        assert_eq!(PublicKeyset::parse(br#"{"key": []}"#).unwrap_err(), KeysetError::NoUsableKey);
        let disabled = keyset_json(1, key(7).verifying_key()).replace("ENABLED", "DISABLED");
        assert_eq!(PublicKeyset::parse(disabled.as_bytes()).unwrap_err(), KeysetError::NoUsableKey);
    }
}
