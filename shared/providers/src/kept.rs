//! Answers kept a short while, so that the pipeline's concurrent fetches of several resources
//! that one provider call serves (an activity list, an activity's streams or FIT file) ask the
//! provider once, not once per resource: each answer is keyed by the access token that read it
//! (as its digest, never the token), so it is never handed to another connection.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;
use wearlab_domain::ports::providers::{ProviderCredentials, ProviderError};

/// SHA-256 of an access token: answers are kept for the token that read them, never handed to
/// another connection, and the token itself is not copied into a key.
pub type TokenDigest = [u8; 32];

pub fn digest(credentials: &ProviderCredentials) -> TokenDigest {
    Sha256::digest(credentials.access_token.expose().as_bytes()).into()
}

/// Answers kept for `life` per key, each fetched once however many callers ask for it at once:
/// the first asks the provider, the others wait for its answer. A failure is not kept (the next caller
/// asks again). At most `most` keys are kept; the oldest goes first.
pub struct Kept<K, V> {
    life: std::time::Duration,
    most: usize,
    entries: Mutex<HashMap<K, Slot<V>>>,
}

/// When a kept answer was first asked for, and the answer once it came.
type Slot<V> = (Instant, Arc<OnceCell<Arc<V>>>);

impl<K: Eq + Hash + Clone, V> Kept<K, V> {
    pub fn new(life: std::time::Duration, most: usize) -> Self {
        Self { life, most, entries: Mutex::new(HashMap::new()) }
    }

    pub async fn get_or_fetch<F>(&self, key: K, fetch: impl FnOnce() -> F) -> Result<Arc<V>, ProviderError>
    where
        F: Future<Output = Result<V, ProviderError>>,
    {
        let cell = {
            let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            entries.retain(|_, (at, _)| now.duration_since(*at) < self.life);
            if entries.len() >= self.most && !entries.contains_key(&key) {
                let oldest = entries.iter().min_by_key(|(_, (at, _))| *at).map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    entries.remove(&k);
                }
            }
            entries.entry(key).or_insert_with(|| (now, Arc::new(OnceCell::new()))).1.clone()
        };
        cell.get_or_try_init(|| async { fetch().await.map(Arc::new) }).await.cloned()
    }
}
