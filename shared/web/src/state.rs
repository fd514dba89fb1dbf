use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wearlab_domain::Deps;
use wearlab_domain::ids::TeamId;

/// How long a verified API key is trusted without a storage read. A revoked key stops working
/// within this time on every warm Lambda.
pub const AUTH_CACHE_TTL: Duration = Duration::from_secs(60);
const AUTH_CACHE_MAX: usize = 10_000;

/// Shared by every handler of a function; built once per execution environment.
#[derive(Clone)]
pub struct AppState {
    pub deps: Deps,
    auth_cache: Arc<Mutex<HashMap<String, (TeamId, Instant)>>>,
    auth_ttl: Duration,
}

impl AppState {
    pub fn new(deps: Deps) -> Self {
        Self { deps, auth_cache: Arc::default(), auth_ttl: AUTH_CACHE_TTL }
    }

    /// State whose keys are checked against storage on every request (tests of revocation).
    pub fn without_auth_cache(deps: Deps) -> Self {
        Self { auth_ttl: Duration::ZERO, ..Self::new(deps) }
    }

    pub(crate) fn cached_team(&self, key_hash: &str) -> Option<TeamId> {
        let cache = self.auth_cache.lock().ok()?;
        cache.get(key_hash).filter(|(_, at)| at.elapsed() < self.auth_ttl).map(|(t, _)| *t)
    }

    pub(crate) fn remember_team(&self, key_hash: String, team: TeamId) {
        if self.auth_ttl.is_zero() {
            return;
        }
        if let Ok(mut cache) = self.auth_cache.lock() {
            if cache.len() >= AUTH_CACHE_MAX {
                cache.clear();
            }
            cache.insert(key_hash, (team, Instant::now()));
        }
    }
}
