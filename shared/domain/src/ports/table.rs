//! The single-table item store.
//!
//! Every repository is written once on top of this trait; adapters map it to DynamoDB
//! (`PK`, `SK`, `GSI1PK`, `GSI1SK`, `ver`, `expires_at`, `data`) or to redb tables.

use async_trait::async_trait;
use base64::Engine;
use serde::{Deserialize, Serialize};

/// Primary key of an item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Key {
    pub pk: String,
    pub sk: String,
}

impl Key {
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Self { pk: pk.into(), sk: sk.into() }
    }
}

/// Key of an item in the secondary index `GSI1` (sparse: items without it are not indexed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexKey {
    pub pk: String,
    pub sk: String,
}

/// One stored item. `body` is the record as JSON; `version` supports optimistic concurrency;
/// `expires_at` (epoch seconds) is a deletion backstop that DynamoDB's TTL honours. Readers must
/// not rely on an expired item being gone: TTL deletes lazily.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub key: Key,
    pub gsi1: Option<IndexKey>,
    pub version: u64,
    pub expires_at: Option<i64>,
    pub body: serde_json::Value,
}

impl Item {
    pub fn new(key: Key, body: serde_json::Value) -> Self {
        Self { key, gsi1: None, version: 1, expires_at: None, body }
    }

    pub fn with_gsi1(mut self, pk: impl Into<String>, sk: impl Into<String>) -> Self {
        self.gsi1 = Some(IndexKey { pk: pk.into(), sk: sk.into() });
        self
    }

    pub fn with_expiry(mut self, epoch_seconds: Option<i64>) -> Self {
        self.expires_at = epoch_seconds;
        self
    }

    /// Decodes the body into a record type.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, StoreError> {
        // Deserialize from the borrowed tree: no copy of the body per read.
        T::deserialize(&self.body)
            .map_err(|e| StoreError::Corrupt(format!("{}/{}: {e}", self.key.pk, self.key.sk)))
    }
}

/// An item written from its body's JSON text: version 1, no index entry, no expiry. For the
/// many data items of a historical pull, whose text is serialised once from typed values (and
/// hashed on the same bytes) instead of built as a `serde_json::Value` first. Written by
/// [`Table::put_all_text`].
#[derive(Debug, Clone)]
pub struct TextItem {
    pub key: Key,
    body: Box<serde_json::value::RawValue>,
}

impl TextItem {
    /// `body` serialised as the item's body: valid JSON by construction.
    pub fn new<T: Serialize + ?Sized>(key: Key, body: &T) -> Result<Self, StoreError> {
        let body = serde_json::value::to_raw_value(body)
            .map_err(|e| StoreError::Invalid(format!("{}/{}: {e}", key.pk, key.sk)))?;
        Ok(Self { key, body })
    }

    /// The body's JSON text.
    pub fn body(&self) -> &serde_json::value::RawValue {
        &self.body
    }

    /// The same item as an [`Item`] (its body parsed): what a read answers for it.
    pub fn to_item(&self) -> Result<Item, StoreError> {
        let body = serde_json::from_str(self.body.get())
            .map_err(|e| StoreError::Invalid(format!("{}/{}: {e}", self.key.pk, self.key.sk)))?;
        Ok(Item::new(self.key.clone(), body))
    }
}

/// An item read only to be decoded: its body is still JSON text, so that decoding reads the
/// text straight into the record, with no `serde_json::Value` tree in between (the tree costs
/// an allocation per field on every read). What [`Table::get_raw`] answers.
#[derive(Debug, Clone)]
pub struct RawItem {
    key: Key,
    text: RawText,
}

#[derive(Debug, Clone)]
enum RawText {
    /// The body's JSON and the item's version (DynamoDB keeps them apart).
    Body { version: u64, json: String },
    /// A whole [`Item`] as `serde_json` writes it (the embedded table keeps items so).
    Item(String),
}

/// What decoding a whole item as JSON keeps: the other fields are skipped.
#[derive(Deserialize)]
struct VersionAndBody<T> {
    version: u64,
    body: T,
}

impl RawItem {
    /// An item whose body is the JSON text `json`.
    pub fn from_body_json(key: Key, version: u64, json: String) -> Self {
        Self { key, text: RawText::Body { version, json } }
    }

    /// An item kept as the JSON of a whole [`Item`] (`serde_json::to_string(&item)`).
    pub fn from_item_json(key: Key, json: String) -> Self {
        Self { key, text: RawText::Item(json) }
    }

    /// `item` with its body written back to text (the default [`Table::get_raw`]).
    pub fn from_item(item: &Item) -> Self {
        Self::from_body_json(item.key.clone(), item.version, item.body.to_string())
    }

    pub fn key(&self) -> &Key {
        &self.key
    }

    /// Decodes the body into a record type, as [`Item::decode`] does, and gives the item's
    /// version with it.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<(T, u64), StoreError> {
        let decoded = match &self.text {
            RawText::Body { version, json } => serde_json::from_str(json).map(|body| (body, *version)),
            RawText::Item(json) => serde_json::from_str(json).map(|v: VersionAndBody<T>| (v.body, v.version)),
        };
        decoded.map_err(|e| StoreError::Corrupt(format!("{}/{}: {e}", self.key.pk, self.key.sk)))
    }
}

#[cfg(test)]
mod raw_item_tests {
    use super::*;

    #[derive(Debug, PartialEq, Deserialize)]
    struct Rec {
        a: Vec<serde_json::Value>,
        b: Option<String>,
    }

    #[test]
    fn raw_items_decode_like_items() {
        let item = Item::new(Key::new("P", "S"), serde_json::json!({"a": [1, "x"], "b": null}))
            .with_gsi1("G", "GS")
            .with_expiry(Some(5));
        let item = Item { version: 7, ..item };
        let want = (item.decode::<Rec>().unwrap(), 7);
        let whole = RawItem::from_item_json(item.key.clone(), serde_json::to_string(&item).unwrap());
        assert_eq!(whole.decode::<Rec>().unwrap(), want);
        assert_eq!(RawItem::from_item(&item).decode::<Rec>().unwrap(), want);
        assert_eq!(whole.key(), &item.key);
    }

    #[test]
    fn unreadable_raw_items_are_corrupt() {
        let raw = RawItem::from_body_json(Key::new("P", "S"), 1, "{".into());
        assert!(matches!(raw.decode::<Rec>(), Err(StoreError::Corrupt(m)) if m.starts_with("P/S: ")));
        let raw = RawItem::from_item_json(Key::new("P", "S"), r#"{"version":1}"#.into());
        assert!(matches!(raw.decode::<Rec>(), Err(StoreError::Corrupt(_))));
    }
}

/// Precondition of a write, checked atomically with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    None,
    /// No item has this key.
    NotExists,
    /// An item has this key.
    Exists,
    /// The stored item has exactly this version.
    VersionIs(u64),
}

/// One write of an atomic batch.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    Put {
        item: Item,
        condition: Condition,
    },
    Delete {
        key: Key,
        condition: Condition,
    },
    /// Writes nothing; fails the batch unless the condition holds.
    Check {
        key: Key,
        condition: Condition,
    },
    /// Adds to one integer field of an item, atomically (see [`Add`]).
    Add(Add),
}

impl WriteOp {
    pub fn key(&self) -> &Key {
        match self {
            WriteOp::Put { item, .. } => &item.key,
            WriteOp::Delete { key, .. } | WriteOp::Check { key, .. } => key,
            WriteOp::Add(add) => &add.key,
        }
    }

    /// The write's precondition.
    pub fn condition(&self) -> Condition {
        match self {
            WriteOp::Put { condition, .. }
            | WriteOp::Delete { condition, .. }
            | WriteOp::Check { condition, .. } => *condition,
            WriteOp::Add(add) => add.condition,
        }
    }
}

/// An atomic addition of `delta` (signed) to the integer field `field` of an item's body: no
/// read before it and no version condition, so concurrent adds never conflict (DynamoDB's
/// `ADD` in an `Update`; redb reads and writes inside its single write transaction). A missing
/// item is created as `{field: delta}` at version 1; an existing one keeps its other fields,
/// its index key and (unless `expires_at` is given) its expiry, and its version goes up by one.
/// A missing field counts as 0. A body that is not an object, a field that is not an integer,
/// or a sum outside `i64` is refused (`Invalid`), and nothing of the batch is written.
///
/// `field` is a lowercase name (`[a-z0-9_]`). A later `Put` of the item replaces the field
/// with the put body's value, as it replaces the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct Add {
    pub key: Key,
    pub field: String,
    pub delta: i64,
    pub condition: Condition,
    /// Sets the item's expiry (epoch seconds) with the addition.
    pub expires_at: Option<i64>,
}

impl Add {
    pub fn new(key: Key, field: impl Into<String>, delta: i64) -> Self {
        Self { key, field: field.into(), delta, condition: Condition::None, expires_at: None }
    }

    pub fn when(mut self, condition: Condition) -> Self {
        self.condition = condition;
        self
    }

    pub fn with_expiry(mut self, epoch_seconds: i64) -> Self {
        self.expires_at = Some(epoch_seconds);
        self
    }

    /// Refuses a field name outside `[a-z0-9_]+` (adapters store the field under its name).
    pub fn validate(&self) -> Result<(), StoreError> {
        let ok = !self.field.is_empty()
            && self.field.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if ok {
            Ok(())
        } else {
            Err(StoreError::Invalid(format!("bad field name for an add: {:?}", self.field)))
        }
    }

    /// `body` with the addition applied: what every adapter stores (redb writes it, DynamoDB
    /// reads its stored parts back into it).
    pub fn apply_to(&self, body: &mut serde_json::Value) -> Result<i64, StoreError> {
        add_to_field(body, &self.field, self.delta)
    }
}

/// Adds `delta` to the integer `field` of the object `body` (a missing field is 0) and
/// answers the new value.
pub fn add_to_field(body: &mut serde_json::Value, field: &str, delta: i64) -> Result<i64, StoreError> {
    let serde_json::Value::Object(fields) = body else {
        return Err(StoreError::Invalid(format!("add to {field}: the item's body is not an object")));
    };
    let current = match fields.get(field) {
        None => 0,
        Some(v) => {
            v.as_i64().ok_or_else(|| StoreError::Invalid(format!("add to {field}: not an integer")))?
        }
    };
    let next =
        current.checked_add(delta).ok_or_else(|| StoreError::Invalid(format!("add to {field}: overflow")))?;
    fields.insert(field.to_owned(), next.into());
    Ok(next)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    Primary,
    Gsi1,
}

/// Which sort keys of the partition a query returns (bounds inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkRange {
    All,
    Prefix(String),
    Between(String, String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub index: Index,
    pub pk: String,
    pub range: SkRange,
    /// At most this many items in the page; `None` reads the whole partition range.
    pub limit: Option<u32>,
    pub cursor: Option<Cursor>,
    pub descending: bool,
}

impl Query {
    pub fn partition(pk: impl Into<String>) -> Self {
        Self {
            index: Index::Primary,
            pk: pk.into(),
            range: SkRange::All,
            limit: None,
            cursor: None,
            descending: false,
        }
    }

    pub fn gsi1(pk: impl Into<String>) -> Self {
        Self { index: Index::Gsi1, ..Self::partition(pk) }
    }

    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.range = SkRange::Prefix(prefix.into());
        self
    }

    pub fn between(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.range = SkRange::Between(from.into(), to.into());
        self
    }

    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    pub fn after(mut self, cursor: Option<Cursor>) -> Self {
        self.cursor = cursor;
        self
    }

    pub fn descending(mut self) -> Self {
        self.descending = true;
        self
    }
}

/// Where a page ended: the last item's keys. Opaque to API clients (base64url JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub pk: String,
    pub sk: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gsi1: Option<(String, String)>,
}

impl Cursor {
    /// The cursor pointing just after `item` in a query of `index`.
    pub fn after_item(item: &Item, index: Index) -> Self {
        Self {
            pk: item.key.pk.clone(),
            sk: item.key.sk.clone(),
            gsi1: match index {
                Index::Primary => None,
                Index::Gsi1 => item.gsi1.as_ref().map(|g| (g.pk.clone(), g.sk.clone())),
            },
        }
    }

    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).expect("cursor serializes");
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    pub fn decode(s: &str) -> Result<Self, StoreError> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s)
            .map_err(|_| StoreError::InvalidCursor)?;
        serde_json::from_slice(&bytes).map_err(|_| StoreError::InvalidCursor)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub items: Vec<Item>,
    /// Present when more items may follow.
    pub next_cursor: Option<Cursor>,
}

/// A page of items read only to be decoded (see [`RawItem`]): what [`Table::query_raw`] answers.
#[derive(Debug, Clone)]
pub struct RawPage {
    pub items: Vec<RawItem>,
    /// Present when more items may follow.
    pub next_cursor: Option<Cursor>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    /// A write's condition did not hold. For a batch, `op` is the index of a failing write.
    #[error("condition failed")]
    ConditionFailed { op: Option<usize> },
    #[error("invalid cursor")]
    InvalidCursor,
    #[error("stored item is not readable: {0}")]
    Corrupt(String),
    /// Too many concurrent writers on one item, even after retries; safe to retry later.
    #[error("contention: {0}")]
    Contention(String),
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    #[error("invalid request to storage: {0}")]
    Invalid(String),
}

/// Most items in one atomic batch (DynamoDB TransactWriteItems' limit).
pub const MAX_BATCH: usize = 100;

/// The largest item DynamoDB stores (400 KB, names and values together). The embedded table
/// refuses larger items too, so that what AWS would refuse fails on a laptop first.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// Refuses a batch no adapter may apply: too many writes, or one key named twice
/// (DynamoDB refuses both; the embedded adapter refuses them too, so tests catch them locally).
pub fn validate_batch(ops: &[WriteOp]) -> Result<(), StoreError> {
    if ops.len() > MAX_BATCH {
        return Err(StoreError::Invalid(format!("at most {MAX_BATCH} writes per batch")));
    }
    for op in ops {
        if let WriteOp::Add(add) = op {
            add.validate()?;
        }
    }
    let mut seen = std::collections::HashSet::new();
    if !ops.iter().all(|op| seen.insert(op.key())) {
        return Err(StoreError::Invalid("a batch names one key twice".into()));
    }
    Ok(())
}

/// Refuses a [`Table::put_all`] that names one key twice: which write would win is not defined
/// in one DynamoDB BatchWriteItem (it refuses them), so no adapter accepts it.
pub fn validate_put_all(items: &[Item]) -> Result<(), StoreError> {
    distinct_keys(items.iter().map(|i| &i.key))
}

/// [`validate_put_all`] for [`Table::put_all_text`].
pub fn validate_put_all_text(items: &[TextItem]) -> Result<(), StoreError> {
    distinct_keys(items.iter().map(|i| &i.key))
}

/// The keys of one [`Table::get_many`]: at most [`MAX_BATCH`], each once.
pub fn validate_get_many(keys: &[Key]) -> Result<(), StoreError> {
    if keys.len() > MAX_BATCH {
        return Err(StoreError::Invalid(format!("at most {MAX_BATCH} keys per batch read")));
    }
    distinct_keys(keys.iter())
}

fn distinct_keys<'a>(keys: impl Iterator<Item = &'a Key>) -> Result<(), StoreError> {
    let mut seen = std::collections::HashSet::new();
    for key in keys {
        if !seen.insert(key) {
            return Err(StoreError::Invalid("a batch names one key twice".into()));
        }
    }
    Ok(())
}

/// What [`Table::index_lag`] answers unless an adapter knows better: DynamoDB's global
/// secondary indexes take "a fraction of a second, under normal conditions" to show a write.
pub const INDEX_LAG: std::time::Duration = std::time::Duration::from_secs(2);

#[async_trait]
pub trait Table: Send + Sync + 'static {
    /// How long after a write its index entry may still be missing from (or stale in) an index
    /// query, in normal operation. Zero for an adapter that writes the index with the item.
    /// A cache built from index queries trusts a query only if it started this long after the
    /// writes it must show.
    fn index_lag(&self) -> std::time::Duration {
        INDEX_LAG
    }

    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError>;

    /// [`Table::get`] for a caller that only decodes the body (see [`RawItem`]): the same read,
    /// the same round trip. Adapters that keep bodies as text answer without building the
    /// `Value`; this default goes through `get`.
    async fn get_raw(&self, key: &Key) -> Result<Option<RawItem>, StoreError> {
        Ok(self.get(key).await?.map(|item| RawItem::from_item(&item)))
    }

    /// Several items at once, each as [`Table::get_raw`] reads it (their bodies are decoded by
    /// the caller, and only those), answered in the order of `keys` (at most [`MAX_BATCH`], each
    /// key once). Not a snapshot: each item is read as it is when its read happens. DynamoDB
    /// reads them in one BatchGetItem (one round trip); this default reads them concurrently.
    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<RawItem>>, StoreError> {
        validate_get_many(keys)?;
        futures_util::future::try_join_all(keys.iter().map(|k| self.get_raw(k))).await
    }

    /// Writes one item if `condition` holds.
    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError>;

    /// Writes an item that is written once and never changed (its key is new: a fresh id in it),
    /// without a condition, such as an audit log entry. The same promises as `put`: durable when
    /// the call answers, and seen by every read that starts after the answer. An adapter may make
    /// it durable and visible its own cheaper way (the embedded table logs it to an append-only
    /// file with grouped syncs and indexes it in large groups later, or at once for a read that
    /// needs it); this default is a put.
    async fn append(&self, item: Item) -> Result<(), StoreError> {
        self.put(item, Condition::None).await
    }

    /// Removes one item if `condition` holds. Removing a missing item with `Condition::None` is fine.
    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError>;

    /// Applies every write or none (at most `MAX_BATCH`, each key once).
    async fn transact(&self, ops: Vec<WriteOp>) -> Result<(), StoreError>;

    /// Writes every item whole, whatever was there, each key once (see [`validate_put_all`]);
    /// for many writes that need neither a condition nor atomicity across items, such as the
    /// data items of a pulled chunk. Adapters write them in as few requests as they can (the
    /// embedded table in one commit, DynamoDB in BatchWriteItem requests of 25). Not atomic:
    /// after an error some items may be written, and a retry writes them again, which is why
    /// only items whose whole truth is their own body belong here. This default puts them one
    /// by one.
    async fn put_all(&self, items: Vec<Item>) -> Result<(), StoreError> {
        validate_put_all(&items)?;
        for item in items {
            self.put(item, Condition::None).await?;
        }
        Ok(())
    }

    /// [`Table::put_all`] for items whose bodies are JSON text already ([`TextItem`]): the same
    /// writes and promises. Adapters that keep bodies as text write the text as it is; this
    /// default parses each body and goes through `put_all`.
    async fn put_all_text(&self, items: Vec<TextItem>) -> Result<(), StoreError> {
        let items = items.iter().map(TextItem::to_item).collect::<Result<Vec<_>, _>>()?;
        self.put_all(items).await
    }

    /// Applies one [`Add`] on its own and answers the field's value after it (one round trip).
    async fn add(&self, add: Add) -> Result<i64, StoreError>;

    /// Items of one partition in sort-key order, one page.
    async fn query(&self, query: Query) -> Result<Page, StoreError>;

    /// [`Table::query`] for a caller that only decodes the bodies, as [`Table::get_raw`] is to
    /// `get`: the same read, without a `serde_json::Value` per item in adapters that keep bodies
    /// as text. This default goes through `query`.
    async fn query_raw(&self, query: Query) -> Result<RawPage, StoreError> {
        let page = self.query(query).await?;
        Ok(RawPage {
            items: page.items.iter().map(RawItem::from_item).collect(),
            next_cursor: page.next_cursor,
        })
    }
}

/// Reads every page of a query (bounded by `max_items` so no caller loops forever).
pub async fn query_all(table: &dyn Table, query: Query, max_items: usize) -> Result<Vec<Item>, StoreError> {
    let mut items = Vec::new();
    let mut q = query;
    loop {
        let page = table.query(q.clone()).await?;
        items.extend(page.items);
        match page.next_cursor {
            Some(c) if items.len() < max_items => q.cursor = Some(c),
            _ => break,
        }
    }
    items.truncate(max_items);
    Ok(items)
}

/// A record as the JSON body of an item (records are plain serde types, so this cannot fail).
pub fn to_body<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("records serialize to JSON")
}
