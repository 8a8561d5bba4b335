//! Per-client rate-limit state in process, in a fixed amount of memory.
//!
//! Crawl-delay and Request-rate need "when did this bot last fetch from this
//! site?". The answer lives in a set-associative table allocated once:
//! `max_clients` entries in buckets of [`WAYS`]; a new client takes the least
//! recently used entry of its bucket. Memory never grows with the number of
//! distinct clients (an attacker rotating addresses only evicts), and a lookup
//! is one hash and one short lock on a bucket.
//!
//! The cost of eviction is leniency: a client evicted from a full table is
//! seen as new and gets one request through early. That errs towards letting
//! a compliant crawler work, never towards blocking it.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Entries per bucket.
pub const WAYS: usize = 4;

#[derive(Clone, Copy, Default)]
struct Entry {
    /// Hash of the key; 0 = empty.
    key: u64,
    /// Nanoseconds since the table's epoch of the last admitted request.
    last: u64,
}

/// A bounded table of last-request times.
pub struct RateTable {
    buckets: Box<[Mutex<[Entry; WAYS]>]>,
    hasher: RandomState,
    epoch: Instant,
}

impl RateTable {
    /// A table that tracks at most `max_clients` clients (rounded up to whole buckets).
    pub fn new(max_clients: usize) -> RateTable {
        let n = max_clients.div_ceil(WAYS).max(1);
        RateTable {
            buckets: (0..n).map(|_| Mutex::new([Entry::default(); WAYS])).collect(),
            hasher: RandomState::new(),
            epoch: Instant::now(),
        }
    }

    /// How many clients the table can hold.
    pub fn capacity(&self) -> usize {
        self.buckets.len() * WAYS
    }

    /// Bytes of the table itself (it never grows).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
    }

    /// Admit a request from `key` at `now` if at least `interval` has passed
    /// since its last admitted request; otherwise return how long to wait.
    /// Refused requests do not move the clock.
    pub fn admit(&self, key: impl Hash, interval: Duration, now: Instant) -> Result<(), Duration> {
        let h = self.hasher.hash_one(key) | 1; // never 0, which marks an empty entry
        let now_ns = now.saturating_duration_since(self.epoch).as_nanos().min(u128::from(u64::MAX - 1)) as u64 + 1;
        let bucket = &self.buckets[(h >> 7) as usize % self.buckets.len()];
        let mut entries = bucket.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = entries.iter_mut().find(|e| e.key == h) {
            let elapsed = Duration::from_nanos(now_ns.saturating_sub(e.last));
            if elapsed < interval {
                return Err(interval - elapsed);
            }
            e.last = now_ns;
            return Ok(());
        }
        // New client: take the empty or least recently used entry.
        let victim = entries.iter_mut().min_by_key(|e| if e.key == 0 { 0 } else { e.last }).expect("WAYS > 0");
        *victim = Entry { key: h, last: now_ns };
        Ok(())
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
