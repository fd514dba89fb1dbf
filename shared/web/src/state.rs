use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher, RandomState};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use wearlab_domain::Deps;
use wearlab_domain::common::crypto::SigningKey;
use wearlab_domain::common::fair_use::FairUse;
use wearlab_domain::common::ids::Caller;
use wearlab_domain::common::settings::Settings;
use wearlab_domain::lab::Links;
use wearlab_domain::users::page_cache::PageCache;
use wearlab_domain::webhooks::url::UrlPolicy;

/// How long a verified API key is trusted without a storage read, on the deployment's clock
/// (`deps.clock`, so tests can move it). A revoked key stops working within this time on every
/// warm Lambda.
pub const AUTH_CACHE_TTL: Duration = Duration::from_secs(60);
const AUTH_CACHE_MAX: usize = 10_000;

/// Shared by every handler of a function; built once per execution environment. Cloned for
/// every request (by the router and the `State` extractor), so it is one `Arc`: one reference
/// count to touch, where its fields would be eight. Fields are reached through it
/// (`state.deps`).
#[derive(Clone)]
pub struct AppState(Arc<SharedState>);

/// What an [`AppState`] holds.
#[derive(Clone)]
pub struct SharedState {
    pub deps: Deps,
    /// The operator's settings, read once at start (`WEARLAB_PUBLIC_URL`, the audit retention,
    /// the default fair use); no request reads the environment.
    pub settings: Settings,
    auth_cache: Arc<AuthCache>,
    auth_ttl: Duration,
    /// Where webhook endpoints may point: production unless the local stack says otherwise.
    pub webhook_urls: UrlPolicy,
    /// This process's side of per-team fair use (the blocks of requests it holds per team).
    fair_use: Arc<FairUse>,
    /// The pages of teams' user lists this process answered, kept while unchanged.
    pub user_pages: Arc<PageCache>,
    /// The deployment's key of the phone's per-user tokens: set by the functions that issue or
    /// accept them (sdk-api, user-api, data-api); without it, a user's bearer token opens
    /// nothing (401).
    phone_key: Option<Arc<SigningKey>>,
}

impl std::ops::Deref for AppState {
    type Target = SharedState;

    fn deref(&self) -> &SharedState {
        &self.0
    }
}

impl AppState {
    /// The state of a function on `deps` with the operator's `settings` (tests and benchmarks:
    /// `Settings::default()`), API keys cached [`AUTH_CACHE_TTL`] as on a deployment.
    pub fn new(deps: Deps, settings: Settings) -> Self {
        Self(Arc::new(SharedState {
            auth_cache: Arc::default(),
            auth_ttl: AUTH_CACHE_TTL,
            webhook_urls: UrlPolicy::Production,
            fair_use: Arc::new(FairUse::new(settings.team_rate_limit)),
            user_pages: Arc::new(PageCache::new(deps.table.index_lag())),
            phone_key: None,
            settings,
            deps,
        }))
    }

    /// The links of answers to a request with `headers`: the configured public URL, else the
    /// request's loopback host ([`crate::public_links`]).
    pub fn public_links(&self, headers: &http::HeaderMap) -> Links {
        crate::public_links(self.0.settings.public_url.as_deref(), headers)
    }

    /// The same state with another default team limit (requests per minute), in place of
    /// the settings' `WEARLAB_TEAM_RATE_LIMIT`.
    pub fn with_default_rate_limit(self, requests_per_minute: u32) -> Self {
        let fair_use = Arc::new(FairUse::new(requests_per_minute));
        Self(Arc::new(SharedState { fair_use, ..Arc::unwrap_or_clone(self.0) }))
    }

    /// The same state with the key of the phone's per-user tokens (the functions that issue or
    /// accept them).
    pub fn with_phone_key(self, key: Arc<SigningKey>) -> Self {
        Self(Arc::new(SharedState { phone_key: Some(key), ..Arc::unwrap_or_clone(self.0) }))
    }

    /// The key of the phone's per-user tokens, if this function has it.
    pub fn phone_key(&self) -> Option<&SigningKey> {
        self.0.phone_key.as_deref()
    }

    /// Per-team fair use as this process keeps it.
    pub(crate) fn fair_use(&self) -> &FairUse {
        &self.0.fair_use
    }

    /// The same state with another webhook URL policy (the local stack's loopback receivers).
    pub fn with_webhook_urls(self, policy: UrlPolicy) -> Self {
        Self(Arc::new(SharedState { webhook_urls: policy, ..Arc::unwrap_or_clone(self.0) }))
    }

    /// State whose keys are checked against storage on every request (tests of revocation).
    pub fn without_auth_cache(deps: Deps) -> Self {
        let state = Self::new(deps, Settings::default());
        Self(Arc::new(SharedState { auth_ttl: Duration::ZERO, ..Arc::unwrap_or_clone(state.0) }))
    }

    /// The team and key id of an API key verified less than the TTL ago.
    pub(crate) fn cached_team(&self, key: &str) -> Option<Caller> {
        self.0.auth_cache.get(key, self.0.auth_ttl, self.0.deps.now())
    }

    /// Remembers that `key` opens `team` (after a storage read verified it).
    pub(crate) fn remember_team(&self, key: &str, team: Caller) {
        if !self.0.auth_ttl.is_zero() {
            self.0.auth_cache.insert(key, team, self.0.deps.now());
        }
    }
}

/// Verified API keys by a 128-bit tag: SipHash of the key under this process's random secret
/// (`RandomState`), finished twice with different suffixes. Cheaper per request than the
/// SHA-256 (and hex string) that storage is keyed by, and it keeps no key: neither the key nor a
/// hash that storage would accept is held. A key that is not cached cannot be made to match one
/// that is without the secret (a 128-bit keyed tag), so a hit means the same key was verified.
/// Verified keys by tag: the team and when it was verified.
type TagMap = HashMap<(u64, u64), (Caller, DateTime<Utc>), BuildHasherDefault<TagHasher>>;

#[derive(Default)]
pub(crate) struct AuthCache {
    secret: RandomState,
    entries: Mutex<TagMap>,
}

impl AuthCache {
    fn get(&self, key: &str, ttl: Duration, now: DateTime<Utc>) -> Option<Caller> {
        if ttl.is_zero() {
            return None;
        }
        let tag = self.tag(key);
        let entries = self.entries.lock().ok()?;
        // A clock that went back counts as no time passed; the entry still expires after `ttl`.
        let fresh = |at: &DateTime<Utc>| (now - *at).to_std().unwrap_or_default() < ttl;
        entries.get(&tag).filter(|(_, at)| fresh(at)).map(|(t, _)| *t)
    }

    fn insert(&self, key: &str, team: Caller, now: DateTime<Utc>) {
        let tag = self.tag(key);
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= AUTH_CACHE_MAX {
                entries.clear();
            }
            entries.insert(tag, (team, now));
        }
    }

    fn tag(&self, key: &str) -> (u64, u64) {
        let mut first = self.secret.build_hasher();
        key.hash(&mut first);
        let mut second = first.clone();
        first.write_u8(0);
        second.write_u8(1);
        (first.finish(), second.finish())
    }
}

/// The map's hash of a tag: the tag's halves are keyed hashes already, so they are folded
/// rather than hashed again.
#[derive(Default)]
pub(crate) struct TagHasher(u64);

impl Hasher for TagHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(32) ^ n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_auth_cache_answers_only_for_the_key_it_verified() {
        let cache = AuthCache::default();
        let team = Caller {
            team_id: wearlab_domain::common::ids::TeamId::from_uuid(uuid::Uuid::from_u128(7)),
            key_id: wearlab_domain::common::ids::KeyId::parse("0123456789ab").unwrap(),
        };
        let key = "sk_test_0123456789abcdef0123456789abcdef0123456789abcdef";
        let now = Utc::now();
        assert_eq!(cache.get(key, AUTH_CACHE_TTL, now), None);
        cache.insert(key, team, now);
        assert_eq!(cache.get(key, AUTH_CACHE_TTL, now), Some(team));
        assert_eq!(cache.get(&key[..key.len() - 1], AUTH_CACHE_TTL, now), None);
        assert_eq!(
            cache.get("sk_test_0123456789abcdef0123456789abcdef0123456789abcdee", AUTH_CACHE_TTL, now),
            None
        );
        assert_eq!(cache.get(key, Duration::ZERO, now), None, "a zero TTL caches nothing");
        let later = now + chrono::Duration::seconds(60);
        assert_eq!(cache.get(key, AUTH_CACHE_TTL, later), None, "expired");
        assert_ne!(cache.tag(key).0, cache.tag(key).1);
        assert_ne!(AuthCache::default().tag(key), cache.tag(key), "the secret is per cache");
    }
}
