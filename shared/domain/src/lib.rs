//! Wearlab's rules: use cases over small ports.
//!
//! Handlers parse input into the types here, call one use case, and map its result to JSON.
//! Nothing in this crate knows about HTTP, Lambda or AWS.

pub mod audit;
pub mod backoff;
pub mod bulk;
pub mod bulk_ledger;
pub mod catalog;
pub mod crypto;
pub mod dead_letters;
pub mod error;
pub mod event_secrets;
pub mod events;
pub mod fair_use;
pub mod hosted;
pub mod idempotency;
pub mod ids;
pub mod keys;
pub mod lab;
pub mod lifecycle;
pub mod lifecycle_events;
pub mod limits;
pub mod linking;
pub mod metrics;
pub mod outbox;
pub mod per_key;
pub mod pipeline;
pub mod ports;
pub mod settings;
pub mod teams;
pub mod throttle;
pub mod users;
pub mod webhook_url;
pub mod webhooks;

use std::sync::Arc;

pub use error::DomainError;
use ports::{Clock, EventBus, LabNetwork, NotWired, Queue, Scheduler, Table, WebhookSender};

/// The adapters a use case may call: every port, and the one way they reach a use case (which
/// takes `&Deps`). Built once per process (per Lambda execution environment) by its `main.rs`,
/// which wires the ports its use cases call; the others are [`NotWired`] (see
/// [`Deps::unwired`]).
#[derive(Clone)]
pub struct Deps {
    pub table: Arc<dyn Table>,
    pub scheduler: Arc<dyn Scheduler>,
    pub clock: Arc<dyn Clock>,
    pub bus: Arc<dyn EventBus>,
    /// What each wearable or health-data provider does (the simulator until real adapters exist).
    pub providers: Arc<dyn ports::Providers>,
    /// Seals secrets at rest (provider credentials, MFA sessions, team OAuth secrets).
    pub data_key: Arc<crypto::DataKey>,
    /// The work queues (pull, bulk, webhook): functions that enqueue or consume work.
    pub queue: Arc<dyn Queue>,
    /// What a lab does with an order (the simulated lab network until a real one exists).
    pub lab_network: Arc<dyn LabNetwork>,
    /// What POSTs a signed event to a team's endpoint (the webhook worker's HTTP client).
    pub webhook_sender: Arc<dyn WebhookSender>,
}

impl Deps {
    /// The ports every function uses; the queue, the lab network and the webhook sender are
    /// [`NotWired`] until the caller sets those its use cases call (`Deps { queue, ..deps }`).
    pub fn unwired(
        table: Arc<dyn Table>,
        scheduler: Arc<dyn Scheduler>,
        clock: Arc<dyn Clock>,
        bus: Arc<dyn EventBus>,
        providers: Arc<dyn ports::Providers>,
        data_key: Arc<crypto::DataKey>,
    ) -> Self {
        Self {
            table,
            scheduler,
            clock,
            bus,
            providers,
            data_key,
            queue: Arc::new(NotWired),
            lab_network: Arc::new(NotWired),
            webhook_sender: Arc::new(NotWired),
        }
    }

    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }
}
