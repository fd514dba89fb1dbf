//! What a refresh records on a connection: a connection whose access the provider refused is
//! marked in error (the refresh itself is the poll of each connection, run by the lifecycle).

use wearlab_models::{ConnectionErrorDetails, ConnectionStatus};

use super::connections::ConnectionRecord;
use crate::Deps;
use crate::ports::providers::ProviderError;
use crate::ports::{Condition, StoreError};

const TRIES: usize = 4;

/// Marks the connection in error when `error` says its access is gone (revoked or refused
/// credentials); other errors leave it as it is.
pub async fn record_refusal(deps: &Deps, conn: &ConnectionRecord, error: &ProviderError) {
    if !matches!(error, ProviderError::Revoked(_) | ProviderError::CredentialError(_)) {
        return;
    }
    let details = ConnectionErrorDetails {
        error_type: error.link_error_type().to_string(),
        error_message: error.to_string(),
        created_on: deps.now(),
    };
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
    let event = crate::lifecycle_events::connection_error(
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
