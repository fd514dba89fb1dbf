//! Webhooks: the team's endpoints (each with a signing secret shown once), and delivery of
//! events to them signed by the Standard Webhooks scheme, with retries on a growing schedule,
//! a record of every attempt, and a dead-letter record when the schedule is used up.

pub mod event_secrets;
pub mod url;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wearlab_models::EventEnvelope;
use wearlab_models::webhooks::{WebhookAttempt as Attempt, WebhookEndpoint};

use crate::Deps;
use crate::common::crypto::{Sealed, Secret};
use crate::common::error::{DomainError, issue};
use crate::common::ids::{TeamId, UserId};
use crate::common::limits;
use crate::common::metrics::Delivery;
use crate::keys::webhooks as keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Outgoing, Query, Queue, QueueName, WebhookSender, WriteOp, query_all};
use url::UrlPolicy;

/// Waits before each retry: attempt 1 is immediate, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
pub const RETRY_SCHEDULE: [Duration; 7] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(10 * 3600),
];
/// Attempts in all (the first plus one per scheduled retry).
pub const MAX_ATTEMPTS: u32 = RETRY_SCHEDULE.len() as u32 + 1;
/// A receiver must answer 2xx within this to count as delivered.
pub const TIMEOUT: Duration = Duration::from_secs(15);
/// How long attempt records and delivered markers are kept.
const RECORD_DAYS: i64 = 30;
pub const MAX_ENDPOINTS: usize = 20;

/// A team's endpoint as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    pub id: String,
    pub url: String,
    /// Event types delivered; empty means every type.
    pub event_types: Vec<String>,
    pub created_on: DateTime<Utc>,
    secret: Sealed,
}

impl Endpoint {
    pub fn wants(&self, event_type: &str) -> bool {
        self.event_types.is_empty() || self.event_types.iter().any(|t| t == event_type)
    }
}

impl From<&Endpoint> for WebhookEndpoint {
    fn from(e: &Endpoint) -> Self {
        Self {
            id: e.id.clone(),
            url: e.url.clone(),
            event_types: e.event_types.clone(),
            created_on: e.created_on,
        }
    }
}

/// Validates an endpoint URL against the deployment's policy (see [`crate::webhooks::url`]).
fn check_url(url: &str, policy: UrlPolicy) -> Result<(), DomainError> {
    url::check(url, policy)
        .map(|_| ())
        .map_err(|e| DomainError::invalid(&["url"], e.to_string(), "value_error"))
}

/// Creates an endpoint; returns it and its signing secret (`whsec_...`), shown this once.
pub async fn create_endpoint(
    deps: &Deps,
    team: TeamId,
    url: &str,
    event_types: Vec<String>,
    policy: UrlPolicy,
) -> Result<(WebhookEndpoint, Secret), DomainError> {
    let mut issues = Vec::new();
    if let Err(DomainError::Validation(mut v)) = check_url(url, policy) {
        issues.append(&mut v);
    }
    let at = ["event_types"];
    let set = limits::check_set(&at, &event_types, limits::MAX_EVENT_TYPES);
    if let Err(mut found) = set {
        issues.append(&mut found);
    }
    let shown = if event_types.len() > limits::MAX_EVENT_TYPES { &[][..] } else { &event_types[..] };
    for (i, t) in shown.iter().enumerate() {
        if t.is_empty()
            || t.len() > limits::MAX_EVENT_TYPE_CHARS
            || !t.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            let mut x =
                issue(&["event_types"], "event types are like provider.connection.created", "value_error");
            x.loc.push(i.into());
            issues.push(x);
        }
    }
    if !issues.is_empty() {
        return Err(DomainError::Validation(issues));
    }
    if list_endpoints(deps, team).await?.len() >= MAX_ENDPOINTS {
        return Err(DomainError::Rejected(format!("a team has at most {MAX_ENDPOINTS} webhook endpoints")));
    }
    let id = format!("ep_{}", &uuid::Uuid::new_v4().simple().to_string()[..20]);
    let mut raw = [0u8; 24];
    raw[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    raw[16..].copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..8]);
    use base64::Engine;
    let secret = Secret::new(format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(raw)));
    let key = keys::endpoint(team, &id);
    let endpoint = Endpoint {
        id: id.clone(),
        url: url.to_owned(),
        event_types,
        created_on: deps.now(),
        secret: deps.data_key.seal(secret.expose().as_bytes(), &key.sk),
    };
    deps.table.put(Item::new(key, to_body(&endpoint)), Condition::NotExists).await?;
    tracing::info!(team_id = %team, endpoint_id = %id, "webhook endpoint created");
    Ok(((&endpoint).into(), secret))
}

pub async fn list_endpoints(deps: &Deps, team: TeamId) -> Result<Vec<Endpoint>, DomainError> {
    let q = Query::partition(crate::keys::team(team).pk).prefix(keys::ENDPOINT_PREFIX);
    query_all(deps.table.as_ref(), q, 1_000)
        .await?
        .iter()
        .map(|i| i.decode().map_err(DomainError::from))
        .collect()
}

pub async fn get_endpoint(deps: &Deps, team: TeamId, id: &str) -> Result<Endpoint, DomainError> {
    match deps.table.get(&keys::endpoint(team, id)).await? {
        Some(item) => Ok(item.decode()?),
        None => Err(DomainError::NotFound(format!("Webhook endpoint {id} not found."))),
    }
}

pub async fn delete_endpoint(deps: &Deps, team: TeamId, id: &str) -> Result<(), DomainError> {
    get_endpoint(deps, team, id).await?;
    deps.table.delete(&keys::endpoint(team, id), Condition::None).await?;
    Ok(())
}

/// The endpoint's attempts, oldest first, one page.
pub async fn list_attempts(
    deps: &Deps,
    team: TeamId,
    id: &str,
    limit: u32,
    cursor: Option<crate::ports::Cursor>,
) -> Result<(Vec<Attempt>, Option<crate::ports::Cursor>), DomainError> {
    get_endpoint(deps, team, id).await?;
    let page = deps
        .table
        .query(Query::partition(keys::attempts_partition(team, id)).limit(limit).after(cursor))
        .await?;
    let attempts = page.items.iter().map(|i| i.decode()).collect::<Result<Vec<Attempt>, _>>()?;
    Ok((attempts, page.next_cursor))
}

/// Work on the webhook queue: an event to fan out, or one delivery to one endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WebhookJob {
    Deliver { endpoint_id: String, team_id: TeamId, message_id: String, attempt: u32, event: EventEnvelope },
    Event(EventEnvelope),
}

/// Stable across retries and duplicates of one event: receivers deduplicate on it.
pub fn message_id(event: &EventEnvelope) -> String {
    let json = serde_json::to_vec(event).expect("events serialize");
    format!("msg_{}", &hex::encode(Sha256::digest(json))[..32])
}

/// Standard Webhooks headers for `body`.
pub fn sign(
    secret: &Secret,
    message_id: &str,
    at: DateTime<Utc>,
    body: &[u8],
) -> Result<Vec<(&'static str, String)>, String> {
    let hook = standardwebhooks::Webhook::new(secret.expose()).map_err(|e| e.to_string())?;
    let signature = hook.sign(message_id, at.timestamp(), body).map_err(|e| e.to_string())?;
    Ok(vec![
        ("webhook-id", message_id.to_owned()),
        ("webhook-timestamp", at.timestamp().to_string()),
        ("webhook-signature", signature),
        ("content-type", "application/json".to_owned()),
    ])
}

/// What delivering webhooks needs besides [`Deps`]: the webhook queue (the fan-out's jobs and
/// the retries go to it) and what POSTs a signed event to an endpoint.
#[derive(Clone, Copy)]
pub struct WebhookPorts<'a> {
    pub queue: &'a dyn Queue,
    pub sender: &'a dyn WebhookSender,
}

/// Handles one job from the webhook queue. Always succeeds unless storage or the queue fails
/// (then the message returns to the queue): the retry schedule is kept by this function.
pub async fn handle(deps: &Deps, ports: WebhookPorts<'_>, job: WebhookJob) -> Result<(), DomainError> {
    match job {
        WebhookJob::Event(event) => fan_out(deps, ports.queue, event).await,
        WebhookJob::Deliver { endpoint_id, team_id, message_id, attempt, event } => {
            let job = Job { team: team_id, endpoint_id: &endpoint_id, message_id: &message_id, attempt };
            deliver(deps, ports, job, event).await
        }
    }
}

async fn fan_out(deps: &Deps, queue: &dyn Queue, event: EventEnvelope) -> Result<(), DomainError> {
    let team = TeamId::from_uuid(event.team_id);
    let message_id = message_id(&event);
    let jobs: Vec<Outgoing> = list_endpoints(deps, team)
        .await?
        .iter()
        .filter(|e| e.wants(&event.event_type))
        .map(|e| {
            Outgoing::now(to_body(&WebhookJob::Deliver {
                endpoint_id: e.id.clone(),
                team_id: team,
                message_id: message_id.clone(),
                attempt: 1,
                event: waiting(deps, &event, &message_id),
            }))
        })
        .collect();
    if !jobs.is_empty() {
        queue.send(QueueName::Webhook, jobs).await.map_err(|e| DomainError::Busy(e.to_string()))?;
    }
    Ok(())
}

/// The event as a delivery job holds it while it waits: its credentials sealed (the job may wait
/// hours for its retries), bound to the message id.
fn waiting(deps: &Deps, event: &EventEnvelope, message_id: &str) -> EventEnvelope {
    let mut event = event.clone();
    event_secrets::seal(&deps.data_key, &mut event, message_id);
    event
}

/// Which attempt of which message to which endpoint a delivery job is.
struct Job<'a> {
    team: TeamId,
    endpoint_id: &'a str,
    message_id: &'a str,
    attempt: u32,
}

async fn deliver(
    deps: &Deps,
    ports: WebhookPorts<'_>,
    job: Job<'_>,
    event: EventEnvelope,
) -> Result<(), DomainError> {
    let Job { team, endpoint_id, message_id, attempt } = job;
    let now = deps.now();
    let record = |outcome: &str, status_code: Option<u16>, error: Option<String>| Attempt {
        message_id: message_id.to_owned(),
        event_type: event.event_type.clone(),
        attempt,
        at: now,
        status_code,
        outcome: outcome.to_owned(),
        error,
    };
    let Ok(endpoint) = get_endpoint(deps, team, endpoint_id).await else {
        return Ok(()); // deleted since: nothing to record it under
    };
    // An erased user's events are not delivered any more, except the proof of the erasure.
    if event.event_type != crate::events::lifecycle::USER_ERASED
        && deps.table.get(&crate::keys::user(UserId::from_uuid(event.user_id))).await?.is_none()
    {
        return save_attempt(deps, team, endpoint_id, record("dropped", None, Some("user erased".into())))
            .await;
    }
    let delivered_key = keys::delivered(team, endpoint_id, message_id);
    if deps.table.get(&delivered_key).await?.is_some() {
        return Ok(()); // a duplicate job of a delivered message
    }
    let secret_bytes = deps.data_key.open(&endpoint.secret, &keys::endpoint(team, endpoint_id).sk)?;
    let secret = Secret::new(String::from_utf8_lossy(&secret_bytes).into_owned());
    let mut plain = event.clone();
    event_secrets::open(&deps.data_key, &mut plain, message_id)?;
    let body = serde_json::to_vec(&plain).expect("events serialize");
    let headers = sign(&secret, message_id, now, &body).map_err(DomainError::Rejected)?;
    let result = ports.sender.post(&endpoint.url, headers, body).await;
    match result {
        Ok(status) if (200..300).contains(&status) => {
            let expiry = Some((now + chrono::Duration::days(RECORD_DAYS)).timestamp());
            // The marker and the attempt in one write: one commit to wait for, not two.
            let delivered = Item::new(delivered_key, serde_json::json!({})).with_expiry(expiry);
            let attempt_record = attempt_item(team, endpoint_id, &record("delivered", Some(status), None));
            deps.table
                .transact(vec![
                    WriteOp::Put { item: delivered, condition: Condition::None },
                    WriteOp::Put { item: attempt_record, condition: Condition::None },
                ])
                .await?;
            crate::common::metrics::webhook_attempt(Delivery::Delivered, attempt);
            Ok(())
        }
        failed => {
            let (status, error) = match failed {
                Ok(s) => (Some(s), Some(format!("receiver answered {s}"))),
                Err(e) => (None, Some(e)),
            };
            if attempt >= MAX_ATTEMPTS {
                tracing::warn!(team_id = %team, endpoint_id, message_id, "webhook dead-lettered");
                crate::common::metrics::webhook_attempt(Delivery::DeadLettered, attempt);
                return save_attempt(deps, team, endpoint_id, record("dead_lettered", status, error)).await;
            }
            crate::common::metrics::webhook_attempt(Delivery::Failed, attempt);
            save_attempt(deps, team, endpoint_id, record("failed", status, error)).await?;
            let wait = RETRY_SCHEDULE[(attempt - 1) as usize];
            let next = WebhookJob::Deliver {
                endpoint_id: endpoint_id.to_owned(),
                team_id: team,
                message_id: message_id.to_owned(),
                attempt: attempt + 1,
                event,
            };
            let at = now + chrono::Duration::from_std(wait).expect("small");
            ports
                .queue
                .send(QueueName::Webhook, vec![Outgoing::at(to_body(&next), at)])
                .await
                .map_err(|e| DomainError::Busy(e.to_string()))
        }
    }
}

async fn save_attempt(deps: &Deps, team: TeamId, endpoint_id: &str, a: Attempt) -> Result<(), DomainError> {
    deps.table.put(attempt_item(team, endpoint_id, &a), Condition::None).await?;
    Ok(())
}

/// The stored record of one delivery attempt, listed under its endpoint newest last.
fn attempt_item(team: TeamId, endpoint_id: &str, a: &Attempt) -> Item {
    let key = keys::attempt(team, endpoint_id, a.at, &a.message_id, a.attempt);
    let expiry = Some((a.at + chrono::Duration::days(RECORD_DAYS)).timestamp());
    Item::new(key, to_body(a)).with_expiry(expiry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_with_the_secret() {
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let at = Utc::now();
        let headers = sign(&secret, "msg_1", at, b"{\"a\":1}").unwrap();
        let mut map = http_headers(&headers);
        let hook = standardwebhooks::Webhook::new(secret.expose()).unwrap();
        assert!(hook.verify(b"{\"a\":1}", &map).is_ok());
        map.insert("webhook-id", "msg_2".parse().unwrap());
        assert!(hook.verify(b"{\"a\":1}", &map).is_err());
    }

    fn http_headers(h: &[(&'static str, String)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (k, v) in h {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }
}
