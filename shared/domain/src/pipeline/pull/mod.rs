//! Historical pulls and the periodic poll: the jobs of the pull queue and how a message of it
//! is handled, and what both share (the user and connection they work for, the credentials,
//! the gated fetch). The historical pull is in `historical`, the poll (and the deadline-bound
//! poll a refresh runs) in `poll`.

mod historical;
mod poll;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use wearlab_models::{ConnectionStatus, EventEnvelope, Resource};

use super::normalize::{Context, is_modelled};
use super::store;
use super::{Job, PullMessage};
use crate::Deps;
use crate::common::error::{DomainError, Found};
use crate::common::ids::{TeamId, TimeZoneId, UserId};
use crate::common::metrics;
use crate::common::provider_catalog::catalog;
use crate::common::throttle::{self, Decision};
use crate::keys::pipeline as keys;
use crate::linking::connections::{self, CONNECTION_CREATED, ConnectionRecord};
use crate::linking::refresh;
use crate::ports::providers::{
    DateRange, FetchedResource, ProviderAccount, ProviderError, Providers, RateWindow, RequestGate,
};
use crate::ports::{Outcome, Outgoing, Queue, QueueName};
use crate::users::{self, UserRecord};

pub use historical::{CHUNK_DAYS, CHUNK_RECORDS, FIRST_SERIES_CHUNK_DAYS, PROVIDER_FAILURE_BUDGET, pull};
pub use poll::{
    POLL_OVERLAP_DAYS, PUSHED_POLL_INTERVAL, PUSHES_TRUSTED_FOR, Polled, poll, poll_all, poll_pushed,
    poll_until,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PullJob {
    pub team_id: TeamId,
    pub user_id: UserId,
    pub provider: String,
    /// Names the pull: the same id is the same pull (duplicates are no-ops).
    pub pull_id: String,
    /// The bulk trigger that asked for this pull: told when it starts (or cannot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk_op: Option<crate::bulk::ledger::OpRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PollJob {
    pub team_id: TeamId,
    pub user_id: UserId,
    pub provider: String,
    /// The first day to fetch when the connection has no poll state yet (a refresh before its
    /// historical pull finished); without it such a connection is not polled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<NaiveDate>,
}

/// Queues a historical pull of the user's connection to `provider` (on demand) on `queue`.
/// Returns its id.
pub async fn start(
    deps: &Deps,
    queue: &dyn Queue,
    team: TeamId,
    user_id: UserId,
    provider: &str,
) -> Result<String, DomainError> {
    users::load_active(deps, team, user_id).await?;
    let Some(conn) = connections::find(deps, user_id, provider).await? else {
        return Err(DomainError::NotFound(format!("The user has no connection to {provider}.")));
    };
    if conn.status != ConnectionStatus::Connected {
        return Err(DomainError::Rejected(format!(
            "The user's connection to {provider} is {}: link it again to pull its history.",
            conn.status
        )));
    }
    if conn.from_phone() {
        return Err(DomainError::Rejected(format!(
            "{provider}'s data comes from the user's phone: the mobile SDK uploads its history, \
             there is nothing to pull."
        )));
    }
    let pull_id = format!("req-{}", deps.now().timestamp_micros());
    let job = PullJob {
        team_id: team,
        user_id,
        provider: provider.to_owned(),
        pull_id: pull_id.clone(),
        bulk_op: None,
    };
    send(queue, Job::Pull(job)).await?;
    Ok(pull_id)
}

async fn send(queue: &dyn Queue, job: Job) -> Result<(), DomainError> {
    queue
        .send(QueueName::Pull, vec![Outgoing::now(PullMessage::Job(job).body())])
        .await
        .map_err(|e| DomainError::Busy(e.to_string()))
}

/// Handles one message of the pull queue; the queue takes the polls a poll of every connection
/// sends.
pub async fn handle(deps: &Deps, queue: &dyn Queue, message: PullMessage) -> Outcome {
    let result = match message {
        PullMessage::Event(e) => on_event(deps, e).await,
        PullMessage::Job(Job::Pull(job)) => metered_pull(deps, &job).await,
        PullMessage::Job(Job::Poll(job)) => poll(deps, &job).await.map(|()| Outcome::Ack),
        PullMessage::Job(Job::PushedPoll(job)) => poll_pushed(deps, &job).await.map(|()| Outcome::Ack),
        PullMessage::Job(Job::PollAll {}) => poll_all(deps, queue).await.map(|_| Outcome::Ack),
    };
    result.unwrap_or_else(|e| Outcome::Fail(e.to_string()))
}

/// [`pull`], reported as a metric: how long this message took, and whether it failed.
async fn metered_pull(deps: &Deps, job: &PullJob) -> Result<Outcome, DomainError> {
    let started = deps.now();
    let result = pull(deps, job).await;
    let took = (deps.now() - started).num_milliseconds().max(0) as u64;
    metrics::pull_handled(&job.provider, took, matches!(result, Err(_) | Ok(Outcome::Fail(_))));
    result
}

/// `provider.connection.created` starts the connection's historical pull; other events are
/// not for this queue.
async fn on_event(deps: &Deps, e: EventEnvelope) -> Result<Outcome, DomainError> {
    if e.event_type != CONNECTION_CREATED {
        return Ok(Outcome::Ack);
    }
    let Some(provider) =
        e.data.get("provider").and_then(|p| p.get("slug").or(Some(p))).and_then(|p| p.as_str())
    else {
        return Ok(Outcome::Ack);
    };
    let user_id = UserId::from_uuid(e.user_id);
    let Some(conn) = connections::find(deps, user_id, provider).await? else { return Ok(Outcome::Ack) };
    // The phone sends its history itself (the SDKs' historical stage): there is no API to pull.
    if conn.from_phone() {
        tracing::info!(user_id = %user_id, provider, "no historical pull: the phone uploads its history");
        return Ok(Outcome::Ack);
    }
    // One pull per connection: a duplicate event names the same pull.
    let pull_id = format!("conn-{}", conn.created_on.timestamp_micros());
    let job = PullJob {
        team_id: TeamId::from_uuid(e.team_id),
        user_id,
        provider: provider.to_owned(),
        pull_id,
        bulk_op: None,
    };
    metered_pull(deps, &job).await
}

/// The user's active record of the team, else `None` (deleted or another team's: drop the work).
async fn active_user(deps: &Deps, team: TeamId, user: UserId) -> Result<Option<UserRecord>, DomainError> {
    Ok(users::load_active(deps, team, user).await.found()?.map(|(u, _)| u))
}

/// The resources a pull or poll of `provider` fetches on this deployment (those its adapter
/// fills where it has one: `Catalog::resources_on`), the profile first.
pub fn data_resources(providers: &dyn Providers, provider: &str) -> Vec<Resource> {
    let mut out = catalog().data_resources_on(providers, provider);
    out.retain(is_modelled);
    // The profile first: workouts need its age.
    out.sort_by_key(|r| *r != Resource::Profile);
    out
}

fn context(user: &UserRecord, provider: &str, birth_year: Option<i32>) -> Context {
    Context {
        user_id: user.user_id,
        provider: provider.to_owned(),
        fallback_tz: user
            .fallback_time_zone
            .as_ref()
            .and_then(|t| TimeZoneId::parse(&t.id))
            .unwrap_or_else(TimeZoneId::utc),
        birth_year,
        birth_date: user.fallback_birth_date.as_ref().map(|b| b.value),
    }
}

async fn stored_birth_year(deps: &Deps, user: UserId, provider: &str) -> Result<Option<i32>, DomainError> {
    Ok(match deps.table.get(&keys::profile(user, provider)).await? {
        Some(item) => {
            item.decode::<store::Stored>()?.v.get("birth_year").and_then(|y| y.as_i64()).map(|y| y as i32)
        }
        None => None,
    })
}

/// Credentials that work now: refreshed (once, whoever else needs them too, and saved on the
/// connection) when expired.
async fn account(deps: &Deps, conn: &ConnectionRecord) -> Result<ProviderAccount, ProviderError> {
    refresh::usable_account(deps, conn, None).await
}

/// One fetch, each HTTP request it sends within the provider's limits for the OAuth app (all
/// its users, every instance) and for the provider's user ([`ConnectionGate`]: over them the
/// fetch stops `RateLimited` until the window turns over, as a 429 would); an access token the
/// provider refused (expired early, rotated elsewhere) is refreshed and the fetch tried once more.
async fn fetch(
    deps: &Deps,
    conn: &ConnectionRecord,
    account: &mut ProviderAccount,
    resource: &Resource,
    range: DateRange,
) -> Result<FetchedResource, ProviderError> {
    let gate = ConnectionGate::new(deps, conn, account);
    match deps.providers.fetch(&conn.provider, account, resource, range, &gate).await {
        Err(ProviderError::AccessTokenRefused) => {
            *account = refresh::usable_account(deps, conn, Some(&account.credentials.access_token)).await?;
            let gate = ConnectionGate::new(deps, conn, account);
            deps.providers.fetch(&conn.provider, account, resource, range, &gate).await
        }
        other => other,
    }
}

/// The gate of one connection's fetches: each request the adapter sends takes one from the
/// provider's published limits for the connection's OAuth app (a team's own, else the
/// platform's) and one from those for the provider's user, before it is sent.
struct ConnectionGate<'a> {
    deps: &'a Deps,
    provider: &'a str,
    app: &'a str,
    app_limits: Vec<RateWindow>,
    user: String,
    user_limits: Vec<RateWindow>,
}

impl<'a> ConnectionGate<'a> {
    fn new(deps: &'a Deps, conn: &'a ConnectionRecord, account: &ProviderAccount) -> Self {
        Self {
            deps,
            provider: &conn.provider,
            app: conn.team_app_client_id.as_deref().unwrap_or("platform"),
            app_limits: deps.providers.app_limits(&conn.provider, &account.credentials),
            user: account.external_user_id.clone(),
            user_limits: deps.providers.user_limits(&conn.provider, &account.credentials),
        }
    }
}

#[async_trait::async_trait]
impl RequestGate for ConnectionGate<'_> {
    async fn admit(&self) -> Result<(), ProviderError> {
        within(throttle::take_app(self.deps, self.provider, self.app, &self.app_limits).await)?;
        within(throttle::take_user(self.deps, self.provider, &self.user, &self.user_limits).await)
    }
}

/// A throttle's decision as a fetch's: a wait is the provider's 429 until the window turns over.
fn within(decision: Result<Decision, DomainError>) -> Result<(), ProviderError> {
    match decision {
        Ok(Decision::Granted) => Ok(()),
        Ok(Decision::Wait(wait)) => {
            Err(ProviderError::RateLimited { retry_after_secs: wait.as_secs().max(1) })
        }
        Err(e) => Err(ProviderError::Api(e.to_string())),
    }
}
