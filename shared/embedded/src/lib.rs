//! Adapters for the one-process local stack: the `Table` port on redb (a file, or memory for
//! tests), the `Scheduler` port on that table plus a timer loop, and an in-memory `EventBus`.

mod bus;
mod queue;
mod redb_table;
mod scheduler;

pub use bus::MemoryBus;
pub use queue::{MAX_ATTEMPTS, TableQueue, VISIBILITY};
pub use redb_table::{DEFAULT_CACHE_BYTES, FileStats, RedbTable, StoredEntry};
pub use scheduler::TableScheduler;
