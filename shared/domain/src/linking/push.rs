//! A provider's push notifications (`/v2/provider_webhooks/{provider}`): its handshake is
//! answered, a refused push (unsigned, badly signed, stale) changes nothing, and each notice puts
//! a poll of the connections of the provider's user on the pull queue; a deauthorisation (the user
//! took Wearlab's access away at the provider) marks the user's connections in error. The answer comes before
//! any provider call: providers give a push seconds.

use serde_json::Value;

use super::connections::{AccountMarker, ConnectionRecord};
use super::{known_provider, refresh};
use crate::Deps;
use crate::error::DomainError;
use crate::ids::{TeamId, UserId};
use crate::keys;
use crate::pipeline::pull::PollJob;
use crate::pipeline::{Job, PullMessage};
use crate::ports::providers::{OauthClient, ProviderAccount, PushOutcome, PushRequest};
use crate::ports::{Outgoing, Query, QueueName, query_all};

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

pub async fn receive(deps: &Deps, provider: &str, request: &PushRequest) -> Result<PushReply, DomainError> {
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
    let named = match deps.providers.push_claimed_user(slug, request) {
        Some(claimed) => Some(named_connections(deps, slug, &claimed).await?),
        None => None,
    };
    let mut apps: Vec<Option<OauthClient>> = Vec::new();
    for n in named.iter().flatten() {
        if !apps.iter().any(|a| same_app(a.as_ref(), n.app.as_ref())) {
            apps.push(n.app.clone());
        }
    }
    if !apps.contains(&None) {
        apps.push(None);
    }
    let mut refusal = String::new();
    let mut verified = None;
    for app in apps {
        match deps.providers.push(slug, app.as_ref(), request) {
            PushOutcome::Handshake { status, body } => return Ok(PushReply::Handshake { status, body }),
            PushOutcome::Refused(reason) => refusal = reason,
            PushOutcome::Notices(n) => {
                verified = Some((app, n));
                break;
            }
            PushOutcome::Deauthorized { external_user_id } => {
                let named = named.map(|n| n.into_iter().filter(|n| same_app(n.app.as_ref(), app.as_ref())));
                let connections = match named {
                    Some(named) => named.map(|n| (n.team, n.user)).collect(),
                    None => {
                        markers(deps, keys::linking::provider_user_index(slug, &external_user_id)).await?
                    }
                };
                deauthorized(deps, slug, &external_user_id, connections).await?;
                return Ok(PushReply::Accepted { polls: 0 });
            }
        }
    }
    let Some((app, notices)) = verified else {
        tracing::warn!(provider = slug, reason = refusal, "push refused");
        return Err(DomainError::Unauthenticated("the push is not signed by the provider".into()));
    };
    let mut messages = Vec::new();
    for notice in &notices {
        let since = notice.range.map(|r| r.start);
        match &named {
            // Only the connections issued to the app whose secret signed the push.
            Some(named) => messages.extend(
                named
                    .iter()
                    .filter(|n| same_app(n.app.as_ref(), app.as_ref()))
                    .map(|n| poll(n.team, n.user, slug, since)),
            ),
            None => {
                let index = keys::linking::provider_user_index(slug, &notice.external_user_id);
                for (team, user) in markers(deps, index).await? {
                    messages.push(poll(team, user, slug, since));
                }
            }
        }
    }
    let polls = messages.len();
    if !messages.is_empty() {
        deps.queue.send(QueueName::Pull, messages).await.map_err(|e| DomainError::Busy(e.to_string()))?;
    }
    tracing::info!(provider = slug, notices = notices.len(), polls, "push accepted");
    Ok(PushReply::Accepted { polls })
}

/// The provider's user deauthorised Wearlab: each of its `connections` still linked to that
/// account is marked so (`refresh::record_deauthorization`) and no longer pulled. A repeated
/// notice (providers retry) changes nothing more.
async fn deauthorized(
    deps: &Deps,
    slug: &str,
    external_user_id: &str,
    connections: Vec<(TeamId, UserId)>,
) -> Result<(), DomainError> {
    let mut marked = 0;
    for (team, user) in connections {
        let Some(item) = deps.table.get(&keys::linking::connection(user, slug)).await? else { continue };
        let conn: ConnectionRecord = item.decode()?;
        let already = conn.error_details.as_ref().is_some_and(|e| e.error_type == refresh::DEAUTHORIZED);
        if conn.team_id != team || conn.external_user_id != external_user_id || already {
            continue;
        }
        refresh::record_deauthorization(deps, &conn).await;
        tracing::info!(team_id = %team, user_id = %user, provider = slug, "connection deauthorised at the provider");
        marked += 1;
    }
    tracing::info!(provider = slug, marked, "deauthorisation push accepted");
    Ok(())
}

fn same_app(a: Option<&OauthClient>, b: Option<&OauthClient>) -> bool {
    a.map(|c| &c.client_id) == b.map(|c| &c.client_id)
}

/// The team and user of each connection of the provider's user `index` names.
async fn markers(deps: &Deps, index: String) -> Result<Vec<(TeamId, UserId)>, DomainError> {
    let mut out = Vec::new();
    for item in query_all(deps.table.as_ref(), Query::gsi1(index), MAX_CONNECTIONS_PER_NOTICE).await? {
        let Some(team) = item.key.pk.strip_prefix("TEAM#").and_then(TeamId::parse) else { continue };
        let marker: AccountMarker = item.decode()?;
        out.push((team, marker.user_id));
    }
    Ok(out)
}

/// The connections of the provider's user `claimed` (found through the account markers' index),
/// each with the OAuth app that issued its credentials.
async fn named_connections(deps: &Deps, slug: &str, claimed: &str) -> Result<Vec<Named>, DomainError> {
    let mut out = Vec::new();
    for (team, user) in markers(deps, keys::linking::provider_user_index(slug, claimed)).await? {
        let Some(item) = deps.table.get(&keys::linking::connection(user, slug)).await? else { continue };
        let conn: ConnectionRecord = item.decode()?;
        if conn.team_id != team {
            continue;
        }
        out.push(Named { team, user, app: conn.issuing_client(deps).await? });
    }
    Ok(out)
}

fn poll(team: TeamId, user: UserId, provider: &str, since: Option<chrono::NaiveDate>) -> Outgoing {
    let job = PollJob { team_id: team, user_id: user, provider: provider.to_owned(), since };
    Outgoing::now(PullMessage::Job(Job::Poll(job)).body())
}

/// Where `provider` pushes to on the deployment at `public_url`.
pub fn callback_url(public_url: &str, provider: &str) -> String {
    format!("{}/v2/provider_webhooks/{provider}", public_url.trim_end_matches('/'))
}

/// The provider's per-user set-up after a link (Withings subscribes the user's notifications
/// to [`callback_url`]). Best effort: a failure is logged (ids only) and the link stands; the
/// poll every 15 minutes still brings the user's data, and relinking tries again.
pub async fn after_link(
    deps: &Deps,
    provider: &str,
    account: &ProviderAccount,
    public_url: &str,
    (team, user): (TeamId, UserId),
) {
    let callback = callback_url(public_url, provider);
    match deps.providers.after_link(provider, account, &callback).await {
        Ok(()) => {
            tracing::info!(team_id = %team, user_id = %user, provider, "provider set-up after link done")
        }
        Err(e) => tracing::warn!(team_id = %team, user_id = %user, provider, error = %e,
            "provider set-up after link failed (notifications not subscribed)"),
    }
}

/// How often the providers' push subscriptions are looked at (and created or renewed).
const SUBSCRIPTIONS_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// Creates or renews the real providers' app-wide push subscriptions to this deployment's
/// `public_url`, at most once an hour whichever instance runs it (the sweep worker, every
/// minute). Failures are logged and tried again at the next hour. Returns whether it ran.
pub async fn maintain_subscriptions(deps: &Deps, public_url: &str) -> Result<bool, DomainError> {
    let key = crate::ports::Key::new("PUSHSUBS", "#");
    let policy = crate::throttle::Policy::Rate { limit: 1, window: SUBSCRIPTIONS_EVERY };
    if crate::throttle::take(deps, key, policy, "sweep").await? != crate::throttle::Decision::Granted {
        return Ok(false);
    }
    for (provider, result) in deps.providers.maintain_push_subscriptions(public_url).await {
        match result {
            Ok(changed) => tracing::info!(provider, changed, "push subscriptions current"),
            Err(e) => tracing::warn!(provider, error = %e, "push subscriptions not maintained"),
        }
    }
    Ok(true)
}
