//! A provider's push notifications (`/v2/provider_webhooks/{provider}`): its handshake is
//! answered, a refused push (unsigned, badly signed, stale) changes nothing, and each notice puts
//! a poll of the connections of the provider's user on the pull queue. The answer comes before
//! any provider call: providers give a push seconds.

use serde_json::Value;

use super::connections::AccountMarker;
use super::known_provider;
use crate::Deps;
use crate::error::DomainError;
use crate::ids::{TeamId, UserId};
use crate::keys;
use crate::pipeline::pull::PollJob;
use crate::pipeline::{Job, PullMessage};
use crate::ports::providers::{PushOutcome, PushRequest};
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

pub async fn receive(deps: &Deps, provider: &str, request: &PushRequest) -> Result<PushReply, DomainError> {
    let slug = &known_provider(provider)?.slug;
    let notices = match deps.providers.push(slug, request) {
        PushOutcome::Handshake { status, body } => return Ok(PushReply::Handshake { status, body }),
        PushOutcome::Refused(reason) => {
            tracing::warn!(provider = slug, reason, "push refused");
            return Err(DomainError::Unauthenticated("the push is not signed by the provider".into()));
        }
        PushOutcome::Notices(n) => n,
    };
    let mut messages = Vec::new();
    for notice in &notices {
        let index = keys::linking::provider_user_index(slug, &notice.external_user_id);
        for item in query_all(deps.table.as_ref(), Query::gsi1(index), MAX_CONNECTIONS_PER_NOTICE).await? {
            let Some(team) = item.key.pk.strip_prefix("TEAM#").and_then(TeamId::parse) else { continue };
            let marker: AccountMarker = item.decode()?;
            messages.push(poll(team, marker.user_id, slug, notice.range.map(|r| r.start)));
        }
    }
    let polls = messages.len();
    if !messages.is_empty() {
        deps.queue.send(QueueName::Pull, messages).await.map_err(|e| DomainError::Busy(e.to_string()))?;
    }
    tracing::info!(provider = slug, notices = notices.len(), polls, "push accepted");
    Ok(PushReply::Accepted { polls })
}

fn poll(team: TeamId, user: UserId, provider: &str, since: Option<chrono::NaiveDate>) -> Outgoing {
    let job = PollJob { team_id: team, user_id: user, provider: provider.to_owned(), since };
    Outgoing::now(PullMessage::Job(Job::Poll(job)).body())
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
