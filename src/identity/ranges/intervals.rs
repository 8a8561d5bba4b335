//! The sweep from overlapping prefixes to sorted, disjoint intervals, each
//! with the feeds covering it: what makes a lookup one binary search.

use super::hit::Hit;

/// Sorted, disjoint, inclusive intervals of one family, each with the feeds
/// (and their prefixes) covering it.
#[derive(Debug, Clone, Default)]
pub(super) struct Intervals<T> {
    pub(super) starts: Vec<T>,
    ends: Vec<T>,
    /// `hits[spans[i].0 .. spans[i].1]` cover interval `i`, sorted by feed.
    spans: Vec<(u32, u32)>,
    hits: Vec<Hit>,
}

impl<T: Copy + Ord> Intervals<T> {
    /// O(log n), no allocation.
    pub(super) fn find(&self, x: T) -> &[Hit] {
        let i = self.starts.partition_point(|&s| s <= x);
        if i == 0 || self.ends[i - 1] < x {
            return &[];
        }
        let (a, b) = self.spans[i - 1];
        &self.hits[a as usize..b as usize]
    }
}

/// Sweeps inclusive `(first, last, hit)` ranges into disjoint intervals.
///
/// At each boundary the active set changes; between two boundaries it does
/// not, so each stretch with a non-empty active set becomes one interval whose
/// hits are, per feed, the longest active prefix.
pub(super) fn build<T>(mut ranges: Vec<(T, T, Hit)>) -> Intervals<T>
where
    T: Copy + Ord + Bounded,
{
    let mut out = Intervals { starts: Vec::new(), ends: Vec::new(), spans: Vec::new(), hits: Vec::new() };
    if ranges.is_empty() {
        return out;
    }
    // Boundaries: every start, and every end + 1 that exists.
    let mut points: Vec<T> = Vec::with_capacity(ranges.len() * 2);
    for &(a, b, _) in &ranges {
        points.push(a);
        if let Some(next) = b.succ() {
            points.push(next);
        }
    }
    points.sort_unstable();
    points.dedup();
    ranges.sort_unstable_by_key(|x| x.0);
    let mut active: Vec<(T, Hit)> = Vec::new(); // (last, hit)
    let mut next = 0;
    let mut scratch: Vec<Hit> = Vec::new();
    for (i, &p) in points.iter().enumerate() {
        active.retain(|&(last, _)| last >= p);
        while next < ranges.len() && ranges[next].0 == p {
            active.push((ranges[next].1, ranges[next].2));
            next += 1;
        }
        if active.is_empty() {
            continue;
        }
        let end = match points.get(i + 1) {
            Some(&q) => q.pred(),
            None => T::MAX,
        };
        scratch.clear();
        for &(_, h) in &active {
            match scratch.iter_mut().find(|s| s.feed == h.feed) {
                Some(s) if s.prefix.len < h.prefix.len => *s = h,
                Some(_) => {}
                None => scratch.push(h),
            }
        }
        scratch.sort_unstable_by_key(|h| h.feed);
        let a = out.hits.len() as u32;
        out.hits.extend_from_slice(&scratch);
        out.starts.push(p);
        out.ends.push(end);
        out.spans.push((a, out.hits.len() as u32));
    }
    out
}

/// Integer address types of a family.
pub(super) trait Bounded: Sized {
    const MAX: Self;
    fn succ(self) -> Option<Self>;
    fn pred(self) -> Self;
}

impl Bounded for u32 {
    const MAX: u32 = u32::MAX;
    fn succ(self) -> Option<u32> {
        self.checked_add(1)
    }
    fn pred(self) -> u32 {
        self - 1
    }
}

impl Bounded for u128 {
    const MAX: u128 = u128::MAX;
    fn succ(self) -> Option<u128> {
        self.checked_add(1)
    }
    fn pred(self) -> u128 {
        self - 1
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use proptest::prelude::*;

    use super::super::*;

    /// A naive oracle: every feed with a prefix containing `ip`, and that
    /// feed's longest such prefix.
    fn naive(feeds: &[Vec<Prefix>], ip: IpAddr) -> Vec<(usize, u8)> {
        let mut out = Vec::new();
        for (i, f) in feeds.iter().enumerate() {
            if let Some(len) = f.iter().filter(|p| p.contains(ip)).map(|p| p.len).max() {
                out.push((i, len));
            }
        }
        out
    }

    fn arb_v4() -> impl Strategy<Value = Prefix> {
        // A small space (10.0.0.0/20) so prefixes overlap and nest often.
        (0u32..4096, 20u8..=32).prop_map(|(off, len)| {
            let a = (0x0a00_0000u32 | off) & (u32::MAX << (32 - u32::from(len)));
            Prefix::new(IpAddr::V4(Ipv4Addr::from(a)), len).unwrap()
        })
    }

    fn arb_v6() -> impl Strategy<Value = Prefix> {
        (0u128..4096, 116u8..=128).prop_map(|(off, len)| {
            let base = u128::from("2001:db8::".parse::<Ipv6Addr>().unwrap());
            let a = (base | off) & (u128::MAX << (128 - u32::from(len)));
            Prefix::new(IpAddr::V6(Ipv6Addr::from(a)), len).unwrap()
        })
    }

    fn arb_ip() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            (0u32..4200).prop_map(|o| IpAddr::V4(Ipv4Addr::from(0x0a00_0000u32 + o))),
            (0u32..4200).prop_map(|o| IpAddr::V6(Ipv4Addr::from(0x0a00_0000u32 + o).to_ipv6_mapped())),
            (0u128..4200)
                .prop_map(|o| IpAddr::V6(Ipv6Addr::from(u128::from("2001:db8::".parse::<Ipv6Addr>().unwrap()) + o))),
            any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
        ]
    }

    proptest! {
        #[test]
        fn lookup_agrees_with_a_linear_scan(
            feeds in prop::collection::vec(prop::collection::vec(prop_oneof![arb_v4(), arb_v6()], 1..12), 1..5),
            ips in prop::collection::vec(arb_ip(), 1..40),
        ) {
            let named: Vec<(String, Feed)> = feeds
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("f{i}"), Feed { creation_time: None, prefixes: p.clone() }))
                .collect();
            let t = RangeTable::from_feeds(named).unwrap();
            for ip in ips {
                let want = naive(&feeds, ip);
                let got: Vec<(usize, u8)> = t.hits(ip).iter().map(|h| (h.feed.index(), h.prefix.length())).collect();
                prop_assert_eq!(&got, &want, "{}", ip);
                for h in t.hits(ip) {
                    prop_assert!(h.prefix.contains(ip));
                }
                prop_assert_eq!(t.lookup(ip).map(FeedId::index), want.first().map(|w| w.0));
            }
        }
    }
}
