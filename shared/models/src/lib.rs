//! The wire types of the Wearlab API: serde structs and enums exactly as the API speaks them.
//!
//! Nothing here validates beyond the JSON shape; rules live in `wearlab-domain`.

pub mod audit;
pub mod branding;
pub mod bulk;
pub mod data;
pub mod data_phone;
mod enums;
pub mod errors;
pub mod events;
pub mod lab;
pub mod link;
pub mod patch;
pub mod phone_sync;
pub mod provider;
pub mod user;
pub mod webhooks;

#[doc(hidden)]
pub use utoipa as __utoipa;

pub use branding::*;
pub use enums::*;
pub use errors::*;
pub use events::*;
pub use link::*;
pub use provider::*;
pub use user::*;
