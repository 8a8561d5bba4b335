//! The tables of one site: its bots, the robots.txt rules broken on it, the
//! clients and User-Agents of robots the database does not know, its days.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use super::keys::{add, category_name, clip, day_key, is_unrecognised, widen, CATEGORIES, IDENTITIES};
use super::{Limits, MAX_NAME, MAX_PATTERN, MAX_USER_AGENT};
use crate::report::read::RecordView;
use crate::report::sketch::{self, Distinct, TopCounts};

/// Counts per name, for a few names (actions): at most `cap` names, the
/// rest in `other`.
#[derive(Debug, Clone, Default)]
pub struct NamedCounts {
    /// `(name, count)` in order of first appearance.
    pub items: Vec<(Box<str>, u64)>,
    /// Counts of names past the cap.
    pub other: u64,
}

impl NamedCounts {
    fn add(&mut self, name: &str, n: u64, cap: usize) {
        let name = clip(name, MAX_NAME);
        if let Some(item) = self.items.iter_mut().find(|(k, _)| **k == *name) {
            add(&mut item.1, n);
        } else if self.items.len() < cap {
            self.items.push((name.into(), n));
        } else {
            add(&mut self.other, n);
        }
    }
}

/// What is known of one bot on one site.
#[derive(Debug, Clone)]
pub struct BotStats {
    /// The bot's name, `unknown:<category>` for records without one, or
    /// `(other bots)`.
    pub name: Box<str>,
    /// Whether `name` is the record's bot name (not a row of folded records).
    pub named: bool,
    /// Category slot (of the first record).
    pub category: usize,
    /// Violations (sum of `count`).
    pub violations: u64,
    /// Distinct paths (path and query) seen. A record that folds repeats
    /// carries only the last repeat's path, so this is a lower bound.
    pub paths: Distinct,
    /// Earliest violation time.
    pub first: String,
    /// Latest violation time.
    pub last: String,
    /// Violations per identity outcome: [`IDENTITIES`], then any other value.
    pub identity: [u64; 4],
    /// Violations per action taken.
    pub actions: NamedCounts,
    /// Violations only recorded because the robot was named by weak
    /// evidence (`"evidence": "weak"`, issue #68).
    pub weak_evidence: u64,
    /// Violations per rule: `(index into the site's rules, count)`.
    pub rules: Vec<(u32, u64)>,
    /// Violations of rules past [`Limits::rules_per_bot`] or the site's caps.
    pub other_rules: u64,
}

impl BotStats {
    fn new(name: &str, named: bool, category: usize) -> BotStats {
        BotStats {
            name: name.into(),
            named,
            category,
            violations: 0,
            paths: Distinct::default(),
            first: String::new(),
            last: String::new(),
            identity: [0; 4],
            actions: NamedCounts::default(),
            weak_evidence: 0,
            rules: Vec::new(),
            other_rules: 0,
        }
    }

    fn add(&mut self, r: &RecordView<'_>, n: u64, rule: Option<u32>, limits: &Limits) {
        self.violations = self.violations.saturating_add(n);
        self.paths.add(sketch::hash(&r.path));
        widen(&mut self.first, &mut self.last, r);
        if let Some(id) = r.identity.as_deref() {
            let slot = IDENTITIES.iter().position(|k| *k == id).unwrap_or(3);
            add(&mut self.identity[slot], n);
        }
        self.actions.add(&r.action, n, limits.actions);
        if r.weak_evidence {
            add(&mut self.weak_evidence, n);
        }
        match rule {
            Some(i) => {
                if let Some(e) = self.rules.iter_mut().find(|e| e.0 == i) {
                    add(&mut e.1, n);
                } else if self.rules.len() < limits.rules_per_bot {
                    self.rules.push((i, n));
                } else {
                    add(&mut self.other_rules, n);
                }
            }
            None => add(&mut self.other_rules, n),
        }
    }
}

/// A robots.txt rule broken on a site.
#[derive(Debug, Clone)]
pub struct RuleStat {
    /// `disallow`, `crawl-delay`, ...
    pub directive: Box<str>,
    /// The rule's pattern or value (at most [`MAX_PATTERN`] bytes).
    pub pattern: Option<Box<str>>,
    /// Line in robots.txt.
    pub line: Option<u32>,
    /// A rule robotgate generated (trap, managed group).
    pub managed: bool,
    /// Violations.
    pub violations: u64,
    /// Violations per action taken.
    pub actions: NamedCounts,
}

/// The aggregates of one site.
#[derive(Debug, Clone, Default)]
pub struct SiteStats {
    /// Violations.
    pub violations: u64,
    /// Earliest violation time.
    pub first: String,
    /// Latest violation time.
    pub last: String,
    /// Bots by the name their records give.
    pub named: HashMap<Box<str>, BotStats>,
    /// Records without a bot name, and unknown robots' names past the cap,
    /// by category slot.
    pub unnamed: Vec<Option<BotStats>>,
    /// Bots past the caps.
    pub other_bots: Option<BotStats>,
    /// Rows of `named` that are unknown robots' names.
    pub unknown_names: usize,
    /// Violations of unknown robots whose names did not get a row.
    pub unknown_names_folded: u64,
    /// Rules, in order of first violation.
    pub rules: Vec<RuleStat>,
    /// Rule lookup: hash of (directive, pattern, line) to indices in `rules`.
    rule_index: HashMap<u64, Vec<u32>>,
    /// Violations of rules past the caps, or of records naming no directive.
    pub other_rules: u64,
    /// Client addresses of robots the database does not know, by violations.
    pub clients: Option<TopCounts>,
    /// User-Agents of robots the database does not know, by violations.
    pub user_agents: Option<TopCounts>,
    /// JA4 fingerprints of disguised robots' connections, by violations
    /// (issue #67: one stack behind many User-Agents shows as one row).
    pub fingerprints: Option<TopCounts>,
    /// Violations per day (`YYYY-MM-DD`).
    pub days: HashMap<[u8; 10], u64>,
    /// Violations on days past the cap, or with an unreadable time.
    pub other_days: u64,
    /// Pages whose noindex robots.txt hides, by (path, robot): the latest
    /// finding of each (`indexing.observe`).
    pub hidden: std::collections::BTreeMap<(Box<str>, Box<str>), HiddenStat>,
    /// Findings past [`Limits::hidden_per_site`].
    pub hidden_other: u64,
}

/// The latest word of a page whose noindex robots.txt hides from a robot.
#[derive(Debug, Clone, Default)]
pub struct HiddenStat {
    /// What the page said, and to whom.
    pub said: Box<str>,
    /// The robots.txt line that disallows it.
    pub line: Option<u32>,
    /// That line's pattern.
    pub pattern: Box<str>,
    /// When it was noticed.
    pub time: Box<str>,
}

impl SiteStats {
    /// Keep a hidden-noindex finding (the latest per page and robot).
    pub(super) fn add_hidden(&mut self, f: &crate::report::read::FindingView<'_>, cap: usize) {
        let stat = HiddenStat {
            said: clip(&f.said, MAX_PATTERN).into(),
            line: f.line,
            pattern: clip(f.pattern.as_deref().unwrap_or(""), MAX_PATTERN).into(),
            time: clip(&f.time, MAX_NAME).into(),
        };
        let key: (Box<str>, Box<str>) = (clip(&f.path, MAX_PATTERN).into(), clip(&f.robot, MAX_NAME).into());
        let full = self.hidden.len() >= cap;
        match self.hidden.get_mut(&key) {
            Some(old) if *old.time <= *stat.time => *old = stat,
            Some(_) => {}
            None if !full => {
                self.hidden.insert(key, stat);
            }
            None => add(&mut self.hidden_other, 1),
        }
    }
}

/// The category slot of `disguised` robots.
fn disguised_slot() -> usize {
    super::keys::category_index(crate::agent::Category::Disguised.as_str())
}

/// Rows allotted so far over all sites.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Budget {
    bots: usize,
    rules: usize,
}

impl SiteStats {
    pub(super) fn add(&mut self, r: &RecordView<'_>, n: u64, cat: usize, limits: &Limits, budget: &mut Budget) {
        self.violations = self.violations.saturating_add(n);
        widen(&mut self.first, &mut self.last, r);
        match day_key(&r.time) {
            Some(day) if self.days.len() < limits.days || self.days.contains_key(&day) => {
                add(self.days.entry(day).or_insert(0), n)
            }
            _ => add(&mut self.other_days, n),
        }
        let unrecognised = is_unrecognised(cat);
        if unrecognised && !r.client.is_empty() {
            self.clients.get_or_insert_with(|| TopCounts::new(limits.clients)).add(clip(&r.client, MAX_NAME), n);
        }
        if unrecognised && !r.user_agent.is_empty() {
            let top = self.user_agents.get_or_insert_with(|| TopCounts::new(limits.user_agents));
            top.add(clip(&r.user_agent, MAX_USER_AGENT), n);
        }
        if let Some(ja4) = r.ja4.as_deref().filter(|j| !j.is_empty() && cat == disguised_slot()) {
            let top = self.fingerprints.get_or_insert_with(|| TopCounts::new(limits.fingerprints));
            top.add(clip(ja4, MAX_NAME), n);
        }
        let rule = self.rule(r, n, limits, budget);

        let name = r.bot.as_deref().map(|b| clip(b, MAX_NAME)).filter(|b| !b.is_empty());
        let Some(name) = name else {
            return self.unnamed(cat).add(r, n, rule, limits);
        };
        if let Some(bot) = self.named.get_mut(name) {
            return bot.add(r, n, rule, limits);
        }
        if unrecognised && self.unknown_names >= limits.unknown_names_per_site {
            add(&mut self.unknown_names_folded, n);
            return self.unnamed(cat).add(r, n, rule, limits);
        }
        if self.named.len() >= limits.bots_per_site || budget.bots >= limits.bots_total {
            let other = self.other_bots.get_or_insert_with(|| BotStats::new("(other bots)", false, CATEGORIES - 1));
            return other.add(r, n, rule, limits);
        }
        budget.bots += 1;
        self.unknown_names += usize::from(unrecognised);
        let mut bot = BotStats::new(name, true, cat);
        bot.add(r, n, rule, limits);
        self.named.insert(name.into(), bot);
    }

    /// The row of records without a bot name, of category slot `cat`.
    fn unnamed(&mut self, cat: usize) -> &mut BotStats {
        if self.unnamed.len() < CATEGORIES {
            self.unnamed.resize(CATEGORIES, None);
        }
        self.unnamed[cat].get_or_insert_with(|| BotStats::new(&format!("unknown:{}", category_name(cat)), false, cat))
    }

    /// Counts `n` violations of the record's rule; its index, or `None` if
    /// it did not get a row.
    fn rule(&mut self, r: &RecordView<'_>, n: u64, limits: &Limits, budget: &mut Budget) -> Option<u32> {
        if r.directive.is_empty() {
            add(&mut self.other_rules, n);
            return None;
        }
        let directive = clip(&r.directive, MAX_NAME);
        let pattern = r.pattern.as_deref().map(|p| clip(p, MAX_PATTERN));
        let h = BuildHasherDefault::<DefaultHasher>::default().hash_one((directive, pattern, r.line));
        let found = self.rule_index.get(&h).and_then(|ids| {
            ids.iter().copied().find(|&i| {
                let s = &self.rules[i as usize];
                *s.directive == *directive && s.pattern.as_deref() == pattern && s.line == r.line
            })
        });
        let i = match found {
            Some(i) => i,
            None if self.rules.len() < limits.rules_per_site && budget.rules < limits.rules_total => {
                budget.rules += 1;
                let i = self.rules.len() as u32;
                self.rules.push(RuleStat {
                    directive: directive.into(),
                    pattern: pattern.map(Into::into),
                    line: r.line,
                    managed: r.managed,
                    violations: 0,
                    actions: NamedCounts::default(),
                });
                self.rule_index.entry(h).or_default().push(i);
                i
            }
            None => {
                add(&mut self.other_rules, n);
                return None;
            }
        };
        let rule = &mut self.rules[i as usize];
        rule.violations = rule.violations.saturating_add(n);
        rule.actions.add(&r.action, n, limits.actions);
        Some(i)
    }

    /// All bot rows: named, unnamed, then other.
    pub fn bots(&self) -> impl Iterator<Item = &BotStats> {
        self.named.values().chain(self.unnamed.iter().flatten()).chain(self.other_bots.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{at, feed};
    use super::super::*;
    use crate::record::{sample, Record};

    #[test]
    fn unnamed_and_unknown_bots() {
        let mut s = Summary::new(Filter::default());
        feed(&mut s, &Record { bot: None, category: "other-bot", ..sample("198.51.100.7", "x", "/p", 1, at(0)) });
        feed(
            &mut s,
            &Record {
                bot: Some("Zzbot".into()),
                claims: Vec::new(),
                category: "other-bot",
                ..sample("198.51.100.7", "Zzbot", "/p", 1, at(0))
            },
        );
        let site = &s.sites["s"];
        let unnamed = site.unnamed[category_index("other-bot")].as_ref().unwrap();
        assert_eq!(&*unnamed.name, "unknown:other-bot");
        assert_eq!(site.named["Zzbot"].violations, 1);
        assert_eq!(site.clients.as_ref().unwrap().top(1), vec![("198.51.100.7", 2, 0)]);
    }

    #[test]
    fn identity_outcomes_counted() {
        let mut s = Summary::new(Filter::default());
        feed(&mut s, &Record { identity: Some("spoofed"), count: 3, ..sample("c", "u", "/p", 1, at(0)) });
        feed(&mut s, &Record { identity: Some("verified"), ..sample("c", "u", "/p", 1, at(0)) });
        assert_eq!(s.sites["s"].named["GPTBot"].identity, [1, 3, 0, 0]);
    }

    #[test]
    fn hostile_names_are_clipped() {
        let mut s = Summary::new(Filter::default());
        let long = "é".repeat(1000);
        feed(
            &mut s,
            &Record {
                bot: Some(long.clone()),
                claims: Vec::new(),
                client: long.clone(),
                category: "other-bot",
                ..sample("c", "u", "/p", 1, at(0))
            },
        );
        let site = &s.sites["s"];
        assert!(site.named.keys().all(|k| k.len() <= MAX_NAME));
        assert!(site.clients.as_ref().unwrap().top(1)[0].0.len() <= MAX_NAME);
    }
}
