//! One module per group of the SDKs' routes.

pub mod connect;
pub mod sync;
pub mod tokens;
pub mod uploads;
