//! The group committer of [`super::RedbTable`]: every write goes through one thread that
//! commits the writes waiting together in one redb transaction, so concurrent writers share one
//! fsync. Here are the queued write (its item text encoded by the caller), the committer loop,
//! and the application of one caller's batch (conditions checked, additions worked out, then
//! written) inside a transaction.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use redb::{Database, ReadableTable};
use tokio::sync::oneshot;
use wearlab_domain::ports::{Add, Condition, Item, Key, MAX_ITEM_BYTES, StoreError, TextItem, WriteOp};

use super::append_log::Pending;
use super::scan::{decode, decode_envelope, encode};
use super::{GSI1, ITEMS, ItemsTable, check_part, gsi_entry, primary, remove, unavailable};

/// What the committer is sent.
pub(super) enum Msg {
    /// One caller's atomic batch of writes, answered once it is durable (or refused).
    Write { ops: Vec<Prepared>, reply: oneshot::Sender<Result<Vec<i64>, StoreError>> },
    /// An appended item, durable already in the append log ([`super::append_log`]) and listed in
    /// [`Pending`] until it is committed here. Nobody waits for it: a group of appended items
    /// only waits for more of them (up to [`APPENDED_MAX`], for at most [`APPENDED_WAIT`]), so
    /// they are indexed many to a commit.
    Appended(Prepared),
    /// Answered once everything sent before it is committed: a read that needs an appended item
    /// still waiting, or the append log before it forgets what it holds.
    Flush(oneshot::Sender<Result<(), StoreError>>),
}

/// A write with its item's text encoded by the caller, off the committer's thread (which
/// would otherwise spend most of its time encoding while every writer waits on it).
pub(super) struct Prepared {
    op: WriteOp,
    /// The put item's stored bytes ([`encode`]); `None` for other writes.
    text: Option<Vec<u8>>,
}

impl Prepared {
    pub(super) fn new(op: WriteOp) -> Result<Self, StoreError> {
        let text = match &op {
            WriteOp::Put { item, .. } => Some(stored(item, &body_text(item)?)?),
            _ => None,
        };
        Ok(Self { op, text })
    }

    /// A put of `item`'s text as it is. The op's item is the text item's envelope with a null
    /// body: the committer reads a put's key and index entry from it, and its bytes from `text`.
    /// The stored text of a put (`None` for other writes).
    pub(super) fn text(&self) -> Option<&[u8]> {
        self.text.as_deref()
    }

    /// The item a put writes (`None` for other writes).
    pub(super) fn item(&self) -> Option<&Item> {
        match &self.op {
            WriteOp::Put { item, .. } => Some(item),
            _ => None,
        }
    }

    pub(super) fn from_text(item: TextItem) -> Result<Self, StoreError> {
        let envelope = Item::new(item.key.clone(), serde_json::Value::Null);
        let text = stored(&envelope, item.body().get().as_bytes())?;
        Ok(Self { op: WriteOp::Put { item: envelope, condition: Condition::None }, text: Some(text) })
    }
}

fn body_text(item: &Item) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(&item.body).map_err(|e| StoreError::Invalid(e.to_string()))
}

/// What DynamoDB would count of an item besides its key, body and index key: its attribute
/// names (`PK`, `SK`, `GSI1PK`, `GSI1SK`, `ver`, `expires_at`, `data`).
const ATTRIBUTE_NAMES: usize = 33;

/// The stored bytes of `item` with `body`: refused when DynamoDB would refuse the item, over
/// [`MAX_ITEM_BYTES`] of names and values (the key, the index key, the version and expiry, the
/// body, the attribute names).
fn stored(item: &Item, body: &[u8]) -> Result<Vec<u8>, StoreError> {
    let bytes = encode(item, body);
    let size = bytes.len() + item.key.pk.len() + item.key.sk.len() + ATTRIBUTE_NAMES;
    if size > MAX_ITEM_BYTES {
        return Err(StoreError::Invalid(format!(
            "item {}/{} is {size} bytes; an item holds at most {MAX_ITEM_BYTES}",
            item.key.pk, item.key.sk,
        )));
    }
    Ok(bytes)
}

/// Most callers' writes committed together.
const GROUP_MAX: usize = 256;
/// Most appended items committed together.
pub(super) const APPENDED_MAX: usize = 1024;
/// How long a group of appended items only waits for more before it is committed.
pub(super) const APPENDED_WAIT: Duration = Duration::from_millis(250);

/// The item at `key`; without `with_body`, its envelope only (the body left `null` unread).
fn read(items: &ItemsTable<'_>, key: &Key, with_body: bool) -> Result<Option<Item>, StoreError> {
    let tree_key = primary(key);
    match items.get(tree_key.as_slice()).map_err(unavailable)? {
        Some(v) if with_body => Ok(Some(decode(&tree_key, v.value())?)),
        Some(v) => Ok(Some(decode_envelope(&tree_key, v.value())?)),
        None => Ok(None),
    }
}

fn holds(condition: Condition, current: Option<&Item>) -> bool {
    match condition {
        Condition::None => true,
        Condition::NotExists => current.is_none(),
        Condition::Exists => current.is_some(),
        Condition::VersionIs(v) => current.is_some_and(|c| c.version == v),
    }
}

/// The group committer, on a thread of its own: takes the first waiting message and every other
/// already waiting (up to [`GROUP_MAX`] callers' writes), applies the writes one after the
/// other in one write transaction, each with its own conditions, and commits once. Concurrent
/// writers thus share one fsync instead of queueing for one each, and every answer still comes
/// after the commit that made it durable. A group of appended items alone first waits for more
/// (see [`Msg::Appended`]). A write refused by its conditions writes nothing and does not stop
/// the others. Should a write fail half-applied (a storage error), the group is dropped
/// uncommitted and each of its writes applied alone, so none answers for another's failure. The
/// thread ends when the last handle of the table is dropped; it holds the database only while
/// committing, so a dropped table closes its file at once (appended items still waiting are in
/// the append log, and indexed when the table is next opened).
pub(super) fn commit_groups(db: &std::sync::Weak<Database>, queue: &mpsc::Receiver<Msg>, pending: &Pending) {
    while let Ok(first) = queue.recv() {
        let group = gather(first, queue);
        let answers = {
            let Some(db) = db.upgrade() else {
                // The table is gone; its callers' answers are dropped with the group.
                return;
            };
            // A panic answers this group's callers with "stopped" (their senders drop) and
            // leaves the committer serving the next ones; appended items of the group stay in
            // the append log, which then keeps everything until the table is opened again.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| commit_group(&db, group)))
                .unwrap_or_else(|_| {
                    pending.not_indexed();
                    Vec::new()
                })
            // The database is let go before anyone hears back, so a caller that drops the
            // table after its answer can open the file again at once.
        };
        for (reply, answer) in answers {
            match reply {
                Reply::Caller(reply) => {
                    let _ = reply.send(answer);
                }
                Reply::Flush(reply) => {
                    let _ = reply.send(answer.map(drop));
                }
                Reply::Appended(partitions) => {
                    if let Err(e) = answer {
                        // Still in the append log, which now keeps everything until the
                        // table is opened again and indexes it then.
                        pending.not_indexed();
                        tracing::error!(error = %e, "an appended item was not indexed; it is indexed when the table is next opened");
                    }
                    pending.remove(&partitions);
                }
            }
        }
    }
}

/// The group that starts with `first`: every message already waiting (up to [`GROUP_MAX`]
/// callers' writes), and when they are all appended items, more of them as they come, until
/// [`APPENDED_MAX`], [`APPENDED_WAIT`] after the first, or any other message.
fn gather(first: Msg, queue: &mpsc::Receiver<Msg>) -> Vec<Msg> {
    let is_write = |m: &Msg| matches!(m, Msg::Write { .. });
    let mut writes = usize::from(is_write(&first));
    let mut group = vec![first];
    while writes < GROUP_MAX && group.len() < GROUP_MAX + APPENDED_MAX {
        match queue.try_recv() {
            Ok(m) => {
                writes += usize::from(is_write(&m));
                group.push(m);
            }
            Err(_) => break,
        }
    }
    if !group.iter().all(|m| matches!(m, Msg::Appended(_))) {
        return group;
    }
    let until = Instant::now() + APPENDED_WAIT;
    while group.len() < APPENDED_MAX {
        let Some(left) = until.checked_duration_since(Instant::now()) else { break };
        match queue.recv_timeout(left) {
            Ok(m) => {
                let appended = matches!(m, Msg::Appended(_));
                group.push(m);
                if !appended {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    group
}

/// Who hears of a unit of a group's work.
enum Reply {
    Caller(oneshot::Sender<Result<Vec<i64>, StoreError>>),
    /// An appended item: its partitions leave [`Pending`] once it is committed.
    Appended(Vec<String>),
    Flush(oneshot::Sender<Result<(), StoreError>>),
}

type Answer = (Reply, Result<Vec<i64>, StoreError>);

/// One message as writes and who hears of them.
fn unit(msg: Msg) -> (Vec<Prepared>, Reply) {
    match msg {
        Msg::Write { ops, reply } => (ops, Reply::Caller(reply)),
        Msg::Appended(prepared) => {
            let partitions = Pending::partitions(prepared.item());
            (vec![prepared], Reply::Appended(partitions))
        }
        Msg::Flush(reply) => (vec![], Reply::Flush(reply)),
    }
}

/// Applies and commits one group; the answers are sent by the caller.
fn commit_group(db: &Database, group: Vec<Msg>) -> Vec<Answer> {
    let group: Vec<(Vec<Prepared>, Reply)> = group.into_iter().map(unit).collect();
    // Everything before a flush was committed by an earlier group, or is in this one.
    if group.iter().all(|(ops, _)| ops.is_empty()) {
        return group.into_iter().map(|(_, reply)| (reply, Ok(vec![]))).collect();
    }
    if let [_] = group.as_slice() {
        let (ops, reply) = group.into_iter().next().expect("one write");
        let answer = apply(db, &ops);
        return vec![(reply, answer)];
    }
    let txn = match db.begin_write() {
        Ok(txn) => txn,
        Err(e) => {
            let e = unavailable(e);
            return group.into_iter().map(|(_, reply)| (reply, Err(e.clone()))).collect();
        }
    };
    let mut results = Vec::with_capacity(group.len());
    for (ops, _) in &group {
        match check_parts(ops).map_err(Applied::Refused).and_then(|()| apply_in(&txn, ops)) {
            Ok(added) => results.push(Ok(added)),
            Err(Applied::Refused(e)) => results.push(Err(e)),
            Err(Applied::Broken(_)) => {
                drop(txn);
                return group
                    .into_iter()
                    .map(|(ops, reply)| {
                        let answer = if ops.is_empty() { Ok(vec![]) } else { apply(db, &ops) };
                        (reply, answer)
                    })
                    .collect();
            }
        }
    }
    match txn.commit() {
        Ok(()) => group.into_iter().map(|(_, reply)| reply).zip(results).collect(),
        Err(e) => {
            let e = unavailable(e);
            group.into_iter().map(|(_, reply)| (reply, Err(e.clone()))).collect()
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
            let bytes = stored(&item, &body_text(&item)?)?;
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
pub(super) fn insert(
    items: &mut ItemsTable<'_>,
    gsi: &mut ItemsTable<'_>,
    item: &Item,
    text: &[u8],
) -> Result<(), StoreError> {
    let tree_key = primary(&item.key);
    let replaced = match items.insert(tree_key.as_slice(), text).map_err(unavailable)? {
        Some(old) => Some(decode_envelope(&tree_key, old.value())?),
        None => None,
    };
    if let Some(old) = replaced.as_ref().and_then(gsi_entry) {
        gsi.remove(old.as_slice()).map_err(unavailable)?;
    }
    // The entry's key ends with the item's primary key: its value is empty.
    if let Some(g) = gsi_entry(item) {
        gsi.insert(g.as_slice(), b"".as_slice()).map_err(unavailable)?;
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
            let put = Prepared::new(WriteOp::Put { item: item.clone(), condition: Condition::None }).unwrap();
            assert_eq!(prepared.text.unwrap(), put.text.unwrap());
            assert_eq!(text.to_item().unwrap(), item);
        }
    }
}
