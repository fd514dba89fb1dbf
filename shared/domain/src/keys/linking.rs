//! Keys of linking: link tokens, OAuth states, connections, provider-account markers, the
//! team's OAuth apps and link settings.

use crate::ids::{TeamId, UserId};
use crate::ports::Key;

const ROOT: &str = "#";

/// A link token, by the SHA-256 (hex) of the token: the token itself is never stored.
pub fn link_token(hash_hex: &str) -> Key {
    Key::new(format!("LINKTOKEN#{hash_hex}"), ROOT)
}

/// A pending OAuth consent, by the SHA-256 (hex) of its `state` value.
pub fn oauth_state(hash_hex: &str) -> Key {
    Key::new(format!("OAUTHSTATE#{hash_hex}"), ROOT)
}

/// Sort-key prefix of the user's connections, in the user's partition (erasure covers them).
pub const CONNECTION_PREFIX: &str = "CONN#";

pub fn connection(user: UserId, provider: &str) -> Key {
    Key::new(super::user_partition(user), format!("{CONNECTION_PREFIX}{provider}"))
}

/// The lease of whoever refreshes a connection's credentials now (single flight for providers
/// whose refresh tokens are single use), in the user's partition (erasure covers it).
pub fn refresh_lease(user: UserId, provider: &str) -> Key {
    Key::new(super::user_partition(user), format!("LEASE#REFRESH#{provider}"))
}

/// Escapes `%` and `#` so that no value is a prefix-match of another inside a key.
fn escape(s: &str) -> String {
    s.replace('%', "%25").replace('#', "%23")
}

/// Prefix of the markers of one provider account (one marker per user connected to it), to
/// find duplicate connections in the team.
pub fn provider_account_prefix(provider: &str, external_user_id: &str) -> String {
    format!("PROVACCT#{}#{}#", escape(provider), escape(external_user_id))
}

/// Prefix of every provider-account marker of one provider in the team (bulk export).
pub fn provider_accounts_prefix(provider: &str) -> String {
    format!("PROVACCT#{}#", escape(provider))
}

pub fn provider_account(team: TeamId, provider: &str, external_user_id: &str, user: UserId) -> Key {
    Key::new(format!("TEAM#{team}"), format!("{}{user}", provider_account_prefix(provider, external_user_id)))
}

/// GSI1 partition of the provider-account markers of one provider's user, across teams: a
/// provider's push notification names only its user id.
pub fn provider_user_index(provider: &str, external_user_id: &str) -> String {
    format!("PROVUSER#{}#{}", escape(provider), escape(external_user_id))
}

/// GSI1 sort key of a provider-account marker.
pub fn provider_user_index_sort(team: TeamId, user: UserId) -> String {
    format!("{team}#{user}")
}

/// The team's own OAuth application for a provider.
pub fn team_oauth_app(team: TeamId, provider: &str) -> Key {
    Key::new(format!("TEAM#{team}"), format!("OAUTHAPP#{provider}"))
}

/// The team's linking settings.
pub fn team_link_config(team: TeamId) -> Key {
    Key::new(format!("TEAM#{team}"), "SETTINGS#LINK")
}
