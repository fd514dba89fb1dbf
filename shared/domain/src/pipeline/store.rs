//! Writes normalised entries into the user's partition. Each item's key is derived from the
//! data (resource, day, provider, record), so storing the same data again writes the same item:
//! a repeated chunk stores nothing twice. Each item keeps a hash of its content, so the poll
//! can tell new data from changed data from unchanged data. A day of samples is kept in
//! columns ([`super::columns`]), and a day of more samples than one item should hold in parts
//! (see [`PART_SAMPLES`]).
//!
//! The phone's uploads ([`merge_days`]) keep a day per source type
//! ([`keys::series_of_source`]) with its source in the item, and merge into it point by point:
//! the SDKs send a day's samples in several uploads.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use wearlab_models::Resource;
use wearlab_models::data::{Sample, SampleGroup, SourceContext};

use super::columns::{Columns, ColumnsText};
use super::normalize::{Entry, source, source_of};
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::UserId;
use crate::keys::pipeline as keys;
use crate::ports::to_body;
use crate::ports::{Key, MAX_BATCH, RawItem, StoreError, TextItem};

/// A stored data item.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Stored {
    /// SHA-256 (hex) of the stored content's text: of `v`, or of `c` (on a day's own item of
    /// samples kept in parts, of all its parts' texts in order).
    pub h: String,
    /// Summaries and profiles, and days of samples stored before columns: the value as the
    /// API answers it.
    #[serde(default)]
    pub v: Value,
    /// A day of samples (or a part of one) in columns.
    #[serde(default)]
    pub c: Option<Box<RawValue>>,
    /// On a day's own item of samples: how many items the day is kept in (absent: one). Parts
    /// past it are left from a day that once had more samples, and are not read.
    #[serde(default)]
    pub parts: Option<u32>,
    /// On a day of one source's samples (the phone's, [`keys::series_of_source`]), on each of
    /// its parts: the source. Absent on a pulled provider's day, whose source is the provider's.
    #[serde(default)]
    pub s: Option<StoredSource>,
}

/// The source of a day of one source's samples, as its items keep it (the provider is in the
/// key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredSource {
    /// The source type (`watch`, `phone`, `fingerprick`, `cuff` ...).
    pub t: String,
    /// The app (iOS bundle, Android package) of the day's latest upload, when it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<String>,
}

impl StoredSource {
    fn of(source: &SourceContext) -> Self {
        Self { t: source.source_type.clone(), a: source.app_id.clone() }
    }
}

impl Stored {
    /// The samples of a stored day (or part of one) of `provider`, in either form.
    pub(crate) fn into_group(self, provider: &str) -> Result<SampleGroup, StoreError> {
        let corrupt = |e: serde_json::Error| StoreError::Corrupt(e.to_string());
        match self.c {
            Some(c) => Ok(SampleGroup {
                source: match self.s {
                    Some(s) => source_of(provider, Some(s.t), s.a),
                    None => source(provider, None),
                },
                data: serde_json::from_str::<Columns>(c.get()).map_err(corrupt)?.into_samples()?,
            }),
            None => serde_json::from_value(self.v).map_err(corrupt),
        }
    }
}

/// Most samples one item keeps. A day of more is kept in parts of this many: the first in the
/// day's own item, the rest in items that follow it ([`keys::series_part`]). 2,000 samples are
/// about 20 KB in columns (and at most about 100 KB however long their values), well under
/// the 400 KB DynamoDB allows an item; a day of 1-second heart rate (86,400 samples) is 44 parts.
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
            (keys::summary(user, &resource, date, provider, &n), value)
        }
        Entry::Series { resource, date, samples } => (
            keys::series(user, &resource, date, provider),
            to_body(&SampleGroup { source: source(provider, None), data: samples }),
        ),
        Entry::Profile { value } => (keys::profile(user, provider), value),
    }
}

/// The stored form of `value` with its hash `h` (a [`Stored`]), built without copying it:
/// `json!` would serialise `value` into a second tree (a deep copy, then the original dropped).
fn stored(h: String, value: Value) -> Value {
    let mut fields = serde_json::Map::new();
    fields.insert("h".into(), Value::String(h));
    fields.insert("v".into(), value);
    Value::Object(fields)
}

/// A day (or part) of samples in columns with its hash, as a [`Stored`] is read.
#[derive(Serialize)]
struct StoredColumns<'a> {
    c: &'a RawValue,
    h: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'a StoredSource>,
}

/// The items that keep a day of `samples` under `key`, in columns, and the day's hash. A day
/// of more than [`PART_SAMPLES`] samples is kept in parts: the day's own item first (with the
/// hash of all the parts' texts in order and the number of parts), then its other parts.
/// A day of one source's samples keeps its `source` in every part.
fn series_items(
    key: &Key,
    samples: &[Sample],
    source: Option<&StoredSource>,
) -> Result<(String, Vec<TextItem>), DomainError> {
    let parts: Vec<&[Sample]> =
        if samples.is_empty() { vec![samples] } else { samples.chunks(PART_SAMPLES).collect() };
    let texts = parts
        .into_iter()
        .map(|samples| serde_json::value::to_raw_value(&ColumnsText(samples)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| StoreError::Invalid(format!("a day of samples: {e}")))?;
    let mut day = Sha256::new();
    for text in &texts {
        day.update(text.get().as_bytes());
    }
    let h = hex::encode(day.finalize());
    let count = texts.len() as u32;
    let items = texts
        .iter()
        .zip(1..)
        .map(|(c, n)| match n {
            1 => TextItem::new(
                key.clone(),
                &StoredColumns { c, h: &h, parts: (count > 1).then_some(count), s: source },
            ),
            n => TextItem::new(
                keys::series_part(key, n),
                &StoredColumns { c, h: &hash_text(c.get().as_bytes()), parts: None, s: source },
            ),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((h, items))
}

/// The timestamps of a stored day of samples, over all its parts.
async fn stored_timestamps(
    deps: &Deps,
    key: &Key,
    provider: &str,
    first: Stored,
) -> Result<HashSet<DateTime<Utc>>, DomainError> {
    let parts = first.parts.unwrap_or(1);
    let mut seen: HashSet<DateTime<Utc>> =
        first.into_group(provider)?.data.iter().map(|s| s.timestamp).collect();
    for n in 2..=parts {
        if let Some(item) = deps.table.get(&keys::series_part(key, n)).await? {
            seen.extend(item.decode::<Stored>()?.into_group(provider)?.data.iter().map(|s| s.timestamp));
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
    let mut out = put_many(deps, user, provider, std::slice::from_ref(entry)).await?;
    Ok(out.pop().expect("one entry, one outcome"))
}

/// Stores `entries` as [`put`] stores each, in order, and says what changed for each: their
/// stored items are read together (one [`crate::ports::Table::get_many`] per [`MAX_BATCH`]
/// entries: one BatchGetItem on DynamoDB instead of one GetItem each) and the changed ones
/// written together (the other parts of the days first, then the days' own items and the
/// other entries' items, so a crash in between leaves a day's old hash and the next poll writes
/// it again). An entry whose key an earlier one of the same batch has starts a new batch, so it
/// sees the earlier one stored, as one `put` after the other would.
pub(crate) async fn put_many(
    deps: &Deps,
    user: UserId,
    provider: &str,
    entries: &[Entry],
) -> Result<Vec<(Change, Value)>, DomainError> {
    let mut out = Vec::with_capacity(entries.len());
    let mut batch: Vec<(Key, Value, &Entry)> = Vec::new();
    for entry in entries {
        let (key, value) = key_and_value(user, provider, entry.clone());
        if batch.len() == MAX_BATCH || batch.iter().any(|(k, _, _)| *k == key) {
            out.extend(put_batch(deps, provider, std::mem::take(&mut batch)).await?);
        }
        batch.push((key, value, entry));
    }
    if !batch.is_empty() {
        out.extend(put_batch(deps, provider, batch).await?);
    }
    Ok(out)
}

/// One batch of [`put_many`]: distinct keys, at most [`MAX_BATCH`].
async fn put_batch(
    deps: &Deps,
    provider: &str,
    batch: Vec<(Key, Value, &Entry)>,
) -> Result<Vec<(Change, Value)>, DomainError> {
    let keys: Vec<Key> = batch.iter().map(|(k, _, _)| k.clone()).collect();
    let olds = deps.table.get_many(&keys).await?;
    let mut out = Vec::with_capacity(batch.len());
    // The days' other parts, then the days' own items and the other entries' items.
    let (mut parts, mut firsts) = (Vec::new(), Vec::new());
    for ((key, value, entry), old) in batch.into_iter().zip(olds) {
        let old = match old {
            Some(raw) => Some(raw.decode::<Stored>()?.0),
            None => None,
        };
        let Entry::Series { samples, .. } = entry else {
            let h = hash(&value);
            let change = match old {
                None => Change::Created,
                Some(old) if old.h == h => {
                    out.push((Change::Unchanged, value));
                    continue;
                }
                Some(_) => Change::Updated,
            };
            firsts.push(TextItem::new(key, &stored(h, value.clone()))?);
            out.push((change, value));
            continue;
        };
        let (h, mut items) = series_items(&key, samples, None)?;
        let change = match old {
            None => Change::Created,
            // A day stored before columns keeps the hash of its value's text.
            Some(old) if old.h == h || (old.c.is_none() && old.h == hash(&value)) => {
                out.push((Change::Unchanged, value));
                continue;
            }
            Some(old) => {
                let before = stored_timestamps(deps, &key, provider, old).await?;
                if samples.iter().any(|s| !before.contains(&s.timestamp)) {
                    Change::Created
                } else {
                    Change::Updated
                }
            }
        };
        firsts.push(items.remove(0));
        parts.extend(items);
        out.push((change, value));
    }
    if !parts.is_empty() {
        deps.table.put_all_text(parts).await?;
    }
    if !firsts.is_empty() {
        deps.table.put_all_text(firsts).await?;
    }
    Ok(out)
}

/// Stores a phone's summary of a day that may carry only the measures that changed since the
/// last upload (the Android SDK's body uploads come from Health Connect's changed records): a
/// measure the upload leaves out or null keeps its stored value, so a later upload of body fat
/// alone does not erase the day's weight. Otherwise as [`put`].
pub(crate) async fn put_keeping_stored_measures(
    deps: &Deps,
    user: UserId,
    provider: &str,
    entry: &Entry,
) -> Result<(Change, Value), DomainError> {
    let Entry::Summary { resource, date, n, value } = entry else {
        return put(deps, user, provider, entry).await;
    };
    let (key, _) = key_and_value(user, provider, entry.clone());
    let Some(item) = deps.table.get(&key).await? else {
        return put(deps, user, provider, entry).await;
    };
    let stored = item.decode::<Stored>()?.v;
    let mut value = value.clone();
    if let (Some(new), Some(stored)) = (value.as_object_mut(), stored.as_object()) {
        for (field, v) in stored {
            if !v.is_null() && new.get(field).is_none_or(Value::is_null) {
                new.insert(field.clone(), v.clone());
            }
        }
    }
    let entry = Entry::Summary { resource: resource.clone(), date: *date, n: n.clone(), value };
    put(deps, user, provider, &entry).await
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

/// The items that keep `entry`, as text: a day of samples in columns, other entries as
/// [`put`] stores them.
fn text_items_for(user: UserId, provider: &str, entry: Entry) -> Result<Vec<TextItem>, DomainError> {
    if let Entry::Series { resource, date, samples } = &entry {
        let key = keys::series(user, resource, *date, provider);
        return Ok(series_items(&key, samples, None)?.1);
    }
    let (key, value) = key_and_value(user, provider, entry);
    let h = hash(&value);
    Ok(vec![TextItem::new(key, &stored(h, value))?])
}

/// A day of one source's samples to merge into what is stored ([`merge_days`]).
#[derive(Debug, Clone)]
pub(crate) struct SourceDay<'a> {
    pub source: &'a SourceContext,
    pub resource: &'a Resource,
    pub date: NaiveDate,
    pub samples: &'a [Sample],
}

/// What merging one day changed: the day as stored after it (the read API's `{source, data}`,
/// the whole day, as a pulled day's event carries it) when it was asked for.
#[derive(Debug, Clone)]
pub(crate) struct Merged {
    pub resource: Resource,
    pub change: Change,
    pub value: Option<Value>,
}

/// One stored day being merged into.
struct Day {
    key: Key,
    resource: Resource,
    source: SourceContext,
    new: Vec<Sample>,
    old: Option<Stored>,
    old_parts: Vec<Sample>,
}

/// Merges days of samples of `provider` into the days stored per (resource, day, provider,
/// source type): a point (resource, provider, source type, timestamp) takes the value sent, the
/// stored points not sent are kept. A day gaining a point is `Created`, one whose values changed
/// `Updated`, else `Unchanged` (and not written). Days of the same key are merged in order (the
/// later wins). The stored days are read in batches (`Table::get_many`), and the changed ones
/// are written together by [`MergePlan::write`] (`Table::put_all_text`): for N days, about
/// N/100 reads and N/25 writes on DynamoDB, never one round trip per day or sample. `values`:
/// whether to answer each changed day's stored value (for its event).
pub(crate) async fn merge_days(
    deps: &Deps,
    user: UserId,
    provider: &str,
    days: &[SourceDay<'_>],
    values: bool,
) -> Result<MergePlan, DomainError> {
    let mut merging: Vec<Day> = Vec::new();
    let mut at: HashMap<Key, usize> = HashMap::new();
    for d in days {
        let key = keys::series_of_source(user, d.resource, d.date, provider, &d.source.source_type);
        match at.get(&key) {
            Some(&i) => {
                merging[i].new.extend_from_slice(d.samples);
                merging[i].source = d.source.clone();
            }
            None => {
                at.insert(key.clone(), merging.len());
                merging.push(Day {
                    key,
                    resource: d.resource.clone(),
                    source: d.source.clone(),
                    new: d.samples.to_vec(),
                    old: None,
                    old_parts: Vec::new(),
                });
            }
        }
    }
    let own: Vec<Key> = merging.iter().map(|d| d.key.clone()).collect();
    for (day, found) in merging.iter_mut().zip(get_all(deps, &own).await?) {
        day.old = found.map(|raw| raw.decode::<Stored>().map(|(s, _)| s)).transpose()?;
    }
    // The other parts of days kept in more than one item.
    let mut part_keys: Vec<(usize, Key)> = Vec::new();
    for (i, day) in merging.iter().enumerate() {
        let count = day.old.as_ref().and_then(|s| s.parts).unwrap_or(1);
        part_keys.extend((2..=count).map(|n| (i, keys::series_part(&day.key, n))));
    }
    let wanted: Vec<Key> = part_keys.iter().map(|(_, k)| k.clone()).collect();
    for ((i, _), found) in part_keys.iter().zip(get_all(deps, &wanted).await?) {
        if let Some(raw) = found {
            let part = raw.decode::<Stored>()?.0.into_group(provider)?;
            merging[*i].old_parts.extend(part.data);
        }
    }
    let days_merged = merging.len();
    let (mut firsts, mut others, mut out) = (Vec::new(), Vec::new(), Vec::new());
    for day in merging {
        let mut points: BTreeMap<DateTime<Utc>, Sample> = BTreeMap::new();
        if let Some(old) = day.old {
            for s in old.into_group(provider)?.data.into_iter().chain(day.old_parts) {
                points.insert(s.timestamp, s);
            }
        }
        let (mut created, mut updated) = (false, false);
        for s in day.new {
            match points.insert(s.timestamp, s) {
                None => created = true,
                Some(before) => updated |= Some(&before) != points.get(&before.timestamp),
            }
        }
        let change = match (created, updated) {
            (true, _) => Change::Created,
            (false, true) => Change::Updated,
            (false, false) => Change::Unchanged,
        };
        if change == Change::Unchanged {
            continue;
        }
        let samples: Vec<Sample> = points.into_values().collect();
        let (_, mut items) = series_items(&day.key, &samples, Some(&StoredSource::of(&day.source)))?;
        firsts.push(items.remove(0));
        others.extend(items);
        let value = values.then(|| to_body(&SampleGroup { source: day.source, data: samples }));
        out.push(Merged { resource: day.resource, change, value });
    }
    let unchanged = days_merged - out.len();
    Ok(MergePlan { merged: out, unchanged, firsts, others })
}

/// The days a merge changed ([`merge_days`]), and their items, not written yet: the caller
/// stages the days' events first ([`MergePlan::write`]).
#[derive(Debug)]
pub(crate) struct MergePlan {
    pub merged: Vec<Merged>,
    /// How many of the days merged did not change.
    pub unchanged: usize,
    firsts: Vec<TextItem>,
    others: Vec<TextItem>,
}

impl MergePlan {
    /// Writes the changed days: the other parts first, the days' own items (which say how many
    /// parts) last, so a crash in between leaves each day's old count, and the SDK's resend
    /// writes it again.
    pub(crate) async fn write(self, deps: &Deps) -> Result<(), DomainError> {
        if !self.others.is_empty() {
            deps.table.put_all_text(self.others).await?;
        }
        if !self.firsts.is_empty() {
            deps.table.put_all_text(self.firsts).await?;
        }
        Ok(())
    }
}

/// The items of `keys` (any number), in their order, read [`MAX_BATCH`] at a time.
async fn get_all(deps: &Deps, keys: &[Key]) -> Result<Vec<Option<RawItem>>, DomainError> {
    let mut found = Vec::with_capacity(keys.len());
    for batch in keys.chunks(MAX_BATCH) {
        found.extend(deps.table.get_many(batch).await?);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Item;

    fn samples(n: i64) -> Vec<Sample> {
        (0..n)
            .map(|i| Sample {
                timestamp: DateTime::from_timestamp(1_772_323_200 + i, 0).unwrap(),
                value: i as f64 / 4.0,
                unit: "bpm".into(),
                timezone_offset: 3600,
                systolic: None,
                diastolic: None,
            })
            .collect()
    }

    fn read_back(items: &[TextItem]) -> Vec<Stored> {
        items.iter().map(|i| i.to_item().unwrap().decode::<Stored>().unwrap()).collect()
    }

    #[test]
    fn a_day_is_one_item_in_columns_hashed_on_its_text() {
        let key = Key::new("USER#1", "DATA#TS#heartrate#2026-03-01#oura");
        let day = samples(PART_SAMPLES as i64);
        let (h, items) = series_items(&key, &day, None).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].key, key);
        let stored = read_back(&items).remove(0);
        assert_eq!((stored.h.as_str(), stored.parts), (h.as_str(), None));
        assert_eq!(h, hash_text(stored.c.as_ref().unwrap().get().as_bytes()));
        assert_eq!(
            stored.into_group("oura").unwrap(),
            SampleGroup { source: source("oura", None), data: day }
        );
    }

    #[test]
    fn a_longer_day_is_kept_in_parts_its_own_item_first() {
        let key = Key::new("USER#1", "DATA#TS#heartrate#2026-03-01#oura");
        let day = samples(2 * PART_SAMPLES as i64 + 1);
        let (h, items) = series_items(&key, &day, None).unwrap();
        let keys: Vec<&Key> = items.iter().map(|i| &i.key).collect();
        assert_eq!(keys, vec![&key, &keys::series_part(&key, 2), &keys::series_part(&key, 3)]);
        let stored = read_back(&items);
        assert_eq!((stored[0].h.as_str(), stored[0].parts), (h.as_str(), Some(3)));
        let mut whole = Sha256::new();
        for part in &stored {
            whole.update(part.c.as_ref().unwrap().get().as_bytes());
        }
        assert_eq!(h, hex::encode(whole.finalize()), "the day's hash covers every part");
        assert_eq!(stored[2].parts, None);
        let read: Vec<Sample> = stored.into_iter().flat_map(|s| s.into_group("oura").unwrap().data).collect();
        assert_eq!(read, day);
    }

    #[test]
    fn a_day_stored_before_columns_reads_as_it_did() {
        let group = SampleGroup { source: source("oura", None), data: samples(3) };
        let value = to_body(&group);
        let item = Item::new(Key::new("P", "S"), stored(hash(&value), value.clone()));
        let old: Stored = item.decode().unwrap();
        assert_eq!((old.h.clone(), old.c.is_none()), (hash(&value), true));
        assert_eq!(old.into_group("oura").unwrap(), group);
    }

    #[test]
    fn the_same_day_stores_the_same_text() {
        let key = Key::new("USER#1", "DATA#TS#steps#2026-03-01#oura");
        let a = series_items(&key, &samples(10), None).unwrap();
        let b = series_items(&key, &samples(10), None).unwrap();
        assert_eq!(a.0, b.0);
        let c = series_items(&key, &samples(11), None).unwrap();
        assert_ne!(a.0, c.0);
    }
}
