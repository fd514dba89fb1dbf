//! What the table file holds, for the storage benchmark (`scripts/bench storage`): every stored
//! entry's key and value sizes, the B-trees' pages and redb's own accounting, and a compaction
//! of a closed file. Nothing here is on a request's path.

use std::path::Path;

use redb::{Database, ReadableTable, ReadableTableMetadata};
use wearlab_domain::ports::StoreError;

use super::{GSI1, ITEMS, RedbTable, unavailable};

/// One stored entry: which B-tree, its key's text and its value's length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEntry {
    /// `false`: the items tree (`pk \0 sk` -> the item); `true`: the GSI1 tree.
    pub index: bool,
    /// The entry's key bytes, NULs between the parts.
    pub key: Vec<u8>,
    pub value_len: usize,
}

/// redb's accounting of the whole file, as its write transaction's `stats` answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileStats {
    pub page_size: u64,
    pub allocated_pages: u64,
    pub leaf_pages: u64,
    pub branch_pages: u64,
    /// Keys and values stored in the leaves (no per-entry overhead).
    pub stored_bytes: u64,
    /// Branch keys and redb's own tables.
    pub metadata_bytes: u64,
    /// Unused space in pages and free pages.
    pub fragmented_bytes: u64,
}

impl RedbTable {
    /// Every entry of both trees, in key order (one read transaction).
    pub fn stored_entries(&self) -> Result<Vec<StoredEntry>, StoreError> {
        let txn = self.db.begin_read().map_err(unavailable)?;
        let mut out = Vec::new();
        for (index, def) in [(false, ITEMS), (true, GSI1)] {
            let table = txn.open_table(def).map_err(unavailable)?;
            for entry in table.iter().map_err(unavailable)? {
                let (k, v) = entry.map_err(unavailable)?;
                out.push(StoredEntry { index, key: k.value().to_vec(), value_len: v.value().len() });
            }
        }
        Ok(out)
    }

    /// redb's accounting of the file (an empty write transaction, aborted).
    pub fn file_stats(&self) -> Result<FileStats, StoreError> {
        let txn = self.db.begin_write().map_err(unavailable)?;
        let s = txn.stats().map_err(unavailable)?;
        // The trees' own figures are checked against the whole file's: both count the same leaves.
        let leaves: u64 = [ITEMS, GSI1]
            .into_iter()
            .map(|def| txn.open_table(def).and_then(|t| Ok(t.stats()?.leaf_pages())).map_err(unavailable))
            .sum::<Result<u64, _>>()?;
        debug_assert!(leaves <= s.leaf_pages());
        txn.abort().map_err(unavailable)?;
        Ok(FileStats {
            page_size: s.page_size() as u64,
            allocated_pages: s.allocated_pages(),
            leaf_pages: s.leaf_pages(),
            branch_pages: s.branch_pages(),
            stored_bytes: s.stored_bytes(),
            metadata_bytes: s.metadata_bytes(),
            fragmented_bytes: s.fragmented_bytes(),
        })
    }

    /// Compacts the table file at `path` (no table may have it open): redb moves the live pages
    /// to the front and truncates the rest. Answers whether anything moved.
    pub fn compact_file(path: &Path) -> Result<bool, StoreError> {
        let mut db = Database::open(path).map_err(unavailable)?;
        let mut moved = false;
        // redb compacts in passes; a bounded number of them.
        for _ in 0..16 {
            if !db.compact().map_err(unavailable)? {
                break;
            }
            moved = true;
        }
        Ok(moved)
    }
}
