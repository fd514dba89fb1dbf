//! Refresh: every connected source's resources are fetched through the `Providers` port, up to
//! a deadline; what is not done by then is reported in progress and finishes in the
//! background (locally; on Lambda, background work only runs while the function is warm).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{Days, NaiveDate};
use wearlab_models::{ConnectionErrorDetails, ConnectionStatus, RefreshResult};

use super::connections::{self, ConnectionRecord, SyncState};
use crate::Deps;
use crate::catalog::catalog;
use crate::error::DomainError;
use crate::ids::{TeamId, UserId};
use crate::ports::providers::{DateRange, ProviderAccount, ProviderError};
use crate::ports::{Condition, StoreError};
use crate::users;

/// Days fetched for a resource never fetched before.
pub const FIRST_REFRESH_DAYS: u64 = 30;
const TRIES: usize = 4;

/// The user's ingestion bounds.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    start: Option<NaiveDate>,
    end: Option<NaiveDate>,
}

fn entry(provider: &str, resource: &str) -> String {
    format!("{provider}/{resource}")
}

/// POST /v2/user/refresh/{user_id}.
pub async fn refresh(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    timeout: Duration,
) -> Result<RefreshResult, DomainError> {
    let (user, _) = users::load_active(deps, team, user_id).await?;
    let bounds = Bounds { start: user.ingestion_start, end: user.ingestion_end };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, bool)>();
    let mut expected = Vec::new();
    let mut done: HashMap<String, bool> = HashMap::new();
    for (conn, _) in connections::load_all(deps, user_id).await? {
        let resources: Vec<String> = catalog()
            .get(&conn.provider)
            .map(|p| p.data_resources().map(|r| r.as_str().to_owned()).collect())
            .unwrap_or_default();
        for r in &resources {
            expected.push(entry(&conn.provider, r));
        }
        if conn.status != ConnectionStatus::Connected {
            for r in &resources {
                done.insert(entry(&conn.provider, r), false);
            }
            continue;
        }
        let (deps, tx) = (deps.clone(), tx.clone());
        tokio::spawn(async move { refresh_connection(&deps, conn, resources, bounds, tx).await });
    }
    drop(tx);
    let deadline = tokio::time::Instant::now() + timeout;
    while let Ok(Some((e, ok))) = tokio::time::timeout_at(deadline, rx.recv()).await {
        done.insert(e, ok);
    }
    let mut result = RefreshResult {
        success: true,
        user_id: user_id.0,
        refreshed_sources: vec![],
        in_progress_sources: vec![],
        failed_sources: vec![],
    };
    for e in expected {
        match done.get(&e) {
            Some(true) => result.refreshed_sources.push(e),
            Some(false) => result.failed_sources.push(e),
            None => result.in_progress_sources.push(e),
        }
    }
    tracing::info!(team_id = %team, user_id = %user_id, refreshed = result.refreshed_sources.len(),
        in_progress = result.in_progress_sources.len(), failed = result.failed_sources.len(), "refresh");
    Ok(result)
}

async fn refresh_connection(
    deps: &Deps,
    conn: ConnectionRecord,
    resources: Vec<String>,
    bounds: Bounds,
    tx: tokio::sync::mpsc::UnboundedSender<(String, bool)>,
) {
    let provider = conn.provider.clone();
    let fail_all = |tx: &tokio::sync::mpsc::UnboundedSender<(String, bool)>| {
        for r in &resources {
            let _ = tx.send((entry(&provider, r), false));
        }
    };
    let mut account: ProviderAccount = match conn.account(deps) {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(user_id = %conn.user_id, provider, error = %e, "connection credentials unreadable");
            return fail_all(&tx);
        }
    };
    let now = deps.now();
    if account.credentials.expires_at.is_some_and(|t| t <= now) {
        match deps.providers.refresh_credentials(&provider, &account.credentials).await {
            Ok(fresh) => {
                account.credentials = fresh.clone();
                update(deps, &conn, |c| c.set_credentials(deps, &fresh)).await;
            }
            Err(e) => {
                tracing::warn!(user_id = %conn.user_id, provider, error_type = %e.link_error_type(), "token refresh failed");
                if matches!(e, ProviderError::Revoked(_) | ProviderError::CredentialError(_)) {
                    let details = ConnectionErrorDetails {
                        error_type: e.link_error_type().to_string(),
                        error_message: e.to_string(),
                        created_on: now,
                    };
                    update(deps, &conn, |c| {
                        c.status = ConnectionStatus::Error;
                        c.error_details = Some(details.clone());
                    })
                    .await;
                }
                return fail_all(&tx);
            }
        }
    }
    let today = now.date_naive();
    let mut synced = BTreeMap::new();
    for r in &resources {
        let start = conn
            .synced
            .get(r)
            .map(|s| s.through.min(today))
            .unwrap_or_else(|| today.checked_sub_days(Days::new(FIRST_REFRESH_DAYS)).unwrap_or(today));
        let start = bounds.start.map_or(start, |b| start.max(b));
        let end = bounds.end.map_or(today, |b| today.min(b));
        if start > end {
            let _ = tx.send((entry(&provider, r), true));
            continue;
        }
        match deps.providers.fetch(&provider, &account, r, DateRange { start, end }).await {
            Ok(data) => {
                synced.insert(
                    r.clone(),
                    SyncState { refreshed_at: now, through: end, records: data.records.len() },
                );
                let _ = tx.send((entry(&provider, r), true));
            }
            Err(e) => {
                tracing::warn!(user_id = %conn.user_id, provider, resource = %r, error_type = %e.link_error_type(), "fetch failed");
                let _ = tx.send((entry(&provider, r), false));
            }
        }
    }
    if !synced.is_empty() {
        update(deps, &conn, |c| c.synced.extend(synced.clone())).await;
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
