//! Ports: what the use cases need from the outside world. Adapters live in `wearlab-aws`
//! (DynamoDB, EventBridge Scheduler) and `wearlab-embedded` (redb, in-process timers).

pub mod bus;
pub mod clock;
pub mod queue;
pub mod scheduler;
pub mod table;

pub use bus::{BusError, EventBus, EventEnvelope};
pub use clock::{Clock, ManualClock, ShiftedClock, SystemClock};
pub use queue::{Envelope, MESSAGE_BUDGET, Outcome, Outgoing, Queue, QueueError, QueueName, Received};
pub use scheduler::{Schedule, Scheduler, SchedulerError};
pub use table::{
    Condition, Cursor, Index, IndexKey, Item, Key, MAX_BATCH, Page, Query, RawItem, SkRange, StoreError,
    Table, WriteOp, query_all, validate_batch,
};
