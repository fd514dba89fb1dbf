//! One module per resource of `/v2/team/**`; each handler parses, calls one use case, and
//! answers.

pub mod audit;
pub mod branding;
pub mod linking;
pub mod preferences;
pub mod webhooks;
