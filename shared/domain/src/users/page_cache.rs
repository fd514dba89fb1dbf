//! Pages of a team's user list kept as their JSON answer by the process that served them, so
//! that asking again for a page nobody changed costs one read (the team's counter shards, in
//! one batch read: one round trip) instead of reading, decoding and writing out up to 500 users.
//!
//! A kept page is trusted only while the counter's version (the sum of its shards' versions,
//! [`super::ListedUsers`]) is the one it was read under. Every write that changes what a page
//! shows moves one shard's version in the same transaction: creating, deleting and restoring a
//! user ([`super::count_change`]), and changing a listed one (PATCH, a connection made or
//! removed: [`super::listed_change`]). Erasure removes users who have already left the list. So
//! a page is answered from here only if no such write committed since it was read.
//!
//! When the process keeps an answer of the page, the counter is read first and the page only
//! if the version moved; otherwise both are read at once (page 1), as an uncached listing does,
//! since a hit is unlikely. Either way a page is kept only if its index read started at least
//! the index lag ([`Table::index_lag`]: zero on the embedded table, whose index is written with
//! the item; 2 s on DynamoDB, whose index takes a moment to show a write) after this process
//! first saw the version: then it shows every write up to the version. (It may also show a
//! later one that committed meanwhile; it is kept under the older version, which no request
//! reads from the counter once that write committed.) A kept page is also read again after
//! [`MAX_AGE`], which bounds how long a page can be out of date if the index ever lags longer.
//!
//! [`Table::index_lag`]: crate::ports::Table::index_lag

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};

use super::{PageRequest, listed_users, read_listed, read_page};
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::TeamId;
use crate::ports::StoreError;

/// How long a kept page is answered without being read again, at most.
pub const MAX_AGE: Duration = Duration::from_secs(60);
/// The most bytes of kept pages one process holds (a page of 100 users is about 26 KB, one of
/// 500 about 130 KB). The least recently answered go first.
pub const BUDGET_BYTES: usize = 8 << 20;
/// The most pages (kept or only seen) one process tracks.
pub const MAX_PAGES: usize = 4096;

/// `GET /v2/user` as its JSON answer: from the process's kept pages when the team's users have
/// not changed since, else read ([`super::list`]) and kept.
pub async fn list_json(
    deps: &Deps,
    cache: &PageCache,
    team: TeamId,
    page: PageRequest,
) -> Result<Bytes, DomainError> {
    let key = PageKey { team, offset: page.offset, limit: page.limit };
    if !cache.holds(&key) {
        // No kept answer of this page (never asked for here, or changed at the last request):
        // a hit is unlikely, so the counter and the page are read at once (page 1), as an
        // uncached listing does. Which read came first is unknown: the page is kept only if
        // this version was first seen here at least the index lag before the reads started.
        let started = deps.now();
        let (users, listed) = read_page(deps, team, page).await?;
        let body = render(&users)?;
        if cache.saw(key, listed.version, deps.now(), IndexRead::Alongside(started)) {
            cache.keep(key, listed.version, body.clone(), started);
        }
        return Ok(body);
    }
    let listed = listed_users(deps, team).await?;
    let read_at = deps.now();
    if let Some(body) = cache.get(&key, listed.version, read_at) {
        return Ok(body);
    }
    let keepable = cache.saw(key, listed.version, read_at, IndexRead::AfterCounter);
    let users = read_listed(deps, team, page, listed.active).await?;
    let body = render(&users)?;
    if keepable {
        cache.keep(key, listed.version, body.clone(), read_at);
    }
    Ok(body)
}

fn render(page: &wearlab_models::UserPage) -> Result<Bytes, DomainError> {
    // A page is plain serde types: writing it cannot fail.
    let text = serde_json::to_vec(page).map_err(|e| StoreError::Corrupt(format!("user page: {e}")))?;
    Ok(Bytes::from(text))
}

/// When a page's index read started, against the counter read that gave its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexRead {
    /// After the counter read was over.
    AfterCounter,
    /// At the same time, from this instant.
    Alongside(DateTime<Utc>),
}

/// One page of one team, as asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PageKey {
    team: TeamId,
    offset: u64,
    limit: u64,
}

/// What the process knows of one page.
#[derive(Debug)]
struct Entry {
    /// The counter item's version this entry is about.
    version: u64,
    /// When this process first read the counter at `version`: the writes up to it had
    /// committed by then.
    first_seen: DateTime<Utc>,
    /// The page's answer at `version`, and when the counter was read before reading it.
    kept: Option<(Bytes, DateTime<Utc>)>,
    /// When it was last used, in [`Pages::tick`]s (for eviction).
    used: u64,
}

/// The pages this process keeps: one per application state (a Lambda execution environment,
/// the local stack), shared by its requests.
#[derive(Debug)]
pub struct PageCache {
    index_lag: Duration,
    pages: Mutex<Pages>,
}

#[derive(Debug, Default)]
struct Pages {
    entries: HashMap<PageKey, Entry>,
    bytes: usize,
    tick: u64,
}

impl PageCache {
    /// An empty cache over a table whose index shows a write within `index_lag`
    /// ([`crate::ports::Table::index_lag`]).
    pub fn new(index_lag: Duration) -> Self {
        Self { index_lag, pages: Mutex::default() }
    }

    fn pages(&self) -> std::sync::MutexGuard<'_, Pages> {
        // The map stays whole if a holder panicked (no step leaves it half-changed).
        self.pages.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether an answer of this page is kept (at some version).
    fn holds(&self, key: &PageKey) -> bool {
        self.pages().entries.get(key).is_some_and(|e| e.kept.is_some())
    }

    /// The kept answer of the page at `version`, unless older than [`MAX_AGE`] at `now`.
    fn get(&self, key: &PageKey, version: u64, now: DateTime<Utc>) -> Option<Bytes> {
        let mut pages = self.pages();
        pages.tick += 1;
        let tick = pages.tick;
        let entry = pages.entries.get_mut(key)?;
        let (body, read_at) = entry.kept.as_ref().filter(|_| entry.version == version)?;
        if elapsed(*read_at, now) >= MAX_AGE {
            return None;
        }
        let body = body.clone();
        entry.used = tick;
        Some(body)
    }

    /// Notes that the counter was read at `version` (the read was over by `seen_at`), and
    /// answers whether the page read with it (`reads`) shows every write up to `version`, and
    /// so may be kept: its index read started at least the index lag after this process first
    /// saw the version.
    fn saw(&self, key: PageKey, version: u64, seen_at: DateTime<Utc>, reads: IndexRead) -> bool {
        let mut pages = self.pages();
        pages.tick += 1;
        let tick = pages.tick;
        let first_seen = match pages.entries.get_mut(&key) {
            Some(entry) if entry.version == version => {
                entry.used = tick;
                entry.first_seen
            }
            _ => {
                let entry = Entry { version, first_seen: seen_at, kept: None, used: tick };
                if let Some(old) = pages.entries.insert(key, entry) {
                    pages.bytes -= kept_bytes(&old);
                }
                pages.evict();
                // An index read alongside the counter's may have come first: before the version.
                if matches!(reads, IndexRead::Alongside(_)) {
                    return false;
                }
                seen_at
            }
        };
        let reads_from = match reads {
            IndexRead::AfterCounter => seen_at,
            IndexRead::Alongside(started) => started,
        };
        chrono::Duration::from_std(self.index_lag).is_ok_and(|lag| first_seen + lag <= reads_from)
    }

    /// Keeps the page's answer at `version` (read after the counter read at `read_at`), unless
    /// the entry moved to another version meanwhile.
    fn keep(&self, key: PageKey, version: u64, body: Bytes, read_at: DateTime<Utc>) {
        let mut pages = self.pages();
        let Some(entry) = pages.entries.get_mut(&key).filter(|e| e.version == version) else { return };
        let old = kept_bytes(entry);
        let new = body.len();
        entry.kept = Some((body, read_at));
        pages.bytes = pages.bytes - old + new;
        pages.evict();
    }

    /// The bytes of kept answers held now.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.pages().bytes
    }
}

impl Pages {
    /// Drops the least recently used entries until within [`BUDGET_BYTES`] and [`MAX_PAGES`].
    fn evict(&mut self) {
        while self.bytes > BUDGET_BYTES || self.entries.len() > MAX_PAGES {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| *k) else {
                return;
            };
            if let Some(e) = self.entries.remove(&oldest) {
                self.bytes -= kept_bytes(&e);
            }
        }
    }
}

fn kept_bytes(entry: &Entry) -> usize {
    entry.kept.as_ref().map_or(0, |(b, _)| b.len())
}

/// Time from `from` to `to`; zero if the clock went back.
fn elapsed(from: DateTime<Utc>, to: DateTime<Utc>) -> Duration {
    (to - from).to_std().unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u128) -> PageKey {
        PageKey { team: TeamId::from_uuid(uuid::Uuid::from_u128(n)), offset: 0, limit: 100 }
    }

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    const AFTER: IndexRead = IndexRead::AfterCounter;

    fn knows(cache: &PageCache, key: &PageKey) -> bool {
        cache.pages().entries.contains_key(key)
    }

    #[test]
    fn a_page_is_kept_only_for_the_version_it_was_read_at() {
        let cache = PageCache::new(Duration::ZERO);
        assert!(!knows(&cache, &key(1)));
        assert!(cache.saw(key(1), 7, at(0), AFTER));
        cache.keep(key(1), 7, Bytes::from_static(b"page at 7"), at(0));
        assert_eq!(cache.get(&key(1), 7, at(1)).as_deref(), Some(&b"page at 7"[..]));
        assert_eq!(cache.get(&key(1), 8, at(1)), None, "another version is not answered from the cache");
        assert_eq!(cache.get(&key(2), 7, at(1)), None, "nor another page");
        // Seeing the next version forgets the page; a late keep for the old one is dropped.
        assert!(cache.saw(key(1), 8, at(2), AFTER));
        cache.keep(key(1), 7, Bytes::from_static(b"late"), at(2));
        assert_eq!(cache.get(&key(1), 7, at(3)), None);
        assert_eq!(cache.get(&key(1), 8, at(3)), None);
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn with_index_lag_a_page_is_kept_only_when_read_that_long_after_its_version_was_seen() {
        let cache = PageCache::new(Duration::from_secs(2));
        assert!(!cache.saw(key(1), 3, at(10), AFTER), "read at once, the index may not show version 3 yet");
        assert!(!cache.saw(key(1), 3, at(11), AFTER));
        assert!(cache.saw(key(1), 3, at(12), AFTER), "two seconds after version 3 was first seen");
        cache.keep(key(1), 3, Bytes::from_static(b"p"), at(12));
        assert!(cache.get(&key(1), 3, at(13)).is_some());
    }

    #[test]
    fn a_page_read_at_once_with_the_counter_is_kept_only_if_its_version_was_seen_before_the_reads() {
        let cache = PageCache::new(Duration::ZERO);
        // Reads from 4 s, over at 5 s: the version is new, and the index read may have come
        // before the counter's; so too with a clock that did not move.
        assert!(!cache.saw(key(1), 1, at(5), IndexRead::Alongside(at(4))));
        assert!(!cache.saw(key(2), 1, at(5), IndexRead::Alongside(at(5))));
        assert!(!cache.holds(&key(1)));
        // Next time its version was seen before the reads started.
        assert!(cache.saw(key(1), 1, at(7), IndexRead::Alongside(at(6))));
        cache.keep(key(1), 1, Bytes::from_static(b"p"), at(6));
        assert!(cache.holds(&key(1)));
        let lagging = PageCache::new(Duration::from_secs(2));
        assert!(!lagging.saw(key(1), 1, at(5), IndexRead::Alongside(at(4))));
        assert!(!lagging.saw(key(1), 1, at(8), IndexRead::Alongside(at(6))), "5 s + 2 s of lag is after 6 s");
        assert!(lagging.saw(key(1), 1, at(9), IndexRead::Alongside(at(7))));
    }

    #[test]
    fn a_kept_page_is_read_again_after_max_age() {
        let cache = PageCache::new(Duration::ZERO);
        cache.saw(key(1), 1, at(0), AFTER);
        cache.keep(key(1), 1, Bytes::from_static(b"p"), at(0));
        let max = MAX_AGE.as_secs() as i64;
        assert!(cache.get(&key(1), 1, at(max - 1)).is_some());
        assert_eq!(cache.get(&key(1), 1, at(max)), None);
        // Read again at the same version: kept anew.
        assert!(cache.saw(key(1), 1, at(max), AFTER));
        cache.keep(key(1), 1, Bytes::from_static(b"q"), at(max));
        assert_eq!(cache.get(&key(1), 1, at(max + 1)).as_deref(), Some(&b"q"[..]));
        assert_eq!(cache.bytes(), 1);
    }

    #[test]
    fn the_least_recently_used_pages_go_first_when_over_budget() {
        let cache = PageCache::new(Duration::ZERO);
        let page = Bytes::from(vec![b' '; BUDGET_BYTES / 4]);
        for n in 0..4 {
            cache.saw(key(n), 1, at(0), AFTER);
            cache.keep(key(n), 1, page.clone(), at(0));
        }
        assert_eq!(cache.bytes(), BUDGET_BYTES);
        assert!(cache.get(&key(0), 1, at(1)).is_some(), "page 0 used again: page 1 is now the oldest");
        cache.saw(key(4), 1, at(1), AFTER);
        cache.keep(key(4), 1, page.clone(), at(1));
        assert!(cache.bytes() <= BUDGET_BYTES);
        assert!(!knows(&cache, &key(1)));
        for n in [0, 2, 3, 4] {
            assert!(cache.get(&key(n), 1, at(2)).is_some(), "page {n}");
        }
    }

    #[test]
    fn at_most_max_pages_are_tracked() {
        let cache = PageCache::new(Duration::ZERO);
        for n in 0..(MAX_PAGES as u128 + 10) {
            cache.saw(key(n), 1, at(0), AFTER);
        }
        assert_eq!(cache.pages().entries.len(), MAX_PAGES);
        assert!(!knows(&cache, &key(0)));
        assert!(knows(&cache, &key(MAX_PAGES as u128 + 9)));
    }
}
