//! Waits before trying again: random spread so that competing workers do not retry in
//! lockstep, and the growing waits of a pull whose provider keeps failing.

use std::time::Duration;

/// A random wait from zero to `up_to` (uniform, millisecond steps).
pub fn jitter(up_to: Duration) -> Duration {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..8]);
    let span = up_to.as_millis().min(u128::from(u64::MAX - 1)) as u64;
    Duration::from_millis(u64::from_le_bytes(bytes) % (span + 1))
}

/// The first wait after a pull's provider failed (a 5xx, a timeout): each further failure in a
/// row doubles it, up to [`PROVIDER_FAILURE_WAIT_MAX`].
pub const PROVIDER_FAILURE_WAIT: Duration = Duration::from_secs(30);
/// The longest wait between two tries of a failing provider.
pub const PROVIDER_FAILURE_WAIT_MAX: Duration = Duration::from_secs(15 * 60);

/// The wait after the `failures`-th failure in a row (1 = the first): half of the doubled wait
/// for sure, the other half random ("equal jitter"), so that the pulls a provider outage failed
/// together do not all come back in the same second.
pub fn after_provider_failure(failures: u32) -> Duration {
    let doubled = PROVIDER_FAILURE_WAIT.saturating_mul(1 << failures.saturating_sub(1).min(10));
    let wait = doubled.min(PROVIDER_FAILURE_WAIT_MAX);
    wait / 2 + jitter(wait / 2)
}

/// The wait a provider's rate limit asks for (`Retry-After`, at least a second), plus up to a
/// tenth more (at least a second), so that the pulls it stopped resume spread out rather than
/// all at its reset.
pub fn after_rate_limit(retry_after_secs: u64) -> Duration {
    let wait = Duration::from_secs(retry_after_secs.max(1));
    wait + jitter((wait / 10).max(Duration::from_secs(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_its_bound_and_varies() {
        let draws: Vec<Duration> = (0..200).map(|_| jitter(Duration::from_millis(50))).collect();
        assert!(draws.iter().all(|d| *d <= Duration::from_millis(50)));
        assert!(draws.iter().any(|d| *d != draws[0]), "random, not fixed");
        assert_eq!(jitter(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn provider_failure_waits_double_from_30_seconds_up_to_15_minutes_with_half_random() {
        for (failures, full) in [(1, 30), (2, 60), (3, 120), (4, 240), (5, 480), (6, 900), (40, 900)] {
            for _ in 0..50 {
                let wait = after_provider_failure(failures);
                let full = Duration::from_secs(full);
                assert!(wait >= full / 2 && wait <= full, "{failures}: {wait:?}");
            }
        }
    }

    #[test]
    fn rate_limit_waits_honour_retry_after_and_add_at_most_a_tenth() {
        for _ in 0..50 {
            let wait = after_rate_limit(600);
            assert!(wait >= Duration::from_secs(600) && wait <= Duration::from_secs(660), "{wait:?}");
            let wait = after_rate_limit(0);
            assert!(wait >= Duration::from_secs(1) && wait <= Duration::from_secs(2), "{wait:?}");
        }
    }
}
