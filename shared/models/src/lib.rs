//! The wire types of the Wearlab API: serde structs and enums exactly as the API speaks them.
//!
//! Nothing here validates beyond the JSON shape; rules live in `wearlab-domain`.

mod enums;
pub mod errors;
pub mod events;
pub mod patch;
pub mod user;

#[doc(hidden)]
pub use utoipa as __utoipa;

pub use enums::*;
pub use errors::*;
pub use events::*;
pub use user::*;
