//! The phone as a source of data: what the mobile SDKs (Apple HealthKit, Health Connect, Samsung
//! Health, the phone's Bluetooth devices) do against the API: their credentials, connections,
//! sync state and progress, and their uploads, stored as any provider's data (the uploads' parse
//! is `pipeline::phone`). docs/MOBILE.md says what each route answers and why.

pub mod connect;
pub mod progress;
pub mod sync_state;
pub mod tokens;
pub mod uploads;
