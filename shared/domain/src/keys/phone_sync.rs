//! Keys of what the mobile SDKs report about their syncs, in the user's partition, so erasure
//! removes them with the user.

use crate::common::ids::UserId;
use crate::ports::Key;

/// The latest sync progress report of the user's SDK provider (one item, replaced by each
/// report).
pub fn progress(user: UserId, provider: &str) -> Key {
    Key::new(super::user_partition(user), format!("SDK#PROGRESS#{provider}"))
}
