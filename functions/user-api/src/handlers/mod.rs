//! One module per resource under `/v2/user`.

pub mod users;
