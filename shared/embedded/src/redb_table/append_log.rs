//! The append log of [`super::RedbTable`]: how an appended item ([`Table::append`], an audit
//! entry) is made durable without a redb commit of its own. The items waiting together are
//! written to a file of their own in one write and one `fdatasync`, then handed to the group
//! committer, which indexes them into redb many to a commit ([`Msg::Appended`]); the caller is
//! answered between the two, so an answered append is on disk (in the log) before anyone hears
//! of it. Until its commit, an item's partitions are listed in [`Pending`], and a read of one of
//! them first has the committer commit it ([`Msg::Flush`]): every read sees every answered
//! append, as with any write. When the table is opened, whatever the log holds is indexed first
//! ([`replay`]), so an item answered before a crash is there after it; once the log passes
//! [`LOG_MAX_BYTES`] its items are committed and it is emptied.
//!
//! A record is the item's tree key (its length in 4 bytes, then the key) and its stored text
//! (the same bytes the table keeps under that key, which no longer repeat it), with the
//! record's length and an FNV-1a checksum before it; a record cut short by a crash (never
//! answered) ends the replay.
//!
//! [`Table::append`]: wearlab_domain::ports::Table::append

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use redb::Database;
use tokio::sync::oneshot;
use wearlab_domain::ports::{Item, StoreError};

use super::committer::{Msg, Prepared, insert};
use super::scan::decode;
use super::{GSI1, ITEMS, primary, unavailable};

/// Past this size the log's items are committed to redb and the log emptied.
const LOG_MAX_BYTES: u64 = 8 * 1024 * 1024;
/// Most appends written together (one write, one `fdatasync`).
const GROUP_MAX: usize = 1024;
/// Length (4 bytes) and checksum (8 bytes) before each record's text.
const HEADER: usize = 12;

/// The log file beside the table file: `<table file>.appended`.
pub(super) fn path_of(table: &Path) -> PathBuf {
    let mut name = table.as_os_str().to_owned();
    name.push(".appended");
    PathBuf::from(name)
}

/// The partitions (an item's own and its index partition) of appended items not committed yet.
#[derive(Default)]
pub(super) struct Pending {
    /// How many items are listed: a read checks the map only when this is not zero.
    count: AtomicUsize,
    partitions: Mutex<HashMap<String, usize>>,
    /// An appended item failed to commit: the log keeps everything until the table is reopened.
    not_indexed: AtomicBool,
}

impl Pending {
    pub(super) fn partitions(item: Option<&Item>) -> Vec<String> {
        item.map(|item| {
            std::iter::once(item.key.pk.clone()).chain(item.gsi1.as_ref().map(|g| g.pk.clone())).collect()
        })
        .unwrap_or_default()
    }

    fn add(&self, partitions: &[String]) {
        let mut map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        for pk in partitions {
            *map.entry(pk.clone()).or_default() += 1;
        }
        self.count.fetch_add(1, Ordering::SeqCst);
    }

    pub(super) fn remove(&self, partitions: &[String]) {
        let mut map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        for pk in partitions {
            if let Some(n) = map.get_mut(pk) {
                *n -= 1;
                if *n == 0 {
                    map.remove(pk);
                }
            }
        }
        self.count.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether an appended item of partition `pk` (an item's or an index's) waits for its commit.
    pub(super) fn holds(&self, pk: &str) -> bool {
        self.any() && self.partitions.lock().unwrap_or_else(|e| e.into_inner()).contains_key(pk)
    }

    /// Whether any appended item waits for its commit.
    pub(super) fn any(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    pub(super) fn not_indexed(&self) {
        self.not_indexed.store(true, Ordering::SeqCst);
    }
}

/// One append waiting for the log.
pub(super) struct Appending {
    pub(super) prepared: Prepared,
    pub(super) reply: oneshot::Sender<Result<(), StoreError>>,
}

/// Opens (or creates, 0600) the log at `path`, indexes whatever it holds into `db` in one
/// commit, empties it, and answers it ready for [`write_groups`].
pub(super) fn open(db: &Database, path: &Path) -> Result<File, StoreError> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).read(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(unavailable)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(unavailable)?;
    if !bytes.is_empty() {
        let replayed = replay(db, &bytes)?;
        tracing::info!(items = replayed, "appended items indexed from the append log");
        file.set_len(0).map_err(unavailable)?;
        file.sync_all().map_err(unavailable)?;
    }
    Ok(file)
}

/// Indexes every whole record of `log` into `db` (one commit, durable), as the committer would
/// have: each item over whatever is at its key. Answers how many.
fn replay(db: &Database, log: &[u8]) -> Result<usize, StoreError> {
    let texts = records(log);
    let txn = db.begin_write().map_err(unavailable)?;
    {
        let mut items = txn.open_table(ITEMS).map_err(unavailable)?;
        let mut gsi = txn.open_table(GSI1).map_err(unavailable)?;
        for record in &texts {
            let (tree_key, text) = split_record(record)
                .ok_or_else(|| StoreError::Corrupt("an append log record without its key".into()))?;
            insert(&mut items, &mut gsi, &decode(tree_key, text)?, text)?;
        }
    }
    txn.commit().map_err(unavailable)?;
    Ok(texts.len())
}

/// The records of a log, up to the first that is cut short or does not match its checksum.
fn records(mut log: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while log.len() >= HEADER {
        let len = u32::from_le_bytes(log[..4].try_into().expect("4 bytes")) as usize;
        let sum = u64::from_le_bytes(log[4..HEADER].try_into().expect("8 bytes"));
        let Some(text) = log.get(HEADER..HEADER + len) else { break };
        if len == 0 || fnv1a(text) != sum {
            break;
        }
        out.push(text);
        log = &log[HEADER + len..];
    }
    out
}

/// A record's payload: the tree key of `prepared`'s item, then its stored text.
fn record_of(prepared: &Prepared) -> Vec<u8> {
    let key = prepared.item().map(|item| primary(&item.key)).unwrap_or_default();
    let text = prepared.text().unwrap_or_default();
    let mut out = Vec::with_capacity(4 + key.len() + text.len());
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(&key);
    out.extend_from_slice(text);
    out
}

/// A record's tree key and stored text.
fn split_record(record: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(record.get(..4)?.try_into().ok()?) as usize;
    let key = record.get(4..4 + len)?;
    Some((key, &record[4 + len..]))
}

fn frame(out: &mut Vec<u8>, text: &[u8]) {
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(&fnv1a(text).to_le_bytes());
    out.extend_from_slice(text);
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
}

/// The log writer, on a thread of its own: takes the first waiting append and every other
/// already waiting, writes them in one write and one `fdatasync` (to `file`; a table in memory
/// has none), lists them in `pending`, hands them to the committer, and only then answers each.
/// Ends when the table's last handle is dropped.
pub(super) fn write_groups(
    mut file: Option<File>,
    queue: &mpsc::Receiver<Appending>,
    commits: &mpsc::Sender<Msg>,
    pending: &Arc<Pending>,
) {
    let mut size = file.as_ref().and_then(|f| f.metadata().ok()).map_or(0, |m| m.len());
    let mut buf = Vec::new();
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        while group.len() < GROUP_MAX {
            match queue.try_recv() {
                Ok(a) => group.push(a),
                Err(_) => break,
            }
        }
        buf.clear();
        if file.is_some() {
            for a in &group {
                frame(&mut buf, &record_of(&a.prepared));
            }
        }
        let written = match file.as_mut() {
            Some(file) => file.write_all(&buf).and_then(|()| file.sync_data()),
            None => Ok(()),
        };
        if let Err(e) = written {
            // Whatever part reached the file was never answered: cut it off, so the next
            // records follow whole ones.
            if let Some(file) = &file {
                let _ = file.set_len(size);
            }
            let e = unavailable(e);
            for a in group {
                let _ = a.reply.send(Err(e.clone()));
            }
            continue;
        }
        size += buf.len() as u64;
        for Appending { prepared, reply } in group {
            pending.add(&Pending::partitions(prepared.item()));
            let sent = commits.send(Msg::Appended(prepared));
            let _ =
                reply.send(sent.map_err(|_| StoreError::Unavailable("the table's writer stopped".into())));
        }
        if let Some(file) = &file
            && size > LOG_MAX_BYTES
            && checkpoint(file, commits, pending)
        {
            size = 0;
        }
    }
}

/// Has the committer commit every item the log holds (they were all sent before the flush),
/// then empties the log. Answers whether it did.
fn checkpoint(file: &File, commits: &mpsc::Sender<Msg>, pending: &Pending) -> bool {
    let (reply, committed) = oneshot::channel();
    if commits.send(Msg::Flush(reply)).is_err() {
        return false;
    }
    let committed = matches!(committed.blocking_recv(), Ok(Ok(())));
    if !committed || pending.not_indexed.load(Ordering::SeqCst) {
        return false;
    }
    file.set_len(0).and_then(|()| file.sync_data()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_end_at_the_first_cut_or_damaged_one() {
        let mut log = Vec::new();
        for text in [&b"{\"a\":1}"[..], b"{\"b\":2}", b"{\"c\":3}"] {
            frame(&mut log, text);
        }
        assert_eq!(records(&log).len(), 3);
        // Cut inside the last record, or inside its header: the first two.
        assert_eq!(records(&log[..log.len() - 1]).len(), 2);
        assert_eq!(records(&log[..2 * (HEADER + 7) + 5]).len(), 2);
        // A damaged byte in the second record: the first only.
        let mut damaged = log.clone();
        damaged[HEADER + 7 + HEADER + 2] ^= 1;
        assert_eq!(records(&damaged).len(), 1);
        // Zeros after whole records (a file extended but not written): ignored.
        let mut zeros = log.clone();
        zeros.extend([0; 64]);
        assert_eq!(records(&zeros).len(), 3);
    }
}
