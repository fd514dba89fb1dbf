//! The stored layouts of [`super::RedbTable`]'s items, and their readers.
//!
//! An item is written in the **compact layout** ([`encode`]): its key is not repeated (it is
//! the tree's key), the envelope is a few bytes, the body its JSON text:
//!
//! ```text
//! 0x01                                   the layout's tag (a JSON text starts with `{`)
//! version                                LEB128
//! flags                                  bit 0: an index entry follows; bit 1: an expiry follows
//! [len, GSI1 pk, len, GSI1 sk]           lengths LEB128, keys UTF-8
//! [expires_at]                           i64, 8 bytes little-endian
//! body                                   JSON text, to the end
//! ```
//!
//! Items written before it are **JSON texts** of the whole item (`serde_json::to_vec(&item)`,
//! key included) and stay readable: every reader takes both. A read that only hands the body on
//! (`get_raw`, `query_raw`) finds the version and the body of either without parsing the
//! envelope or the body; in the JSON layout by scanning its fixed shape ([`split_stored`]),
//! falling back to the full parse for any other.

use wearlab_domain::ports::{IndexKey, Item, Key, RawItem, StoreError};

use super::SEP;

/// The first byte of an item stored in the compact layout.
const COMPACT: u8 = 1;
const HAS_INDEX: u8 = 1;
const HAS_EXPIRY: u8 = 2;

/// `item`'s stored bytes in the compact layout, its body given as JSON text.
pub(super) fn encode(item: &Item, body: &[u8]) -> Vec<u8> {
    let index_len = item.gsi1.as_ref().map_or(0, |g| g.pk.len() + g.sk.len() + 20);
    let mut out = Vec::with_capacity(20 + index_len + body.len());
    out.push(COMPACT);
    put_varint(&mut out, item.version);
    let flags = if item.gsi1.is_some() { HAS_INDEX } else { 0 }
        | if item.expires_at.is_some() { HAS_EXPIRY } else { 0 };
    out.push(flags);
    if let Some(g) = &item.gsi1 {
        for part in [&g.pk, &g.sk] {
            put_varint(&mut out, part.len() as u64);
            out.extend_from_slice(part.as_bytes());
        }
    }
    if let Some(at) = item.expires_at {
        out.extend_from_slice(&at.to_le_bytes());
    }
    out.extend_from_slice(body);
    out
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let low = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// A LEB128 number at the start of `bytes`, and the rest.
fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7F).checked_shl(7 * i as u32)?;
        if b & 0x80 == 0 {
            return Some((v, &bytes[i + 1..]));
        }
    }
    None
}

/// An item in the compact layout, its body still text.
struct Compact<'a> {
    version: u64,
    gsi1: Option<IndexKey>,
    expires_at: Option<i64>,
    body: &'a [u8],
}

/// The parts of a compact item; `Ok(None)` for a text of the JSON layout.
fn compact(bytes: &[u8]) -> Result<Option<Compact<'_>>, StoreError> {
    let Some((&COMPACT, rest)) = bytes.split_first() else { return Ok(None) };
    parts(rest).map(Some).ok_or_else(|| StoreError::Corrupt("a stored item's envelope is cut off".into()))
}

fn parts(rest: &[u8]) -> Option<Compact<'_>> {
    let (version, rest) = varint(rest)?;
    let (&flags, mut rest) = rest.split_first()?;
    let mut gsi1 = None;
    if flags & HAS_INDEX != 0 {
        let mut text = || -> Option<String> {
            let (len, after) = varint(rest)?;
            let len = usize::try_from(len).ok()?;
            let part = std::str::from_utf8(after.get(..len)?).ok()?.to_owned();
            rest = &after[len..];
            Some(part)
        };
        let pk = text()?;
        let sk = text()?;
        gsi1 = Some(IndexKey { pk, sk });
    }
    let mut expires_at = None;
    if flags & HAS_EXPIRY != 0 {
        let (at, after) = rest.split_first_chunk::<8>()?;
        expires_at = Some(i64::from_le_bytes(*at));
        rest = after;
    }
    Some(Compact { version, gsi1, expires_at, body: rest })
}

/// The primary key of an item from its tree key (`pk \0 sk`; neither part holds a NUL).
pub(super) fn key_of_primary(tree_key: &[u8]) -> Result<Key, StoreError> {
    let text = std::str::from_utf8(tree_key).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let (pk, sk) = text
        .split_once(SEP as char)
        .ok_or_else(|| StoreError::Corrupt("a key without its sort key".into()))?;
    Ok(Key::new(pk, sk))
}

/// The primary key bytes an index entry's key ends with (`gsi_pk \0 gsi_sk \0 pk \0 sk`):
/// what entries written before the compact layout kept as their value.
pub(super) fn primary_of_index_entry(entry_key: &[u8]) -> Result<&[u8], StoreError> {
    let mut nuls = entry_key.iter().enumerate().rev().filter(|(_, b)| **b == SEP).map(|(i, _)| i);
    match (nuls.next(), nuls.next()) {
        (Some(_), Some(before_pk)) => Ok(&entry_key[before_pk + 1..]),
        _ => Err(StoreError::Corrupt("an index entry without its item's key".into())),
    }
}

/// The item stored at `tree_key` (`pk \0 sk`) as `bytes`, in either layout.
pub(super) fn decode(tree_key: &[u8], bytes: &[u8]) -> Result<Item, StoreError> {
    match compact(bytes)? {
        Some(c) => Ok(Item {
            key: key_of_primary(tree_key)?,
            gsi1: c.gsi1,
            version: c.version,
            expires_at: c.expires_at,
            body: serde_json::from_slice(c.body).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        }),
        None => decode_json(bytes),
    }
}

fn decode_json(bytes: &[u8]) -> Result<Item, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// The version and body text of an item as this table writes it (`serde_json::to_vec(&item)`):
/// `{"key":{"pk":S,"sk":S},"gsi1":null|{"pk":S,"sk":S},"version":N,"expires_at":null|N,
/// "body":B}`, found without parsing the envelope or the body. `None` for any other layout
/// (the caller then parses the whole text). Only the envelope's shape is checked here; the
/// body is parsed, and so checked, by whoever decodes it.
pub(super) fn split_stored(json: &str) -> Option<(u64, &str)> {
    let rest = json.strip_prefix(r#"{"key":"#)?;
    let rest = skip_key(rest)?.strip_prefix(r#","gsi1":"#)?;
    let rest = match rest.strip_prefix("null") {
        Some(rest) => rest,
        None => skip_key(rest)?,
    };
    let (version, rest) = integer(rest.strip_prefix(r#","version":"#)?)?;
    let rest = rest.strip_prefix(r#","expires_at":"#)?;
    let rest = match rest.strip_prefix("null") {
        Some(rest) => rest,
        None => integer(rest.strip_prefix('-').unwrap_or(rest))?.1,
    };
    let body = rest.strip_prefix(r#","body":"#)?.strip_suffix('}')?;
    Some((version, body))
}

/// Skips `{"pk":S,"sk":S}`.
fn skip_key(s: &str) -> Option<&str> {
    let rest = skip_string(s.strip_prefix(r#"{"pk":"#)?)?;
    skip_string(rest.strip_prefix(r#","sk":"#)?)?.strip_prefix('}')
}

/// Skips one JSON string: up to the first quote not escaped, that is not preceded by an odd
/// run of backslashes.
fn skip_string(s: &str) -> Option<&str> {
    let mut rest = s.strip_prefix('"')?;
    let mut at = 0;
    loop {
        let quote = at + rest[at..].find('"')?;
        let backslashes = rest.as_bytes()[..quote].iter().rev().take_while(|&&c| c == b'\\').count();
        if backslashes % 2 == 0 {
            rest = &rest[quote + 1..];
            return Some(rest);
        }
        at = quote + 1;
    }
}

/// A JSON integer without sign as `serde_json` writes it (no leading zeros).
fn integer(s: &str) -> Option<(u64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || (digits > 1 && s.starts_with('0')) {
        return None;
    }
    Some((s[..digits].parse().ok()?, &s[digits..]))
}

/// [`decode`] without building the body (it is skipped over, not parsed into a value).
pub(super) fn decode_envelope(tree_key: &[u8], bytes: &[u8]) -> Result<Item, StoreError> {
    if let Some(c) = compact(bytes)? {
        let key = key_of_primary(tree_key)?;
        return Ok(Item {
            key,
            gsi1: c.gsi1,
            version: c.version,
            expires_at: c.expires_at,
            body: serde_json::Value::Null,
        });
    }
    #[derive(serde::Deserialize)]
    struct Envelope {
        key: Key,
        gsi1: Option<wearlab_domain::ports::IndexKey>,
        version: u64,
        expires_at: Option<i64>,
        #[allow(dead_code)]
        body: serde::de::IgnoredAny,
    }
    let e: Envelope = serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(Item {
        key: e.key,
        gsi1: e.gsi1,
        version: e.version,
        expires_at: e.expires_at,
        body: serde_json::Value::Null,
    })
}

/// An item's stored bytes read only to be decoded: body and version found without parsing the
/// envelope (see [`compact`], [`split_stored`]).
pub(super) fn raw_item(key: Key, bytes: Vec<u8>) -> Result<RawItem, StoreError> {
    if let Some(raw) = raw_compact(&key, &bytes)? {
        return Ok(raw);
    }
    let json = String::from_utf8(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(match split_stored(&json) {
        Some((version, body)) => RawItem::from_body_json(key, version, body.to_owned()),
        None => RawItem::from_item_json(key, json),
    })
}

/// [`raw_item`] of bytes borrowed from the tree: only the body is copied.
pub(super) fn raw_item_of(key: &Key, bytes: &[u8]) -> Result<RawItem, StoreError> {
    match raw_compact(key, bytes)? {
        Some(raw) => Ok(raw),
        None => raw_item(key.clone(), bytes.to_vec()),
    }
}

fn raw_compact(key: &Key, bytes: &[u8]) -> Result<Option<RawItem>, StoreError> {
    let Some(c) = compact(bytes)? else { return Ok(None) };
    let body = std::str::from_utf8(c.body).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(Some(RawItem::from_body_json(key.clone(), c.version, body.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redb_table::tests::items;

    #[test]
    fn compact_items_read_back_whole() {
        for item in items() {
            let body = serde_json::to_vec(&item.body).unwrap();
            let bytes = encode(&item, &body);
            let tree_key = [item.key.pk.as_bytes(), &[SEP], item.key.sk.as_bytes()].concat();
            assert_eq!(decode(&tree_key, &bytes).unwrap(), item);
            let envelope = decode_envelope(&tree_key, &bytes).unwrap();
            assert_eq!(envelope, Item { body: serde_json::Value::Null, ..item.clone() });
            let raw = raw_item(item.key.clone(), bytes).unwrap();
            assert_eq!(raw.decode::<serde_json::Value>().unwrap(), (item.body.clone(), item.version));
        }
    }

    #[test]
    fn a_cut_off_compact_envelope_is_corrupt() {
        let item = items()[1].clone();
        let bytes = encode(&item, b"{}");
        let tree_key = [item.key.pk.as_bytes(), &[SEP], item.key.sk.as_bytes()].concat();
        // Every cut inside the envelope (the body is the last two bytes).
        for end in 1..bytes.len() - 2 {
            assert!(matches!(decode(&tree_key, &bytes[..end]), Err(StoreError::Corrupt(_))), "cut at {end}");
        }
    }

    #[test]
    fn an_index_entry_ends_with_its_items_key() {
        assert_eq!(primary_of_index_entry(b"G\0GS\0USER#1\0#").unwrap(), b"USER#1\0#");
        assert_eq!(primary_of_index_entry(b"\0\0\0").unwrap(), b"\0");
        assert!(primary_of_index_entry(b"G\0GS").is_err());
    }

    #[test]
    fn stored_items_split_into_version_and_body() {
        for item in items() {
            let json = serde_json::to_string(&item).unwrap();
            let (version, body) = split_stored(&json).unwrap_or_else(|| panic!("{json}"));
            assert_eq!(version, item.version, "{json}");
            assert_eq!(serde_json::from_str::<serde_json::Value>(body).unwrap(), item.body, "{json}");
        }
    }

    #[test]
    fn other_layouts_are_left_to_the_full_parse() {
        for json in [
            r#"{"version":1,"key":{"pk":"P","sk":"S"},"gsi1":null,"expires_at":null,"body":{}}"#,
            r#"{ "key":{"pk":"P","sk":"S"},"gsi1":null,"version":1,"expires_at":null,"body":{}}"#,
            r#"{"key":{"pk":"P","sk":"S"},"gsi1":null,"version":01,"expires_at":null,"body":{}}"#,
            r#"{"key":{"pk":"P","sk":"S"},"gsi1":null,"version":-1,"expires_at":null,"body":{}}"#,
            r#"{"key":{"pk":"P","sk":"S"},"gsi1":null,"version":1.5,"expires_at":null,"body":{}}"#,
            r#"{"key":{"pk":"P","sk":"S"},"gsi1":null,"version":1,"expires_at":"x","body":{}}"#,
            r#"{"key":{"pk":"P","sk":"S},"gsi1":null,"version":1,"expires_at":null,"body":{}}"#,
            r#"{"key":{"pk":"P","sk":"S"},"gsi1":null,"version":99999999999999999999,"expires_at":null,"body":{}}"#,
        ] {
            assert_eq!(split_stored(json), None, "{json}");
        }
        // A cut-off text splits, and its body fails to decode, as the full parse would.
        let cut = r#"{"key":{"pk":"P","sk":"S"},"gsi1":null,"version":1,"expires_at":null,"body":{}"#;
        let (version, body) = split_stored(cut).unwrap();
        let raw = RawItem::from_body_json(Key::new("P", "S"), version, body.to_owned());
        assert!(matches!(raw.decode::<serde_json::Value>(), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn strings_end_at_the_first_unescaped_quote() {
        for (text, rest) in [
            (r#""abc"X"#, Some("X")),
            (r#""a\\"X"#, Some("X")),
            (r#""a\"b"X"#, Some("X")),
            (r#""a\\\"b"X"#, Some("X")),
            (r#""\\\\"X"#, Some("X")),
            (r#""""#, Some("")),
            (r#""a\""#, None),
            (r#""abc"#, None),
            (r#"abc""#, None),
        ] {
            assert_eq!(skip_string(text), rest, "{text}");
        }
    }
}
