//! `robotgate replay --compare OLD NEW`: every log line decided under two
//! configurations in one pass, and the requests whose verdict changes, per
//! robot.
//!
//! Each line is read once and given to two [`Worker`]s, one per
//! configuration, each with its own rate and robots.txt-read state: the same
//! decision code as a plain replay, twice. A verdict is "refused" when
//! robotgate would answer the request itself (403, 429, other content, a
//! redirect), "allowed" when the origin would see it (`log` and `noindex`
//! included). Verified search engines newly refused come first: on a healthy
//! site each is a mistake in the new configuration.

use std::collections::HashMap;

use serde::Serialize;

use super::{route, Input, Route, Setup, Verdict, Worker};
use crate::accesslog::{Entry, Reader};
use crate::agent::AgentKind;

/// Robot rows kept; the rest are counted under [`super::tally::OTHER_BOTS`].
const MAX_ROWS: usize = 2_000;
/// Bytes kept of an example path.
const MAX_EXAMPLE: usize = 200;

/// The verdicts of one robot that change, on one site.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Change {
    /// The site (the new configuration's name for it).
    pub site: String,
    /// The robot's name, `unknown:<category>`, or `(browsers)`.
    pub bot: String,
    /// Its category.
    pub category: &'static str,
    /// Of its requests newly refused, those from an address its operator's
    /// ranges verify, when it is a search engine.
    pub verified_search_refused: u64,
    /// Requests allowed under OLD and refused under NEW.
    pub newly_refused: u64,
    /// Requests refused under OLD and allowed under NEW.
    pub newly_allowed: u64,
    /// The first newly refused request: path, log line, why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused_example: Option<Example>,
    /// The first newly allowed request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_example: Option<Example>,
}

/// One request whose verdict changes.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    /// Path and query as logged (cut to 200 bytes).
    pub path: String,
    /// Its log line.
    pub log_line: u64,
    /// Why the refusing side refuses: the record's directive and line
    /// (`disallow line 4`).
    pub why: String,
}

/// What `--compare` found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Comparison {
    /// The two configurations, as named on the command line.
    pub old: String,
    /// The new one.
    pub new: String,
    /// Log lines read.
    pub lines: u64,
    /// Lines judged under both (not skipped by `--since`, and of a site in each).
    pub judged: u64,
    /// Lines judged under one only (a site one configuration does not have).
    pub one_sided: u64,
    /// Requests newly refused, over all robots.
    pub newly_refused: u64,
    /// Requests newly allowed.
    pub newly_allowed: u64,
    /// Verified search engines' requests newly refused.
    pub verified_search_refused: u64,
    /// Per robot and site, verified search engines newly refused first, then
    /// most changes.
    pub changes: Vec<Change>,
    /// Logs that ended in a read error: name, last line read, error.
    pub unreadable: Vec<(String, u64, String)>,
}

fn why(v: &Verdict) -> String {
    match v.line {
        Some(l) => format!("{} line {l}", v.directive),
        None => v.directive.to_owned(),
    }
}

fn example(entry: &Entry<'_>, line: u64, verdict: &Verdict) -> Example {
    let mut path = entry.target.to_string();
    crate::lines::truncate_at_char(&mut path, MAX_EXAMPLE);
    Example { path, log_line: line, why: why(verdict) }
}

/// Decides every line of `inputs` under `old` and `new` (one pass, one
/// thread: each line is parsed once and decided twice), and returns the
/// changes. `names` are the two configurations' names for the report.
pub fn compare(old: &Setup<'_>, new: &Setup<'_>, inputs: Vec<Input>, names: (&str, &str)) -> Comparison {
    let mut out = Comparison { old: names.0.to_owned(), new: names.1.to_owned(), ..Comparison::default() };
    let (mut w_old, mut w_new) = (Worker::new(old), Worker::new(new));
    let mut rows: HashMap<(usize, String), Change> = HashMap::new();
    let mut drop = |_| {};
    for input in inputs {
        let mut reader = Reader::new(input.reader, new.format.clone());
        let read = reader.for_each_entry(|line, entry| {
            let sides = (route(old, &entry), route(new, &entry));
            let (Route::Judge { site: s_old, .. }, Route::Judge { site: s_new, .. }) = sides else {
                if matches!(sides.0, Route::Judge { .. }) || matches!(sides.1, Route::Judge { .. }) {
                    out.one_sided += 1;
                }
                return;
            };
            out.judged += 1;
            let a = w_old.decide(line, &entry, s_old, true, &mut drop);
            let b = w_new.decide(line, &entry, s_new, true, &mut drop);
            if a.refused == b.refused {
                return;
            }
            // Rare: name the robot only for a change.
            let ua = entry.user_agent.as_deref().unwrap_or_default();
            let agent = new.classifier.classify(ua.as_bytes());
            let category = agent.category.as_str();
            let bot = match (agent.kind, agent.name) {
                (AgentKind::Browser, _) => "(browsers)".to_owned(),
                (_, Some(name)) => name.to_owned(),
                (_, None) => format!("unknown:{category}"),
            };
            let key = if rows.len() >= MAX_ROWS && !rows.contains_key(&(s_new, bot.clone())) {
                (s_new, super::tally::OTHER_BOTS.to_owned())
            } else {
                (s_new, bot)
            };
            let row = rows.entry(key.clone()).or_insert_with(|| Change {
                site: new.sites[s_new].rules.name.to_owned(),
                bot: key.1.clone(),
                category,
                ..Change::default()
            });
            if b.refused {
                row.newly_refused += 1;
                out.newly_refused += 1;
                if b.verified_search {
                    row.verified_search_refused += 1;
                    out.verified_search_refused += 1;
                }
                row.refused_example.get_or_insert_with(|| example(&entry, line, &b));
            } else {
                row.newly_allowed += 1;
                out.newly_allowed += 1;
                row.allowed_example.get_or_insert_with(|| example(&entry, line, &a));
            }
        });
        out.lines += reader.lines();
        if let Err(e) = read {
            out.unreadable.push((input.name, reader.lines(), e.to_string()));
        }
    }
    let mut changes: Vec<Change> = rows.into_values().collect();
    changes.sort_by(|a, b| {
        (b.verified_search_refused, b.newly_refused + b.newly_allowed)
            .cmp(&(a.verified_search_refused, a.newly_refused + a.newly_allowed))
            .then_with(|| (&a.site, &a.bot).cmp(&(&b.site, &b.bot)))
    });
    out.changes = changes;
    out
}

impl Comparison {
    /// The text report: verified search engines newly refused first, then
    /// one row per robot.
    pub fn to_text(&self) -> String {
        use crate::report::render::text::{cell, clipped};
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "robotgate replay --compare: {} lines, {} judged under both {} and {}",
            self.lines, self.judged, self.old, self.new
        );
        if self.one_sided > 0 {
            let _ = writeln!(o, "{} lines belong to a site only one configuration has (not compared)", self.one_sided);
        }
        for (name, after, error) in &self.unreadable {
            let _ = writeln!(o, "UNREADABLE: {} after line {after}: {}", clipped(name, 60), clipped(error, 80));
        }
        let _ = writeln!(o, "{} requests newly refused, {} newly allowed", self.newly_refused, self.newly_allowed);
        let flagged: Vec<&Change> = self.changes.iter().filter(|c| c.verified_search_refused > 0).collect();
        if flagged.is_empty() {
            let _ = writeln!(o, "No verified search engine would newly be refused.");
        } else {
            let _ = writeln!(o, "VERIFIED SEARCH ENGINES NEWLY REFUSED ({}):", self.verified_search_refused);
            for c in flagged {
                let e = c.refused_example.as_ref();
                let _ = writeln!(
                    o,
                    "  {} on {}: {} requests, e.g. {} (log line {}): {}",
                    clipped(&c.bot, 40),
                    clipped(&c.site, 40),
                    c.verified_search_refused,
                    clipped(e.map_or("", |e| e.path.as_str()), 60),
                    e.map_or(0, |e| e.log_line),
                    e.map_or("", |e| e.why.as_str())
                );
            }
        }
        if self.changes.is_empty() {
            return o;
        }
        let _ = writeln!(
            o,
            "{:<24} {:<16} {:<11} {:>14} {:>14}  EXAMPLE",
            "ROBOT", "SITE", "CATEGORY", "NEWLY REFUSED", "NEWLY ALLOWED"
        );
        for c in self.changes.iter().take(200) {
            let example = match (&c.refused_example, &c.allowed_example) {
                (Some(e), _) => format!("refused {} ({}, log line {})", clipped(&e.path, 60), e.why, e.log_line),
                (None, Some(e)) => format!("allowed {} (was {}, log line {})", clipped(&e.path, 60), e.why, e.log_line),
                (None, None) => String::new(),
            };
            let _ = writeln!(
                o,
                "{} {} {} {:>14} {:>14}  {}",
                cell(&c.bot, 24),
                cell(&c.site, 16),
                cell(c.category, 11),
                c.newly_refused,
                c.newly_allowed,
                example
            );
        }
        if self.changes.len() > 200 {
            let _ = writeln!(o, "({} more robots: see --output json)", self.changes.len() - 200);
        }
        o
    }
}
