//! State in process, in a fixed amount of memory: rate-limit clocks, bans,
//! and who has read robots.txt.
//!
//! Each is a [`TimeTable`]: "key -> a time" in a set-associative table
//! allocated once, with `capacity` entries in buckets of [`WAYS`]; a new key
//! takes the empty or oldest entry of its bucket. Memory never grows with the
//! number of distinct clients (an attacker rotating addresses only evicts),
//! and a lookup is one hash and one short lock on a bucket.
//!
//! The cost of eviction is leniency: an evicted rate clock lets a client's
//! next request through early, an evicted ban ends early, an evicted
//! robots.txt read is forgotten. Each errs towards letting a client work,
//! never towards blocking it.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{BanKey, RateKey, SeenKey, State};

/// Entries per bucket.
pub const WAYS: usize = 4;

#[derive(Clone, Copy, Default)]
struct Entry<T> {
    /// Hash of the key; 0 = empty.
    key: u64,
    /// Nanoseconds since the table's epoch (a time whose meaning is the
    /// table's: last request, ban end, last read).
    at: u64,
    /// What the table keeps beside the time (`()` for most tables; the
    /// robots.txt version read, for reads).
    tag: T,
}

/// A bounded map from keys to times (and a small `T` beside each), the
/// building block of the in-process state. Keys are kept as 64-bit hashes
/// with a per-process random seed, so clients cannot aim collisions.
pub struct TimeTable<T = ()> {
    buckets: Box<[Mutex<[Entry<T>; WAYS]>]>,
    hasher: RandomState,
    epoch: Instant,
}

impl<T: Copy + Default> TimeTable<T> {
    /// A table that holds at most `capacity` keys (rounded up to whole buckets).
    pub fn new(capacity: usize) -> TimeTable<T> {
        let n = capacity.div_ceil(WAYS).max(1);
        TimeTable {
            buckets: (0..n).map(|_| Mutex::new([Entry::default(); WAYS])).collect(),
            hasher: RandomState::new(),
            epoch: Instant::now(),
        }
    }

    /// How many keys the table can hold.
    pub fn capacity(&self) -> usize {
        self.buckets.len() * WAYS
    }

    /// Bytes of the table itself (it never grows).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
    }

    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos().min(u128::from(u64::MAX - 1)) as u64 + 1
    }

    fn instant(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns.saturating_sub(1))
    }

    /// Run `f` on the key's time (`None`: not in the table); a `Some`
    /// returned by `f` is stored, taking the empty or oldest entry of the
    /// bucket for a new key.
    pub fn update<R>(&self, key: impl Hash, f: impl FnOnce(Option<Instant>) -> (Option<Instant>, R)) -> R {
        self.update_tagged(key, |found| {
            let (store, r) = f(found.map(|(t, _)| t));
            (store.map(|t| (t, T::default())), r)
        })
    }

    /// [`TimeTable::update`] with the tag kept beside the time.
    pub fn update_tagged<R>(
        &self,
        key: impl Hash,
        f: impl FnOnce(Option<(Instant, T)>) -> (Option<(Instant, T)>, R),
    ) -> R {
        let h = self.hasher.hash_one(key) | 1; // never 0, which marks an empty entry
        let bucket = &self.buckets[(h >> 7) as usize % self.buckets.len()];
        let mut entries = bucket.lock().unwrap_or_else(|e| e.into_inner());
        let found = entries.iter().position(|e| e.key == h);
        let (store, r) = f(found.map(|i| (self.instant(entries[i].at), entries[i].tag)));
        if let Some((t, tag)) = store {
            let at = self.ns(t);
            let i = found.unwrap_or_else(|| {
                let oldest = entries.iter().enumerate().min_by_key(|(_, e)| if e.key == 0 { 0 } else { e.at });
                oldest.map_or(0, |(i, _)| i)
            });
            entries[i] = Entry { key: h, at, tag };
        }
        r
    }
}

/// Last-request times for rate limits.
pub struct RateTable(TimeTable);

impl RateTable {
    /// A table that tracks at most `max_clients` clients (rounded up to whole buckets).
    pub fn new(max_clients: usize) -> RateTable {
        RateTable(TimeTable::new(max_clients))
    }

    /// How many clients the table can hold.
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }

    /// Bytes of the table itself (it never grows).
    pub fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }

    /// Admit a request from `key` at `now` if at least `interval` has passed
    /// since its last admitted request; otherwise return how long to wait.
    /// Refused requests do not move the clock.
    pub fn admit(&self, key: impl Hash, interval: Duration, now: Instant) -> Result<(), Duration> {
        self.0.update(key, |last| match last {
            Some(last) if now.saturating_duration_since(last) < interval => {
                (None, Err(interval - now.saturating_duration_since(last)))
            }
            _ => (Some(now), Ok(())),
        })
    }
}

/// All in-process state, each table bounded.
pub struct MemoryState {
    rates: RateTable,
    bans: TimeTable,
    /// Robots.txt reads: when, and which version ([`crate::robots::RobotsTxt::hash`]).
    seen: TimeTable<u64>,
}

impl MemoryState {
    /// Tables of at most `max_clients` entries each.
    pub fn new(max_clients: usize) -> MemoryState {
        MemoryState {
            rates: RateTable::new(max_clients),
            bans: TimeTable::new(max_clients),
            seen: TimeTable::new(max_clients),
        }
    }

    /// The rate table (its size is reported by the fault tests).
    pub fn rates(&self) -> &RateTable {
        &self.rates
    }
}

impl State for MemoryState {
    fn admit(&self, key: &RateKey<'_>, interval: Duration, now: Instant) -> Result<(), Duration> {
        self.rates.admit(key, interval, now)
    }

    fn ban(&self, key: &BanKey<'_>, until: Instant) {
        self.bans.update(key, |old| (Some(old.map_or(until, |o| o.max(until))), ()));
    }

    fn banned(&self, key: &BanKey<'_>, now: Instant) -> Option<Duration> {
        self.bans.update(key, |until| (None, until.filter(|u| *u > now).map(|u| u - now)))
    }

    fn saw_robots(&self, key: &SeenKey<'_>, version: u64, now: Instant) {
        // A read announced late (by another instance) never replaces a later one.
        self.seen.update_tagged(key, |last| match last {
            Some((t, _)) if t > now => (None, ()),
            _ => (Some((now, version)), ()),
        });
    }

    fn robots_read(&self, key: &SeenKey<'_>) -> Option<(Instant, u64)> {
        self.seen.update_tagged(key, |last| (None, last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_request_within_the_interval_waits() {
        let t = RateTable::new(16);
        let t0 = Instant::now();
        let i = Duration::from_secs(5);
        assert!(t.admit(("1.2.3.4", "bingbot"), i, t0).is_ok());
        let wait = t.admit(("1.2.3.4", "bingbot"), i, t0 + Duration::from_secs(2)).unwrap_err();
        assert_eq!(wait, Duration::from_secs(3));
        // Another client, or the same after the interval, is admitted.
        assert!(t.admit(("1.2.3.5", "bingbot"), i, t0 + Duration::from_secs(2)).is_ok());
        assert!(t.admit(("1.2.3.4", "bingbot"), i, t0 + Duration::from_secs(5)).is_ok());
    }

    #[test]
    fn refused_requests_do_not_reset_the_clock() {
        let t = RateTable::new(16);
        let t0 = Instant::now();
        let i = Duration::from_secs(10);
        t.admit(1u32, i, t0).unwrap();
        t.admit(1u32, i, t0 + Duration::from_secs(9)).unwrap_err();
        assert!(t.admit(1u32, i, t0 + Duration::from_secs(10)).is_ok());
    }

    #[test]
    fn memory_is_fixed_whatever_the_number_of_clients() {
        let t = RateTable::new(1000);
        let before = t.memory_bytes();
        let t0 = Instant::now();
        for i in 0..100_000u32 {
            let _ = t.admit(i, Duration::from_secs(1), t0);
        }
        assert_eq!(t.memory_bytes(), before);
        assert_eq!(t.capacity(), 1000);
    }
}
