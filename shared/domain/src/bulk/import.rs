//! POST /v2/link/bulk_import: existing connections, made with the team's own OAuth app at the
//! provider, imported without the end users linking again.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::ValidationIssue;
use wearlab_models::bulk::{BulkImportBody, BulkOpType, ConnectionRecipe};

use super::{BulkMessage, bulk_provider};
use crate::Deps;
use crate::bulk::ledger::{OpRecord, OpRef, ResultRecord, abandon, begin, record};
use crate::common::crypto::Sealed;
use crate::common::crypto::Secret;
use crate::common::error::{DomainError, Found, issue};
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::ProviderInfo;
use crate::common::throttle::{self, Decision};
use crate::keys::bulk as keys;
use crate::linking::connections::{self, Committed, NewConnection};
use crate::linking::team_apps;
use crate::ports::providers::{OauthClient, ProviderAccount, ProviderCredentials, ProviderError};
use crate::ports::{MESSAGE_BUDGET, Outcome, Outgoing, Queue, QueueName};

/// Longest token and provider user id accepted.
const MAX_TOKEN: usize = 8 * 1024;
const MAX_PROVIDER_ID: usize = 256;
const MAX_SCOPES: usize = 100;
const MAX_SCOPE: usize = 256;
/// Validation issues reported at most (the rest are alike).
const MAX_ISSUES: usize = 100;
/// Most recipes in one message, whatever their size.
const MAX_PER_MESSAGE: usize = 1_000;
/// Recipes imported at once by a worker.
const CONCURRENCY: usize = 16;

/// A recipe as it travels (sealed) on the queue: an array, not an object, to fit more per message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Packed(UserId, String, String, String, i64, Vec<String>);

/// A checked import request.
pub struct ImportRequest {
    provider: &'static ProviderInfo,
    recipes: Vec<Packed>,
    pub wait_for_completion: bool,
}

impl ImportRequest {
    pub fn parse(body: BulkImportBody) -> Result<Self, DomainError> {
        let provider = bulk_provider(&body.provider)?;
        let mut issues: Vec<ValidationIssue> = Vec::new();
        if body.connections.is_empty() {
            issues.push(issue(&["connections"], "give at least one connection", "value_error"));
        }
        let mut seen = HashSet::with_capacity(body.connections.len());
        for (i, r) in body.connections.iter().enumerate() {
            if issues.len() >= MAX_ISSUES {
                break;
            }
            check(i, r, &mut seen, &mut issues);
        }
        if !issues.is_empty() {
            return Err(DomainError::Validation(issues));
        }
        let recipes = body
            .connections
            .into_iter()
            .map(|r| {
                Packed(
                    UserId::from_uuid(r.user_id),
                    r.access_token,
                    r.refresh_token,
                    r.provider_id,
                    r.expires_at,
                    r.oauth_scopes,
                )
            })
            .collect();
        Ok(Self { provider, recipes, wait_for_completion: body.wait_for_completion })
    }
}

fn check(i: usize, r: &ConnectionRecipe, seen: &mut HashSet<uuid::Uuid>, issues: &mut Vec<ValidationIssue>) {
    let at = i.to_string();
    let mut bad =
        |field: &str, msg: String| issues.push(issue(&["connections", &at, field], msg, "value_error"));
    let printable = |s: &str| !s.chars().any(char::is_control);
    if !seen.insert(r.user_id) {
        bad("user_id", format!("user_id {} appears more than once", r.user_id));
    }
    if r.access_token.trim().is_empty() || r.access_token.len() > MAX_TOKEN || !printable(&r.access_token) {
        bad("access_token", format!("access_token must be 1-{MAX_TOKEN} printable characters"));
    }
    if r.refresh_token.len() > MAX_TOKEN || !printable(&r.refresh_token) {
        bad("refresh_token", format!("refresh_token must be at most {MAX_TOKEN} printable characters"));
    }
    if r.provider_id.trim().is_empty() || r.provider_id.len() > MAX_PROVIDER_ID || !printable(&r.provider_id)
    {
        bad("provider_id", format!("provider_id must be 1-{MAX_PROVIDER_ID} printable characters"));
    }
    if r.expires_at < 0 || DateTime::<Utc>::from_timestamp(r.expires_at, 0).is_none() {
        bad("expires_at", "expires_at must be Unix seconds (0: no known expiry)".into());
    }
    if r.oauth_scopes.len() > MAX_SCOPES || r.oauth_scopes.iter().any(|s| s.is_empty() || s.len() > MAX_SCOPE)
    {
        bad("oauth_scopes", format!("at most {MAX_SCOPES} scopes of 1-{MAX_SCOPE} characters"));
    }
}

fn no_app(provider: &str) -> DomainError {
    DomainError::Rejected(format!(
        "The team has no OAuth app for {provider}: set it with PUT /v2/team/oauth_app/{provider} before importing."
    ))
}

fn seal_context(op: &OpRef, chunk: u32) -> String {
    format!("bulk|{}|{chunk}", op.op_id)
}

/// Splits recipes into messages that fit `MESSAGE_BUDGET` once sealed (base64 grows 4/3).
fn pack(recipes: Vec<Packed>) -> Vec<Vec<Packed>> {
    let budget = MESSAGE_BUDGET * 3 / 4 - 1024;
    let mut out: Vec<Vec<Packed>> = Vec::new();
    let mut current = Vec::new();
    let mut bytes = 2;
    for r in recipes {
        let size = serde_json::to_vec(&r).map(|v| v.len()).unwrap_or(MAX_TOKEN * 2) + 1;
        if !current.is_empty() && (bytes + size > budget || current.len() >= MAX_PER_MESSAGE) {
            out.push(std::mem::take(&mut current));
            bytes = 2;
        }
        bytes += size;
        current.push(r);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Records the operation and queues its recipes (sealed: they carry tokens) on the bulk queue
/// (`queue`). The answer does not wait for any import.
pub async fn submit(
    deps: &Deps,
    queue: &dyn Queue,
    team: TeamId,
    req: ImportRequest,
) -> Result<OpRef, DomainError> {
    let slug = req.provider.slug.as_str();
    if team_apps::team_client(deps, team, slug).await?.is_none() {
        return Err(no_app(slug));
    }
    let total = req.recipes.len() as u64;
    let op = begin(deps, team, BulkOpType::LinkBulkImport, slug, total).await?;
    let messages: Vec<Outgoing> = pack(req.recipes)
        .into_iter()
        .enumerate()
        .map(|(n, chunk)| {
            let n = n as u32;
            let recipes = deps.data_key.seal_json(&chunk, &seal_context(&op, n));
            Outgoing::now(
                BulkMessage::Import { op: op.clone(), chunk: n, items: chunk.len() as u32, recipes }.body(),
            )
        })
        .collect();
    let count = messages.len();
    if let Err(e) = queue.send(QueueName::Bulk, messages).await {
        abandon(deps, &op, total).await;
        return Err(DomainError::Busy(format!("the import could not be queued ({e}); submit it again")));
    }
    tracing::info!(team_id = %team, op_id = %op.op_id, messages = count, "bulk import queued");
    Ok(op)
}

/// How one recipe ended.
enum Imported {
    Ok(UserId),
    Failed(UserId, String),
    /// The provider's limit for the team's app is reached: the message waits this long.
    Later(std::time::Duration),
}

/// Imports the recipes of one message. A provider that cannot tell whether a token is the
/// team's fails the message (the queue retries it; recipes imported already are skipped).
pub(crate) async fn import_chunk(
    deps: &Deps,
    op: &OpRef,
    chunk: u32,
    items: u32,
    sealed: &Sealed,
) -> Result<Outcome, DomainError> {
    let result_key = keys::chunk_result(&op.op_id, chunk);
    if deps.table.get(&result_key).await?.is_some() {
        return Ok(Outcome::Ack); // a redelivery of a recorded message
    }
    let Ok(recipes) = deps.data_key.open_json::<Vec<Packed>>(sealed, &seal_context(op, chunk)) else {
        tracing::error!(op_id = %op.op_id, chunk, "bulk import message does not open with the data key");
        record(
            deps,
            op,
            vec![(result_key, ResultRecord { failed_unnamed: u64::from(items), ..Default::default() })],
            false,
        )
        .await?;
        return Ok(Outcome::Ack);
    };
    let Some(header) = deps.table.get(&op.key()).await? else { return Ok(Outcome::Ack) };
    let provider: String = header.decode::<OpRecord>()?.provider;
    let Some(client) = team_apps::team_client(deps, op.team_id, &provider).await? else {
        // The team removed its app meanwhile: nothing more can be imported.
        let failed = recipes.iter().map(|r| r.0).collect();
        tracing::warn!(op_id = %op.op_id, chunk, provider, "bulk import aborted: the team's OAuth app is gone");
        record(deps, op, vec![(result_key, ResultRecord { failed, ..Default::default() })], true).await?;
        return Ok(Outcome::Ack);
    };
    let provider: &'static ProviderInfo = crate::linking::known_provider(&provider)?;
    let mut tasks = tokio::task::JoinSet::new();
    let mut pending = recipes.into_iter();
    let mut result = ResultRecord::default();
    let mut transient = None;
    let mut later = None;
    loop {
        while tasks.len() < CONCURRENCY {
            let Some(r) = pending.next() else { break };
            let (deps, op, client) = (deps.clone(), op.clone(), client.clone());
            tasks.spawn(async move { import_one(&deps, &op, provider, &client, r).await });
        }
        let Some(done) = tasks.join_next().await else { break };
        match done {
            Ok(Ok(Imported::Ok(u))) => result.ok.push(u),
            Ok(Ok(Imported::Failed(u, why))) => result.fail(u, why),
            Ok(Ok(Imported::Later(wait))) => later = later.max(Some(wait)),
            Ok(Err(e)) => transient = Some(e.to_string()),
            Err(e) => transient = Some(format!("import task failed: {e}")),
        }
    }
    if !result.ok.is_empty() || transient.is_some() || later.is_some() {
        // Kept pages of the team's users learn of the new connections before the message
        // counts as done (or is tried again).
        crate::users::listed_changed(deps, op.team_id).await?;
    }
    if let Some(reason) = transient {
        // Imported recipes are marked with the operation; the retry skips them.
        return Ok(Outcome::Fail(reason));
    }
    if let Some(wait) = later {
        // Waiting for the provider's window is no failure: the message comes back after it,
        // and skips what it imported.
        return Ok(Outcome::RetryAfter(wait));
    }
    tracing::info!(op_id = %op.op_id, chunk, imported = result.ok.len(), failed = result.failed.len(), "bulk import message done");
    record(deps, op, vec![(result_key, result)], false).await?;
    Ok(Outcome::Ack)
}

async fn import_one(
    deps: &Deps,
    op: &OpRef,
    provider: &'static ProviderInfo,
    client: &OauthClient,
    r: Packed,
) -> Result<Imported, DomainError> {
    let Packed(user_id, access, refresh, provider_id, expires_at, scopes) = r;
    let slug = provider.slug.as_str();
    if let Some(why) = crate::linking::not_linkable(deps.providers.as_ref(), slug) {
        return Ok(Imported::Failed(user_id, why));
    }
    // Unknown, deleted and other teams' users fail before the provider is asked anything.
    if crate::users::load_active(deps, op.team_id, user_id).await.found()?.is_none() {
        return Ok(Imported::Failed(user_id, "no active user of the team has this user_id".into()));
    }
    if connections::find(deps, user_id, slug).await?.is_some_and(|c| c.imported_by(op.team_id, &op.op_id)) {
        return Ok(Imported::Ok(user_id)); // imported by an earlier delivery
    }
    let credentials = ProviderCredentials {
        access_token: Secret::new(access),
        refresh_token: (!refresh.is_empty()).then(|| Secret::new(refresh)),
        expires_at: (expires_at > 0).then(|| DateTime::<Utc>::from_timestamp(expires_at, 0)).flatten(),
        scopes,
    };
    // The check is a request to the provider on the team's app: within its published limits.
    let limits = deps.providers.app_limits(slug, &credentials);
    match throttle::take_app(deps, slug, &client.client_id, &limits).await? {
        Decision::Granted => {}
        Decision::Wait(wait) => return Ok(Imported::Later(wait)),
    }
    let account = ProviderAccount { external_user_id: provider_id, credentials };
    let credentials = match deps.providers.verify_app_token(slug, client, &account).await {
        Ok(credentials) => credentials,
        Err(e @ ProviderError::Api(_)) => return Err(DomainError::Busy(format!("{slug}: {e}"))),
        Err(ProviderError::RateLimited { retry_after_secs }) => {
            return Ok(Imported::Later(std::time::Duration::from_secs(retry_after_secs.max(1))));
        }
        Err(e) => {
            tracing::info!(op_id = %op.op_id, user_id = %user_id, provider = slug, error_type = %e.link_error_type(), "recipe refused");
            return Ok(Imported::Failed(user_id, format!("{slug} refused the tokens: {e}")));
        }
    };
    let new = NewConnection {
        provider,
        account: ProviderAccount { credentials, ..account },
        demo: false,
        token: None,
        extra_ops: vec![],
        team_app_client_id: Some(client.client_id.clone()),
        import_op: Some(op.op_id.clone()),
    };
    match connections::commit(deps, op.team_id, user_id, new).await {
        Ok(Committed::Connected { .. }) => Ok(Imported::Ok(user_id)),
        Ok(Committed::UserGone) => Ok(Imported::Failed(user_id, "the user was deleted meanwhile".into())),
        Ok(Committed::Duplicate) => Ok(Imported::Failed(
            user_id,
            "this provider account is connected to another user of the team, and the team rejects duplicate \
             connections"
                .into(),
        )),
        Ok(Committed::TokenConsumed) => Ok(Imported::Failed(user_id, "a concurrent change won".into())),
        // Too many connections: a refusal, not a retry.
        Err(DomainError::Rejected(why)) => Ok(Imported::Failed(user_id, why)),
        Err(e) => Err(e),
    }
}

/// A dead-lettered import message: recipes imported by an earlier delivery count as imported,
/// the rest as failed.
pub(crate) async fn give_up(
    deps: &Deps,
    op: &OpRef,
    chunk: u32,
    items: u32,
    sealed: &Sealed,
) -> Result<(), DomainError> {
    let result_key = keys::chunk_result(&op.op_id, chunk);
    let mut result = ResultRecord::default();
    match deps.data_key.open_json::<Vec<Packed>>(sealed, &seal_context(op, chunk)) {
        Ok(recipes) => {
            let provider = match deps.table.get(&op.key()).await? {
                Some(item) => item.decode::<OpRecord>()?.provider,
                None => return Ok(()),
            };
            for r in recipes {
                let done = connections::find(deps, r.0, &provider)
                    .await?
                    .is_some_and(|c| c.imported_by(op.team_id, &op.op_id));
                if done {
                    result.ok.push(r.0)
                } else {
                    result
                        .fail(r.0, "the import message failed repeatedly (the provider could not be reached)")
                }
            }
        }
        Err(_) => result.failed_unnamed = u64::from(items),
    }
    tracing::warn!(op_id = %op.op_id, chunk, failed = result.failed.len(), "bulk import message dead-lettered");
    if !result.ok.is_empty() {
        crate::users::listed_changed(deps, op.team_id).await?;
    }
    record(deps, op, vec![(result_key, result)], false).await?;
    Ok(())
}
