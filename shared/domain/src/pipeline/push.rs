//! A provider's push notifications (`/v2/provider_webhooks/{provider}`): its handshake is
//! answered, a refused push (unsigned, badly signed, stale) changes nothing, a repeated delivery
//! of a push that names its sending time queues nothing, and each notice puts a poll of the
//! connections of the provider's user on the pull queue; a deauthorisation (the user took
//! Wearlab's access away at the provider) marks in error those of the user's connections whose
//! credentials the provider then refuses to refresh. Apart from that one refresh per connection
//! (a deauthorisation is rare and names one user), the answer comes before any provider call:
//! providers give a push seconds.

use serde_json::Value;

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::keys;
use crate::linking::connections;
use crate::linking::{known_provider, refresh};
use crate::pipeline::pull::PollJob;
use crate::pipeline::{Job, PullMessage};
use crate::ports::providers::{OauthClient, ProviderError, PushNotice, PushOutcome, PushRequest};
use crate::ports::{Condition, Item, Key, Outgoing, Queue, QueueName, StoreError};
use sha2::{Digest, Sha256};

/// Most connections one notice may name (one provider user linked in several teams).
const MAX_CONNECTIONS_PER_NOTICE: usize = 100;

/// What to answer the provider.
#[derive(Debug, Clone, PartialEq)]
pub enum PushReply {
    /// The handshake's answer.
    Handshake { status: u16, body: Option<Value> },
    /// Notices read; `polls` connections will be polled.
    Accepted { polls: usize },
}

/// A connection a push names, and the OAuth app its credentials were issued to (`None`: the
/// platform's).
struct Named {
    team: TeamId,
    user: UserId,
    app: Option<OauthClient>,
}

/// Receives a provider's push: verified, its notices become polls of the connections they name,
/// sent to `queue`.
pub async fn receive(
    deps: &Deps,
    queue: &dyn Queue,
    provider: &str,
    request: &PushRequest,
) -> Result<PushReply, DomainError> {
    let slug = &known_provider(provider)?.slug;
    if !deps.providers.pushes(slug) {
        return Err(DomainError::NotFound(format!(
            "{slug} sends no push notifications: Wearlab pulls its data"
        )));
    }
    deps.providers
        .prepare_push(slug, request)
        .await
        .map_err(|e| DomainError::Busy(format!("the push cannot be checked now: {e}")))?;
    // Providers that sign with each connection's own app (WHOOP for a team's app) name their
    // user first: the apps of that user's connections are the candidates, the platform's last.
    // A team's app is a candidate of that team alone, even when another team registered the
    // same client id: a push verified with one team's secret reaches only that team.
    let named = match deps.providers.push_claimed_user(slug, request) {
        Some(claimed) => Some(named_connections(deps, slug, &claimed).await?),
        None => None,
    };
    let mut candidates: Vec<Signer> = Vec::new();
    for n in named.iter().flatten() {
        let signer = Signer::of(n);
        if !candidates.iter().any(|c| c.same(&signer)) {
            candidates.push(signer);
        }
    }
    let platform = Signer { team: None, app: None };
    if !candidates.iter().any(|c| c.same(&platform)) {
        candidates.push(platform);
    }
    // Every candidate is tried: each connection whose app verifies the push is polled (Google
    // signs for every app alike, so a user linked by two teams through two apps is polled in
    // both).
    let mut refusal = String::new();
    let mut verified: Vec<(Signer, Vec<PushNotice>)> = Vec::new();
    for signer in candidates {
        match deps.providers.push(slug, signer.app.as_ref(), request) {
            PushOutcome::Handshake { status, body } => return Ok(PushReply::Handshake { status, body }),
            PushOutcome::Refused(reason) => refusal = reason,
            PushOutcome::Notices(n) => verified.push((signer, n)),
            PushOutcome::Deauthorized { external_user_id } => {
                let named = named.map(|n| n.into_iter().filter(|n| signer.owns(n)));
                let connections = match named {
                    Some(named) => named.map(|n| (n.team, n.user)).collect(),
                    None => markers(deps, slug, &external_user_id).await?,
                };
                deauthorized(deps, slug, &external_user_id, connections).await?;
                return Ok(PushReply::Accepted { polls: 0 });
            }
        }
    }
    if verified.is_empty() {
        tracing::warn!(provider = slug, reason = refusal, "push refused");
        return Err(DomainError::Unauthenticated("the push is not signed by the provider".into()));
    }
    let seen = match deps.providers.push_sent_at(slug, request) {
        Some(sent_at) => match first_delivery(deps, slug, request, sent_at).await? {
            Some(seen) => Some(seen),
            None => return Ok(PushReply::Accepted { polls: 0 }),
        },
        None => None,
    };
    let mut messages = Vec::new();
    let mut notices_read = 0;
    for (signer, notices) in &verified {
        notices_read = notices_read.max(notices.len());
        for notice in notices {
            let since = notice.range.map(|r| r.start);
            match &named {
                // Only the connections issued to the app whose secret signed the push.
                Some(named) => messages.extend(
                    named.iter().filter(|n| signer.owns(n)).map(|n| poll(n.team, n.user, slug, since)),
                ),
                None => {
                    for (team, user) in markers(deps, slug, &notice.external_user_id).await? {
                        messages.push(poll(team, user, slug, since));
                    }
                }
            }
        }
    }
    let notices = notices_read;
    let polls = messages.len();
    if !messages.is_empty()
        && let Err(e) = queue.send(QueueName::Pull, messages).await
    {
        // Not queued: the provider's retry of this delivery must be read again.
        if let Some(seen) = seen {
            let _ = deps.table.delete(&seen, Condition::None).await;
        }
        return Err(DomainError::Busy(e.to_string()));
    }
    tracing::info!(provider = slug, notices, polls, "push accepted");
    Ok(PushReply::Accepted { polls })
}

/// How far from now a push's own sending time (`Providers::push_sent_at`) may be, either way:
/// a push sent earlier is refused (a captured delivery cannot be replayed later), as Standard
/// Webhooks' receivers do. A delivery the provider retries later than this is lost to the push,
/// not to the user: the scheduled poll brings its data (at least daily, `PUSHED_POLL_INTERVAL`).
pub const SENT_AT_WINDOW: chrono::Duration = chrono::Duration::minutes(5);

/// Whether a verified push sent at `sent_at` is inside [`SENT_AT_WINDOW`] and read for the first
/// time: the hash of its signed body is remembered (an item that expires after the window) with
/// a conditional write, so a repeated delivery (a provider's retry, a replay) queues nothing.
/// Answers the remembered item's key, or `None` for a delivery already read. Outside the window:
/// refused (401).
async fn first_delivery(
    deps: &Deps,
    slug: &str,
    request: &PushRequest,
    sent_at: chrono::DateTime<chrono::Utc>,
) -> Result<Option<Key>, DomainError> {
    let now = deps.now();
    if (now - sent_at).abs() > SENT_AT_WINDOW {
        tracing::warn!(provider = slug, "push refused: sent outside the accepted window");
        return Err(DomainError::Unauthenticated("the push was not sent just now".into()));
    }
    let key = keys::linking::push_delivery(slug, &hex::encode(Sha256::digest(&request.body)));
    // Kept until the delivery could no longer be accepted anyway.
    let until = sent_at + SENT_AT_WINDOW + chrono::Duration::minutes(1);
    let item = Item::new(key.clone(), serde_json::json!({})).with_expiry(Some(until.timestamp()));
    match deps.table.put(item, Condition::NotExists).await {
        Ok(()) => Ok(Some(key)),
        Err(StoreError::ConditionFailed { .. }) => {
            tracing::info!(provider = slug, "push already read: a repeated delivery queues nothing");
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// The provider's user deauthorised Wearlab, the push says. Nothing proves a provider sent it
/// (Strava signs none), so each of its `connections` still linked to that account is confirmed
/// first: its credentials are refreshed, and only a provider's refusal (`Revoked` or a refused
/// credential) marks it so (`refresh::record_deauthorization`) and stops its pulls. Credentials
/// that still refresh mean the push was not the provider's: logged (ids only) and ignored. A
/// repeated notice (providers retry) changes nothing more.
async fn deauthorized(
    deps: &Deps,
    slug: &str,
    external_user_id: &str,
    connections: Vec<(TeamId, UserId)>,
) -> Result<(), DomainError> {
    let mut marked = 0;
    for (team, user) in connections {
        let Some(conn) = connections::find(deps, user, slug).await? else { continue };
        let already = conn.error_details.as_ref().is_some_and(|e| e.error_type == refresh::DEAUTHORIZED);
        if conn.team_id != team || conn.external_user_id != external_user_id || already {
            continue;
        }
        let current = conn.account(deps)?.credentials.access_token;
        match refresh::usable_account(deps, &conn, Some(&current)).await {
            Err(ProviderError::Revoked(_) | ProviderError::CredentialError(_)) => {
                refresh::record_deauthorization(deps, &conn).await;
                tracing::info!(team_id = %team, user_id = %user, provider = slug, "connection deauthorised at the provider");
                marked += 1;
            }
            Ok(_) => tracing::warn!(team_id = %team, user_id = %user, provider = slug,
                "deauthorisation push ignored: the provider still accepts the connection's credentials"),
            Err(e) => tracing::warn!(team_id = %team, user_id = %user, provider = slug, error = %e,
                "deauthorisation push ignored: the credentials could not be checked now"),
        }
    }
    tracing::info!(provider = slug, marked, "deauthorisation push read");
    Ok(())
}

/// Whose secret a push is checked with: a team's own app (`team` set), or the platform's.
struct Signer {
    team: Option<TeamId>,
    app: Option<OauthClient>,
}

impl Signer {
    fn of(n: &Named) -> Self {
        Self { team: n.app.as_ref().map(|_| n.team), app: n.app.clone() }
    }

    fn client_id(&self) -> Option<&str> {
        self.app.as_ref().map(|c| c.client_id.as_str())
    }

    fn same(&self, other: &Signer) -> bool {
        self.team == other.team && self.client_id() == other.client_id()
    }

    /// Whether the connection `n`'s credentials were issued by this signer's app.
    fn owns(&self, n: &Named) -> bool {
        self.same(&Signer::of(n))
    }
}

/// The team and user of each connection of the provider's user `external_user_id`.
async fn markers(
    deps: &Deps,
    slug: &str,
    external_user_id: &str,
) -> Result<Vec<(TeamId, UserId)>, DomainError> {
    connections::of_provider_user(deps, slug, external_user_id, MAX_CONNECTIONS_PER_NOTICE).await
}

/// The connections of the provider's user `claimed` (found through the account markers' index),
/// each with the OAuth app that issued its credentials.
async fn named_connections(deps: &Deps, slug: &str, claimed: &str) -> Result<Vec<Named>, DomainError> {
    let mut out = Vec::new();
    for (team, user) in markers(deps, slug, claimed).await? {
        let Some(conn) = connections::find(deps, user, slug).await? else { continue };
        if conn.team_id != team {
            continue;
        }
        out.push(Named { team, user, app: conn.issuing_client(deps).await? });
    }
    Ok(out)
}

fn poll(team: TeamId, user: UserId, provider: &str, since: Option<chrono::NaiveDate>) -> Outgoing {
    let job = PollJob { team_id: team, user_id: user, provider: provider.to_owned(), since };
    Outgoing::now(PullMessage::Job(Job::PushedPoll(job)).body())
}
