//! What every area of the product uses: parsed values and the refusal type, sealing and signing,
//! the rules every request or job passes through (audit of PHI access, fair use, idempotency,
//! provider throttles, the transactional outbox), the provider catalog, and small utilities
//! (waits, per-key values, bounds of lists and texts, operator settings, metrics).
//!
//! Nothing here calls into an area of the product (users, linking, pipeline, ...); the
//! architecture test checks it.

pub mod audit;
pub mod backoff;
pub mod crypto;
pub mod dead_letters;
pub mod error;
pub mod fair_use;
pub mod hosted;
pub mod idempotency;
pub mod ids;
pub mod language;
pub mod limits;
pub mod metrics;
pub mod outbox;
pub mod per_key;
pub mod provider_catalog;
pub mod provider_marks;
pub mod settings;
pub mod signing;
pub mod throttle;
