//! POST /v2/link/bulk_trigger_historical_pull: starts the historical pull of many users'
//! connections to one provider. Each pull waits for the team's throttle of the provider (see
//! `crate::common::throttle`); a user counts as triggered when its pull starts.

use wearlab_models::ConnectionStatus;
use wearlab_models::bulk::{BulkOpType, BulkTriggerBody};

use super::{BulkMessage, bulk_provider, check_user_ids};
use crate::Deps;
use crate::bulk::ledger::{OpRecord, OpRef, ResultRecord, abandon, begin, record};
use crate::common::error::{DomainError, Found};
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::ProviderInfo;
use crate::keys::bulk as keys;
use crate::linking::connections;
use crate::pipeline::{Job, PullJob, PullMessage};
use crate::ports::{Key, Outcome, Outgoing, Queue, QueueName};
use crate::users;

/// Users per message: the worker records the users it cannot trigger in one transaction
/// (with the operation's header), which holds at most 100 writes.
pub const USERS_PER_MESSAGE: usize = 90;

pub struct TriggerRequest {
    provider: &'static ProviderInfo,
    user_ids: Vec<UserId>,
    pub wait_for_completion: bool,
}

impl TriggerRequest {
    pub fn parse(body: BulkTriggerBody) -> Result<Self, DomainError> {
        let provider = bulk_provider(&body.provider)?;
        let user_ids = check_user_ids(&body.user_ids, None)?;
        Ok(Self { provider, user_ids, wait_for_completion: body.wait_for_completion })
    }
}

/// Records the operation and queues its users on the bulk queue (`queue`).
pub async fn submit(
    deps: &Deps,
    queue: &dyn Queue,
    team: TeamId,
    req: TriggerRequest,
) -> Result<OpRef, DomainError> {
    let slug = req.provider.slug.as_str();
    let total = req.user_ids.len() as u64;
    let op = begin(deps, team, BulkOpType::LinkBulkHistoricalTrigger, slug, total).await?;
    let messages: Vec<Outgoing> = req
        .user_ids
        .chunks(USERS_PER_MESSAGE)
        .enumerate()
        .map(|(n, ids)| {
            Outgoing::now(
                BulkMessage::Trigger { op: op.clone(), chunk: n as u32, user_ids: ids.to_vec() }.body(),
            )
        })
        .collect();
    if let Err(e) = queue.send(QueueName::Bulk, messages).await {
        abandon(deps, &op, total).await;
        return Err(DomainError::Busy(format!("the trigger could not be queued ({e}); submit it again")));
    }
    Ok(op)
}

/// The pull this operation starts for a user: the same id on every delivery, so a repeated
/// message starts no second pull.
fn pull_id(op: &OpRef) -> String {
    format!("bulk-{}", op.op_id)
}

fn failed_results(op: &OpRef, users: &[(UserId, String)]) -> Vec<(Key, ResultRecord)> {
    users
        .iter()
        .map(|(u, why)| (keys::user_result(&op.op_id, *u), ResultRecord::failed_because(*u, why.as_str())))
        .collect()
}

/// Why `user` cannot have its pull of `provider` triggered, if it cannot.
async fn not_triggerable(
    deps: &Deps,
    team: TeamId,
    user: UserId,
    provider: &str,
) -> Result<Option<String>, DomainError> {
    if users::load_active(deps, team, user).await.found()?.is_none() {
        return Ok(Some("no active user of the team has this user_id".into()));
    }
    let Some(conn) = connections::find(deps, user, provider).await? else {
        return Ok(Some(format!("the user has no connection to {provider}")));
    };
    if conn.status != ConnectionStatus::Connected {
        return Ok(Some(format!("the user's connection to {provider} is {}", conn.status)));
    }
    Ok(None)
}

/// Queues the pulls of one message's users on the pull queue (`queue`); users without an active, unpaused connection to
/// the provider fail at once, and so does everyone when the provider is demo only here (a
/// simulated connection kept from before is not pulled in bulk as if it were real).
pub(crate) async fn trigger_chunk(
    deps: &Deps,
    queue: &dyn Queue,
    op: &OpRef,
    user_ids: &[UserId],
) -> Result<Outcome, DomainError> {
    let Some(header) = deps.table.get(&op.key()).await? else { return Ok(Outcome::Ack) };
    let provider = header.decode::<OpRecord>()?.provider;
    let demo_only = crate::linking::not_linkable(deps.providers.as_ref(), &provider);
    let mut jobs = Vec::new();
    let mut failed = Vec::new();
    for &user in user_ids {
        let why = match &demo_only {
            Some(why) => Some(why.clone()),
            None => not_triggerable(deps, op.team_id, user, &provider).await?,
        };
        if let Some(why) = why {
            failed.push((user, why));
            continue;
        }
        let job = PullJob {
            team_id: op.team_id,
            user_id: user,
            provider: provider.clone(),
            pull_id: pull_id(op),
            bulk_op: Some(op.clone()),
        };
        jobs.push(Outgoing::now(PullMessage::Job(Job::Pull(job)).body()));
    }
    let queued = jobs.len();
    if !jobs.is_empty() {
        queue.send(QueueName::Pull, jobs).await.map_err(|e| DomainError::Busy(e.to_string()))?;
    }
    record(deps, op, failed_results(op, &failed), false).await?;
    tracing::info!(op_id = %op.op_id, queued, failed = failed.len(), "bulk trigger message done");
    Ok(Outcome::Ack)
}

/// A dead-lettered trigger message: its users without a result yet fail.
pub(crate) async fn give_up(deps: &Deps, op: &OpRef, user_ids: &[UserId]) -> Result<(), DomainError> {
    tracing::warn!(op_id = %op.op_id, users = user_ids.len(), "bulk trigger message dead-lettered");
    // `record` drops results that exist (pulls that started meanwhile).
    let failed: Vec<(UserId, String)> =
        user_ids.iter().map(|u| (*u, "the trigger message failed repeatedly".to_owned())).collect();
    record(deps, op, failed_results(op, &failed), false).await.map(|_| ())
}
