//! Wearlab's rules: use cases over small ports.
//!
//! One folder per area of the product (`teams`, `users`, `events`, `linking`, `lab`,
//! `pipeline`, `bulk`, `lifecycle`, `webhooks`), and what every area uses: `common` (parsed
//! values, errors, sealing, the rules every request passes), `keys` (every storage key) and
//! `ports` (what the use cases need from outside). Handlers parse input into the types here,
//! call one use case, and map its result to JSON. Nothing in this crate knows about HTTP, Lambda
//! or AWS.

// Areas of the product, lower ones first: each may use the ones above it in this list and
// `common`, `keys` and `ports`, never one below (the architecture test checks it).
pub mod bulk;
pub mod events;
pub mod lab;
pub mod lifecycle;
pub mod linking;
pub mod pipeline;
pub mod teams;
pub mod users;
pub mod webhooks;

// What every area uses.
pub mod common;
pub mod keys;
pub mod ports;

use std::sync::Arc;

pub use common::error::DomainError;
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
    pub data_key: Arc<common::crypto::DataKey>,
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
        data_key: Arc<common::crypto::DataKey>,
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
