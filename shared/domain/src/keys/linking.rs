//! Keys of linking: link tokens, OAuth states, connections, provider-account markers, the
//! team's OAuth apps and link settings.

use chrono::{DateTime, SecondsFormat, Utc};
use uuid::Uuid;

use super::{escape, unescape};
use crate::common::ids::{TeamId, UserId};
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

/// Prefix of the markers of one provider account (one marker per user connected to it), to
/// find duplicate connections in the team.
pub fn provider_account_prefix(provider: &str, external_user_id: &str) -> String {
    format!("PROVACCT#{}#{}#", escape(provider), escape(external_user_id))
}

/// Prefix of every provider-account marker of the team.
pub const PROVIDER_ACCOUNT_MARKERS: &str = "PROVACCT#";

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

/// The provider and its user's id of a provider-account marker's sort key.
pub fn parse_provider_account(sk: &str) -> Option<(String, String)> {
    let mut parts = sk.strip_prefix(PROVIDER_ACCOUNT_MARKERS)?.split('#');
    let (provider, external, _user) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    Some((unescape(provider), unescape(external)))
}

/// The user of a provider-account marker's sort key (it ends with the user id).
pub fn provider_account_user(sk: &str) -> Option<UserId> {
    sk.strip_prefix(PROVIDER_ACCOUNT_MARKERS)?.rsplit('#').next().and_then(UserId::parse)
}

/// GSI1 sort key of a provider-account marker.
pub fn provider_user_index_sort(team: TeamId, user: UserId) -> String {
    format!("{team}#{user}")
}

/// Where a team's own OAuth applications sit in its partition.
pub const TEAM_OAUTH_APPS: &str = "OAUTHAPP#";

/// The team's own OAuth application for a provider.
pub fn team_oauth_app(team: TeamId, provider: &str) -> Key {
    Key::new(format!("TEAM#{team}"), format!("{TEAM_OAUTH_APPS}{provider}"))
}

/// The provider of a team OAuth application's sort key.
pub fn team_oauth_app_provider(sk: &str) -> Option<&str> {
    sk.strip_prefix(TEAM_OAUTH_APPS).filter(|p| !p.is_empty())
}

/// Which team registered `client_id` as its own OAuth app for `provider`: one team per client
/// id, written in the same transaction as the team's app and deleted with it.
pub fn oauth_client_claim(provider: &str, client_id: &str) -> Key {
    Key::new(format!("OAUTHCLIENT#{}#{}", escape(provider), escape(client_id)), ROOT)
}

/// A push delivery already read (by the SHA-256 hex of its signed body), kept for the window
/// in which a repeated delivery would be accepted.
pub fn push_delivery(provider: &str, body_sha256_hex: &str) -> Key {
    Key::new(format!("PUSHSEEN#{}#{body_sha256_hex}", escape(provider)), ROOT)
}

/// A connection's pending revoke at the provider, in the user's partition (erasure covers it).
pub fn revoke(user: UserId, id: Uuid) -> Key {
    Key::new(super::user_partition(user), format!("REVOKE#{id}"))
}

/// The GSI1 partition of pending revokes, sorted by next attempt time.
pub const REVOKES_DUE_INDEX: &str = "REVOKE_DUE";

/// GSI1 sort key of a pending revoke: its next attempt time, then its id.
pub fn revoke_due_sort(at: DateTime<Utc>, id: Uuid) -> String {
    format!("{}#{id}", at.to_rfc3339_opts(SecondsFormat::Micros, true))
}

/// The turn of whoever looks at the providers' push subscriptions (once an hour, any instance).
pub fn push_subscriptions_turn() -> Key {
    Key::new("PUSHSUBS", ROOT)
}

/// The team's linking settings.
pub fn team_link_config(team: TeamId) -> Key {
    Key::new(format!("TEAM#{team}"), "SETTINGS#LINK")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_keys_give_back_provider_and_user() {
        let (team, user) = (TeamId::new_random(), UserId::new_random());
        for (provider, external) in [("oura", "abc"), ("withings", "a#b%23c%"), ("whoop_v2", "")] {
            let key = provider_account(team, provider, external, user);
            assert_eq!(
                parse_provider_account(&key.sk),
                Some((provider.to_owned(), external.to_owned())),
                "{}",
                key.sk
            );
        }
        assert_eq!(parse_provider_account("PROVACCT#oura#x"), None);
        assert_eq!(parse_provider_account("USER#x"), None);
    }
}
