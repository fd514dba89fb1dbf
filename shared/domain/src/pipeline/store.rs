//! Writes normalised entries into the user's partition. Each item's key is derived from the
//! data (resource, day, provider, record), so storing the same data again writes the same item:
//! a repeated chunk stores nothing twice. Each item keeps a hash of its content, so the poll
//! can tell new data from changed data from unchanged data. A day of more samples than one
//! item should hold is kept in parts (see [`PART_SAMPLES`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use wearlab_models::data::{Sample, SampleGroup, SourceContext};

use super::normalize::{Entry, source};
use crate::Deps;
use crate::error::DomainError;
use crate::ids::UserId;
use crate::keys::pipeline as keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key, StoreError, TextItem};

/// A stored data item.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// SHA-256 (hex) of `value` (on a day's own item of samples, of the whole day's).
    pub h: String,
    pub v: Value,
    /// On a day's own item of samples: how many items the day is kept in (absent: one). Parts
    /// past it are left from a day that once had more samples, and are not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<u32>,
}

/// Most samples one item keeps. A day of more is kept in parts of this many: the first in the
/// day's own item, the rest in items that follow it ([`keys::series_part`]). 2,000 samples are
/// about 170 KB of JSON, well under the 400 KB DynamoDB allows an item; a day of 1-second heart
/// rate (86,400 samples) is 44 parts.
pub const PART_SAMPLES: usize = 2_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Created,
    Updated,
    Unchanged,
}

fn hash(v: &Value) -> String {
    hash_text(&serde_json::to_vec(v).expect("values serialize"))
}

/// The stored hash of a value's JSON text: SHA-256, in hex.
fn hash_text(text: &[u8]) -> String {
    hex::encode(Sha256::digest(text))
}

fn key_and_value(user: UserId, provider: &str, entry: Entry) -> (Key, Value) {
    match entry {
        Entry::Summary { resource, date, n, value } => {
            (keys::summary(user, resource, date, provider, &n), value)
        }
        Entry::Series { resource, date, samples } => (
            keys::series(user, &resource, date, provider),
            to_body(&SampleGroup { source: source(provider, None), data: samples }),
        ),
        Entry::Profile { value } => (keys::profile(user, provider), value),
    }
}

/// The stored form of `value` with its hash `h` (a [`Stored`]; `parts` on a day's own item of
/// samples kept in parts), built without copying it: `json!` would serialise `value` into a
/// second tree (a deep copy, then the original dropped), a fifth of a historical pull's CPU.
fn stored(h: String, value: Value, parts: Option<u32>) -> Value {
    let mut fields = serde_json::Map::new();
    fields.insert("h".into(), Value::String(h));
    fields.insert("v".into(), value);
    if let Some(parts) = parts {
        fields.insert("parts".into(), parts.into());
    }
    Value::Object(fields)
}

/// The items that keep `value` (hashed `h`) under `key`: one, or for a day of more than
/// [`PART_SAMPLES`] samples, the day's own item first (the whole day's hash, the number of
/// parts, the first samples) and then its other parts.
fn items_for(key: Key, value: Value, h: String) -> Vec<Item> {
    let samples = value.get("data").and_then(Value::as_array).map_or(0, Vec::len);
    if samples <= PART_SAMPLES || !key.sk.starts_with(keys::SERIES_PREFIX) {
        return vec![Item::new(key, stored(h, value, None))];
    }
    let Value::Object(mut group) = value else { unreachable!("a value with data is an object") };
    let source = group.remove("source").unwrap_or(Value::Null);
    let Some(Value::Array(data)) = group.remove("data") else { unreachable!("data was an array") };
    let mut parts: Vec<Value> = Vec::with_capacity(samples.div_ceil(PART_SAMPLES));
    let mut data = data.into_iter().peekable();
    while data.peek().is_some() {
        let mut part = serde_json::Map::new();
        part.insert("source".into(), source.clone());
        part.insert("data".into(), data.by_ref().take(PART_SAMPLES).collect());
        parts.push(Value::Object(part));
    }
    let count = parts.len() as u32;
    parts
        .into_iter()
        .zip(1..)
        .map(|(part, n)| match n {
            1 => Item::new(key.clone(), stored(h.clone(), part, Some(count))),
            n => {
                let h = hash(&part);
                Item::new(keys::series_part(&key, n), stored(h, part, None))
            }
        })
        .collect()
}

/// The timestamps of a stored day of samples, over all its parts.
async fn stored_timestamps(
    deps: &Deps,
    key: &Key,
    first: &Stored,
) -> Result<std::collections::HashSet<String>, DomainError> {
    let of = |v: &Value| -> Vec<String> {
        v.get("data")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|s| s.get("timestamp")?.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let mut seen: std::collections::HashSet<String> = of(&first.v).into_iter().collect();
    for n in 2..=first.parts.unwrap_or(1) {
        if let Some(item) = deps.table.get(&keys::series_part(key, n)).await? {
            seen.extend(of(&item.decode::<Stored>()?.v));
        }
    }
    Ok(seen)
}

/// Stores `entry` and says what changed: a new item or new samples are `Created`, other
/// content changes `Updated`; with the value stored, which is what the read API answers for it
/// (and so what its event carries).
pub(crate) async fn put(
    deps: &Deps,
    user: UserId,
    provider: &str,
    entry: &Entry,
) -> Result<(Change, Value), DomainError> {
    let (key, value) = key_and_value(user, provider, entry.clone());
    let h = hash(&value);
    let old = deps.table.get(&key).await?;
    let change = match &old {
        None => Change::Created,
        Some(item) => {
            let old: Stored = item.decode()?;
            if old.h == h {
                return Ok((Change::Unchanged, value));
            }
            match entry {
                Entry::Series { samples, .. } => {
                    let before = stored_timestamps(deps, &key, &old).await?;
                    let any_new = samples.iter().any(|s| {
                        !before.contains(
                            &serde_json::to_value(s.timestamp)
                                .ok()
                                .and_then(|v| v.as_str().map(str::to_owned))
                                .unwrap_or_default(),
                        )
                    });
                    if any_new { Change::Created } else { Change::Updated }
                }
                _ => Change::Updated,
            }
        }
    };
    let mut items = items_for(key, value.clone(), h);
    let first = items.remove(0);
    // The other parts first, the day's own item (with the day's hash) last: a crash in between
    // leaves the old hash, so the next poll writes the day again.
    if !items.is_empty() {
        deps.table.put_all(items).await?;
    }
    deps.table.put(first, Condition::None).await?;
    Ok((change, value))
}

/// Stores `entries` without looking at what was there (historical pulls), in as few writes as
/// the table allows (`Table::put_all_text`). Entries naming one item twice keep the last, as
/// writing them one after the other would.
pub(crate) async fn overwrite_all(
    deps: &Deps,
    user: UserId,
    provider: &str,
    entries: Vec<Entry>,
) -> Result<(), DomainError> {
    let mut items: Vec<TextItem> = Vec::with_capacity(entries.len());
    let mut at: std::collections::HashMap<Key, usize> = std::collections::HashMap::new();
    for entry in entries {
        for item in text_items_for(user, provider, entry)? {
            match at.get(&item.key) {
                Some(&i) => items[i] = item,
                None => {
                    at.insert(item.key.clone(), items.len());
                    items.push(item);
                }
            }
        }
    }
    deps.table.put_all_text(items).await?;
    Ok(())
}

/// The items that keep `entry`, as text. A day of samples that fits one item is written
/// straight from its samples ([`DayText`]), its hash taken on the same bytes; other entries go
/// through their value, as [`put`] stores them.
fn text_items_for(user: UserId, provider: &str, entry: Entry) -> Result<Vec<TextItem>, DomainError> {
    if let Entry::Series { resource, date, samples } = &entry
        && samples.len() <= PART_SAMPLES
    {
        let key = keys::series(user, resource, *date, provider);
        let source = source(provider, None);
        let day = serde_json::value::to_raw_value(&DayText::of(&source, samples))
            .map_err(|e| StoreError::Invalid(format!("a day of samples: {e}")))?;
        let h = hash_text(day.get().as_bytes());
        return Ok(vec![TextItem::new(key, &StoredText { h: &h, v: &day })?]);
    }
    let (key, value) = key_and_value(user, provider, entry);
    let h = hash(&value);
    items_for(key, value, h)
        .into_iter()
        .map(|item| TextItem::new(item.key, &item.body).map_err(DomainError::from))
        .collect()
}

/// A day of samples as the table keeps it: the JSON text of `to_body(&SampleGroup { .. })`, keys
/// in the same (sorted) order, but written from the samples with no `serde_json::Value` tree in
/// between (which cost a historical pull more CPU than anything but the table's commits). The
/// test `a_day_as_text_is_its_value_as_text` keeps the two the same, bytes and hash.
#[derive(Serialize)]
struct DayText<'a> {
    data: SamplesText<'a>,
    source: SourceText<'a>,
}

impl<'a> DayText<'a> {
    fn of(source: &'a SourceContext, samples: &'a [Sample]) -> Self {
        let SourceContext { provider, source_type, app_id, name, logo, slug } = source;
        Self {
            data: SamplesText(samples),
            source: SourceText { app_id, logo, name, provider, slug, source_type },
        }
    }
}

struct SamplesText<'a>(&'a [Sample]);

impl Serialize for SamplesText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|s| {
            let Sample { timestamp, value, unit, timezone_offset } = s;
            SampleText {
                timestamp: TimestampText(timestamp),
                timezone_offset: *timezone_offset,
                unit,
                value: *value,
            }
        }))
    }
}

/// [`Sample`]'s fields in sorted order.
#[derive(Serialize)]
struct SampleText<'a> {
    timestamp: TimestampText<'a>,
    timezone_offset: i32,
    unit: &'a str,
    value: f64,
}

/// A timestamp as chrono's serde writes it (RFC 3339, UTC as `Z`, fractional seconds in 3, 6 or
/// 9 digits when there are any). chrono writes it a character at a time through the formatter,
/// which took a tenth of a pull's CPU; a whole second of the years 0 to 9999 (every sample
/// providers give) is written here from digits instead, anything else by chrono.
struct TimestampText<'a>(&'a DateTime<Utc>);

impl Serialize for TimestampText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use chrono::{Datelike, Timelike};
        let t = self.0;
        let year = t.year();
        if t.nanosecond() != 0 || !(0..=9999).contains(&year) {
            return self.0.serialize(serializer);
        }
        let mut text = *b"0000-00-00T00:00:00Z";
        let mut put = |at: usize, value: u32, digits: usize| {
            let mut v = value;
            for i in (at..at + digits).rev() {
                text[i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        put(0, year as u32, 4);
        put(5, t.month(), 2);
        put(8, t.day(), 2);
        put(11, t.hour(), 2);
        put(14, t.minute(), 2);
        put(17, t.second(), 2);
        serializer.serialize_str(std::str::from_utf8(&text).map_err(serde::ser::Error::custom)?)
    }
}

/// [`SourceContext`]'s fields in sorted order.
#[derive(Serialize)]
struct SourceText<'a> {
    app_id: &'a Option<String>,
    logo: &'a Option<String>,
    name: &'a str,
    provider: &'a str,
    slug: &'a str,
    #[serde(rename = "type")]
    source_type: &'a str,
}

/// [`Stored`] with its value as text.
#[derive(Serialize)]
struct StoredText<'a> {
    h: &'a str,
    v: &'a RawValue,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_written_as_chrono_writes_them() {
        let mut at: DateTime<Utc> = "0000-01-01T00:00:00Z".parse().unwrap();
        for step in 0..2_000i64 {
            // Seconds, leap days, year boundaries, fractional seconds of every width.
            at += chrono::Duration::seconds(step * 104_729 + 1)
                + chrono::Duration::nanoseconds(if step % 5 == 0 { step * 1_000_000 } else { 0 });
            assert_eq!(
                serde_json::to_string(&TimestampText(&at)).unwrap(),
                serde_json::to_string(&at).unwrap()
            );
        }
        let outside = |y: i32| {
            chrono::NaiveDate::from_ymd_opt(y, 6, 1).unwrap().and_hms_opt(1, 2, 3).unwrap().and_utc()
        };
        for t in [outside(10_000), outside(-1)] {
            assert_eq!(
                serde_json::to_string(&TimestampText(&t)).unwrap(),
                serde_json::to_string(&t).unwrap()
            );
        }
        for t in ["2026-03-01T00:00:00.000001Z", "2024-02-29T23:59:59Z", "1969-12-31T23:59:59.5Z"] {
            let t: DateTime<Utc> = t.parse().unwrap();
            assert_eq!(
                serde_json::to_string(&TimestampText(&t)).unwrap(),
                serde_json::to_string(&t).unwrap()
            );
        }
    }

    #[test]
    fn a_day_as_text_is_its_value_as_text() {
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let samples = vec![
            Sample {
                timestamp: at("2026-03-01T00:00:00Z"),
                value: 61.0,
                unit: "bpm".into(),
                timezone_offset: 3600,
            },
            Sample {
                timestamp: at("2026-03-01T00:00:01.250Z"),
                value: 0.1,
                unit: "\"q\u{e9}".into(),
                timezone_offset: -18000,
            },
            Sample {
                timestamp: at("2026-03-01T23:59:59Z"),
                value: f64::NAN,
                unit: String::new(),
                timezone_offset: 0,
            },
        ];
        let with_app = SourceContext { app_id: Some("com.x".into()), ..source("oura", None) };
        for source in [source("oura", None), with_app] {
            let value = to_body(&SampleGroup { source: source.clone(), data: samples.clone() });
            let text = serde_json::to_string(&DayText::of(&source, &samples)).unwrap();
            assert_eq!(text, serde_json::to_string(&value).unwrap());
            assert_eq!(hash_text(text.as_bytes()), hash(&value));
        }
    }
}
