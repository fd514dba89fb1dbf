//! Wearlab's rules: use cases over small ports.
//!
//! One folder per area of the product (`teams`, `users`, `events`, `linking`, `lab`,
//! `pipeline`, `bulk`, `lifecycle`, `webhooks`, `phone`, `fhir`), and what every area uses: `common` (parsed
//! values, errors, sealing, the rules every request passes), `keys` (every storage key) and
//! `ports` (what the use cases need from outside). Handlers parse input into the types here,
//! call one use case, and map its result to JSON. Nothing in this crate knows about HTTP, Lambda
//! or AWS.

// Areas of the product, lower ones first: each may use the ones above it in this list and
// `common`, `keys` and `ports`, never one below (the architecture test checks it).
pub mod bulk;
pub mod events;
pub mod fhir;
pub mod lab;
pub mod lifecycle;
pub mod linking;
pub mod phone;
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
use ports::{Clock, EventBus, Scheduler, Table};

/// The ports every use case may call, and the one way they reach a use case (which takes
/// `&Deps`). Built once per process (per Lambda execution environment) by its `main.rs`.
///
/// The ports only some functions have are not here: a use case that sends work to a queue
/// takes the [`Queue`](ports::Queue), one that asks the lab network takes the
/// [`LabNetwork`](ports::LabNetwork), and webhook delivery takes the
/// [`WebhookSender`](ports::WebhookSender), each as a parameter. A function that calls such a
/// use case without the port does not compile, and its signature says what it touches.
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
}

impl Deps {
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }
}
