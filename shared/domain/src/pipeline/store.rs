//! Writes normalised entries into the user's partition. Each item's key is derived from the
//! data (resource, day, provider, record), so storing the same data again writes the same item:
//! a repeated chunk stores nothing twice. Each item keeps a hash of its content, so the poll
//! can tell new data from changed data from unchanged data.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use wearlab_models::data::SampleGroup;

use super::normalize::{Entry, source};
use crate::Deps;
use crate::error::DomainError;
use crate::ids::UserId;
use crate::keys::pipeline as keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key};

/// A stored data item.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// SHA-256 (hex) of `value`.
    pub h: String,
    pub v: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Created,
    Updated,
    Unchanged,
}

fn hash(v: &Value) -> String {
    hex::encode(Sha256::digest(serde_json::to_vec(v).expect("values serialize")))
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

/// The stored form of `value` with its hash `h` (a [`Stored`]), built without copying it.
fn stored(h: String, value: Value) -> Value {
    serde_json::json!({ "h": h, "v": value })
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
                    let before: std::collections::HashSet<String> = old
                        .v
                        .get("data")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter().filter_map(|s| s.get("timestamp")?.as_str().map(str::to_owned)).collect()
                        })
                        .unwrap_or_default();
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
    deps.table.put(Item::new(key, stored(h, value.clone())), Condition::None).await?;
    Ok((change, value))
}

/// Stores `entries` without looking at what was there (historical pulls), in as few writes as
/// the table allows (`Table::put_all`). Entries naming one item twice keep the last, as writing
/// them one after the other would.
pub(crate) async fn overwrite_all(
    deps: &Deps,
    user: UserId,
    provider: &str,
    entries: Vec<Entry>,
) -> Result<(), DomainError> {
    let mut items: Vec<Item> = Vec::with_capacity(entries.len());
    let mut at: std::collections::HashMap<Key, usize> = std::collections::HashMap::new();
    for entry in entries {
        let (key, value) = key_and_value(user, provider, entry);
        let item = Item::new(key.clone(), stored(hash(&value), value));
        match at.get(&key) {
            Some(&i) => items[i] = item,
            None => {
                at.insert(key, items.len());
                items.push(item);
            }
        }
    }
    deps.table.put_all(items).await?;
    Ok(())
}
