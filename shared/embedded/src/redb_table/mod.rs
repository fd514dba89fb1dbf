//! `Table` on redb: the adapter. One write transaction per call makes every batch atomic:
//! redb has a single writer, so conditions are checked and writes applied with nothing in
//! between. The key layout, reads, queries and the port's methods live here; writes go
//! through the group committer ([`committer`]), appended items through the append log first
//! ([`append_log`]), and stored texts are read by the JSON scanner ([`scan`]) without parsing
//! more of them than the caller needs.

mod append_log;
mod committer;
mod scan;

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
use scan::{decode, key_of, raw_item, split_stored};

/// Items by `pk \0 sk`, as JSON.
const ITEMS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("items");
/// GSI1 entries: `gsi_pk \0 gsi_sk \0 pk \0 sk` -> primary key bytes.
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
            let (_, v) = entry.map_err(unavailable)?;
            out.push(decode(v.value())?);
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
                    let (_, v) = entry.map_err(unavailable)?;
                    let item = decode(v.value())?;
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

/// One page of a query: each item's stored text, and the cursor after the last one when more
/// may follow. The caller decides how far to parse the texts.
fn run_query(db: &Database, q: &Query) -> Result<(Vec<Vec<u8>>, Option<Cursor>), StoreError> {
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
        let (_, v) = entry.map_err(unavailable)?;
        let text = match &gsi {
            None => v.value().to_vec(),
            Some(_) => items
                .get(v.value())
                .map_err(unavailable)?
                .map(|i| i.value().to_vec())
                .ok_or_else(|| StoreError::Corrupt("index entry without item".into()))?,
        };
        out.push(text);
    }
    let next_cursor = match out.last() {
        Some(last) if more => Some(Cursor::after_item(&decode(last)?, q.index)),
        _ => None,
    };
    Ok((out, next_cursor))
}

/// A stored text as a [`RawItem`]: checked as UTF-8 in one go, the body found by the scanner
/// ([`split_stored`]); the body's parse is then the caller's one pass over it.
fn raw(key: &Key, stored: &[u8]) -> Result<RawItem, StoreError> {
    let json = std::str::from_utf8(stored).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(match split_stored(json) {
        Some((version, body)) => RawItem::from_body_json(key.clone(), version, body.to_owned()),
        None => RawItem::from_item_json(key.clone(), json.to_owned()),
    })
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
        match items.get(primary(key).as_slice()).map_err(unavailable)? {
            Some(v) => Ok(Some(decode(v.value())?)),
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
        let items = texts.iter().map(|t| decode(t)).collect::<Result<_, _>>()?;
        Ok(Page { items, next_cursor })
    }

    async fn query_raw(&self, query: Query) -> Result<RawPage, StoreError> {
        self.settle(&query.pk).await?;
        let (texts, next_cursor) = run_query(&self.db, &query)?;
        let items = texts.into_iter().map(|t| raw_item(key_of(&t)?, t)).collect::<Result<_, _>>()?;
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
