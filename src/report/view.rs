//! The report as plain sorted data: what every renderer shows, and the JSON
//! document itself.

use std::collections::BTreeMap;

use serde::Serialize;

use super::aggregate::{category_name, BotStats, NamedCounts, SiteStats, Summary, CATEGORIES, IDENTITIES};
use crate::time::{civil_from_days, days_from_civil};

/// Buckets of the series over time are hours when the log spans at most
/// this many hours (3 days), days otherwise.
pub const HOURLY_SPAN: i64 = 72;

/// Empty buckets are filled in between the first and the last only when
/// that makes at most this many buckets.
const MAX_FILLED: i64 = 1_000;

/// The whole report, sorted, largest first.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The `--since` cut-off in force.
    pub since: Option<String>,
    /// The `--site` filter in force.
    pub site_filter: Option<String>,
    /// Violations counted (sum of `count`, overflow lines included).
    pub violations: u64,
    /// Records counted.
    pub records: u64,
    /// Requests only a newer robots.txt forbids, from crawlers within 24
    /// hours of the version they fetched (`stale-robots`): not violations.
    pub stale_robots: u64,
    /// Records and overflow lines skipped by the filter.
    pub filtered_out: u64,
    /// Violations only recorded, not refused or paced, because their robot
    /// was named only by weak evidence (`"evidence": "weak"`,
    /// `policy.weak_evidence: log`, issue #68): what the default let
    /// through. Each robot's share is its `weak_evidence`.
    pub weak_evidence: u64,
    /// Violations the proxy could only count (overflow lines): in the total
    /// and the series over time, under no site or bot.
    pub overflow: u64,
    /// Violations with an unreadable time (in no bucket of the series).
    pub undated: u64,
    /// Violations in hours past the series' cap (in no bucket).
    pub other_hours: u64,
    /// Earliest violation.
    pub first: Option<String>,
    /// Latest violation.
    pub last: Option<String>,
    /// Violations over time per category.
    pub over_time: Series,
    /// Sites, most violations first.
    pub sites: Vec<SiteReport>,
    /// Malformed lines.
    pub malformed: MalformedReport,
    /// What `robotgate replay` adds: requests per robot, identity,
    /// robots.txt fetches, collateral (absent from `robotgate report`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::report::replay::ReplayReport>,
}

/// Violations over time, per category.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// `hour` or `day`.
    pub unit: &'static str,
    /// The categories with violations; `counts` of each bucket follow this order.
    pub categories: Vec<&'static str>,
    /// Buckets in time order.
    pub buckets: Vec<Bucket>,
}

/// One bucket of a [`Series`].
#[derive(Debug, Clone, Serialize)]
pub struct Bucket {
    /// `YYYY-MM-DD` or `YYYY-MM-DDTHH`.
    pub start: String,
    /// Violations per category of [`Series::categories`].
    pub counts: Vec<u64>,
    /// Their sum.
    pub total: u64,
}

/// One site.
#[derive(Debug, Clone, Serialize)]
pub struct SiteReport {
    /// Site name (`(other sites)` for sites past the cap).
    pub site: String,
    /// Violations.
    pub violations: u64,
    /// Earliest violation.
    pub first: Option<String>,
    /// Latest violation.
    pub last: Option<String>,
    /// Bots, most violations first.
    pub bots: Vec<BotReport>,
    /// Violations of unknown robots whose announced names were past the cap
    /// (counted in their `unknown:<category>` rows).
    pub unknown_names_folded: u64,
    /// Rules broken, most violations first.
    pub rules: Vec<RuleReport>,
    /// Violations of rules past the cap, or naming no directive.
    pub other_rules: u64,
    /// Client addresses of robots the database does not know, most
    /// violations first (see [`super::sketch::TopCounts`]).
    pub unknown_clients: Vec<ClientReport>,
    /// No address missing from `unknown_clients` has more violations than this.
    pub unknown_clients_floor: u64,
    /// User-Agents of robots the database does not know, most violations
    /// first (cut to [`super::aggregate::MAX_USER_AGENT`] bytes).
    pub unknown_user_agents: Vec<UserAgentReport>,
    /// No User-Agent missing from `unknown_user_agents` has more violations than this.
    pub unknown_user_agents_floor: u64,
    /// JA4 fingerprints of disguised robots' connections, most violations
    /// first (issue #67).
    pub disguised_fingerprints: Vec<FingerprintReport>,
    /// No fingerprint missing from `disguised_fingerprints` has more violations than this.
    pub disguised_fingerprints_floor: u64,
    /// Violations per day, in order.
    pub days: Vec<DayCount>,
    /// Violations on days past the cap or with an unreadable time.
    pub other_days: u64,
    /// Pages whose own noindex robots.txt hides from a robot (from the
    /// proxy's `indexing.observe` findings), by path, then robot.
    pub hidden_noindex: Vec<HiddenReport>,
    /// Such pages past the cap.
    pub hidden_noindex_other: u64,
}

/// A page whose noindex a robot never sees: robots.txt keeps it out.
#[derive(Debug, Clone, Serialize)]
pub struct HiddenReport {
    /// The page's path and query.
    pub path: String,
    /// The robot (`*`: every robot without a group of its own).
    pub robot: String,
    /// What the page said, and to whom.
    pub said: String,
    /// The robots.txt line that disallows the page for that robot.
    pub line: Option<u32>,
    /// That line's pattern.
    pub pattern: String,
    /// When it was last noticed.
    pub seen: String,
}

/// One bot on one site.
#[derive(Debug, Clone, Serialize)]
pub struct BotReport {
    /// Name, `unknown:<category>` or `(other bots)`.
    pub bot: String,
    /// Whether `bot` is a name from the records (not a row of folded ones).
    pub named: bool,
    /// Category.
    pub category: &'static str,
    /// Violations.
    pub violations: u64,
    /// Distinct paths (a lower bound: folded repeats keep one path).
    pub distinct_paths: u64,
    /// Whether `distinct_paths` is exact (else a ~3% estimate).
    pub distinct_paths_exact: bool,
    /// Earliest violation.
    pub first: Option<String>,
    /// Latest violation.
    pub last: Option<String>,
    /// Violations per identity outcome.
    pub identity: Identity,
    /// Violations per action, most first.
    pub actions: Vec<NamedCount>,
    /// Violations only recorded, not refused or paced, because the robot
    /// was named only by weak evidence (`policy.weak_evidence: log`,
    /// issue #68): what the default let through.
    pub weak_evidence: u64,
    /// Rules broken, most violations first.
    pub rules: Vec<BotRule>,
    /// Violations of rules not listed.
    pub other_rules: u64,
}

/// Violations per identity outcome (robots of the database only).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Identity {
    /// Address matches the operator's published ones.
    pub verified: u64,
    /// Address contradicts them.
    pub spoofed: u64,
    /// The operator publishes nothing to check against.
    pub unverifiable: u64,
    /// Any other value.
    pub other: u64,
}

impl Identity {
    /// A one-word summary: the only outcome seen, `mixed`, or `None`.
    pub fn label(&self) -> Option<&'static str> {
        let all = [
            (self.verified, IDENTITIES[0]),
            (self.spoofed, IDENTITIES[1]),
            (self.unverifiable, IDENTITIES[2]),
            (self.other, "other"),
        ];
        let mut seen = all.iter().filter(|(n, _)| *n > 0);
        match (seen.next(), seen.next()) {
            (None, _) => None,
            (Some((_, one)), None) => Some(one),
            _ => Some("mixed"),
        }
    }
}

/// A count per name.
#[derive(Debug, Clone, Serialize)]
pub struct NamedCount {
    /// The name (an action).
    pub name: String,
    /// Violations.
    pub count: u64,
}

/// A rule as broken by one bot.
#[derive(Debug, Clone, Serialize)]
pub struct BotRule {
    /// Directive.
    pub directive: String,
    /// Pattern or value.
    pub pattern: Option<String>,
    /// Line in robots.txt.
    pub line: Option<u32>,
    /// Violations by this bot.
    pub violations: u64,
}

/// A rule broken on a site.
#[derive(Debug, Clone, Serialize)]
pub struct RuleReport {
    /// Directive.
    pub directive: String,
    /// Pattern or value.
    pub pattern: Option<String>,
    /// Line in robots.txt.
    pub line: Option<u32>,
    /// A rule robotgate generated (trap, managed group).
    pub managed: bool,
    /// Violations.
    pub violations: u64,
    /// Violations per action, most first.
    pub actions: Vec<NamedCount>,
}

/// A client address and its violations.
#[derive(Debug, Clone, Serialize)]
pub struct ClientReport {
    /// Address.
    pub client: String,
    /// Violations (an upper bound when `error` > 0).
    pub violations: u64,
    /// The true count is at least `violations - error`.
    pub error: u64,
}

/// One User-Agent of unknown robots, as [`ClientReport`] is one address.
#[derive(Debug, Clone, Serialize)]
pub struct UserAgentReport {
    /// The User-Agent.
    pub user_agent: String,
    /// Violations (an upper bound when `error` > 0).
    pub violations: u64,
    /// The true count is at least `violations - error`.
    pub error: u64,
}

/// One JA4 fingerprint's violations on a site.
#[derive(Debug, Clone, Serialize)]
pub struct FingerprintReport {
    /// The fingerprint.
    pub ja4: String,
    /// Violations (an upper bound when `error` > 0).
    pub violations: u64,
    /// The true count is at least `violations - error`.
    pub error: u64,
}

/// Violations on one day.
#[derive(Debug, Clone, Serialize)]
pub struct DayCount {
    /// `YYYY-MM-DD`.
    pub day: String,
    /// Violations.
    pub violations: u64,
}

/// Malformed lines over all inputs.
#[derive(Debug, Clone, Serialize)]
pub struct MalformedReport {
    /// How many.
    pub count: u64,
    /// The first few.
    pub samples: Vec<MalformedSampleReport>,
}

/// One malformed line.
#[derive(Debug, Clone, Serialize)]
pub struct MalformedSampleReport {
    /// Input name.
    pub source: String,
    /// 1-based line number.
    pub line: u64,
    /// Why it was skipped.
    pub reason: String,
}

fn nonempty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

fn named(c: &NamedCounts) -> Vec<NamedCount> {
    let mut v: Vec<NamedCount> = c.items.iter().map(|(k, n)| NamedCount { name: k.to_string(), count: *n }).collect();
    if c.other > 0 {
        v.push(NamedCount { name: "(other)".into(), count: c.other });
    }
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    v
}

impl Report {
    /// The report of `summary`. Its size is bounded by the summary's
    /// [`Limits`](super::Limits), not by the log.
    pub fn from_summary(summary: &Summary) -> Report {
        let mut sites: Vec<SiteReport> = summary.sites().map(|(name, s)| site(name, s)).collect();
        sites.sort_by(|a, b| b.violations.cmp(&a.violations).then_with(|| a.site.cmp(&b.site)));
        Report {
            since: summary.filter.since.clone(),
            site_filter: summary.filter.site.clone(),
            violations: summary.violations,
            records: summary.records,
            stale_robots: summary.stale_robots,
            filtered_out: summary.filtered,
            weak_evidence: summary.weak_evidence,
            overflow: summary.overflow,
            undated: summary.undated,
            other_hours: summary.other_hours,
            first: nonempty(&summary.first),
            last: nonempty(&summary.last),
            over_time: series(summary),
            sites,
            malformed: MalformedReport {
                count: summary.malformed,
                samples: summary
                    .malformed_samples
                    .iter()
                    .map(|m| MalformedSampleReport {
                        source: m.source.clone(),
                        line: m.line.line,
                        reason: m.line.reason.clone(),
                    })
                    .collect(),
            },
            replay: None,
        }
    }
}

/// The rows of a top-counts table, most violations first, each made by
/// `row(key, violations, error)`, and its floor (none kept: no rows, 0).
fn top<T>(table: &Option<super::sketch::TopCounts>, row: impl Fn(&str, u64, u64) -> T) -> (Vec<T>, u64) {
    match table {
        Some(c) => (c.top(usize::MAX).into_iter().map(|(k, n, e)| row(k, n, e)).collect(), c.floor()),
        None => (Vec::new(), 0),
    }
}

fn site(name: &str, s: &SiteStats) -> SiteReport {
    let mut bots: Vec<BotReport> = s.bots().map(|b| bot(b, s)).collect();
    bots.sort_by(|a, b| b.violations.cmp(&a.violations).then_with(|| a.bot.cmp(&b.bot)));
    let mut rules: Vec<RuleReport> = s
        .rules
        .iter()
        .map(|r| RuleReport {
            directive: r.directive.to_string(),
            pattern: r.pattern.as_deref().map(str::to_owned),
            line: r.line,
            managed: r.managed,
            violations: r.violations,
            actions: named(&r.actions),
        })
        .collect();
    rules.sort_by(|a, b| b.violations.cmp(&a.violations).then_with(|| a.line.cmp(&b.line)));
    let (unknown_clients, unknown_clients_floor) =
        top(&s.clients, |k, n, e| ClientReport { client: k.to_owned(), violations: n, error: e });
    let (unknown_user_agents, unknown_user_agents_floor) =
        top(&s.user_agents, |k, n, e| UserAgentReport { user_agent: k.to_owned(), violations: n, error: e });
    let (disguised_fingerprints, disguised_fingerprints_floor) =
        top(&s.fingerprints, |k, n, e| FingerprintReport { ja4: k.to_owned(), violations: n, error: e });
    let mut days: Vec<DayCount> =
        s.days.iter().map(|(k, n)| DayCount { day: String::from_utf8_lossy(k).into_owned(), violations: *n }).collect();
    days.sort_by(|a, b| a.day.cmp(&b.day));
    SiteReport {
        site: name.to_owned(),
        violations: s.violations,
        first: nonempty(&s.first),
        last: nonempty(&s.last),
        bots,
        unknown_names_folded: s.unknown_names_folded,
        rules,
        other_rules: s.other_rules,
        unknown_clients,
        unknown_clients_floor,
        unknown_user_agents,
        unknown_user_agents_floor,
        disguised_fingerprints,
        disguised_fingerprints_floor,
        days,
        other_days: s.other_days,
        hidden_noindex: s
            .hidden
            .iter()
            .map(|((path, robot), h)| HiddenReport {
                path: path.to_string(),
                robot: robot.to_string(),
                said: h.said.to_string(),
                line: h.line,
                pattern: h.pattern.to_string(),
                seen: h.time.to_string(),
            })
            .collect(),
        hidden_noindex_other: s.hidden_other,
    }
}

fn bot(b: &BotStats, s: &SiteStats) -> BotReport {
    let mut rules: Vec<BotRule> = b
        .rules
        .iter()
        .filter_map(|&(i, n)| {
            let r = s.rules.get(i as usize)?;
            Some(BotRule {
                directive: r.directive.to_string(),
                pattern: r.pattern.as_deref().map(str::to_owned),
                line: r.line,
                violations: n,
            })
        })
        .collect();
    rules.sort_by(|a, b| b.violations.cmp(&a.violations).then_with(|| a.line.cmp(&b.line)));
    BotReport {
        bot: b.name.to_string(),
        named: b.named,
        category: category_name(b.category),
        violations: b.violations,
        distinct_paths: b.paths.count(),
        distinct_paths_exact: b.paths.is_exact(),
        first: nonempty(&b.first),
        last: nonempty(&b.last),
        identity: Identity {
            verified: b.identity[0],
            spoofed: b.identity[1],
            unverifiable: b.identity[2],
            other: b.identity[3],
        },
        actions: named(&b.actions),
        weak_evidence: b.weak_evidence,
        rules,
        other_rules: b.other_rules,
    }
}

fn num(b: &[u8]) -> i64 {
    b.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0'))
}

/// Hours since the epoch of a `YYYY-MM-DDTHH` key (digits checked by the caller).
fn hour_number(k: &[u8; 13]) -> i64 {
    days_from_civil(num(&k[..4]), num(&k[5..7]), num(&k[8..10])) * 24 + num(&k[11..13])
}

fn day_label(day: i64) -> String {
    let (y, m, d) = civil_from_days(day);
    format!("{y:04}-{m:02}-{d:02}")
}

fn series(summary: &Summary) -> Series {
    let hours = &summary.hours;
    let numbers = hours.keys().map(hour_number);
    let span = numbers.clone().max().zip(numbers.min()).map(|(max, min)| (min, max));
    let hourly = span.is_some_and(|(min, max)| max - min <= HOURLY_SPAN);
    let mut buckets: BTreeMap<String, [u64; CATEGORIES]> = BTreeMap::new();
    for (k, counts) in hours {
        let key = if hourly {
            String::from_utf8_lossy(k).into_owned()
        } else {
            String::from_utf8_lossy(&k[..10]).into_owned()
        };
        let b = buckets.entry(key).or_insert([0; CATEGORIES]);
        for (sum, n) in b.iter_mut().zip(counts) {
            *sum = sum.saturating_add(*n);
        }
    }
    // Fill the gaps, so the chart's axis is linear in time.
    if let Some((min, max)) = span {
        if hourly {
            for h in min..=max {
                let (y, m, d) = civil_from_days(h.div_euclid(24));
                buckets.entry(format!("{y:04}-{m:02}-{d:02}T{:02}", h.rem_euclid(24))).or_insert([0; CATEGORIES]);
            }
        } else {
            let (first, last) = (min.div_euclid(24), max.div_euclid(24));
            if last - first < MAX_FILLED {
                for day in first..=last {
                    buckets.entry(day_label(day)).or_insert([0; CATEGORIES]);
                }
            }
        }
    }
    let used: Vec<usize> = (0..CATEGORIES).filter(|&c| buckets.values().any(|b| b[c] > 0)).collect();
    Series {
        unit: if hourly { "hour" } else { "day" },
        categories: used.iter().map(|&c| category_name(c)).collect(),
        buckets: buckets
            .into_iter()
            .map(|(start, b)| {
                let counts: Vec<u64> = used.iter().map(|&c| b[c]).collect();
                Bucket { total: counts.iter().fold(0u64, |t, n| t.saturating_add(*n)), start, counts }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hour_numbers() {
        assert_eq!(hour_number(b"1970-01-02T03"), 27);
    }
}
