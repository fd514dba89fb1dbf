//! `Table` on redb. One write transaction per call makes every batch atomic: redb has a
//! single writer, so conditions are checked and writes applied with nothing in between.

use std::ops::Bound;
use std::path::Path;
use std::sync::{Arc, mpsc};

use async_trait::async_trait;
use redb::{Database, ReadableTable, TableDefinition};
use tokio::sync::oneshot;
use wearlab_domain::ports::{
    Add, Condition, Cursor, Index, IndexKey, Item, Key, MAX_ITEM_BYTES, Page, Query, RawItem, RawPage,
    SkRange, StoreError, Table, TextItem, WriteOp, validate_batch, validate_put_all, validate_put_all_text,
};

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
    writes: mpsc::Sender<Write>,
}

/// One caller's atomic batch of writes, answered once it is durable (or refused).
struct Write {
    ops: Vec<Prepared>,
    reply: oneshot::Sender<Result<Vec<i64>, StoreError>>,
}

/// A write with its item's text encoded by the caller, off the committer's thread (which
/// would otherwise spend most of its time encoding while every writer waits on it).
struct Prepared {
    op: WriteOp,
    /// The put item's text (`serde_json::to_vec(&item)`); `None` for other writes.
    text: Option<Vec<u8>>,
}

impl Prepared {
    fn new(op: WriteOp) -> Result<Self, StoreError> {
        let text = match &op {
            WriteOp::Put { item, .. } => Some(item_text(&item.key, item)?),
            _ => None,
        };
        Ok(Self { op, text })
    }

    /// A put of `item`'s text as it is. The op's item is the text item's envelope with a null
    /// body: the committer reads a put's key and index entry from it, and its text from `text`.
    fn from_text(item: TextItem) -> Result<Self, StoreError> {
        let envelope = Item::new(item.key.clone(), serde_json::Value::Null);
        let text = item_text(&item.key, &TextEnvelope::of(&envelope, &item))?;
        Ok(Self { op: WriteOp::Put { item: envelope, condition: Condition::None }, text: Some(text) })
    }
}

/// A [`TextItem`] in the layout an [`Item`] is written in (`serde_json::to_vec(&item)`): the
/// envelope's fields, the body copied as it is. The test
/// `a_text_item_is_written_as_its_item_would_be` keeps the two the same.
#[derive(serde::Serialize)]
struct TextEnvelope<'a> {
    key: &'a Key,
    gsi1: &'a Option<IndexKey>,
    version: u64,
    expires_at: Option<i64>,
    body: &'a serde_json::value::RawValue,
}

impl<'a> TextEnvelope<'a> {
    fn of(envelope: &'a Item, item: &'a TextItem) -> Self {
        let Item { key, gsi1, version, expires_at, body: _ } = envelope;
        Self { key, gsi1, version: *version, expires_at: *expires_at, body: item.body() }
    }
}

/// The stored text of an item: refused over [`MAX_ITEM_BYTES`], as DynamoDB refuses it.
fn item_text(key: &Key, item: &impl serde::Serialize) -> Result<Vec<u8>, StoreError> {
    let text = serde_json::to_vec(item).map_err(|e| StoreError::Invalid(e.to_string()))?;
    if text.len() > MAX_ITEM_BYTES {
        return Err(StoreError::Invalid(format!(
            "item {}/{} is {} bytes; an item holds at most {MAX_ITEM_BYTES}",
            key.pk,
            key.sk,
            text.len()
        )));
    }
    Ok(text)
}

/// Most callers' writes committed together.
const GROUP_MAX: usize = 256;

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
        Self::init(Database::builder().set_cache_size(cache_bytes).create(path).map_err(unavailable)?)
    }

    /// A table in memory, for tests and benchmarks.
    pub fn in_memory() -> Self {
        let db = Database::builder()
            .set_cache_size(DEFAULT_CACHE_BYTES)
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .expect("in-memory redb opens");
        Self::init(db).expect("in-memory redb initialises")
    }

    fn init(db: Database) -> Result<Self, StoreError> {
        let txn = db.begin_write().map_err(unavailable)?;
        txn.open_table(ITEMS).map_err(unavailable)?;
        txn.open_table(GSI1).map_err(unavailable)?;
        txn.commit().map_err(unavailable)?;
        let db = Arc::new(db);
        let (writes, queue) = mpsc::channel();
        let weak = Arc::downgrade(&db);
        std::thread::Builder::new()
            .name("redb-commit".into())
            .spawn(move || commit_groups(&weak, &queue))
            .map_err(unavailable)?;
        Ok(Self { db, writes })
    }

    /// Applies `ops` atomically and answers once they are committed (fsync'd on a file).
    async fn write(&self, ops: Vec<WriteOp>) -> Result<Vec<i64>, StoreError> {
        let ops = ops.into_iter().map(Prepared::new).collect::<Result<Vec<_>, _>>()?;
        self.write_prepared(ops).await
    }

    async fn write_prepared(&self, ops: Vec<Prepared>) -> Result<Vec<i64>, StoreError> {
        let stopped = || StoreError::Unavailable("the table's writer stopped".into());
        let (reply, answer) = oneshot::channel();
        self.writes.send(Write { ops, reply }).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Every item, in key order: for tests that check nothing of a user remains anywhere.
    pub async fn scan_all(&self) -> Result<Vec<Item>, StoreError> {
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

fn decode(bytes: &[u8]) -> Result<Item, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// The version and body text of an item as this table writes it (`serde_json::to_vec(&item)`):
/// `{"key":{"pk":S,"sk":S},"gsi1":null|{"pk":S,"sk":S},"version":N,"expires_at":null|N,
/// "body":B}`, found without parsing the envelope or the body. `None` for any other layout
/// (the caller then parses the whole text). Only the envelope's shape is checked here; the
/// body is parsed, and so checked, by whoever decodes it.
fn split_stored(json: &str) -> Option<(u64, &str)> {
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

type ItemsTable<'t> = redb::Table<'t, &'static [u8], &'static [u8]>;

/// The item at `key`; without `with_body`, its envelope only (the body left `null` unread).
fn read(items: &ItemsTable<'_>, key: &Key, with_body: bool) -> Result<Option<Item>, StoreError> {
    match items.get(primary(key).as_slice()).map_err(unavailable)? {
        Some(v) if with_body => Ok(Some(decode(v.value())?)),
        Some(v) => Ok(Some(decode_envelope(v.value())?)),
        None => Ok(None),
    }
}

/// [`decode`] without building the body (it is skipped over, not parsed into a value).
fn decode_envelope(bytes: &[u8]) -> Result<Item, StoreError> {
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

fn holds(condition: Condition, current: Option<&Item>) -> bool {
    match condition {
        Condition::None => true,
        Condition::NotExists => current.is_none(),
        Condition::Exists => current.is_some(),
        Condition::VersionIs(v) => current.is_some_and(|c| c.version == v),
    }
}

fn remove(items: &mut ItemsTable<'_>, gsi: &mut ItemsTable<'_>, item: &Item) -> Result<(), StoreError> {
    items.remove(primary(&item.key).as_slice()).map_err(unavailable)?;
    if let Some(g) = gsi_entry(item) {
        gsi.remove(g.as_slice()).map_err(unavailable)?;
    }
    Ok(())
}

/// The group committer, on a thread of its own: takes the first waiting write and every other
/// already waiting (up to [`GROUP_MAX`]), applies them one after the other in one write
/// transaction, each with its own conditions, and commits once. Concurrent writers thus share
/// one fsync instead of queueing for one each, and every answer still comes after the commit
/// that made it durable. A write refused by its conditions writes nothing and does not stop the
/// others. Should a write fail half-applied (a storage error), the group is dropped uncommitted
/// and each of its writes applied alone, so none answers for another's failure. The thread ends
/// when the last handle of the table is dropped; it holds the database only while committing,
/// so a dropped table closes its file at once.
fn commit_groups(db: &std::sync::Weak<Database>, queue: &mpsc::Receiver<Write>) {
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        while group.len() < GROUP_MAX {
            match queue.try_recv() {
                Ok(w) => group.push(w),
                Err(_) => break,
            }
        }
        let answers = {
            let Some(db) = db.upgrade() else {
                // The table is gone; its callers' answers are dropped with the group.
                return;
            };
            // A panic answers this group's callers with "stopped" (their senders drop) and
            // leaves the committer serving the next ones.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| commit_group(&db, group)))
                .unwrap_or_default()
            // The database is let go before anyone hears back, so a caller that drops the
            // table after its answer can open the file again at once.
        };
        for (reply, answer) in answers {
            let _ = reply.send(answer);
        }
    }
}

type Answer = (oneshot::Sender<Result<Vec<i64>, StoreError>>, Result<Vec<i64>, StoreError>);

/// Applies and commits one group; the answers are sent by the caller.
fn commit_group(db: &Database, group: Vec<Write>) -> Vec<Answer> {
    if let [_] = group.as_slice() {
        let w = group.into_iter().next().expect("one write");
        let answer = apply(db, &w.ops);
        return vec![(w.reply, answer)];
    }
    let txn = match db.begin_write() {
        Ok(txn) => txn,
        Err(e) => {
            let e = unavailable(e);
            return group.into_iter().map(|w| (w.reply, Err(e.clone()))).collect();
        }
    };
    let mut results = Vec::with_capacity(group.len());
    for w in &group {
        match check_parts(&w.ops).map_err(Applied::Refused).and_then(|()| apply_in(&txn, &w.ops)) {
            Ok(added) => results.push(Ok(added)),
            Err(Applied::Refused(e)) => results.push(Err(e)),
            Err(Applied::Broken(_)) => {
                drop(txn);
                return group
                    .into_iter()
                    .map(|w| {
                        let answer = apply(db, &w.ops);
                        (w.reply, answer)
                    })
                    .collect();
            }
        }
    }
    match txn.commit() {
        Ok(()) => group.into_iter().map(|w| w.reply).zip(results).collect(),
        Err(e) => {
            let e = unavailable(e);
            group.into_iter().map(|w| (w.reply, Err(e.clone()))).collect()
        }
    }
}

/// How [`apply_in`] failed: `Refused` before writing anything (a condition, an addition that
/// cannot apply), or `Broken` after some of its writes reached the transaction.
enum Applied {
    Refused(StoreError),
    Broken(StoreError),
}

fn check_parts(ops: &[Prepared]) -> Result<(), StoreError> {
    for Prepared { op, .. } in ops {
        check_part(&op.key().pk)?;
        check_part(&op.key().sk)?;
        if let WriteOp::Put { item, .. } = op
            && let Some(g) = &item.gsi1
        {
            check_part(&g.pk)?;
            check_part(&g.sk)?;
        }
    }
    Ok(())
}

/// Checks every condition, then applies every write, inside one write transaction of its own.
/// Answers the value of each [`Add`]'s field after it, in order.
fn apply(db: &Database, ops: &[Prepared]) -> Result<Vec<i64>, StoreError> {
    check_parts(ops)?;
    let txn = db.begin_write().map_err(unavailable)?;
    // Dropping the transaction without commit discards whatever was written.
    let added = apply_in(&txn, ops).map_err(|(Applied::Refused(e) | Applied::Broken(e))| e)?;
    txn.commit().map_err(unavailable)?;
    Ok(added)
}

/// [`apply`] inside `txn`, which may hold other writes before it: checks every condition
/// against what `txn` holds, works out the additions, then writes.
fn apply_in(txn: &redb::WriteTransaction, ops: &[Prepared]) -> Result<Vec<i64>, Applied> {
    let refused = Applied::Refused;
    let mut added = Vec::new();
    {
        let mut items = txn.open_table(ITEMS).map_err(unavailable).map_err(refused)?;
        let mut gsi = txn.open_table(GSI1).map_err(unavailable).map_err(refused)?;
        let mut current = Vec::with_capacity(ops.len());
        for (i, Prepared { op, .. }) in ops.iter().enumerate() {
            let existing = match op {
                // A put without a condition needs nothing of the item it replaces before
                // writing: that item's index entry is found from what the insert answers, so
                // the tree is walked once, not twice (most of a historical pull's writes).
                WriteOp::Put { condition: Condition::None, .. } => None,
                // Only an addition needs the body it adds to; the other writes need the
                // envelope (version, index entry).
                _ => read(&items, op.key(), matches!(op, WriteOp::Add(_))).map_err(refused)?,
            };
            if !holds(op.condition(), existing.as_ref()) {
                return Err(refused(StoreError::ConditionFailed { op: (ops.len() > 1).then_some(i) }));
            }
            current.push(existing);
        }
        // Additions are worked out before anything is written, so a refused one writes nothing.
        for (Prepared { op, .. }, existing) in ops.iter().zip(current.iter_mut()) {
            if let WriteOp::Add(add) = op {
                let (item, value) = with_addition(existing.take(), add).map_err(refused)?;
                *existing = Some(item);
                added.push(value);
            }
        }
        for (prepared, existing) in ops.iter().zip(current) {
            write_one(prepared, existing, &mut items, &mut gsi).map_err(Applied::Broken)?;
        }
    }
    Ok(added)
}

/// One checked write of [`apply_in`].
fn write_one(
    Prepared { op, text }: &Prepared,
    existing: Option<Item>,
    items: &mut ItemsTable<'_>,
    gsi: &mut ItemsTable<'_>,
) -> Result<(), StoreError> {
    match op {
        WriteOp::Put { item, .. } => {
            let text = text.as_deref().ok_or_else(|| StoreError::Invalid("a put without its text".into()))?;
            insert(items, gsi, item, text)?;
        }
        // The item as it will be (`with_addition`); its index entry, if any, stays.
        WriteOp::Add(_) => {
            let item = existing.ok_or_else(|| StoreError::Invalid("an addition without its item".into()))?;
            let bytes = serde_json::to_vec(&item).map_err(|e| StoreError::Invalid(e.to_string()))?;
            items.insert(primary(&item.key).as_slice(), bytes.as_slice()).map_err(unavailable)?;
        }
        WriteOp::Delete { .. } => {
            if let Some(old) = &existing {
                remove(items, gsi, old)?;
            }
        }
        WriteOp::Check { .. } => {}
    }
    Ok(())
}

/// Writes `item` (its stored `text`) over whatever was at its key, and moves its index entry:
/// the replaced item's entry goes, the new one's comes.
fn insert(
    items: &mut ItemsTable<'_>,
    gsi: &mut ItemsTable<'_>,
    item: &Item,
    text: &[u8],
) -> Result<(), StoreError> {
    let replaced = match items.insert(primary(&item.key).as_slice(), text).map_err(unavailable)? {
        Some(old) => Some(decode_envelope(old.value())?),
        None => None,
    };
    if let Some(old) = replaced.as_ref().and_then(gsi_entry) {
        gsi.remove(old.as_slice()).map_err(unavailable)?;
    }
    if let Some(g) = gsi_entry(item) {
        gsi.insert(g.as_slice(), primary(&item.key).as_slice()).map_err(unavailable)?;
    }
    Ok(())
}

/// The item after `add` (created when missing) and the field's new value.
fn with_addition(existing: Option<Item>, add: &Add) -> Result<(Item, i64), StoreError> {
    let mut item = match existing {
        Some(mut item) => {
            item.version += 1;
            item
        }
        None => Item::new(add.key.clone(), serde_json::json!({})),
    };
    let value = add.apply_to(&mut item.body)?;
    if add.expires_at.is_some() {
        item.expires_at = add.expires_at;
    }
    Ok((item, value))
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

/// An item's stored text read only to be decoded: body and version found without parsing the
/// envelope when the layout is this table's own (see [`split_stored`]).
fn raw_item(key: Key, bytes: Vec<u8>) -> Result<RawItem, StoreError> {
    let json = String::from_utf8(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(match split_stored(&json) {
        Some((version, body)) => RawItem::from_body_json(key, version, body.to_owned()),
        None => RawItem::from_item_json(key, json),
    })
}

/// The primary key at the start of an item's stored text, `{"key":{"pk":S,"sk":S},...`: only
/// that part is parsed (any other layout is parsed whole).
fn key_of(json: &[u8]) -> Result<Key, StoreError> {
    let text = std::str::from_utf8(json).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let key_text =
        text.strip_prefix(r#"{"key":"#).and_then(|rest| Some(&rest[..rest.len() - skip_key(rest)?.len()]));
    match key_text.and_then(|k| serde_json::from_str(k).ok()) {
        Some(key) => Ok(key),
        None => Ok(decode(json)?.key),
    }
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
        // Reads are short and never wait for the writer (MVCC), so they run inline.
        let txn = self.db.begin_read().map_err(unavailable)?;
        let items = txn.open_table(ITEMS).map_err(unavailable)?;
        match items.get(primary(key).as_slice()).map_err(unavailable)? {
            Some(v) => Ok(Some(decode(v.value())?)),
            None => Ok(None),
        }
    }

    /// Every key in one read transaction (a snapshot, which the port does not promise).
    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        wearlab_domain::ports::validate_get_many(keys)?;
        for key in keys {
            check_part(&key.pk)?;
            check_part(&key.sk)?;
        }
        let txn = self.db.begin_read().map_err(unavailable)?;
        let items = txn.open_table(ITEMS).map_err(unavailable)?;
        keys.iter()
            .map(|key| match items.get(primary(key).as_slice()).map_err(unavailable)? {
                Some(v) => Ok(Some(decode(v.value())?)),
                None => Ok(None),
            })
            .collect()
    }

    async fn get_raw(&self, key: &Key) -> Result<Option<RawItem>, StoreError> {
        check_part(&key.pk)?;
        check_part(&key.sk)?;
        let txn = self.db.begin_read().map_err(unavailable)?;
        let items = txn.open_table(ITEMS).map_err(unavailable)?;
        match items.get(primary(key).as_slice()).map_err(unavailable)? {
            Some(v) => {
                // Checked as UTF-8 in one go; the body is then the caller's one pass over it.
                let json = std::str::from_utf8(v.value()).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                Ok(Some(match split_stored(json) {
                    Some((version, body)) => RawItem::from_body_json(key.clone(), version, body.to_owned()),
                    None => RawItem::from_item_json(key.clone(), json.to_owned()),
                }))
            }
            None => Ok(None),
        }
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError> {
        self.transact(vec![WriteOp::Put { item, condition }]).await
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
        let (texts, next_cursor) = run_query(&self.db, &query)?;
        let items = texts.iter().map(|t| decode(t)).collect::<Result<_, _>>()?;
        Ok(Page { items, next_cursor })
    }

    async fn query_raw(&self, query: Query) -> Result<RawPage, StoreError> {
        let (texts, next_cursor) = run_query(&self.db, &query)?;
        let items = texts.into_iter().map(|t| raw_item(key_of(&t)?, t)).collect::<Result<_, _>>()?;
        Ok(RawPage { items, next_cursor })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn items() -> Vec<Item> {
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

    #[test]
    fn a_text_item_is_written_as_its_item_would_be() {
        let odd = "q\"uo\\te\\\"d\u{e9}\u{1F600}\n}\",\"sk\":\"";
        for (key, body) in [
            (Key::new("USER#1", "DATA#TS#hr"), json!({"h": "ab", "v": {"data": [1.5, "x"], "source": null}})),
            (Key::new(odd, odd), json!({"body": "}", "version": 3})),
            (Key::new("", ""), json!("text")),
        ] {
            let text = TextItem::new(key.clone(), &body).unwrap();
            let item = Item::new(key, body);
            let prepared = Prepared::from_text(text.clone()).unwrap();
            assert_eq!(prepared.text.unwrap(), serde_json::to_vec(&item).unwrap());
            assert_eq!(text.to_item().unwrap(), item);
        }
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
}
