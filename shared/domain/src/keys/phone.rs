//! Keys of the phone's per-user credentials. Every one is in the user's partition, so erasing
//! the user removes every credential of the user's phones.

use crate::common::ids::UserId;
use crate::ports::Key;

use super::user_partition;

/// A session of the user's phone: the hash of its current refresh token (and of the last ones
/// it replaced, to tell a replay), created by a sign-in token's exchange.
pub fn session(user: UserId, session: uuid::Uuid) -> Key {
    Key::new(user_partition(user), format!("PHONE#SESSION#{session}"))
}

/// The mark that a sign-in token (by its `jti`) was exchanged: written on the condition that it
/// does not exist, so that a second exchange fails, even on another instance. It expires with
/// the token.
pub fn sign_in_used(user: UserId, jti: uuid::Uuid) -> Key {
    Key::new(user_partition(user), format!("PHONE#SIGNIN#{jti}"))
}
