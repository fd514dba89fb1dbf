//! One module per group of the SDKs' routes.

pub mod uploads;
