//! What a refresh records on a connection: a connection whose access the provider refused is
//! marked in error (the refresh itself is the poll of each connection, run by the lifecycle).

use wearlab_models::{ConnectionErrorDetails, ConnectionStatus};

use super::connections::ConnectionRecord;
use crate::Deps;
use crate::ports::providers::{ProviderAccount, ProviderError};
use crate::ports::{Condition, StoreError};

const TRIES: usize = 4;

/// Marks the connection in error when `error` says its access is gone (revoked or refused
/// credentials); other errors leave it as it is.
pub async fn record_refusal(deps: &Deps, conn: &ConnectionRecord, error: &ProviderError) {
    if !matches!(error, ProviderError::Revoked(_) | ProviderError::CredentialError(_)) {
        return;
    }
    mark_error(deps, conn, error.link_error_type().to_string(), error.to_string()).await;
}

/// Marks the connection in error because its provider failed `failures` tries in a row (a
/// pull's retry budget): it is no longer pulled until the user links it again, and the team
/// hears it as `provider.connection.error` with the error's `error_type`.
pub async fn record_failure(deps: &Deps, conn: &ConnectionRecord, error: &ProviderError, failures: u32) {
    let message = format!("The provider failed {failures} tries in a row: {error}");
    mark_error(deps, conn, error.link_error_type().to_string(), message).await;
}

/// The `error_type` of a connection whose user took Wearlab's access away at the provider.
pub const DEAUTHORIZED: &str = "user_deauthorized";

/// Marks the connection in error because its user deauthorised Wearlab at the provider (a
/// push said so): it is no longer pulled, and the team hears it as `provider.connection.error`
/// with `error_type` [`DEAUTHORIZED`]. Nothing is revoked: the provider ended the grant itself.
pub async fn record_deauthorization(deps: &Deps, conn: &ConnectionRecord) {
    let message = "The user removed Wearlab's access at the provider.".to_owned();
    mark_error(deps, conn, DEAUTHORIZED.to_owned(), message).await;
}

async fn mark_error(deps: &Deps, conn: &ConnectionRecord, error_type: String, error_message: String) {
    let details = ConnectionErrorDetails { error_type, error_message, created_on: deps.now() };
    update(deps, conn, |c| {
        c.status = ConnectionStatus::Error;
        c.error_details = Some(details.clone());
    })
    .await;
    announce_error(deps, conn, &details).await;
}

/// `provider.connection.error`, best effort: the connection's status says it too.
async fn announce_error(deps: &Deps, conn: &ConnectionRecord, details: &ConnectionErrorDetails) {
    let Ok(Some((user, _))) = crate::users::load(deps, conn.team_id, conn.user_id).await else { return };
    let event = crate::events::lifecycle::connection_error(
        &user,
        &conn.provider,
        &details.error_type,
        details.created_on,
    );
    if let Err(e) = deps.bus.publish(vec![event]).await {
        tracing::warn!(user_id = %conn.user_id, provider = conn.provider, error = %e, "connection error not announced");
    }
}

/// Read-modify-write of a connection, retried on a lost race; a connection removed meanwhile
/// stays removed.
async fn update(deps: &Deps, conn: &ConnectionRecord, change: impl Fn(&mut ConnectionRecord)) {
    let key = conn.key();
    for _ in 0..TRIES {
        let item = match deps.table.get(&key).await {
            Ok(Some(item)) => item,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(user_id = %conn.user_id, provider = conn.provider, error = %e, "connection not updated");
                return;
            }
        };
        let Ok(mut current) = item.decode::<ConnectionRecord>() else { return };
        if current.created_on != conn.created_on {
            return; // relinked meanwhile: this refresh's state belongs to the old connection
        }
        change(&mut current);
        match deps.table.put(current.to_item(item.version + 1), Condition::VersionIs(item.version)).await {
            Ok(()) => return,
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => {
                tracing::warn!(user_id = %conn.user_id, provider = conn.provider, error = %e, "connection not updated");
                return;
            }
        }
    }
}

/// Credentials this close to their expiry are refreshed first: a token that expires between
/// the check and the provider's answer would cost a refused call.
const REFRESH_MARGIN_SECS: i64 = 60;
/// How long a refresh lease holds: past it, a crashed holder's lease is taken over.
const LEASE_SECS: i64 = 30;
/// How often a worker waiting for another's refresh looks at the connection again.
const WAIT_STEP: std::time::Duration = std::time::Duration::from_millis(50);
/// Bounds the wait (about the lease's length); then the caller retries later.
const MAX_WAITS: usize = 600;

/// Credentials that work now. Expired (or expiring within a minute) ones, or the access token `refused` by the provider (its
/// 401), are refreshed by exactly one worker at a time: providers such as Oura take each
/// refresh token once, so two concurrent refreshes would kill the connection. The worker that
/// takes the connection's refresh lease (a conditional write) refreshes and saves; the others
/// wait and read what it saved.
pub async fn usable_account(
    deps: &Deps,
    conn: &ConnectionRecord,
    refused: Option<&crate::common::crypto::Secret>,
) -> Result<ProviderAccount, ProviderError> {
    let stale = |a: &ProviderAccount| {
        a.credentials
            .expires_at
            .is_some_and(|t| t <= deps.now() + chrono::Duration::seconds(REFRESH_MARGIN_SECS))
            || refused.is_some_and(|r| *r == a.credentials.access_token)
    };
    for _ in 0..MAX_WAITS {
        let current = reload(deps, conn).await?;
        let account = current.account(deps).map_err(api)?;
        if !stale(&account) {
            return Ok(account);
        }
        let Some(lease) = take_lease(deps, &current).await? else {
            tokio::time::sleep(WAIT_STEP).await;
            continue;
        };
        // Under the lease, read again: the previous holder may have saved just now.
        let result = match reload(deps, conn).await.and_then(|c| Ok((c.account(deps).map_err(api)?, c))) {
            Ok((account, _)) if !stale(&account) => Ok(account),
            Ok((account, current)) => refresh(deps, &current, account).await,
            Err(e) => Err(e),
        };
        if let Err(e) = deps.table.delete(&lease.key, Condition::VersionIs(lease.version)).await {
            tracing::warn!(user_id = %conn.user_id, provider = conn.provider, error = %e, "refresh lease not released");
        }
        return result;
    }
    Err(ProviderError::Api("the credentials are being refreshed elsewhere; retry".into()))
}

fn api(e: impl std::fmt::Display) -> ProviderError {
    ProviderError::Api(e.to_string())
}

/// The connection as stored now; gone or relinked is a refusal of this connection's access.
async fn reload(deps: &Deps, conn: &ConnectionRecord) -> Result<ConnectionRecord, ProviderError> {
    let item = deps.table.get(&conn.key()).await.map_err(api)?;
    match item.map(|i| i.decode::<ConnectionRecord>()) {
        Some(Ok(c)) if c.created_on == conn.created_on => Ok(c),
        Some(Err(e)) => Err(api(e)),
        _ => Err(ProviderError::Revoked("the connection was removed or relinked".into())),
    }
}

/// The refresh lease, if this worker got it (none held, or the holder's expired).
async fn take_lease(
    deps: &Deps,
    conn: &ConnectionRecord,
) -> Result<Option<crate::ports::Item>, ProviderError> {
    let key = crate::keys::linking::refresh_lease(conn.user_id, &conn.provider);
    let now = deps.now();
    let until = now + chrono::Duration::seconds(LEASE_SECS);
    let condition = match deps.table.get(&key).await.map_err(api)? {
        None => Condition::NotExists,
        Some(held) if held.expires_at.is_some_and(|t| t <= now.timestamp()) => {
            Condition::VersionIs(held.version)
        }
        Some(_) => return Ok(None),
    };
    let mut item = crate::ports::Item::new(key, serde_json::json!({}));
    item.expires_at = Some(until.timestamp());
    if let Condition::VersionIs(v) = condition {
        item.version = v + 1;
    }
    match deps.table.put(item.clone(), condition).await {
        Ok(()) => Ok(Some(item)),
        Err(StoreError::ConditionFailed { .. }) => Ok(None),
        Err(e) => Err(api(e)),
    }
}

/// Refreshes at the provider with the app that issued the credentials and saves the result on
/// the connection (retried on lost races: a used single-use refresh token cannot be got back).
async fn refresh(
    deps: &Deps,
    conn: &ConnectionRecord,
    account: ProviderAccount,
) -> Result<ProviderAccount, ProviderError> {
    let client = conn.issuing_client(deps).await.map_err(api)?;
    let fresh =
        deps.providers.refresh_credentials(&conn.provider, client.as_ref(), &account.credentials).await?;
    update(deps, conn, |c| c.set_credentials(deps, &fresh)).await;
    Ok(ProviderAccount { credentials: fresh, ..account })
}
