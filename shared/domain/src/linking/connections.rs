//! Connections of a user to providers. Each is an item in the user's partition (so erasure
//! covers it) holding the provider credentials sealed; the user record lists them (for
//! `connected_sources`), written in the same transaction; a marker per provider account in the
//! team's partition finds duplicate connections.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::{
    AvailabilityStatus, ConnectionErrorDetails, ConnectionStatus, EventEnvelope, ProviderAvailability,
    ResourceAvailability, UserConnection, UserConnections,
};

use super::revokes::Pending;
use super::tokens::{TokenState, ValidToken};
use super::{corrupt, known_provider, team_apps};
use crate::Deps;
use crate::common::crypto::Sealed;
use crate::common::error::{DomainError, Found};
use crate::common::ids::{TeamId, UserId};
use crate::common::outbox::Staged;
use crate::common::provider_catalog::{ProviderInfo, catalog};
use crate::keys;
use crate::ports::providers::{OauthClient, ProviderAccount, ProviderCredentials};
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key, Query, StoreError, WriteOp, query_all};
use crate::users::{self, ConnectionRef, UserRecord};

/// The event a new connection emits.
pub const CONNECTION_CREATED: &str = "provider.connection.created";
/// Attempts of a write that lost a race with another writer of the user.
const TRIES: usize = 4;
/// Most connections one user can have (bounded by the catalog; keeps deletion in one batch).
pub const MAX_CONNECTIONS: usize = 45;

/// The stored connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionRecord {
    pub provider: String,
    pub team_id: TeamId,
    pub user_id: UserId,
    pub created_on: DateTime<Utc>,
    pub status: ConnectionStatus,
    pub external_user_id: String,
    /// `ProviderCredentials`, sealed with the data key, bound to this item's key.
    pub credentials: Sealed,
    #[serde(default)]
    pub error_details: Option<ConnectionErrorDetails>,
    /// A demo connection: synthetic data.
    #[serde(default)]
    pub demo: bool,
    /// The client id of the team's own OAuth app the credentials were issued to (OAuth links
    /// through the team's app, bulk imports); `None` for the platform's app and other auth types.
    /// Only such connections are exported.
    #[serde(default)]
    pub team_app_client_id: Option<String>,
    /// The bulk import that wrote this connection: a redelivered import message finds it and
    /// does not import (nor announce) it twice.
    #[serde(default)]
    pub import_op: Option<String>,
}

fn seal_context(key: &Key) -> String {
    format!("{}|{}", key.pk, key.sk)
}

impl ConnectionRecord {
    /// Whether the team's bulk import `op_id` wrote this connection (a redelivered or duplicate
    /// import message then has nothing to import or announce).
    pub fn imported_by(&self, team: TeamId, op_id: &str) -> bool {
        self.import_op.as_deref() == Some(op_id) && self.team_id == team
    }

    pub fn key(&self) -> Key {
        keys::linking::connection(self.user_id, &self.provider)
    }

    pub fn credentials(&self, deps: &Deps) -> Result<ProviderCredentials, DomainError> {
        deps.data_key
            .open_json(&self.credentials, &seal_context(&self.key()))
            .map_err(|_| corrupt("connection credentials do not open with the data key"))
    }

    pub fn account(&self, deps: &Deps) -> Result<ProviderAccount, DomainError> {
        Ok(ProviderAccount {
            external_user_id: self.external_user_id.clone(),
            credentials: self.credentials(deps)?,
        })
    }

    /// The OAuth application the credentials were issued to, for refreshing and revoking
    /// them: the team's own app (its current secret) when the link went through it, `None` for
    /// the platform's. A team app removed since is `None` too: the platform's app is all that
    /// is left to try.
    pub async fn issuing_client(&self, deps: &Deps) -> Result<Option<OauthClient>, DomainError> {
        if self.team_app_client_id.is_none() {
            return Ok(None);
        }
        team_apps::team_client(deps, self.team_id, &self.provider).await
    }

    pub fn set_credentials(&mut self, deps: &Deps, credentials: &ProviderCredentials) {
        self.credentials = deps.data_key.seal_json(credentials, &seal_context(&self.key()));
    }

    pub(crate) fn to_item(&self, version: u64) -> Item {
        let mut item = Item::new(self.key(), to_body(self));
        item.version = version;
        item
    }

    /// A connection of an `sdk` provider made by the mobile SDKs (not a demo): its data comes
    /// from the user's phone, nothing is pulled, refreshed or revoked at a provider, and it has
    /// no provider account (`external_user_id` null on the wire and in its event).
    pub fn from_phone(&self) -> bool {
        !self.demo && catalog().get(&self.provider).is_some_and(ProviderInfo::is_sdk)
    }

    /// The provider account id as the API says it: none for a connection from the phone.
    fn wire_external_user_id(&self) -> Option<String> {
        (!self.from_phone()).then(|| self.external_user_id.clone())
    }

    /// Whether the connection's data is synthetic: a demo connection, or credentials that reach
    /// the simulator (a link made where simulated providers may be linked, kept and still
    /// working as a demo where they no longer may).
    pub fn is_demo(&self, deps: &Deps) -> bool {
        self.demo
            || (!self.from_phone()
                && match self.credentials(deps) {
                    Ok(c) => deps.providers.simulates(&self.provider, &c),
                    // Credentials that do not open reach nothing; say what the provider is here.
                    Err(_) => deps.providers.availability(&self.provider) != ProviderAvailability::Live,
                })
    }

    /// The connection as GET /v2/user/providers lists it, with the resources it offers on this
    /// deployment (`Catalog::resources_on`).
    pub fn to_wire(&self, deps: &Deps) -> UserConnection {
        let providers = deps.providers.as_ref();
        let provider = catalog().reference(&self.provider);
        let status = if self.status == ConnectionStatus::Connected {
            AvailabilityStatus::Available
        } else {
            AvailabilityStatus::Unavailable
        };
        let resource_availability = catalog()
            .data_resources_on(providers, &self.provider)
            .iter()
            .map(|r| {
                (
                    r.as_str().to_owned(),
                    ResourceAvailability { status: status.clone(), scope_requirements: None },
                )
            })
            .collect();
        UserConnection {
            name: provider.name,
            slug: provider.slug,
            logo: provider.logo,
            created_on: self.created_on,
            status: self.status.clone(),
            external_user_id: self.wire_external_user_id(),
            error_details: self.error_details.clone(),
            resource_availability,
            demo: self.is_demo(deps),
        }
    }
}

/// A connection about to be made.
pub struct NewConnection {
    pub provider: &'static ProviderInfo,
    pub account: ProviderAccount,
    pub demo: bool,
    /// The link token the connection consumes.
    pub token: Option<ValidToken>,
    /// Writes that must happen with the connection (e.g. removing a one-time OAuth state).
    pub extra_ops: Vec<WriteOp>,
    /// See [`ConnectionRecord::team_app_client_id`].
    pub team_app_client_id: Option<String>,
    /// A bulk import: it replaces the user's connection to the provider (new tokens) instead
    /// of counting it as a duplicate. See [`ConnectionRecord::import_op`].
    pub import_op: Option<String>,
}

impl NewConnection {
    /// Made by the mobile SDKs (see [`ConnectionRecord::from_phone`]).
    pub fn from_phone(&self) -> bool {
        !self.demo && self.provider.is_sdk()
    }
}

/// How a commit ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Committed {
    Connected {
        external_user_id: String,
    },
    /// The team rejects duplicate connections and this one is.
    Duplicate,
    /// The token was consumed by a concurrent request.
    TokenConsumed,
    /// The user was deleted meanwhile.
    UserGone,
}

async fn load_connection(
    deps: &Deps,
    user_id: UserId,
    provider: &str,
) -> Result<Option<(ConnectionRecord, u64)>, DomainError> {
    Ok(match deps.table.get(&keys::linking::connection(user_id, provider)).await? {
        Some(item) => Some((item.decode()?, item.version)),
        None => None,
    })
}

/// The user's connection to `provider`, if any: how other areas read a connection.
pub async fn find(
    deps: &Deps,
    user_id: UserId,
    provider: &str,
) -> Result<Option<ConnectionRecord>, DomainError> {
    Ok(load_connection(deps, user_id, provider).await?.map(|(c, _)| c))
}

/// Pauses the user's connection to `provider`: pulls and refreshes skip it until it is linked
/// or imported again. Returns whether the user has that connection (now paused, or already).
pub async fn pause(deps: &Deps, user_id: UserId, provider: &str) -> Result<bool, DomainError> {
    for _ in 0..TRIES {
        let Some((mut conn, version)) = load_connection(deps, user_id, provider).await? else {
            return Ok(false);
        };
        if conn.status == ConnectionStatus::Paused {
            return Ok(true);
        }
        conn.status = ConnectionStatus::Paused;
        match deps.table.put(conn.to_item(version + 1), Condition::VersionIs(version)).await {
            Ok(()) => return Ok(true),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(DomainError::Busy("the connection is being changed concurrently, retry".into()))
}

/// The team and user of each connection to the provider's user `external_user_id`, across
/// teams (found through the provider-account markers' index), at most `limit`: a provider's
/// push names only its user.
pub async fn of_provider_user(
    deps: &Deps,
    provider: &str,
    external_user_id: &str,
    limit: usize,
) -> Result<Vec<(TeamId, UserId)>, DomainError> {
    let index = keys::linking::provider_user_index(provider, external_user_id);
    let mut out = Vec::new();
    for item in query_all(deps.table.as_ref(), Query::gsi1(index), limit).await? {
        let Some(team) = keys::parse_team_partition(&item.key.pk) else { continue };
        let marker: AccountMarker = item.decode()?;
        out.push((team, marker.user_id));
    }
    Ok(out)
}

/// Whether a user of the team other than `except` is connected to this provider account.
async fn account_connected_elsewhere(
    deps: &Deps,
    team: TeamId,
    provider: &str,
    external_user_id: &str,
    except: UserId,
) -> Result<bool, DomainError> {
    let own = keys::linking::provider_account(team, provider, external_user_id, except);
    let q = Query::partition(keys::team(team).pk)
        .prefix(keys::linking::provider_account_prefix(provider, external_user_id))
        .limit(2);
    Ok(deps.table.query(q).await?.items.iter().any(|i| i.key != own))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct AccountMarker {
    pub(super) user_id: UserId,
}

/// Stores a new connection (replacing one to the same provider), consumes the token, updates
/// the user's list, all in one transaction; then emits `provider.connection.created`.
pub async fn commit(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    new: NewConnection,
) -> Result<Committed, DomainError> {
    let slug = new.provider.slug.as_str();
    let external = new.account.external_user_id.as_str();
    let mut token = new.token.clone();
    for _ in 0..TRIES {
        let Some((user, user_version)) = users::load_active(deps, team, user_id).await.found()? else {
            return Ok(Committed::UserGone);
        };
        let existing = load_connection(deps, user_id, slug).await?;
        // Imported by another delivery of the same import (a duplicate message handled at the
        // same time, which won the race below): nothing to replace, nothing to announce again.
        if let (Some(op), Some((old, _))) = (&new.import_op, &existing)
            && old.imported_by(team, op)
        {
            return Ok(Committed::Connected { external_user_id: old.external_user_id.clone() });
        }
        // The phone connects before every sync: a connection that exists (one a concurrent
        // connect made between its read and this commit, or a demo one) is the user's
        // connection, kept as it is and not announced again.
        if let (true, Some((old, _))) = (new.from_phone(), &existing) {
            return Ok(Committed::Connected { external_user_id: old.external_user_id.clone() });
        }
        // An import replaces the user's own connection (new tokens); a link to a provider the
        // user is connected to already is a duplicate.
        let own_is_duplicate = existing.is_some() && new.import_op.is_none();
        if team_apps::link_config(deps, team).await?.reject_duplicate_connection
            && (own_is_duplicate || account_connected_elsewhere(deps, team, slug, external, user_id).await?)
        {
            return Ok(Committed::Duplicate);
        }
        if existing.is_none() && user.connections.len() >= MAX_CONNECTIONS {
            return Err(DomainError::Rejected("The user has too many connections.".into()));
        }
        let now = deps.now();
        let credentials = deps
            .data_key
            .seal_json(&new.account.credentials, &seal_context(&keys::linking::connection(user_id, slug)));
        let record = ConnectionRecord {
            provider: slug.to_owned(),
            team_id: team,
            user_id,
            created_on: now,
            status: ConnectionStatus::Connected,
            external_user_id: external.to_owned(),
            credentials,
            error_details: None,
            demo: new.demo,
            team_app_client_id: new.team_app_client_id.clone(),
            import_op: new.import_op.clone(),
        };
        let mut next_user = user.clone();
        next_user.connections.retain(|c| c.provider != slug);
        next_user.connections.push(ConnectionRef { provider: slug.to_owned(), created_on: now });
        let mut ops = vec![
            match &existing {
                Some((_, v)) => {
                    WriteOp::Put { item: record.to_item(v + 1), condition: Condition::VersionIs(*v) }
                }
                None => WriteOp::Put { item: record.to_item(1), condition: Condition::NotExists },
            },
            WriteOp::Put {
                item: next_user.to_item(user_version + 1),
                condition: Condition::VersionIs(user_version),
            },
            WriteOp::Put {
                item: Item::new(
                    keys::linking::provider_account(team, slug, external, user_id),
                    to_body(&AccountMarker { user_id }),
                )
                .with_gsi1(
                    keys::linking::provider_user_index(slug, external),
                    keys::linking::provider_user_index_sort(team, user_id),
                ),
                condition: Condition::None,
            },
        ];
        if let Some((old, _)) = &existing
            && old.external_user_id != external
        {
            ops.push(WriteOp::Delete {
                key: keys::linking::provider_account(team, slug, &old.external_user_id, user_id),
                condition: Condition::None,
            });
        }
        if let Some(t) = &token {
            ops.push(t.consume_op(slug, now));
        }
        ops.extend(new.extra_ops.iter().cloned());
        // Staged with the connection: its historical pull starts from this event.
        let created = Staged::new(deps, user_id, vec![created_event(&user, &record)]);
        ops.push(created.write_op());
        // A bulk import tells kept pages once per message (`users::listed_changed`).
        let counter = ops.len();
        if new.import_op.is_none() {
            ops.push(users::listed_change(team, user_id));
        }
        match deps.table.transact(ops).await {
            Ok(()) => {
                tracing::info!(team_id = %team, user_id = %user_id, provider = slug, demo = new.demo, "connection created");
                created.publish(deps).await;
                return Ok(Committed::Connected { external_user_id: external.to_owned() });
            }
            Err(StoreError::ConditionFailed { op }) => {
                users::counter_made_sure_of(deps, team, op, counter).await?;
                if let Some(t) = &token {
                    match super::tokens::load_by_key(deps, &t.key).await? {
                        Some(fresh) if !matches!(fresh.record.state, TokenState::Consumed { .. }) => {
                            token = Some(fresh);
                        }
                        _ => return Ok(Committed::TokenConsumed),
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(DomainError::Busy("the user is being changed concurrently, retry".into()))
}

/// `provider.connection.created` with `provider`, the deprecated `source` (same content) and
/// the provider account's `external_user_id` (null for a connection from the phone).
fn created_event(user: &UserRecord, conn: &ConnectionRecord) -> EventEnvelope {
    let provider = catalog().reference(&conn.provider);
    let data = serde_json::json!({
        "user_id": user.user_id,
        "provider": provider,
        "source": provider,
        "external_user_id": conn.wire_external_user_id(),
    });
    crate::events::of_user(user, CONNECTION_CREATED, data)
}

/// GET /v2/user/providers/{user_id}: the user's connections, oldest first.
pub async fn list(deps: &Deps, team: TeamId, user_id: UserId) -> Result<UserConnections, DomainError> {
    users::load_active(deps, team, user_id).await?;
    let mut records = load_all(deps, user_id).await?;
    records.sort_by(|a, b| a.0.created_on.cmp(&b.0.created_on).then_with(|| a.0.provider.cmp(&b.0.provider)));
    Ok(UserConnections { providers: records.iter().map(|(r, _)| r.to_wire(deps)).collect() })
}

/// Every connection item of the user with its version.
pub async fn load_all(deps: &Deps, user_id: UserId) -> Result<Vec<(ConnectionRecord, u64)>, DomainError> {
    let q = Query::partition(keys::user_partition(user_id)).prefix(keys::linking::CONNECTION_PREFIX);
    query_all(deps.table.as_ref(), q, 1_000)
        .await?
        .iter()
        .map(|i| Ok((i.decode::<ConnectionRecord>()?, i.version)))
        .collect()
}

/// DELETE /v2/user/{user_id}/{provider}: removes the connection now and tells the provider.
pub async fn deregister(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    provider: &str,
) -> Result<(), DomainError> {
    let info = known_provider(provider)?;
    for _ in 0..TRIES {
        let (user, user_version) = users::load_active(deps, team, user_id).await?;
        let Some((conn, version)) = load_connection(deps, user_id, &info.slug).await? else {
            return Err(DomainError::NotFound(format!("User {user_id} has no connection to {provider}.")));
        };
        let mut next_user = user.clone();
        next_user.connections.retain(|c| c.provider != info.slug);
        let pending = Pending::new(deps, team, user_id, std::slice::from_ref(&conn))?;
        let mut ops = vec![
            WriteOp::Delete { key: conn.key(), condition: Condition::VersionIs(version) },
            WriteOp::Put {
                item: next_user.to_item(user_version + 1),
                condition: Condition::VersionIs(user_version),
            },
            WriteOp::Delete {
                key: keys::linking::provider_account(team, &conn.provider, &conn.external_user_id, user_id),
                condition: Condition::None,
            },
        ];
        ops.extend(pending.write_op());
        let counter = ops.len();
        ops.push(users::listed_change(team, user_id));
        match deps.table.transact(ops).await {
            Ok(()) => {
                tracing::info!(team_id = %team, user_id = %user_id, provider, "connection removed");
                pending.attempt(deps).await;
                return Ok(());
            }
            Err(StoreError::ConditionFailed { op }) => {
                users::counter_made_sure_of(deps, team, op, counter).await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(DomainError::Busy("the user is being changed concurrently, retry".into()))
}

/// The writes removing every connection of a user (with their markers) and storing their
/// pending revokes (one item: at most 2 * MAX_CONNECTIONS + 1 writes), for user deletion, and
/// the pending revokes, to attempt once the writes are done.
pub(crate) async fn removal(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
) -> Result<(Vec<WriteOp>, Pending), DomainError> {
    let conns: Vec<ConnectionRecord> = load_all(deps, user_id).await?.into_iter().map(|(c, _)| c).collect();
    let mut ops = Vec::with_capacity(conns.len() * 2);
    for c in &conns {
        ops.push(WriteOp::Delete { key: c.key(), condition: Condition::None });
        ops.push(WriteOp::Delete {
            key: keys::linking::provider_account(team, &c.provider, &c.external_user_id, user_id),
            condition: Condition::None,
        });
    }
    let pending = Pending::new(deps, team, user_id, &conns)?;
    ops.extend(pending.write_op());
    Ok((ops, pending))
}
