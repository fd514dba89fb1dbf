//! Adapters for the one-process local stack: the `Table` port on redb (a file, or memory for
//! tests) and the `Scheduler` port on that table plus a timer loop.

mod redb_table;
mod scheduler;

pub use redb_table::RedbTable;
pub use scheduler::TableScheduler;
