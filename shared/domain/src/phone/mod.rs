//! The phone: what the mobile SDKs (Apple HealthKit, Health Connect, Samsung Health, the
//! phone's Bluetooth devices) do against the API, as docs/MOBILE.md describes.

pub mod tokens;
