//! The delivery-time half of the webhook URL policy: the HTTP client resolves host names through
//! [`GuardedResolver`], which hands it only addresses the policy allows, so a name that resolves
//! to a private address (DNS rebinding, or a name registered for 169.254.169.254) is never
//! connected to. IP literals never reach a resolver; `webhook_url::check` refuses those before
//! the request is built.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use wearlab_domain::webhooks::url::{UrlPolicy, ip_allowed};

/// What an attempt records when the destination is refused: the same words whatever the address
/// would have answered, so the attempts list tells nothing about the network behind it.
pub const NOT_ALLOWED: &str = "destination not allowed";

/// The resolver error for "every address was refused"; found again in the client's error chain.
#[derive(Debug, thiserror::Error)]
#[error("{NOT_ALLOWED}")]
pub struct Refused;

/// Resolves with the system resolver (or fixed answers), then keeps the allowed addresses only.
pub struct GuardedResolver {
    policy: UrlPolicy,
    /// Answers given instead of the system resolver's (tests that must not query DNS).
    fixed: Option<Arc<HashMap<String, Vec<IpAddr>>>>,
}

impl GuardedResolver {
    pub fn new(policy: UrlPolicy) -> Self {
        Self { policy, fixed: None }
    }

    /// A resolver that answers `hosts` as DNS would, and nothing else.
    pub fn with_answers(policy: UrlPolicy, hosts: &[(&str, IpAddr)]) -> Self {
        let mut map: HashMap<String, Vec<IpAddr>> = HashMap::new();
        for (name, ip) in hosts {
            map.entry(name.to_ascii_lowercase()).or_default().push(*ip);
        }
        Self { policy, fixed: Some(Arc::new(map)) }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        let fixed = self.fixed.clone();
        let host = name.as_str().to_ascii_lowercase();
        Box::pin(async move {
            let found: Vec<SocketAddr> = match fixed {
                Some(map) => map.get(&host).into_iter().flatten().map(|ip| SocketAddr::new(*ip, 0)).collect(),
                None => tokio::net::lookup_host((host.as_str(), 0)).await?.collect(),
            };
            let allowed: Vec<SocketAddr> = found.into_iter().filter(|a| ip_allowed(a.ip(), policy)).collect();
            if allowed.is_empty() {
                return Err(Box::new(Refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// Whether the request failed because the guard refused every address.
pub fn refused(error: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<Refused>() {
            return true;
        }
        source = e.source();
    }
    false
}
