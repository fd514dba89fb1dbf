//! Time. Every time-dependent rule reads a `Clock`, so tests can cross 7 days at once.

use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;
#[cfg(any(test, feature = "test-support"))]
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told (tests and benchmarks: the `test-support` feature).
#[cfg(any(test, feature = "test-support"))]
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

#[cfg(any(test, feature = "test-support"))]
impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self(Mutex::new(start))
    }

    pub fn advance(&self, by: Duration) {
        *self.0.lock().expect("clock lock") += by;
    }

    pub fn set(&self, to: DateTime<Utc>) {
        *self.0.lock().expect("clock lock") = to;
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().expect("clock lock")
    }
}

/// A clock ahead of another by an offset that only grows: the local stack runs on the system
/// clock and its tests move it forward (`POST /local/clock/advance`) to expire tokens and links
/// without waiting. Never backwards: stored expiries and schedules assume time only grows.
pub struct ShiftedClock {
    inner: Arc<dyn Clock>,
    offset_seconds: AtomicI64,
}

impl ShiftedClock {
    pub fn new(inner: Arc<dyn Clock>) -> Self {
        Self { inner, offset_seconds: AtomicI64::new(0) }
    }

    /// Moves the clock forward by `seconds` (negative values are ignored); answers the new now.
    pub fn advance_seconds(&self, seconds: i64) -> DateTime<Utc> {
        self.offset_seconds.fetch_add(seconds.max(0), Ordering::SeqCst);
        self.now()
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> DateTime<Utc> {
        self.inner.now() + Duration::seconds(self.offset_seconds.load(Ordering::SeqCst))
    }
}
