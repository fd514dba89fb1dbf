//! Wearlab's rules: use cases over small ports.
//!
//! Handlers parse input into the types here, call one use case, and map its result to JSON.
//! Nothing in this crate knows about HTTP, Lambda or AWS.

pub mod bulk;
pub mod bulk_ledger;
pub mod catalog;
pub mod crypto;
pub mod dead_letters;
pub mod error;
pub mod event_secrets;
pub mod fair_use;
pub mod hosted;
pub mod idempotency;
pub mod ids;
pub mod keys;
pub mod lab;
pub mod lifecycle;
pub mod lifecycle_events;
pub mod linking;
pub mod outbox;
pub mod pipeline;
pub mod ports;
pub mod teams;
pub mod throttle;
pub mod users;
pub mod webhook_url;
pub mod webhooks;

use std::sync::Arc;

pub use error::DomainError;
use ports::{Clock, EventBus, Scheduler, Table};

/// The adapters a use case may call. Built once per process (per Lambda execution environment).
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
}

impl Deps {
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }
}
