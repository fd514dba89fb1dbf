//! POST /v2/link/bulk_export: the team's connections to a provider made with its own OAuth
//! app, as connection recipes (the same shape bulk import takes), a page at a time.

use wearlab_models::ConnectionStatus;
use wearlab_models::bulk::{BulkExportBody, ConnectionRecipe};

use super::{bulk_provider, check_user_ids};
use crate::Deps;
use crate::common::error::{DomainError, Found};
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::ProviderInfo;
use crate::keys;
use crate::linking::connections;
use crate::linking::team_apps;
use crate::ports::{Cursor, Query, StoreError};
use crate::users;

/// Connections looked at per page (a page may hold fewer recipes: other apps' are skipped).
pub const PAGE: u32 = 100;
/// Most user ids one export names.
pub const MAX_USER_IDS: usize = 1_000;

pub struct ExportRequest {
    provider: &'static ProviderInfo,
    user_ids: Option<Vec<UserId>>,
    cursor: Option<Cursor>,
}

impl ExportRequest {
    pub fn parse(body: BulkExportBody) -> Result<Self, DomainError> {
        let provider = bulk_provider(&body.provider)?;
        let user_ids =
            body.user_ids.as_deref().map(|ids| check_user_ids(ids, Some(MAX_USER_IDS))).transpose()?;
        let cursor =
            match body.next_token.as_deref() {
                Some(t) if user_ids.is_some() => {
                    return Err(DomainError::invalid(
                        &["next_token"],
                        format!("an export by user_ids is one page; next_token {t:.16} does not apply"),
                        "value_error",
                    ));
                }
                Some(t) => Some(Cursor::decode(t).map_err(|_| {
                    DomainError::invalid(&["next_token"], "invalid next_token", "value_error")
                })?),
                None => None,
            };
        Ok(Self { provider, user_ids, cursor })
    }
}

/// One page of recipes and the token of the next.
pub async fn export(
    deps: &Deps,
    team: TeamId,
    req: ExportRequest,
) -> Result<(Vec<ConnectionRecipe>, Option<String>), DomainError> {
    let slug = req.provider.slug.as_str();
    let Some(client) = team_apps::team_client(deps, team, slug).await? else {
        return Err(DomainError::Rejected(format!(
            "The team has no OAuth app for {slug}: only connections made with it can be exported."
        )));
    };
    let (users, next) = match req.user_ids {
        Some(ids) => (ids, None),
        None => {
            let team_pk = keys::team(team).pk;
            let prefix = keys::linking::provider_accounts_prefix(slug);
            if let Some(c) = &req.cursor
                && (c.pk != team_pk || !c.sk.starts_with(&prefix))
            {
                return Err(StoreError::InvalidCursor.into());
            }
            let page = deps
                .table
                .query(Query::partition(team_pk).prefix(prefix).limit(PAGE).after(req.cursor))
                .await?;
            let ids =
                page.items.iter().filter_map(|i| keys::linking::provider_account_user(&i.key.sk)).collect();
            (ids, page.next_cursor.map(|c| c.encode()))
        }
    };
    let mut out = Vec::new();
    for user in users {
        if users::load_active(deps, team, user).await.found()?.is_none() {
            continue;
        }
        let Some(conn) = connections::find(deps, user, slug).await? else { continue };
        if conn.team_app_client_id.as_deref() != Some(client.client_id.as_str())
            || conn.status == ConnectionStatus::Error
        {
            continue;
        }
        let creds = conn.credentials(deps)?;
        out.push(ConnectionRecipe {
            user_id: user.as_uuid(),
            access_token: creds.access_token.expose().to_owned(),
            refresh_token: creds.refresh_token.as_ref().map(|t| t.expose().to_owned()).unwrap_or_default(),
            provider_id: conn.external_user_id.clone(),
            expires_at: creds.expires_at.map_or(0, |t| t.timestamp()),
            oauth_scopes: creds.scopes.clone(),
        });
    }
    tracing::info!(team_id = %team, provider = slug, exported = out.len(), "connections exported");
    Ok((out, next))
}
