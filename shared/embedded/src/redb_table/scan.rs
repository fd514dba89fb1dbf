//! The JSON scanner of [`super::RedbTable`]'s stored texts. An item is stored as
//! `serde_json::to_vec(&item)`; a read that only hands the body on (`get_raw`, `query_raw`)
//! finds the version, the body and the key by scanning that fixed layout instead of parsing the
//! whole envelope and body. Any other layout falls back to the full parse ([`decode`]).

use wearlab_domain::ports::{Item, Key, RawItem, StoreError};

pub(super) fn decode(bytes: &[u8]) -> Result<Item, StoreError> {
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
pub(super) fn decode_envelope(bytes: &[u8]) -> Result<Item, StoreError> {
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

/// An item's stored text read only to be decoded: body and version found without parsing the
/// envelope when the layout is this table's own (see [`split_stored`]).
pub(super) fn raw_item(key: Key, bytes: Vec<u8>) -> Result<RawItem, StoreError> {
    let json = String::from_utf8(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(match split_stored(&json) {
        Some((version, body)) => RawItem::from_body_json(key, version, body.to_owned()),
        None => RawItem::from_item_json(key, json),
    })
}

/// The primary key at the start of an item's stored text, `{"key":{"pk":S,"sk":S},...`: only
/// that part is parsed (any other layout is parsed whole).
pub(super) fn key_of(json: &[u8]) -> Result<Key, StoreError> {
    let text = std::str::from_utf8(json).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let key_text =
        text.strip_prefix(r#"{"key":"#).and_then(|rest| Some(&rest[..rest.len() - skip_key(rest)?.len()]));
    match key_text.and_then(|k| serde_json::from_str(k).ok()) {
        Some(key) => Ok(key),
        None => Ok(decode(json)?.key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redb_table::tests::items;

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
