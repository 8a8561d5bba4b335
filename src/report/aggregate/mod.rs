//! The report's aggregates, built one record at a time in bounded memory.
//!
//! [`Summary::add`] takes a [`RecordView`]: the reader's borrowed view of a
//! log line, or [`RecordView::from_record`] of an in-memory
//! [`Record`](crate::record::Record) (for `replay`). Every table has a cap
//! ([`Limits`]); past it, new keys are folded into an "other" row instead of
//! being stored, so the memory used does not grow with the log, and no field
//! a client controls (User-Agent, path, address, the name an unknown robot
//! announces) can make it grow.
//!
//! Worst case with [`Limits::default`]: about 50,000 bot rows of at most
//! ~1.5 KiB (a 1 KiB distinct-path sketch, names capped at
//! [`MAX_NAME`] bytes, 16 actions, 16 rules), 20,000 rule rows of at most
//! ~1 KiB, 1,000 sites of 400 days and 200 client addresses, and 9,600 hourly
//! buckets: well under 150 MiB, and a few MiB for an ordinary log.
//!
//! One concern per file: this file holds the [`Summary`] and what it is fed
//! with ([`Filter`], [`Limits`]); `site` the tables of one site (bots,
//! rules, clients, days); `keys` what a record is counted under (category
//! and identity slots, days and hours, names clipped to their caps).

mod keys;
mod site;

use std::collections::HashMap;

pub(crate) use self::keys::clip;
use self::keys::{add, hour_key, set, widen};
pub use self::keys::{category_index, category_name, CATEGORIES, IDENTITIES};
use self::site::Budget;
pub use self::site::{BotStats, HiddenStat, NamedCounts, RuleStat, SiteStats};
use super::read::{FindingView, Malformed, MalformedLine, OverflowView, RecordView};

/// Bytes kept of a name (site, bot, client, action, directive); longer ones
/// are cut (at a character boundary) before being counted.
pub const MAX_NAME: usize = 128;

/// Bytes kept of a robots.txt pattern.
pub const MAX_PATTERN: usize = 512;

/// Bytes kept of a User-Agent.
pub const MAX_USER_AGENT: usize = 256;

/// Which records count: both conditions must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Skip records whose last violation (`last`, else `time`) is before
    /// this RFC 3339 time. Compared as strings, which orders RFC 3339 UTC
    /// times (the log's form) correctly; a bare date (`2025-01-31`) keeps
    /// that whole day.
    pub since: Option<String>,
    /// Only this site. Overflow lines name no site, so they are skipped
    /// when this is set.
    pub site: Option<String>,
}

impl Filter {
    /// Whether `r` counts.
    pub fn admits(&self, r: &RecordView<'_>) -> bool {
        self.site.as_deref().is_none_or(|s| s == r.site) && self.since.as_deref().is_none_or(|s| r.last_time() >= s)
    }

    /// Whether an overflow line counts.
    pub fn admits_overflow(&self, o: &OverflowView<'_>) -> bool {
        self.site.is_none() && self.since.as_deref().is_none_or(|s| &*o.time >= s)
    }
}

/// Caps on the tables of a [`Summary`]. What does not fit is counted in an
/// "other" row (and flagged in the report), never dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Sites (default 1,000); the rest count as "(other sites)".
    pub sites: usize,
    /// Bot rows per site (default 10,000); the rest count as "(other bots)".
    pub bots_per_site: usize,
    /// Bot rows over all sites (default 50,000).
    pub bots_total: usize,
    /// Rows per site for names announced by robots the database does not
    /// know (default 1,000): these names come from the User-Agent, so a
    /// client can invent any number. The rest count in the site's
    /// `unknown:<category>` row.
    pub unknown_names_per_site: usize,
    /// robots.txt rules per site (default 1,000); the rest count as "other".
    pub rules_per_site: usize,
    /// Rules over all sites (default 20,000).
    pub rules_total: usize,
    /// Rules tracked per bot (default 16); the rest count as "other".
    pub rules_per_bot: usize,
    /// Action names per bot and per rule (default 16).
    pub actions: usize,
    /// Top client addresses of unrecognised robots kept per site (default
    /// 100; the table holds twice as many, see [`TopCounts`]).
    pub clients: usize,
    /// Top User-Agents of unrecognised robots kept per site (default 50;
    /// the table holds twice as many).
    pub user_agents: usize,
    /// Top JA4 fingerprints of disguised robots kept per site (default 50;
    /// the table holds twice as many).
    pub fingerprints: usize,
    /// Days per site (default 400).
    pub days: usize,
    /// Hourly buckets of the over-time series (default 9,600: 400 days).
    pub hours: usize,
    /// Pages with a hidden noindex kept per site, by (path, robot) (default 1,000).
    pub hidden_per_site: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            sites: 1_000,
            bots_per_site: 10_000,
            bots_total: 50_000,
            unknown_names_per_site: 1_000,
            rules_per_site: 1_000,
            rules_total: 20_000,
            rules_per_bot: 16,
            actions: 16,
            clients: 100,
            user_agents: 50,
            fingerprints: 50,
            days: 400,
            hours: 9_600,
            hidden_per_site: 1_000,
        }
    }
}

/// A malformed line and the input it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedSample {
    /// The input's name, as the caller gave it.
    pub source: String,
    /// Line number and reason.
    pub line: MalformedLine,
}

/// Everything the report shows, fed one record at a time.
///
/// ```
/// use robotgate::report::{read, Filter, Summary};
///
/// let log = "{\"time\":\"2025-01-01T00:00:00Z\",\"site\":\"s\",\"bot\":\"GPTBot\",\
///            \"category\":\"ai-crawler\",\"path\":\"/a\",\"count\":5}\n";
/// let mut summary = Summary::new(Filter::default());
/// read::feed(log.as_bytes(), "log", &mut summary).unwrap();
/// assert_eq!(summary.violations(), 5);
/// ```
#[derive(Debug, Clone)]
pub struct Summary {
    pub(super) limits: Limits,
    pub(super) filter: Filter,
    pub(super) sites: HashMap<Box<str>, SiteStats>,
    /// Sites past [`Limits::sites`].
    pub(super) other_sites: Option<Box<SiteStats>>,
    budget: Budget,
    /// Violations per hour (`YYYY-MM-DDTHH`) and category slot.
    pub(super) hours: HashMap<[u8; 13], [u64; CATEGORIES]>,
    /// Violations in hours past the cap.
    pub(super) other_hours: u64,
    /// Violations whose time is not an RFC 3339 time.
    pub(super) undated: u64,
    /// Violations counted (records and overflow lines).
    pub(super) violations: u64,
    /// Records counted.
    pub(super) records: u64,
    /// Violations of records with `"evidence": "weak"` (issue #68).
    pub(super) weak_evidence: u64,
    /// `stale-robots` records' requests: not violations (RFC 9309 2.4).
    pub(super) stale_robots: u64,
    /// Records and overflow lines the filter skipped.
    pub(super) filtered: u64,
    /// Violations of overflow lines.
    pub(super) overflow: u64,
    pub(super) first: String,
    pub(super) last: String,
    pub(super) malformed: u64,
    pub(super) malformed_samples: Vec<MalformedSample>,
}

impl Summary {
    /// An empty summary with the default [`Limits`].
    pub fn new(filter: Filter) -> Summary {
        Summary::with_limits(filter, Limits::default())
    }

    /// An empty summary with the given caps.
    pub fn with_limits(filter: Filter, limits: Limits) -> Summary {
        Summary {
            limits,
            filter,
            sites: HashMap::new(),
            other_sites: None,
            budget: Budget::default(),
            hours: HashMap::new(),
            other_hours: 0,
            undated: 0,
            violations: 0,
            records: 0,
            weak_evidence: 0,
            stale_robots: 0,
            filtered: 0,
            overflow: 0,
            first: String::new(),
            last: String::new(),
            malformed: 0,
            malformed_samples: Vec::new(),
        }
    }

    /// Counts one record (`count` violations), unless the filter skips it.
    ///
    /// Cost: a handful of hash lookups keyed by short strings, one SipHash
    /// of the path; allocation only for a key seen for the first time.
    pub fn add(&mut self, r: &RecordView<'_>) {
        if !self.filter.admits(r) {
            self.filtered += 1;
            return;
        }
        let n = r.count;
        self.records += 1;
        if r.directive == "stale-robots" {
            // A crawler within 24 hours of its robots.txt: counted apart.
            self.stale_robots = self.stale_robots.saturating_add(n);
            return;
        }
        self.violations = self.violations.saturating_add(n);
        if r.weak_evidence {
            self.weak_evidence = self.weak_evidence.saturating_add(n);
        }
        widen(&mut self.first, &mut self.last, r);
        let cat = category_index(&r.category);
        self.add_hour(&r.time, cat, n);
        let limits = &self.limits;
        let site = clip(&r.site, MAX_NAME);
        if let Some(stats) = self.sites.get_mut(site) {
            return stats.add(r, n, cat, limits, &mut self.budget);
        }
        let stats = if self.sites.len() < limits.sites {
            self.sites.entry(site.into()).or_default()
        } else {
            self.other_sites.get_or_insert_with(Default::default)
        };
        stats.add(r, n, cat, limits, &mut self.budget);
    }

    /// Counts an overflow line's violations (in the totals and the series
    /// over time, under no site or bot), unless the filter skips it.
    pub fn add_overflow(&mut self, o: &OverflowView<'_>) {
        if !self.filter.admits_overflow(o) {
            self.filtered += 1;
            return;
        }
        self.violations = self.violations.saturating_add(o.count);
        self.overflow = self.overflow.saturating_add(o.count);
        let first = o.first.as_deref().unwrap_or(&o.time);
        if !first.is_empty() && (self.first.is_empty() || first < self.first.as_str()) {
            set(&mut self.first, first);
        }
        if *o.time > *self.last {
            set(&mut self.last, &o.time);
        }
        self.add_hour(&o.time, CATEGORIES - 1, o.count);
    }

    /// Keeps a finding (a page's noindex that robots.txt hides), unless the
    /// filter skips it: the latest per site, page and robot. Counts no violation.
    pub fn add_finding(&mut self, f: &FindingView<'_>) {
        let admitted = self.filter.site.as_deref().is_none_or(|s| s == f.site)
            && self.filter.since.as_deref().is_none_or(|s| *f.time >= *s);
        if !admitted || f.finding != crate::record::Finding::HIDDEN_NOINDEX {
            self.filtered += 1;
            return;
        }
        let site = clip(&f.site, MAX_NAME);
        let cap = self.limits.hidden_per_site;
        // Findings are few: the key's copy does not matter here.
        let stats = if self.sites.contains_key(site) || self.sites.len() < self.limits.sites {
            self.sites.entry(site.into()).or_default()
        } else {
            self.other_sites.get_or_insert_with(Default::default)
        };
        stats.add_hidden(f, cap);
    }

    /// Adds an input's malformed lines, naming the input `source`; the first
    /// [`super::read::MALFORMED_SAMPLES`] over all inputs are kept.
    pub fn add_malformed(&mut self, source: &str, m: &Malformed) {
        add(&mut self.malformed, m.count);
        for line in &m.samples {
            if self.malformed_samples.len() >= super::read::MALFORMED_SAMPLES {
                break;
            }
            let mut source = source.to_owned();
            crate::lines::truncate_at_char(&mut source, 256);
            self.malformed_samples.push(MalformedSample { source, line: line.clone() });
        }
    }

    fn add_hour(&mut self, time: &str, cat: usize, n: u64) {
        let full = self.hours.len() >= self.limits.hours;
        match hour_key(time) {
            Some(h) => match self.hours.get_mut(&h) {
                Some(b) => add(&mut b[cat], n),
                None if !full => {
                    let mut b = [0; CATEGORIES];
                    b[cat] = n;
                    self.hours.insert(h, b);
                }
                None => add(&mut self.other_hours, n),
            },
            None => add(&mut self.undated, n),
        }
    }

    /// Violations counted (the sum of `count` over records and overflow lines).
    pub fn violations(&self) -> u64 {
        self.violations
    }

    /// Records counted (lines, not violations).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Malformed lines over all inputs.
    pub fn malformed(&self) -> u64 {
        self.malformed
    }

    /// The filter in force.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// The caps in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Sites by name, then "(other sites)" if any were folded.
    pub fn sites(&self) -> impl Iterator<Item = (&str, &SiteStats)> {
        self.sites.iter().map(|(k, v)| (&**k, v)).chain(self.other_sites.iter().map(|s| ("(other sites)", &**s)))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::record::{sample, Record};
    use crate::report::sketch::{self, Distinct};

    /// A record time `h` hours into 2025-03-01 (shared by this module's tests).
    pub(super) fn at(h: u32) -> String {
        format!("2025-03-0{}T{:02}:00:00Z", 1 + h / 24, h % 24)
    }

    /// A hidden-noindex finding, as the reader gives it.
    pub(super) fn hidden<'a>(site: &'a str, path: &'a str, robot: &'a str, time: &'a str) -> FindingView<'a> {
        FindingView {
            time: time.into(),
            site: site.into(),
            finding: crate::record::Finding::HIDDEN_NOINDEX.into(),
            path: path.into(),
            robot: robot.into(),
            said: "robots: noindex".into(),
            line: Some(3),
            pattern: Some("/hidden/".into()),
        }
    }

    #[test]
    fn findings_keep_the_latest_per_page_and_robot_and_count_no_violation() {
        let mut s = Summary::new(Filter { since: Some(at(2)), site: None });
        s.add_finding(&hidden("s", "/hidden/a", "GPTBot", &at(3)));
        let (t3, t5) = (at(3), at(5));
        let mut later = hidden("s", "/hidden/a", "GPTBot", &t5);
        later.said = "googlebot: none".into();
        s.add_finding(&later);
        // An older word of the same page does not replace the newer one.
        s.add_finding(&hidden("s", "/hidden/a", "GPTBot", &at(4)));
        s.add_finding(&hidden("s", "/hidden/a", "*", &at(3)));
        // Before `since`: skipped.
        s.add_finding(&hidden("s", "/hidden/old", "*", &at(1)));
        let mut other = hidden("s", "/x", "*", &t3);
        other.finding = "something-else".into();
        s.add_finding(&other);
        assert_eq!(s.violations(), 0);
        let site = &s.sites["s"];
        let keys: Vec<_> = site.hidden.keys().map(|(p, r)| format!("{p} {r}")).collect();
        assert_eq!(keys, ["/hidden/a *", "/hidden/a GPTBot"]);
        assert_eq!(&*site.hidden[&("/hidden/a".into(), "GPTBot".into())].said, "googlebot: none");
        assert_eq!(s.filtered, 2);
    }

    /// Fold one in-memory record into `s`, as the log reader would.
    pub(super) fn feed(s: &mut Summary, r: &Record) {
        s.add(&RecordView::from_record(r));
    }

    #[test]
    fn counts_are_summed() {
        let mut s = Summary::new(Filter::default());
        let mut r = sample("192.0.2.1", "GPTBot/1.0", "/private/a", 3, at(1));
        r.count = 5;
        feed(&mut s, &r);
        r.count = 1;
        r.path = "/private/b".into();
        feed(&mut s, &r);
        assert_eq!(s.violations(), 6);
        assert_eq!(s.records(), 2);
        let site = &s.sites["s"];
        let bot = &site.named["GPTBot"];
        assert_eq!(bot.violations, 6);
        assert_eq!(bot.paths.count(), 2);
        assert_eq!(site.rules.len(), 1);
        assert_eq!(site.rules[0].violations, 6);
        assert_eq!(bot.actions.items, vec![("block".into(), 6)]);
        assert_eq!(site.days[b"2025-03-01"], 6);
        assert_eq!(s.hours[b"2025-03-01T01"][category_index("ai-crawler")], 6);
        // Known robots' clients are not listed.
        assert!(site.clients.is_none());
    }

    #[test]
    fn first_and_last_span_folded_records() {
        let mut s = Summary::new(Filter::default());
        let mut r = sample("c", "u", "/p", 1, at(5));
        r.first = Some(at(2));
        r.last = Some(at(5));
        feed(&mut s, &r);
        feed(&mut s, &sample("c", "u", "/p", 1, at(3)));
        let bot = &s.sites["s"].named["GPTBot"];
        assert_eq!((bot.first.as_str(), bot.last.as_str()), (at(2).as_str(), at(5).as_str()));
    }

    #[test]
    fn filters_skip_by_site_and_time() {
        let filter = Filter { since: Some(at(10)), site: Some("s".into()) };
        let mut s = Summary::new(filter);
        feed(&mut s, &sample("c", "u", "/p", 1, at(9)));
        feed(&mut s, &sample("c", "u", "/p", 1, at(10)));
        feed(&mut s, &Record { site: "t".into(), ..sample("c", "u", "/p", 1, at(11)) });
        // An aggregated record counts when its last violation is recent.
        feed(&mut s, &Record { first: Some(at(8)), last: Some(at(12)), ..sample("c", "u", "/p", 1, at(12)) });
        assert_eq!(s.violations(), 2);
        assert_eq!(s.filtered, 2);
        s.add_overflow(&OverflowView { time: at(11).into(), count: 7, first: None });
        assert_eq!(s.violations(), 2, "overflow lines belong to no site");
        let mut s = Summary::new(Filter { since: Some("2025-03-02".into()), site: None });
        s.add_overflow(&OverflowView { time: at(11).into(), count: 7, first: None });
        s.add_overflow(&OverflowView { time: at(30).into(), count: 7, first: None });
        assert_eq!((s.violations(), s.overflow), (7, 7));
    }

    #[test]
    fn memory_is_bounded() {
        let limits = Limits {
            sites: 3,
            bots_per_site: 50,
            bots_total: 80,
            unknown_names_per_site: 20,
            rules_per_site: 10,
            rules_total: 15,
            rules_per_bot: 4,
            actions: 3,
            clients: 10,
            user_agents: 10,
            fingerprints: 10,
            days: 5,
            hours: 30,
            hidden_per_site: 8,
        };
        let mut s = Summary::with_limits(Filter::default(), limits.clone());
        for i in 0..5_000u32 {
            let path = format!("/hidden/{i}");
            s.add_finding(&hidden(&format!("site{}", i % 7), &path, "GPTBot", &at(i % 40)));
        }
        for i in 0..200_000u32 {
            let r = Record {
                site: format!("site{}", i % 7),
                bot: Some(format!("Tok{i}")),
                claims: Vec::new(),
                category: if i % 3 == 0 { "ai-crawler" } else { "other-bot" },
                action: ["block", "log", "ban", "redirect", "noindex"][i as usize % 5],
                time: format!("2025-{:02}-{:02}T{:02}:00:00Z", 1 + i % 12, 1 + i % 28, i % 24),
                pattern: Some(format!("/p{i}")),
                ..sample(&format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255), "ua", &format!("/x/{i}"), i, at(0))
            };
            s.add(&RecordView::from_record(&r));
        }
        assert_eq!(s.violations(), 200_000);
        assert!(s.sites.len() <= limits.sites);
        assert!(s.hours.len() <= limits.hours);
        let mut bots = 0;
        let mut rules = 0;
        for (_, site) in s.sites() {
            assert!(site.named.len() <= limits.bots_per_site);
            assert!(site.unknown_names <= limits.unknown_names_per_site);
            assert!(site.rules.len() <= limits.rules_per_site);
            assert!(site.days.len() <= limits.days);
            assert!(site.hidden.len() <= limits.hidden_per_site);
            assert!(site.clients.as_ref().is_none_or(|c| c.len() <= 2 * limits.clients));
            for bot in site.bots() {
                assert!(bot.rules.len() <= limits.rules_per_bot);
                assert!(bot.actions.items.len() <= limits.actions);
                if let Distinct::Exact(v) = &bot.paths {
                    assert!(v.len() <= sketch::EXACT_DISTINCT);
                }
            }
            bots += site.named.len();
            rules += site.rules.len();
        }
        assert!(bots <= limits.bots_total, "{bots}");
        assert!(rules <= limits.rules_total, "{rules}");
        // Nothing was lost to the caps.
        let total: u64 = s.sites().map(|(_, site)| site.violations).sum();
        assert_eq!(total, 200_000);
        let by_bot: u64 = s.sites().flat_map(|(_, site)| site.bots()).map(|b| b.violations).sum();
        assert_eq!(by_bot, 200_000);
    }

    #[test]
    fn huge_counts_saturate_and_render() {
        let mut s = Summary::new(Filter::default());
        for _ in 0..3 {
            let r = Record { count: u64::MAX, category: "other-bot", ..sample("c", "u", "/p", 1, at(0)) };
            feed(&mut s, &r);
            s.add_overflow(&OverflowView { time: at(1).into(), count: u64::MAX, first: None });
        }
        assert_eq!(s.violations(), u64::MAX);
        for f in
            [super::super::render::Format::Text, super::super::render::Format::Json, super::super::render::Format::Html]
        {
            super::super::render::render(&s, f, &mut Vec::new()).unwrap();
        }
    }
}
