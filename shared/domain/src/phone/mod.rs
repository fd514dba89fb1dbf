//! The phone's health data: what the mobile SDKs (Apple HealthKit, Health Connect, Samsung
//! Health, the phone's Bluetooth devices) send, stored as any provider's data. docs/MOBILE.md
//! describes it.

pub mod uploads;
