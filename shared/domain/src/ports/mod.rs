//! Ports: what the use cases need from the outside world, all of them here. Adapters live in
//! `wearlab-aws` (DynamoDB, SQS, EventBridge), `wearlab-embedded` (redb, in-process timers and
//! queues), `wearlab-sim` (simulated providers and lab network) and `wearlab-http` (the webhook
//! sender).

pub mod bus;
pub mod clock;
pub mod lab_network;
pub mod providers;
pub mod queue;
pub mod scheduler;
pub mod table;
pub mod webhook;

pub use bus::{BusError, EventBus, EventEnvelope};
#[cfg(any(test, feature = "test-support"))]
pub use clock::ManualClock;
pub use clock::{Clock, ShiftedClock, SystemClock};
pub use lab_network::LabNetwork;
pub use providers::Providers;
pub use queue::{Envelope, MESSAGE_BUDGET, Outcome, Outgoing, Queue, QueueError, QueueName, Received};
pub use scheduler::{Schedule, Scheduler, SchedulerError};
pub use table::{
    Add, Condition, Cursor, Index, IndexKey, Item, Key, MAX_BATCH, MAX_ITEM_BYTES, Page, Query, RawItem,
    RawPage, SkRange, StoreError, Table, TextItem, WriteOp, add_to_field, query_all, to_body, validate_batch,
    validate_get_many, validate_put_all, validate_put_all_text,
};
pub use webhook::WebhookSender;
