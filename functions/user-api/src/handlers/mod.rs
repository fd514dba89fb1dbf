//! One module per resource under `/v2/user`.

pub mod connections;
pub mod demographics;
pub mod insurance;
pub mod portal;
pub mod users;
