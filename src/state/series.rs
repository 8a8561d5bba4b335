//! Counters that several processes add to and one renders: labelled
//! Prometheus series in a fixed region of shared memory (the nginx module's
//! metrics, counted by every worker and served by whichever takes the
//! scrape).
//!
//! A series is a slot found by the hash of its name and label values. The
//! first process to count it claims the slot and writes its text; every
//! count after that is one atomic add. Nothing takes a lock, so a process
//! that dies mid-way leaves at worst a slot whose text is not ready yet
//! (counted, not rendered). Label values must come from bounded sets (site
//! names, database robots, fixed words), as the proxy's metrics' do; a full
//! table counts what it cannot place in
//! `robotgate_metrics_series_dropped_total`.

use std::cell::UnsafeCell;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The longest text of a series (name and labels).
pub const TEXT: usize = 240;

/// Slots looked at from a series' home before it counts as dropped.
const PROBES: usize = 32;

#[repr(C)]
struct Slot {
    /// The series' hash; 0: free.
    key: AtomicU64,
    /// 1 once `text` and `len` are written.
    ready: AtomicU32,
    len: AtomicU32,
    count: AtomicU64,
    text: UnsafeCell<[u8; TEXT]>,
}

/// One series' counter ([`Series::counter`]), valid as long as its region.
#[derive(Clone, Copy)]
pub struct Counter {
    slot: &'static Slot,
}

impl Counter {
    /// Add `n`.
    pub fn add(self, n: u64) {
        self.slot.count.fetch_add(n, Ordering::Relaxed);
    }
}

/// Labelled counters in a region shared by processes.
pub struct Series {
    slots: &'static [Slot],
    /// Counts of series that found no slot.
    dropped: &'static AtomicU64,
}

// SAFETY: a slot's text is written once, by the process whose claim of the
// slot succeeded, before `ready` is published; it is read only after.
unsafe impl Sync for Series {}
// SAFETY: as above; the region outlives every view of it.
unsafe impl Send for Series {}

impl Series {
    /// Bytes of a region of `slots` series.
    pub fn region_bytes(slots: usize) -> usize {
        64 + slots.max(1) * std::mem::size_of::<Slot>()
    }

    /// The series in the region at `base`: zeroed memory is an empty table,
    /// and a table counted into before is used as it is.
    ///
    /// # Safety
    /// `base` is valid for reads and writes of `len` bytes for as long as
    /// the series are used, zeroed before its first use, and mapped shared
    /// by every process using it.
    pub unsafe fn in_region(base: *mut u8, len: usize, slots: usize) -> Option<Series> {
        let slots = slots.max(1);
        if len < Self::region_bytes(slots) || base.align_offset(8) != 0 {
            return None;
        }
        // SAFETY: inside the caller's region (checked above); atomics and
        // bytes are valid for any bit pattern, zero included.
        unsafe {
            Some(Series {
                dropped: &*(base as *const AtomicU64),
                slots: std::slice::from_raw_parts(base.add(64) as *const Slot, slots),
            })
        }
    }

    /// Add `n` to the series `name{labels=values}`.
    pub fn add(&self, name: &str, labels: &[&str], values: &[&str], n: u64) {
        match self.counter(name, labels, values) {
            Some(c) => c.add(n),
            None => {
                self.dropped.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// The counter of the series `name{labels=values}`, claimed if new: a
    /// handle to keep and add to without finding it again (`None`: no slot
    /// for it, or its text too long; counted as dropped by [`Series::add`]).
    pub fn counter(&self, name: &str, labels: &[&str], values: &[&str]) -> Option<Counter> {
        // The same in every process (label values are not the clients' to choose).
        let mut h = foldhash::fast::FixedState::with_seed(0x7365_7269_6573).build_hasher();
        name.hash(&mut h);
        values.hash(&mut h);
        let key = h.finish() | 1;
        let home = (key >> 7) as usize % self.slots.len();
        for i in 0..PROBES.min(self.slots.len()) {
            let slot = &self.slots[(home + i) % self.slots.len()];
            // A series seen before is found by a plain load: the claim (a
            // locked instruction on a line every worker shares) only for a new one.
            let seen = slot.key.load(Ordering::Acquire);
            let found = if seen != 0 {
                seen == key
            } else {
                match slot.key.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => {
                        // Ours: write the text, then publish it.
                        let mut text = Vec::with_capacity(TEXT);
                        crate::metric::write_series(&mut text, name, labels, values);
                        if text.len() > TEXT {
                            // Never rendered cut short: counted as dropped.
                            slot.ready.store(2, Ordering::Release);
                            return None;
                        }
                        // SAFETY: this process claimed the slot; no one reads
                        // the text before `ready` is 1.
                        unsafe { (&mut *slot.text.get())[..text.len()].copy_from_slice(&text) };
                        slot.len.store(text.len() as u32, Ordering::Relaxed);
                        slot.ready.store(1, Ordering::Release);
                        true
                    }
                    Err(other) => other == key,
                }
            };
            if found {
                return (slot.ready.load(Ordering::Acquire) != 2).then_some(Counter { slot });
            }
        }
        None
    }

    /// The series as Prometheus text: each family under its `# TYPE` line,
    /// after its `# HELP` line when `helps` has it.
    pub fn render(&self, out: &mut String, helps: &[crate::metric::Family]) {
        let mut lines: Vec<(&str, u64)> = Vec::new();
        for slot in self.slots {
            if slot.ready.load(Ordering::Acquire) != 1 {
                continue;
            }
            let len = slot.len.load(Ordering::Relaxed) as usize;
            // SAFETY: published (`ready` is 1) and never written again.
            let text = unsafe { &(&*slot.text.get())[..len.min(TEXT)] };
            if let Ok(text) = std::str::from_utf8(text) {
                lines.push((text, slot.count.load(Ordering::Relaxed)));
            }
        }
        lines.sort_unstable();
        let mut family = "";
        for (text, count) in lines {
            let name = text.split('{').next().unwrap_or(text);
            if name != family {
                family = name;
                match helps.iter().find(|f| f.name == name) {
                    Some(f) => crate::metric::write_head(out, f, "counter"),
                    None => out.push_str(&format!("# TYPE {name} counter\n")),
                }
            }
            out.push_str(&format!("{text} {count}\n"));
        }
        out.push_str("# TYPE robotgate_metrics_series_dropped_total counter\n");
        out.push_str(&format!("robotgate_metrics_series_dropped_total {}\n", self.dropped.load(Ordering::Relaxed)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(slots: usize) -> Series {
        let words = Series::region_bytes(slots).div_ceil(8);
        let region: &'static mut [u64] = Box::leak(vec![0u64; words].into_boxed_slice());
        // SAFETY: a leaked, zeroed, aligned region.
        unsafe { Series::in_region(region.as_mut_ptr() as *mut u8, words * 8, slots) }.unwrap()
    }

    #[test]
    fn threads_count_into_one_series_each() {
        let s = series(64);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for i in 0..1000 {
                        let site = if i % 2 == 0 { "a" } else { "b\"c" };
                        s.add("robotgate_requests_total", &["site", "category"], &[site, "browser"], 1);
                    }
                });
            }
        });
        let mut text = String::new();
        s.render(&mut text, &[]);
        assert!(text.contains("robotgate_requests_total{site=\"a\",category=\"browser\"} 2000\n"), "{text}");
        assert!(text.contains("robotgate_requests_total{site=\"b\\\"c\",category=\"browser\"} 2000\n"), "{text}");
        assert_eq!(text.matches("# TYPE robotgate_requests_total counter").count(), 1);
        assert!(text.ends_with("robotgate_metrics_series_dropped_total 0\n"));
        // With its help: a `# HELP` line before the `# TYPE` line.
        let help = crate::metric::Family { name: "robotgate_requests_total", help: "Requests" };
        let mut text = String::new();
        s.render(&mut text, &[help]);
        assert!(text.contains("# HELP robotgate_requests_total Requests\n# TYPE robotgate_requests_total counter\n"));
    }

    #[test]
    fn a_full_table_or_a_long_series_is_counted_as_dropped() {
        let s = series(2);
        for i in 0..5 {
            s.add("x_total", &["n"], &[&i.to_string()], 1);
        }
        s.add("y_total", &["n"], &[&"v".repeat(TEXT)], 1);
        let mut text = String::new();
        s.render(&mut text, &[]);
        assert_eq!(text.matches("x_total{").count(), 2, "{text}");
        assert!(text.contains("robotgate_metrics_series_dropped_total 4\n"), "{text}");
        let s = series(8);
        s.add("y_total", &["n"], &[&"v".repeat(TEXT)], 1);
        s.add("y_total", &["n"], &[&"v".repeat(TEXT)], 1);
        let mut text = String::new();
        s.render(&mut text, &[]);
        assert!(!text.contains("y_total"), "{text}");
        assert!(text.contains("robotgate_metrics_series_dropped_total 2\n"), "{text}");
    }
}
