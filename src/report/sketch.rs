//! Fixed-size summaries of unbounded streams, for the report's attacker-
//! controlled fields (paths, client addresses).
//!
//! * [`Distinct`]: how many distinct strings: exact up to [`EXACT_DISTINCT`],
//!   then a HyperLogLog estimate (Flajolet et al., 2007) in 1 KiB.
//! * [`TopCounts`]: the most frequent keys, with an error bound, in a table
//!   of at most twice the number of keys asked for (the Space-Saving idea of
//!   Metwally et al., 2005, evicting in batches).

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

/// Distinct values counted exactly before switching to the estimate.
pub const EXACT_DISTINCT: usize = 128;

/// HyperLogLog precision: 2^10 registers, standard error 1.04 / 32 ≈ 3.3%.
const P: u32 = 10;
const M: usize = 1 << P;

/// A 64-bit hash of `s`, the same in every run (SipHash with fixed keys), so
/// a report is reproducible. Someone who controls the strings could choose
/// them to collide; that only lowers the count of their own strings.
pub fn hash(s: &str) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(s)
}

/// Count of distinct values, fed by their [`hash`].
///
/// Memory: at most 1 KiB of values, whatever the input.
#[derive(Debug, Clone)]
pub enum Distinct {
    /// The hashes seen, while there are at most [`EXACT_DISTINCT`].
    Exact(Vec<u64>),
    /// HyperLogLog registers: for each of the `M` buckets (the hash's top
    /// bits), the largest rank (leading zeros + 1) of the rest.
    Sketch(Box<[u8; M]>),
}

impl Default for Distinct {
    fn default() -> Distinct {
        Distinct::Exact(Vec::new())
    }
}

impl Distinct {
    /// Adds the value with hash `h`. Cost: a scan of at most
    /// [`EXACT_DISTINCT`] words, or one register update.
    pub fn add(&mut self, h: u64) {
        match self {
            Distinct::Exact(seen) => {
                if seen.contains(&h) {
                    return;
                }
                if seen.len() < EXACT_DISTINCT {
                    seen.push(h);
                    return;
                }
                let mut registers = Box::new([0u8; M]);
                for &old in seen.iter() {
                    update(&mut registers, old);
                }
                update(&mut registers, h);
                *self = Distinct::Sketch(registers);
            }
            Distinct::Sketch(registers) => update(registers, h),
        }
    }

    /// Whether [`Distinct::count`] is exact.
    pub fn is_exact(&self) -> bool {
        matches!(self, Distinct::Exact(_))
    }

    /// The number of distinct values: exact, or estimated (about 3% off).
    pub fn count(&self) -> u64 {
        match self {
            Distinct::Exact(seen) => seen.len() as u64,
            Distinct::Sketch(registers) => {
                let m = M as f64;
                let alpha = 0.7213 / (1.0 + 1.079 / m);
                let mut sum = 0.0;
                let mut zeros = 0usize;
                for &r in registers.iter() {
                    sum += 1.0 / (1u64 << r) as f64;
                    zeros += usize::from(r == 0);
                }
                let raw = alpha * m * m / sum;
                // Small range: linear counting is better while registers are empty.
                let estimate = if raw <= 2.5 * m && zeros > 0 { m * (m / zeros as f64).ln() } else { raw };
                // Never below what the exact phase had counted.
                (estimate.round() as u64).max(EXACT_DISTINCT as u64 + 1)
            }
        }
    }
}

fn update(registers: &mut [u8; M], h: u64) {
    let bucket = (h >> (64 - P)) as usize;
    let rest = h << P;
    // Rank of the first 1 bit in the remaining 54 bits, 55 if none.
    let rank = (rest.leading_zeros().min(64 - P) + 1) as u8;
    if registers[bucket] < rank {
        registers[bucket] = rank;
    }
}

/// The keys with the largest counts, approximately, in bounded memory.
///
/// Keeps at most `2 * keep` keys. When the table is full, the `keep` largest
/// stay and the rest are dropped; `floor` becomes the largest count dropped
/// so far. A key that arrives when it is not in the table starts at `floor`
/// plus its count. So, for every key:
///
/// * in the table: its true count is at most `count` and at least
///   `count - error` (`error` being the floor when it came in);
/// * not in the table: its true count is at most `floor`.
///
/// Any key whose true count exceeds `floor` is therefore listed. With no
/// eviction (`floor` = 0) every count is exact.
#[derive(Debug, Clone)]
pub struct TopCounts {
    keep: usize,
    floor: u64,
    table: HashMap<Box<str>, (u64, u64)>,
}

impl TopCounts {
    /// A table listing at least the `keep` most frequent keys (`keep` ≥ 1).
    pub fn new(keep: usize) -> TopCounts {
        TopCounts { keep: keep.max(1), floor: 0, table: HashMap::new() }
    }

    /// Counts `n` more for `key`. Cost: one hash lookup; when the table is
    /// full, a sort of it (amortised O(log keep) per new key).
    pub fn add(&mut self, key: &str, n: u64) {
        if let Some(e) = self.table.get_mut(key) {
            e.0 = e.0.saturating_add(n);
            return;
        }
        if self.table.len() >= 2 * self.keep {
            self.evict();
        }
        self.table.insert(key.into(), (self.floor.saturating_add(n), self.floor));
    }

    fn evict(&mut self) {
        let mut all: Vec<(Box<str>, (u64, u64))> = self.table.drain().collect();
        all.sort_unstable_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
        for dropped in all.drain(self.keep.min(all.len())..) {
            self.floor = self.floor.max(dropped.1 .0);
        }
        self.table.extend(all);
    }

    /// Keys in the table now (at most `2 * keep`).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Upper bound of the true count of every key not listed.
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// The `n` largest: `(key, count, error)`, largest first (ties by key).
    /// The true count lies in `count - error ..= count`.
    pub fn top(&self, n: usize) -> Vec<(&str, u64, u64)> {
        let mut all: Vec<(&str, u64, u64)> = self.table.iter().map(|(k, &(c, e))| (&**k, c, e)).collect();
        all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        all.truncate(n);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_exact_then_estimate() {
        let mut d = Distinct::default();
        for i in 0..100 {
            d.add(hash(&format!("/p/{i}")));
            d.add(hash(&format!("/p/{i}")));
        }
        assert!(d.is_exact());
        assert_eq!(d.count(), 100);
        for i in 0..100_000 {
            d.add(hash(&format!("/p/{i}")));
        }
        assert!(!d.is_exact());
        let c = d.count() as f64;
        assert!((c - 100_000.0).abs() / 100_000.0 < 0.1, "estimate {c}");
        // Just past the exact phase: still close.
        let mut d = Distinct::default();
        for i in 0..300 {
            d.add(hash(&format!("/q/{i}")));
        }
        let c = d.count() as f64;
        assert!((c - 300.0).abs() < 30.0, "estimate {c}");
    }

    #[test]
    fn top_counts_exact_without_eviction() {
        let mut t = TopCounts::new(10);
        t.add("a", 5);
        t.add("b", 2);
        t.add("a", 1);
        assert_eq!(t.top(10), vec![("a", 6, 0), ("b", 2, 0)]);
        assert_eq!(t.floor(), 0);
    }

    #[test]
    fn top_counts_keeps_heavy_keys_bounded() {
        // Space-Saving lists every key above (total / keep): here 110,000 / 50.
        let mut t = TopCounts::new(50);
        for i in 0..100_000u64 {
            t.add(&format!("noise{i}"), 1);
            if i % 10 == 0 {
                t.add("heavy", 1);
            }
            assert!(t.len() <= 100);
        }
        let top = t.top(1);
        assert_eq!(top[0].0, "heavy");
        let (_, count, error) = top[0];
        assert!(count >= 10_000 && count - error <= 10_000, "{count} {error}");
        assert!(t.floor() < 10_000);
    }
}
