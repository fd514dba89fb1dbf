//! The phone as a source of data: what the mobile SDKs (Apple HealthKit, Health Connect, Samsung
//! Health, the phone's Bluetooth devices) call besides their uploads. docs/MOBILE.md says what
//! each route answers and why.

pub mod connect;
pub mod progress;
pub mod sync_state;
