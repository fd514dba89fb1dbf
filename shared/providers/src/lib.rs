//! Real provider adapters: each speaks one provider's public API (OAuth 2, data endpoints,
//! push notifications) and maps its records to the normalised records the data pipeline reads
//! (`wearlab_domain::pipeline::normalize`). [`RealProviders`] routes the `Providers` port: a
//! provider with an active adapter goes to it, everything else (demo connections, password
//! providers, providers without an adapter) to the simulator.
//!
//! Facts about each API (hosts, paths, fields, units, limits, signatures) come from the
//! providers' published documents; `docs/PROVIDERS.md` says which, and what each adapter maps.

pub mod adapter;
pub mod config;
pub mod http;
pub mod oauth;
pub mod router;

pub mod oura;
pub mod whoop;
pub mod withings;

#[cfg(feature = "fake")]
pub mod fake;

pub use adapter::Adapter;
pub use config::{AppConfig, Endpoints};
pub use router::RealProviders;
