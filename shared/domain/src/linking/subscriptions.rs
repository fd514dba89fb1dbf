//! A provider's per-user and app-wide push set-up: where it sends its pushes, the subscription
//! a provider wants after a link (Withings), and the app-wide subscriptions kept alive hourly.
//! (Receiving the pushes is the pipeline's: `pipeline::push`.)

use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::ports::providers::ProviderAccount;

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
/// `public_url`, at most once an hour whichever instance runs it (the minute worker, every
/// minute). Failures are logged and tried again at the next hour. Returns whether it ran.
pub async fn maintain_subscriptions(deps: &Deps, public_url: &str) -> Result<bool, DomainError> {
    let key = crate::keys::linking::push_subscriptions_turn();
    let policy = crate::common::throttle::Policy::Rate { limit: 1, window: SUBSCRIPTIONS_EVERY };
    if crate::common::throttle::take(deps, key, policy, "sweep").await?
        != crate::common::throttle::Decision::Granted
    {
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
