//! A histogram several processes observe into and one renders, in a fixed
//! region of shared memory (the nginx module's `robotgate_decision_seconds`,
//! observed by every worker and served by whichever takes the scrape).
//!
//! Each process observes into a lane of its own (the nginx worker's
//! number, [`Histogram::observe`]): its bucket counts and its sum, on two
//! cache lines no other worker writes, so an observation is two atomic adds
//! on lines that stay in the observing core's cache. Two processes that
//! meet in one lane (an old worker still finishing beside its successor
//! after `nginx -s reload`) still count right: the adds are atomic. A scrape
//! sums the lanes. Nothing takes a lock.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::metric;

/// Buckets a lane has room for: up to 14 bounds, and the one above them.
const BUCKETS: usize = 15;

/// Lanes of a region: a worker numbered past them shares a lane.
pub const LANES: usize = 64;

/// One process's counts: 128 bytes, two cache lines of its own.
#[repr(C, align(128))]
struct Lane {
    /// Observations per bucket (not cumulative); the last: above every bound.
    counts: [AtomicU64; BUCKETS],
    /// The observations' sum, in nanoseconds.
    sum_ns: AtomicU64,
}

/// A histogram of durations in a region shared by processes.
pub struct Histogram {
    lanes: &'static [Lane],
    /// Upper bounds, in nanoseconds, ascending.
    bounds: &'static [u64],
}

impl Histogram {
    /// Bytes of a region (and its alignment: the lanes are aligned to 128).
    pub const fn region_bytes() -> usize {
        LANES * std::mem::size_of::<Lane>()
    }

    /// The histogram in the region at `base`, with upper bounds `bounds`
    /// (nanoseconds, ascending, at most 14): zeroed memory is an empty one,
    /// and one observed into before is used as it is. `None`: the region is
    /// too small or misaligned, or the bounds do not fit.
    ///
    /// # Safety
    /// `base` is valid for reads and writes of `len` bytes for as long as
    /// the histogram is used, zeroed before its first use, and mapped shared
    /// by every process using it.
    pub unsafe fn in_region(base: *mut u8, len: usize, bounds: &'static [u64]) -> Option<Histogram> {
        let ascending = bounds.windows(2).all(|w| w[0] < w[1]);
        if len < Self::region_bytes() || base.align_offset(128) != 0 || bounds.len() >= BUCKETS || !ascending {
            return None;
        }
        // SAFETY: inside the caller's region, aligned (checked above);
        // atomics are valid for any bit pattern, zero included.
        let lanes = unsafe { std::slice::from_raw_parts(base as *const Lane, LANES) };
        Some(Histogram { lanes, bounds })
    }

    /// Observe `ns` nanoseconds in lane `lane` (the worker's number; taken
    /// modulo [`LANES`]). Cost: a scan of the bounds and two atomic adds.
    pub fn observe(&self, lane: usize, ns: u64) {
        let lane = &self.lanes[lane % LANES];
        // The first bound at or above it, as Prometheus' `le` reads.
        let i = self.bounds.iter().position(|b| ns <= *b).unwrap_or(self.bounds.len());
        lane.counts[i].fetch_add(1, Ordering::Relaxed);
        lane.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The histogram's lines as family `family`, its head included.
    pub fn render(&self, family: &metric::Family, out: &mut String) {
        let mut counts = vec![0u64; self.bounds.len() + 1];
        let mut sum_ns = 0u64;
        for lane in self.lanes {
            for (n, c) in counts.iter_mut().zip(&lane.counts) {
                *n = n.wrapping_add(c.load(Ordering::Relaxed));
            }
            sum_ns = sum_ns.wrapping_add(lane.sum_ns.load(Ordering::Relaxed));
        }
        let bounds: Vec<f64> = self.bounds.iter().map(|ns| *ns as f64 / 1e9).collect();
        metric::write_head(out, family, "histogram");
        metric::write_histogram(out, family.name, &bounds, &counts, sum_ns as f64 / 1e9);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram() -> Histogram {
        let lanes: &'static mut [Lane] = Box::leak((0..LANES).map(|_| Lane::default()).collect::<Box<[Lane]>>());
        // SAFETY: a leaked, zeroed region of lanes.
        unsafe {
            Histogram::in_region(lanes.as_mut_ptr().cast(), Histogram::region_bytes(), &metric::DECISION_BOUNDS_NS)
        }
        .unwrap()
    }

    impl Default for Lane {
        fn default() -> Lane {
            Lane { counts: Default::default(), sum_ns: AtomicU64::new(0) }
        }
    }

    #[test]
    fn lanes_add_up_at_a_scrape() {
        let h = histogram();
        std::thread::scope(|scope| {
            for lane in [0, 1, 1, 70] {
                let h = &h;
                scope.spawn(move || {
                    for _ in 0..1000 {
                        h.observe(lane, 500);
                        h.observe(lane, 501);
                        h.observe(lane, 5_000_000);
                    }
                });
            }
        });
        let mut text = String::new();
        h.render(&metric::DECISION_SECONDS, &mut text);
        assert!(text.starts_with("# HELP robotgate_decision_seconds Time to classify"), "{text}");
        assert!(text.contains("# TYPE robotgate_decision_seconds histogram\n"), "{text}");
        assert!(text.contains("robotgate_decision_seconds_bucket{le=\"0.0000005\"} 4000\n"), "{text}");
        assert!(text.contains("robotgate_decision_seconds_bucket{le=\"0.000001\"} 8000\n"), "{text}");
        assert!(text.contains("robotgate_decision_seconds_bucket{le=\"0.001\"} 8000\n"), "{text}");
        assert!(text.contains("robotgate_decision_seconds_bucket{le=\"+Inf\"} 12000\n"), "{text}");
        assert!(text.contains("robotgate_decision_seconds_count 12000\n"), "{text}");
        assert!(text.contains("robotgate_decision_seconds_sum 20.004004\n"), "{text}");
    }

    #[test]
    fn a_small_region_or_unsorted_bounds_are_refused() {
        let mut region = vec![0u8; 256];
        let base = region.as_mut_ptr();
        // SAFETY: too small: never used.
        assert!(unsafe { Histogram::in_region(base, 256, &metric::DECISION_BOUNDS_NS) }.is_none());
        static UNSORTED: [u64; 2] = [2, 1];
        let h = histogram();
        let base = h.lanes.as_ptr() as *mut u8;
        // SAFETY: the leaked region above, checked before any use.
        assert!(unsafe { Histogram::in_region(base, Histogram::region_bytes(), &UNSORTED) }.is_none());
    }
}
