//! When the set-up makes everyone look like one client (issue #27, part 4):
//! the counting and the judging, for every host (issue #54).
//!
//! Behind a load balancer the host was not told about (the proxy's
//! `trusted_proxies`, nginx's `set_real_ip_from`), every client is the
//! balancer's address: crawlers cannot be verified, and one trap hit would
//! ban everyone. Each request adds to a few atomic counters
//! ([`Crowd::note`]: no lock, no clock); once a second a host folds them
//! into the last minute (60 one-second slots) and judges it
//! ([`Crowd::tick`]):
//!
//! * when over 90% of the minute's requests (at least [`MIN_REQUESTS`]) came
//!   from loopback or private addresses, at least one carried
//!   `X-Forwarded-For` or `Forwarded`, and the host trusts no proxy, the
//!   warning holds ([`Crowd::active`]), to be said at most hourly;
//! * a loopback or private address that sent over half of the minute's
//!   requests (found by a majority vote kept in one atomic word) is the
//!   *crowd's* address: a trap hit from it is recorded but bans no one
//!   ([`crate::policy::RequestFacts::crowd`]).
//!
//! Nothing but atomics, and all zero bytes is the empty state: one `Crowd`
//! may live in memory shared by several processes ([`Crowd::in_region`]:
//! nginx's workers), each noting its requests, and any of them ticking (one
//! fold a second, whoever claims it).

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use crate::state::shared::fnv1a;

/// Fewer requests in a minute than this say nothing about a set-up.
pub const MIN_REQUESTS: u64 = 10;

/// Slots of the minute.
const SLOTS: usize = 60;

/// The counters of the current second, and what the last minute made of them.
#[repr(C)]
pub struct Crowd {
    total: AtomicU64,
    local: AtomicU64,
    forwarded: AtomicU64,
    /// Requests from the vote's candidate at the time.
    leader_hits: AtomicU64,
    /// Majority vote (Boyer-Moore): candidate hash (high 32 bits), its count.
    vote: AtomicU64,
    /// The candidate sent over half of the last minute's requests.
    dominant: AtomicBool,
    /// The warning holds for the last minute.
    active: AtomicBool,
    /// The one-second slots: total, local, forwarded, leader hits.
    minute: [[AtomicU64; 4]; SLOTS],
    /// Seconds folded so far (the next slot is `folds % SLOTS`).
    folds: AtomicU64,
    /// The last second folded (Unix seconds): one fold per second, whoever
    /// ticks.
    folded_second: AtomicU64,
    warned_ms: AtomicU64,
}

impl Default for Crowd {
    fn default() -> Self {
        Crowd {
            total: AtomicU64::new(0),
            local: AtomicU64::new(0),
            forwarded: AtomicU64::new(0),
            leader_hits: AtomicU64::new(0),
            vote: AtomicU64::new(0),
            dominant: AtomicBool::new(false),
            active: AtomicBool::new(false),
            minute: [const { [const { AtomicU64::new(0) }; 4] }; SLOTS],
            folds: AtomicU64::new(0),
            folded_second: AtomicU64::new(0),
            warned_ms: AtomicU64::new(0),
        }
    }
}

fn hash(ip: IpAddr) -> u32 {
    let h = match ip {
        IpAddr::V4(v4) => fnv1a(&v4.octets()),
        IpAddr::V6(v6) => fnv1a(&v6.octets()),
    };
    (h ^ (h >> 32)) as u32 | 1 // never 0: an empty vote
}

impl Crowd {
    /// The bytes [`Crowd::in_region`] needs.
    pub const fn region_bytes() -> usize {
        std::mem::size_of::<Crowd>()
    }

    /// The `Crowd` at `region`, which holds zero bytes (a new region) or
    /// one placed there before (one kept across a reload).
    ///
    /// # Safety
    /// `region` is [`Crowd::region_bytes`] bytes, aligned for a `u64`, that
    /// hold zeros or a `Crowd`, and stay mapped for `'a`. Every field is an
    /// atomic integer or boolean whose every value `Crowd` writes is valid,
    /// and all zeros is the empty state.
    pub unsafe fn in_region<'a>(region: *mut u8) -> Option<&'a Crowd> {
        if region.is_null() || region.align_offset(std::mem::align_of::<Crowd>()) != 0 {
            return None;
        }
        // SAFETY: the caller's: mapped, aligned, zeros or a `Crowd`.
        Some(unsafe { &*(region as *const Crowd) })
    }

    /// Count a request from `client` (after trusted proxies), which carried
    /// a forwarding header or not. Returns whether `client` is a loopback or
    /// private address that most of the last minute's traffic came from. Cost: four relaxed
    /// atomic adds and one compare-and-swap loop; no lock.
    pub fn note(&self, client: Option<IpAddr>, forwarded: bool) -> bool {
        self.total.fetch_add(1, Relaxed);
        if forwarded {
            self.forwarded.fetch_add(1, Relaxed);
        }
        let Some(ip) = client else { return false };
        let local = crate::identity::is_local(ip);
        if local {
            self.local.fetch_add(1, Relaxed);
        }
        let h = hash(ip);
        let before = self
            .vote
            .fetch_update(Relaxed, Relaxed, |w| {
                let (cand, n) = ((w >> 32) as u32, w as u32);
                Some(if cand == h {
                    (u64::from(h) << 32) | u64::from(n.saturating_add(1))
                } else if n == 0 {
                    (u64::from(h) << 32) | 1
                } else {
                    (u64::from(cand) << 32) | u64::from(n - 1)
                })
            })
            .unwrap_or_default();
        let leader = (before >> 32) as u32 == h;
        if leader {
            self.leader_hits.fetch_add(1, Relaxed);
        }
        // Only a loopback or private address: a public one sending most of
        // a small site's traffic may be the scraper itself, which must not
        // buy itself out of trap bans by sending more.
        leader && local && self.dominant.load(Relaxed)
    }

    /// Whether the warning holds for the last minute.
    pub fn active(&self) -> bool {
        self.active.load(Relaxed)
    }

    /// Fold this second's counts into the minute and judge it, at `now_ms`
    /// (Unix milliseconds); returns whether the warning is to be said now
    /// (it holds, and was not said within the hour). `no_trusted_proxies`:
    /// the host trusts no proxy to name the client. Once per second of
    /// `now_ms`: a second tick within the same second (another process
    /// sharing this `Crowd`, or a timer that ran early) folds nothing.
    pub fn tick(&self, no_trusted_proxies: bool, now_ms: u64) -> bool {
        let second = now_ms / 1000;
        let last = self.folded_second.load(Relaxed);
        let claimed = self.folds.load(Relaxed) == 0 || second > last;
        if !claimed || self.folded_second.compare_exchange(last, second, Relaxed, Relaxed).is_err() {
            return false;
        }
        let counts = [&self.total, &self.local, &self.forwarded, &self.leader_hits].map(|c| c.swap(0, Relaxed));
        let at = (self.folds.fetch_add(1, Relaxed) % SLOTS as u64) as usize;
        for (slot, n) in self.minute[at].iter().zip(counts) {
            slot.store(n, Relaxed);
        }
        let sum = self.minute.iter().fold([0u64; 4], |mut a, s| {
            for (a, s) in a.iter_mut().zip(s) {
                *a = a.saturating_add(s.load(Relaxed));
            }
            a
        });
        let [total, local, forwarded, leader] = sum;
        let enough = total >= MIN_REQUESTS;
        self.dominant.store(enough && leader.saturating_mul(2) > total, Relaxed);
        let active =
            enough && no_trusted_proxies && forwarded > 0 && local.saturating_mul(10) > total.saturating_mul(9);
        self.active.store(active, Relaxed);
        let last = self.warned_ms.load(Relaxed);
        let due = active && (last == 0 || now_ms.saturating_sub(last) >= 3_600_000);
        due && self.warned_ms.compare_exchange(last, now_ms, Relaxed, Relaxed).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_traffic_from_one_local_address_with_forwarding_headers_warns_hourly() {
        let crowd = Crowd::default();
        let lb: IpAddr = "10.0.0.2".parse().unwrap();
        for i in 0..20 {
            crowd.note(Some(lb), i == 0);
        }
        crowd.note(Some("203.0.113.9".parse().unwrap()), false);
        assert!(crowd.tick(true, 1_000), "warns at once");
        assert!(crowd.active() && crowd.note(Some(lb), false), "the balancer is the crowd's address");
        assert!(!crowd.note(Some("203.0.113.9".parse().unwrap()), false));
        assert!(!crowd.tick(true, 2_000), "not again within the hour");
        assert!(crowd.tick(true, 1_000 + 3_600_000), "again an hour on");
        // With trusted_proxies set, no warning (the crowd is still known).
        assert!(!crowd.tick(false, 9_000_000) && !crowd.active());
        // Public clients, or no forwarding header: nothing to say.
        let quiet = Crowd::default();
        for i in 0..100u8 {
            quiet.note(Some(IpAddr::from([198, 51, 100, i])), true);
        }
        assert!(!quiet.tick(true, 1_000) && !quiet.note(Some(IpAddr::from([198, 51, 100, 1])), false));
        let direct = Crowd::default();
        for _ in 0..100 {
            direct.note(Some(lb), false);
        }
        assert!(!direct.tick(true, 1_000));
    }

    #[test]
    fn one_crowd_in_zeroed_shared_bytes_counts_every_noter_and_folds_once_a_second() {
        // A region as nginx's zone gives it: zeroed, aligned, outliving its users.
        let mut region = vec![0u64; Crowd::region_bytes().div_ceil(8)];
        let at = region.as_mut_ptr().cast::<u8>();
        // SAFETY: zeroed, aligned for u64, alive for the test.
        let (a, b) = unsafe { (Crowd::in_region(at).unwrap(), Crowd::in_region(at).unwrap()) };
        // SAFETY: a misaligned start is refused rather than used.
        assert!(unsafe { Crowd::in_region(at.wrapping_add(1)) }.is_none());
        let lb: IpAddr = "10.0.0.2".parse().unwrap();
        // Two workers, each with half the traffic: together over the minimum.
        for i in 0..6 {
            a.note(Some(lb), i == 0);
            b.note(Some(lb), false);
        }
        assert!(a.tick(true, 5_000), "the two workers' requests are one minute's");
        assert!(!b.tick(true, 5_999), "the same second is folded once");
        assert!(b.active() && b.note(Some(lb), false), "both see the crowd");
        assert!(!a.tick(true, 6_000), "the warning is said once for both");
    }
}
