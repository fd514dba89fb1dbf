//! The adapter conformance suite: every real adapter, pointed at the local fake of its
//! provider, links, refreshes (including the rotating-token race), fetches every resource
//! across pages with units mapped, handles 401/429/5xx, answers the push handshake, checks
//! push signatures and revokes.

mod dexcom;
mod google_health;
mod hammerhead;
mod oura;
mod polar;
mod strava;
mod suunto;
mod ultrahuman;
mod wahoo;
mod whoop;
mod withings;

use std::sync::atomic::{AtomicUsize, Ordering};

use wearlab_domain::ports::providers::{ProviderError, RequestGate};

/// A gate that counts the requests it admits and, once `budget` are admitted, refuses the next
/// ones as the pipeline's throttle does when a window is full.
pub struct Counting {
    admitted: AtomicUsize,
    budget: usize,
}

/// Seconds a [`Counting`] gate over its budget asks to wait.
pub const COUNTING_WAIT_SECS: u64 = 42;

impl Default for Counting {
    fn default() -> Self {
        Self::with_budget(usize::MAX)
    }
}

impl Counting {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_budget(budget: usize) -> Self {
        Self { admitted: AtomicUsize::new(0), budget }
    }

    pub fn admitted(&self) -> usize {
        self.admitted.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl RequestGate for Counting {
    async fn admit(&self) -> Result<(), ProviderError> {
        let granted = self
            .admitted
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < self.budget).then_some(n + 1));
        granted.map(|_| ()).map_err(|_| ProviderError::RateLimited { retry_after_secs: COUNTING_WAIT_SECS })
    }
}
