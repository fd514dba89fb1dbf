//! `Table` on redb: the adapter. One write transaction per call makes every batch atomic:
//! redb has a single writer, so conditions are checked and writes applied with nothing in
//! between. The key layout, reads, queries and the port's methods live here; writes go
//! through the group committer ([`committer`]), appended items through the append log first
//! ([`append_log`]), and stored texts are read by the JSON scanner ([`scan`]) without parsing
//! more of them than the caller needs.

mod append_log;
mod committer;
mod footprint;
mod scan;

pub use footprint::{FileStats, StoredEntry};

use std::ops::Bound;
use std::path::Path;
use std::sync::{Arc, mpsc};

use async_trait::async_trait;
use redb::{Database, ReadableTable, TableDefinition};
use tokio::sync::oneshot;
use wearlab_domain::ports::{
    Add, Condition, Cursor, Index, Item, Key, Page, Query, RawItem, RawPage, SkRange, StoreError, Table,
    TextItem, WriteOp, validate_batch, validate_put_all, validate_put_all_text,
};

use append_log::{Appending, Pending};
use committer::{Msg, Prepared, commit_groups};
use scan::{decode, key_of_primary, primary_of_index_entry, raw_item, raw_item_of};

/// Items by `pk \0 sk`, in the compact layout (older ones as JSON texts; see [`scan`]).
const ITEMS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("items");
/// GSI1 entries: `gsi_pk \0 gsi_sk \0 pk \0 sk` -> nothing (the key ends with the item's
/// primary key; entries written before kept it again as their value).
const GSI1: TableDefinition<&[u8], &[u8]> = TableDefinition::new("gsi1");

const SEP: u8 = 0;
/// Above every byte of UTF-8 text, so `prefix ++ [HIGH]` bounds all keys starting with `prefix`.
const HIGH: u8 = 0xFF;

#[derive(Clone)]
pub struct RedbTable {
    db: Arc<Database>,
    /// The group committer's queue: every write goes through it (see [`commit_groups`]).
    writes: mpsc::Sender<Msg>,
    /// The append log's queue: appended items go through it first (a table in memory has no
    /// log file, and indexes them the same way).
    appends: mpsc::Sender<Appending>,
    /// Appended items not committed yet, by partition: a read of one commits them first.
    pending: Arc<Pending>,
}

/// redb's page cache unless the caller picks one: redb's own default is 1 GiB, which a long
/// pull fills and a laptop then holds; pages beyond the cache are read from the file (the
/// operating system's page cache usually has them).
pub const DEFAULT_CACHE_BYTES: usize = 32 * 1024 * 1024;

impl RedbTable {
    /// Opens (or creates) the table file with the default page cache ([`DEFAULT_CACHE_BYTES`]).
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with_cache(path, DEFAULT_CACHE_BYTES)
    }

    /// Opens (or creates) the table file with a page cache of at most `cache_bytes`.
    /// The file holds health data: it is readable by its owner only (0600), and a directory
    /// created for it is the owner's only (0700), like the key files beside it.
    pub fn open_with_cache(path: &Path, cache_bytes: usize) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir).map_err(unavailable)?;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            // Created 0600 before redb opens it, so it is never readable by others, not even
            // for a moment; a file made by an earlier version is tightened.
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(path)
                .map_err(unavailable)?;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(unavailable)?;
        }
        // The committer of a table just dropped may still hold the file for the commit it is
        // finishing (appended items are committed after their callers heard back): wait for it,
        // a bounded while.
        let mut attempts = 0;
        let db = loop {
            match Database::builder().set_cache_size(cache_bytes).create(path) {
                Err(redb::DatabaseError::DatabaseAlreadyOpen) if attempts < 100 => {
                    attempts += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                opened => break opened.map_err(unavailable)?,
            }
        };
        Self::init(db, Some(&append_log::path_of(path)))
    }

    /// A table in memory, for tests and benchmarks.
    pub fn in_memory() -> Self {
        let db = Database::builder()
            .set_cache_size(DEFAULT_CACHE_BYTES)
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .expect("in-memory redb opens");
        Self::init(db, None).expect("in-memory redb initialises")
    }

    /// Starts the committer and the append log, on the file `log` (a table on a file) after
    /// indexing what it holds.
    fn init(db: Database, log: Option<&Path>) -> Result<Self, StoreError> {
        let txn = db.begin_write().map_err(unavailable)?;
        txn.open_table(ITEMS).map_err(unavailable)?;
        txn.open_table(GSI1).map_err(unavailable)?;
        txn.commit().map_err(unavailable)?;
        let log = log.map(|path| append_log::open(&db, path)).transpose()?;
        let db = Arc::new(db);
        let pending = Arc::new(Pending::default());
        let (writes, queue) = mpsc::channel();
        let weak = Arc::downgrade(&db);
        let committer_pending = pending.clone();
        std::thread::Builder::new()
            .name("redb-commit".into())
            .spawn(move || commit_groups(&weak, &queue, &committer_pending))
            .map_err(unavailable)?;
        let (appends, queue) = mpsc::channel();
        let (commits, log_pending) = (writes.clone(), pending.clone());
        std::thread::Builder::new()
            .name("redb-append-log".into())
            .spawn(move || append_log::write_groups(log, &queue, &commits, &log_pending))
            .map_err(unavailable)?;
        Ok(Self { db, writes, appends, pending })
    }

    /// Answers once every appended item of partition `pk` is committed (at once when none waits).
    async fn settle(&self, pk: &str) -> Result<(), StoreError> {
        if self.pending.holds(pk) { self.flush().await } else { Ok(()) }
    }

    /// Answers once every appended item is committed.
    async fn settle_all(&self) -> Result<(), StoreError> {
        if self.pending.any() { self.flush().await } else { Ok(()) }
    }

    async fn flush(&self) -> Result<(), StoreError> {
        let stopped = || StoreError::Unavailable("the table's writer stopped".into());
        let (reply, answer) = oneshot::channel();
        self.writes.send(Msg::Flush(reply)).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Applies `ops` atomically and answers once they are committed (fsync'd on a file).
    async fn write(&self, ops: Vec<WriteOp>) -> Result<Vec<i64>, StoreError> {
        let ops = ops.into_iter().map(Prepared::new).collect::<Result<Vec<_>, _>>()?;
        self.write_prepared(ops).await
    }

    async fn write_prepared(&self, ops: Vec<Prepared>) -> Result<Vec<i64>, StoreError> {
        let stopped = || StoreError::Unavailable("the table's writer stopped".into());
        let (reply, answer) = oneshot::channel();
        self.writes.send(Msg::Write { ops, reply }).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Every item, in key order: for tests that check nothing of a user remains anywhere.
    pub async fn scan_all(&self) -> Result<Vec<Item>, StoreError> {
        self.settle_all().await?;
        let txn = self.db.begin_read().map_err(unavailable)?;
        let items = txn.open_table(ITEMS).map_err(unavailable)?;
        let mut out = Vec::new();
        for entry in items.iter().map_err(unavailable)? {
            let (k, v) = entry.map_err(unavailable)?;
            out.push(decode(k.value(), v.value())?);
        }
        Ok(out)
    }

    /// Deletes items whose expiry has passed, as DynamoDB's TTL does. Returns how many.
    pub async fn purge_expired(&self, now_epoch_seconds: i64) -> Result<usize, StoreError> {
        self.settle_all().await?;
        let db = self.db.clone();
        blocking(move || {
            let txn = db.begin_write().map_err(unavailable)?;
            let mut purged = 0;
            {
                let mut items = txn.open_table(ITEMS).map_err(unavailable)?;
                let mut gsi = txn.open_table(GSI1).map_err(unavailable)?;
                let mut expired = Vec::new();
                for entry in items.iter().map_err(unavailable)? {
                    let (k, v) = entry.map_err(unavailable)?;
                    let item = decode(k.value(), v.value())?;
                    if item.expires_at.is_some_and(|e| e <= now_epoch_seconds) {
                        expired.push(item);
                    }
                }
                for item in expired {
                    remove(&mut items, &mut gsi, &item)?;
                    purged += 1;
                }
            }
            txn.commit().map_err(unavailable)?;
            Ok(purged)
        })
        .await
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| StoreError::Unavailable(e.to_string()))?
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn check_part(s: &str) -> Result<(), StoreError> {
    if s.as_bytes().contains(&SEP) {
        return Err(StoreError::Invalid("key parts must not contain NUL".into()));
    }
    Ok(())
}

fn join(parts: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(SEP);
        }
        out.extend_from_slice(p.as_bytes());
    }
    out
}

fn primary(key: &Key) -> Vec<u8> {
    join(&[&key.pk, &key.sk])
}

fn gsi_entry(item: &Item) -> Option<Vec<u8>> {
    item.gsi1.as_ref().map(|g| join(&[&g.pk, &g.sk, &item.key.pk, &item.key.sk]))
}

type ItemsTable<'t> = redb::Table<'t, &'static [u8], &'static [u8]>;

fn remove(items: &mut ItemsTable<'_>, gsi: &mut ItemsTable<'_>, item: &Item) -> Result<(), StoreError> {
    items.remove(primary(&item.key).as_slice()).map_err(unavailable)?;
    if let Some(g) = gsi_entry(item) {
        gsi.remove(g.as_slice()).map_err(unavailable)?;
    }
    Ok(())
}

/// The byte range of a query's sort keys, before the cursor is applied.
fn bounds(q: &Query) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let with = |s: &str, tail: &[u8]| {
        let mut v = q.pk.as_bytes().to_vec();
        v.push(SEP);
        v.extend_from_slice(s.as_bytes());
        v.extend_from_slice(tail);
        v
    };
    match (&q.range, q.index) {
        (SkRange::All, _) => (Bound::Included(with("", &[])), Bound::Excluded(with("", &[HIGH]))),
        (SkRange::Prefix(p), _) => (Bound::Included(with(p, &[])), Bound::Excluded(with(p, &[HIGH]))),
        // Primary keys end at the sort key, so `b` itself is the inclusive end.
        (SkRange::Between(a, b), Index::Primary) => {
            (Bound::Included(with(a, &[])), Bound::Included(with(b, &[])))
        }
        // Index entries carry the primary key after the sort key: keep `b\0...`, not `bX...`.
        (SkRange::Between(a, b), Index::Gsi1) => {
            (Bound::Included(with(a, &[])), Bound::Excluded(with(b, &[SEP, HIGH])))
        }
    }
}

/// One page of a query: each item's key (`pk \0 sk`) and stored bytes, and the cursor after the
/// last one when more may follow. The caller decides how far to parse the items.
type Stored = (Vec<u8>, Vec<u8>);

fn run_query(db: &Database, q: &Query) -> Result<(Vec<Stored>, Option<Cursor>), StoreError> {
    check_part(&q.pk)?;
    let txn = db.begin_read().map_err(unavailable)?;
    let items = txn.open_table(ITEMS).map_err(unavailable)?;
    let cursor_key = match &q.cursor {
        None => None,
        // A cursor of another partition would widen the range: refuse it.
        Some(c) => Some(match q.index {
            Index::Primary if c.pk == q.pk => join(&[&c.pk, &c.sk]),
            Index::Gsi1 => match c.gsi1.as_ref() {
                Some((gp, gs)) if *gp == q.pk => join(&[gp, gs, &c.pk, &c.sk]),
                _ => return Err(StoreError::InvalidCursor),
            },
            Index::Primary => return Err(StoreError::InvalidCursor),
        }),
    };
    let (mut lo_b, mut hi_b) = bounds(q);
    if let Some(ck) = cursor_key {
        if q.descending {
            hi_b = Bound::Excluded(ck);
        } else {
            lo_b = Bound::Excluded(ck);
        }
    }
    let limit = q.limit.map(|l| l.max(1) as usize).unwrap_or(usize::MAX);
    let range = (as_slice(&lo_b), as_slice(&hi_b));
    // Index entries hold the primary key; the item itself lives in ITEMS.
    let gsi = match q.index {
        Index::Primary => None,
        Index::Gsi1 => Some(txn.open_table(GSI1).map_err(unavailable)?),
    };
    let iter = gsi.as_ref().unwrap_or(&items).range::<&[u8]>(range).map_err(unavailable)?;
    let iter: Box<dyn Iterator<Item = _>> = if q.descending { Box::new(iter.rev()) } else { Box::new(iter) };
    let mut out = Vec::new();
    let mut more = false;
    for entry in iter {
        if out.len() == limit {
            more = true;
            break;
        }
        let (k, v) = entry.map_err(unavailable)?;
        let stored = match &gsi {
            None => (k.value().to_vec(), v.value().to_vec()),
            Some(_) => {
                let primary = match v.value() {
                    [] => primary_of_index_entry(k.value())?,
                    older => older,
                };
                let item = items
                    .get(primary)
                    .map_err(unavailable)?
                    .map(|i| i.value().to_vec())
                    .ok_or_else(|| StoreError::Corrupt("index entry without item".into()))?;
                (primary.to_vec(), item)
            }
        };
        out.push(stored);
    }
    let next_cursor = match out.last() {
        Some((key, last)) if more => Some(Cursor::after_item(&decode(key, last)?, q.index)),
        _ => None,
    };
    Ok((out, next_cursor))
}

/// A stored item as a [`RawItem`]: the body found without parsing it ([`raw_item`]); the body's
/// parse is then the caller's one pass over it.
fn raw(key: &Key, stored: &[u8]) -> Result<RawItem, StoreError> {
    raw_item_of(key, stored)
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[async_trait]
impl Table for RedbTable {
    /// An item and its index entry are written in one redb transaction, and every read sees
    /// whole transactions: an index query shows each write that committed before it started.
    fn index_lag(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        check_part(&key.pk)?;
        check_part(&key.sk)?;
        self.settle(&key.pk).await?;
        // Reads are short and never wait for the writer (MVCC), so they run inline.
        let txn = self.db.begin_read().map_err(unavailable)?;
        let items = txn.open_table(ITEMS).map_err(unavailable)?;
        let tree_key = primary(key);
        match items.get(tree_key.as_slice()).map_err(unavailable)? {
            Some(v) => Ok(Some(decode(&tree_key, v.value())?)),
            None => Ok(None),
        }
    }

    /// Every key in one read transaction (a snapshot, which the port does not promise).
    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<RawItem>>, StoreError> {
        wearlab_domain::ports::validate_get_many(keys)?;
        for key in keys {
            check_part(&key.pk)?;
            check_part(&key.sk)?;
            self.settle(&key.pk).await?;
        }
        let txn = self.db.begin_read().map_err(unavailable)?;
        let items = txn.open_table(ITEMS).map_err(unavailable)?;
        keys.iter()
            .map(|key| match items.get(primary(key).as_slice()).map_err(unavailable)? {
                Some(v) => Ok(Some(raw(key, v.value())?)),
                None => Ok(None),
            })
            .collect()
    }

    async fn get_raw(&self, key: &Key) -> Result<Option<RawItem>, StoreError> {
        check_part(&key.pk)?;
        check_part(&key.sk)?;
        self.settle(&key.pk).await?;
        let txn = self.db.begin_read().map_err(unavailable)?;
        let items = txn.open_table(ITEMS).map_err(unavailable)?;
        match items.get(primary(key).as_slice()).map_err(unavailable)? {
            Some(v) => Ok(Some(raw(key, v.value())?)),
            None => Ok(None),
        }
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError> {
        self.transact(vec![WriteOp::Put { item, condition }]).await
    }

    /// Durable in the append log when answered (one write and one `fdatasync` shared by the
    /// appends waiting together), indexed into redb many to a commit later, or at once for a
    /// read of its partitions ([`append_log`]).
    async fn append(&self, item: Item) -> Result<(), StoreError> {
        check_part(&item.key.pk)?;
        check_part(&item.key.sk)?;
        if let Some(g) = &item.gsi1 {
            check_part(&g.pk)?;
            check_part(&g.sk)?;
        }
        let op = WriteOp::Put { item, condition: Condition::None };
        validate_batch(std::slice::from_ref(&op))?;
        let prepared = Prepared::new(op)?;
        let stopped = || StoreError::Unavailable("the table's append log stopped".into());
        let (reply, answer) = oneshot::channel();
        self.appends.send(Appending { prepared, reply }).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError> {
        self.transact(vec![WriteOp::Delete { key: key.clone(), condition }]).await
    }

    async fn transact(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        validate_batch(&ops)?;
        self.write(ops).await.map(drop)
    }

    async fn put_all(&self, items: Vec<Item>) -> Result<(), StoreError> {
        if items.is_empty() {
            return Ok(());
        }
        validate_put_all(&items)?;
        // One commit (one fsync) for all of them, however many: the batch limit of `transact`
        // is DynamoDB's, and these writes promise no atomicity to be bounded by.
        let ops: Vec<WriteOp> =
            items.into_iter().map(|item| WriteOp::Put { item, condition: Condition::None }).collect();
        self.write(ops).await.map(drop)
    }

    async fn put_all_text(&self, items: Vec<TextItem>) -> Result<(), StoreError> {
        if items.is_empty() {
            return Ok(());
        }
        validate_put_all_text(&items)?;
        // As `put_all`: one commit, the bodies' text copied into the items as it is.
        let ops = items.into_iter().map(Prepared::from_text).collect::<Result<Vec<_>, _>>()?;
        self.write_prepared(ops).await.map(drop)
    }

    async fn add(&self, add: Add) -> Result<i64, StoreError> {
        let ops = vec![WriteOp::Add(add)];
        validate_batch(&ops)?;
        let added = self.write(ops).await?;
        added.first().copied().ok_or_else(|| StoreError::Invalid("an add answered no value".into()))
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.settle(&query.pk).await?;
        let (texts, next_cursor) = run_query(&self.db, &query)?;
        let items = texts.iter().map(|(k, t)| decode(k, t)).collect::<Result<_, _>>()?;
        Ok(Page { items, next_cursor })
    }

    async fn query_raw(&self, query: Query) -> Result<RawPage, StoreError> {
        self.settle(&query.pk).await?;
        let (texts, next_cursor) = run_query(&self.db, &query)?;
        let items =
            texts.into_iter().map(|(k, t)| raw_item(key_of_primary(&k)?, t)).collect::<Result<_, _>>()?;
        Ok(RawPage { items, next_cursor })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    pub(super) fn items() -> Vec<Item> {
        let odd = "q\"uo\\te\\\"d\u{e9}\u{1F600}\n}\",\"sk\":\"";
        vec![
            Item::new(Key::new("USER#1", "PROFILE"), json!({"a": [1, "x"], "b": null})),
            Item::new(Key::new(odd, odd), json!({"body": "}", "version": 3}))
                .with_gsi1(odd, "\\")
                .with_expiry(Some(-5)),
            Item { version: 18_446_744_073_709_551_615, ..Item::new(Key::new("", ""), json!("text")) }
                .with_gsi1("", "")
                .with_expiry(Some(0)),
            Item::new(Key::new("P", "S"), json!(null)).with_expiry(Some(i64::MIN)),
            Item::new(Key::new("P", "S"), json!([{"x": {"y": "\"}"}}])).with_expiry(Some(i64::MAX)),
        ]
    }

    #[tokio::test]
    async fn raw_reads_decode_as_reads_do() {
        let table = RedbTable::in_memory();
        for item in items() {
            table.put(item.clone(), Condition::None).await.unwrap();
            let raw = table.get_raw(&item.key).await.unwrap().unwrap();
            assert_eq!(raw.key(), &item.key);
            let read = table.get(&item.key).await.unwrap().unwrap();
            assert_eq!(raw.decode::<serde_json::Value>().unwrap(), (read.body, read.version));
        }
        assert!(table.get_raw(&Key::new("no", "such")).await.unwrap().is_none());
    }

    /// A table whose items were all written in the JSON layout, as before the compact one, each
    /// index entry holding its item's key as its value.
    fn with_json_layout(items: &[Item]) -> RedbTable {
        let table = RedbTable::in_memory();
        let txn = table.db.begin_write().unwrap();
        {
            let mut tree = txn.open_table(ITEMS).unwrap();
            let mut gsi = txn.open_table(GSI1).unwrap();
            for item in items {
                let json = serde_json::to_vec(item).unwrap();
                tree.insert(primary(&item.key).as_slice(), json.as_slice()).unwrap();
                if let Some(entry) = gsi_entry(item) {
                    gsi.insert(entry.as_slice(), primary(&item.key).as_slice()).unwrap();
                }
            }
        }
        txn.commit().unwrap();
        table
    }

    fn listed(n: u32) -> Item {
        Item::new(Key::new(format!("USER#{n}"), "#"), json!({"n": n, "team": "T"}))
            .with_gsi1("TEAM#T#USERS", format!("2026-11-{n:02}#{n}"))
            .with_expiry(n.is_multiple_of(2).then_some(1_900_000_000 + i64::from(n)))
    }

    async fn listing(table: &RedbTable, limit: u32) -> Vec<Item> {
        let mut out = Vec::new();
        let mut cursor = None;
        for _ in 0..100 {
            let q = Query { limit: Some(limit), cursor, ..Query::gsi1("TEAM#T#USERS") };
            let page = table.query(q.clone()).await.unwrap();
            let raw = table.query_raw(q).await.unwrap();
            assert_eq!(raw.items.len(), page.items.len());
            for (r, i) in raw.items.iter().zip(&page.items) {
                assert_eq!(r.key(), &i.key);
                assert_eq!(r.decode::<serde_json::Value>().unwrap(), (i.body.clone(), i.version));
            }
            out.extend(page.items);
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        out
    }

    /// Items written before the compact layout read, list, change and go as they did, beside
    /// items written in it.
    #[tokio::test]
    async fn items_of_the_json_layout_stay_readable() {
        // `items()` names P/S twice; the later one is what the table holds.
        let kept = |i: &Item| i.key != Key::new("P", "S") || i.expires_at == Some(i64::MAX);
        let old: Vec<Item> = (1..=6).map(listed).chain(items().into_iter().filter(kept)).collect();
        let table = with_json_layout(&old);
        for item in &old {
            assert_eq!(table.get(&item.key).await.unwrap().as_ref(), Some(item), "{:?}", item.key);
            let raw = table.get_raw(&item.key).await.unwrap().unwrap();
            assert_eq!(raw.decode::<serde_json::Value>().unwrap(), (item.body.clone(), item.version));
        }
        // New items in the same index partition, listed in order with the old ones.
        for n in 7..=9 {
            table.put(listed(n), Condition::NotExists).await.unwrap();
        }
        let all: Vec<Item> = (1..=9).map(listed).collect();
        assert_eq!(listing(&table, 2).await, all);
        // An old item changed: its old index entry goes, the new one comes.
        let mut moved = listed(2);
        moved.gsi1 =
            Some(wearlab_domain::ports::IndexKey { pk: "TEAM#T#USERS".into(), sk: "2026-11-99#2".into() });
        moved.version = 2;
        table.put(moved.clone(), Condition::VersionIs(1)).await.unwrap();
        assert_eq!(table.get(&moved.key).await.unwrap(), Some(moved.clone()));
        let mut want: Vec<Item> = [1, 3, 4, 5, 6, 7, 8, 9].map(listed).to_vec();
        want.push(moved);
        assert_eq!(listing(&table, 3).await, want);
        // An addition to an old item keeps its other fields; a delete removes its index entry.
        let added = table.add(Add::new(listed(3).key, "n", 10)).await.unwrap();
        assert_eq!(added, 13);
        let after = table.get(&listed(3).key).await.unwrap().unwrap();
        assert_eq!((after.body["team"].as_str(), after.version, after.gsi1), (Some("T"), 2, listed(3).gsi1));
        table.delete(&listed(4).key, Condition::Exists).await.unwrap();
        assert_eq!(listing(&table, 100).await.len(), 8);
        let many = table.get_many(&[listed(5).key, listed(4).key]).await.unwrap();
        assert_eq!(many[0].as_ref().unwrap().decode::<serde_json::Value>().unwrap().0, listed(5).body);
        assert!(many[1].is_none());
        // 2 (moved), 6 and 8, and two of `items()` (expiries -5 and 0).
        assert_eq!(table.purge_expired(1_900_000_100).await.unwrap(), 5);
    }

    /// What an item costs at rest: its key once (the tree's), a few bytes of envelope and its
    /// body's text; an index entry its key alone.
    #[tokio::test]
    async fn items_are_stored_without_their_key_and_index_entries_without_a_value() {
        let table = RedbTable::in_memory();
        let item = listed(1);
        table.put(item.clone(), Condition::None).await.unwrap();
        let entries = table.stored_entries().unwrap();
        let body = serde_json::to_vec(&item.body).unwrap().len();
        let index = item.gsi1.as_ref().map(|g| g.pk.len() + g.sk.len()).unwrap();
        // tag, version, flags, two lengths, the index key, (no expiry), the body.
        assert_eq!(entries[0].value_len, 1 + 1 + 1 + 2 + index + body);
        assert_eq!((entries[1].index, entries[1].value_len), (true, 0));
        assert_eq!(table.get(&item.key).await.unwrap(), Some(item));
    }

    fn scratch() -> std::path::PathBuf {
        std::env::temp_dir().join(format!("wearlab-redb-append-{}", uuid::Uuid::new_v4().simple()))
    }

    fn entry(n: u32) -> Item {
        Item::new(Key::new("AUDIT#t#03", format!("2026-11-28T10:00:0{n}.000000Z#{n:032}")), json!({"n": n}))
            .with_gsi1("AUDIT#t#USER#u", format!("2026-11-28T10:00:0{n}.000000Z#{n:032}"))
    }

    #[tokio::test]
    async fn an_answered_append_is_read_at_once_and_survives_a_stop_before_its_commit() {
        let dir = scratch();
        let path = dir.join("table.redb");
        {
            let table = RedbTable::open(&path).unwrap();
            table.append(entry(1)).await.unwrap();
            // Read at once through its index and its partition (committed for the read).
            let by_user = table.query(Query::gsi1("AUDIT#t#USER#u")).await.unwrap();
            assert_eq!(by_user.items, vec![entry(1)]);
            table.append(entry(2)).await.unwrap();
            assert_eq!(table.get(&entry(2).key).await.unwrap(), Some(entry(2)));
            table.append(entry(3)).await.unwrap();
            // Dropped while the last one waits for its commit, as a crash would leave it: it is
            // only in the append log.
        }
        assert!(std::fs::metadata(append_log::path_of(&path)).unwrap().len() > 0);
        let table = RedbTable::open(&path).unwrap();
        let by_user = table.query(Query::gsi1("AUDIT#t#USER#u").descending()).await.unwrap();
        assert_eq!(by_user.items, vec![entry(3), entry(2), entry(1)]);
        let shard = table.query(Query::partition("AUDIT#t#03")).await.unwrap();
        assert_eq!(shard.items, vec![entry(1), entry(2), entry(3)]);
        // Indexed when opened, and the log emptied.
        assert_eq!(std::fs::metadata(append_log::path_of(&path)).unwrap().len(), 0);
        drop(table);
        let _ = std::fs::remove_dir_all(dir);
    }
}
