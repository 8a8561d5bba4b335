//! What a replay counts beside the violation records: requests per bot,
//! identity outcomes, robots.txt fetches, collateral findings. Bounded: a
//! log can name any number of robots, so rows past the caps fold into one.

use std::collections::HashMap;

use serde::Serialize;

use super::Site;
use crate::agent::Agent;
use crate::identity::Identity;
use crate::record::Record;
pub use crate::report::replay::{Collateral, CollateralKind, UnjudgedPath, UnsupportedHit};

/// Bot rows kept per site; the rest are counted under [`OTHER_BOTS`].
pub const MAX_BOTS: usize = 2_000;
/// The row of bots past [`MAX_BOTS`].
pub const OTHER_BOTS: &str = "(other bots)";
/// Rules kept per bot row.
const MAX_RULES: usize = 32;
/// Collateral findings and unjudged paths kept per site.
const MAX_FINDINGS: usize = 200;
/// Bots named per collateral finding.
const MAX_FINDING_BOTS: usize = 5;
/// Bytes kept of an example path.
const MAX_EXAMPLE: usize = 200;

/// Everything counted, per site (in the order of [`super::Setup::sites`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Tally {
    /// Per site.
    pub sites: Vec<SiteTally>,
}

/// One site.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SiteTally {
    /// Requests judged (lines of this site).
    pub requests: u64,
    /// Of them, from browsers (never held to robots.txt).
    pub browsers: u64,
    /// Would-be violations (records' `count`).
    pub violations: u64,
    /// Requests the gate would refuse before any policy, by status (a
    /// target with no safe reading, CONNECT).
    pub refused: Vec<(u16, u64)>,
    /// Robots, by name (database name, the name an unknown robot announces,
    /// or `unknown:<category>`).
    pub bots: HashMap<String, BotTally>,
    /// Allowed traffic the policy would have refused to a robot that keeps
    /// to robots.txt.
    pub collateral: Vec<Collateral>,
    /// Findings past the cap.
    pub collateral_other: u64,
    /// Limits by a directive the robot says it ignores, per line.
    pub unsupported: Vec<UnsupportedHit>,
    /// Lines without a User-Agent (common format) whose path the `*` group
    /// disallows.
    pub unjudged: Vec<UnjudgedPath>,
    /// Such lines past the cap.
    pub unjudged_other: u64,
}

/// One robot on one site.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BotTally {
    /// Category.
    pub category: &'static str,
    /// A robot of the database.
    pub known: bool,
    /// Requests.
    pub requests: u64,
    /// Would-be violations.
    pub violations: u64,
    /// Fetches of `/robots.txt`.
    pub robots_fetches: u64,
    /// Requests per identity outcome: verified, spoofed, unverifiable, not claimed.
    pub identity: [u64; 4],
    /// Would-be violations per rule: `(directive, line)`, count.
    pub rules: Vec<((&'static str, Option<u32>), u64)>,
    /// Violations of rules past the cap.
    pub other_rules: u64,
}

fn slot(identity: Identity) -> usize {
    match identity {
        Identity::Verified => 0,
        Identity::Spoofed => 1,
        Identity::Unverifiable | Identity::Pending => 2,
        Identity::NotClaimed => 3,
    }
}

fn cut(s: &str) -> String {
    let mut s = s.to_owned();
    crate::lines::truncate_at_char(&mut s, MAX_EXAMPLE);
    s
}

/// The row a robot is counted in.
fn row_name(name: Option<&str>, category: &'static str) -> String {
    match name {
        Some(n) => n.to_owned(),
        None => format!("unknown:{category}"),
    }
}

impl SiteTally {
    fn row(&mut self, name: String, category: &'static str, known: bool) -> &mut BotTally {
        let name =
            if self.bots.len() >= MAX_BOTS && !self.bots.contains_key(&name) { OTHER_BOTS.to_owned() } else { name };
        self.bots.entry(name).or_insert_with(|| BotTally { category, known, ..BotTally::default() })
    }
}

impl BotTally {
    fn count_rule(&mut self, key: (&'static str, Option<u32>), n: u64) {
        match self.rules.iter().position(|(k, _)| *k == key) {
            Some(i) => self.rules[i].1 += n,
            None if self.rules.len() < MAX_RULES => self.rules.push((key, n)),
            None => self.other_rules += n,
        }
    }
}

impl Tally {
    /// An empty tally for `sites` sites.
    pub fn new(sites: usize) -> Tally {
        Tally { sites: vec![SiteTally::default(); sites] }
    }

    pub(super) fn refused(&mut self, site: usize, status: u16) {
        let refused = &mut self.sites[site].refused;
        match refused.iter_mut().find(|(s, _)| *s == status) {
            Some(e) => e.1 += 1,
            None => refused.push((status, 1)),
        }
    }

    pub(super) fn request(&mut self, site: usize, agent: &Agent<'_>, identity: Identity, robots_fetch: bool) {
        let s = &mut self.sites[site];
        s.requests += 1;
        if !agent.is_bot() {
            s.browsers += 1;
            return;
        }
        let category = agent.category.as_str();
        let row = s.row(row_name(agent.name, category), category, agent.is_known());
        row.requests += 1;
        row.identity[slot(identity)] += 1;
        row.robots_fetches += u64::from(robots_fetch);
    }

    pub(super) fn violation(&mut self, site: usize, r: &Record) {
        let s = &mut self.sites[site];
        s.violations += r.count;
        let known = r.bot.is_some();
        let row = s.row(row_name(r.bot.as_deref(), r.category), r.category, known);
        row.violations += r.count;
        row.count_rule((r.directive, r.line), r.count);
    }

    /// A finding of `kind` about the rule on file line `line`: robot `bot`
    /// (of `category`) asked for `example` (as logged).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn collateral(
        &mut self,
        site_index: usize,
        site: &Site<'_>,
        kind: CollateralKind,
        (line, pattern): (u32, &str),
        (bot, category): (Option<&str>, &'static str),
        example: &str,
        log_line: u64,
    ) {
        let s = &mut self.sites[site_index];
        let bot = row_name(bot, category);
        if let Some(c) = s.collateral.iter_mut().find(|c| c.line == line && c.kind == kind) {
            c.count += 1;
            if c.bots.len() < MAX_FINDING_BOTS && !c.bots.contains(&bot) {
                c.bots.push(bot);
            }
            return;
        }
        if s.collateral.len() >= MAX_FINDINGS {
            s.collateral_other += 1;
            return;
        }
        let lint = site.lint.iter().filter(|d| d.line == line).map(|d| format!("{}: {}", d.code, d.message)).collect();
        s.collateral.push(Collateral {
            kind,
            line,
            pattern: cut(pattern),
            count: 1,
            example: cut(example),
            log_line,
            bots: vec![bot],
            lint,
        });
    }

    pub(super) fn unsupported(&mut self, site: usize, directive: &'static str, line: u32, bot: Option<&str>) {
        let s = &mut self.sites[site];
        let bot = bot.unwrap_or("(unnamed)");
        let full = s.unsupported.len() >= MAX_FINDINGS;
        match s.unsupported.iter_mut().find(|u| u.line == line && u.directive == directive) {
            Some(u) => {
                u.count += 1;
                if u.bots.len() < MAX_FINDING_BOTS && !u.bots.iter().any(|b| b == bot) {
                    u.bots.push(bot.to_owned());
                }
            }
            // One per directive line of the file: few.
            None if !full => {
                s.unsupported.push(UnsupportedHit { directive, line, count: 1, bots: vec![bot.to_owned()] })
            }
            None => s.collateral_other += 1,
        }
    }

    pub(super) fn unjudged(&mut self, site: usize, line: u32, pattern: &str, path: &str) {
        let s = &mut self.sites[site];
        if let Some(u) = s.unjudged.iter_mut().find(|u| u.line == line) {
            u.count += 1;
        } else if s.unjudged.len() < MAX_FINDINGS {
            s.unjudged.push(UnjudgedPath { line, pattern: cut(pattern), count: 1, example: cut(path) });
        } else {
            s.unjudged_other += 1;
        }
    }

    /// Adds `other` (another worker's tally of the same sites) to this one.
    pub fn merge(&mut self, other: Tally) {
        for (mine, theirs) in self.sites.iter_mut().zip(other.sites) {
            mine.requests += theirs.requests;
            mine.browsers += theirs.browsers;
            mine.violations += theirs.violations;
            for (status, n) in theirs.refused {
                match mine.refused.iter_mut().find(|(s, _)| *s == status) {
                    Some(e) => e.1 += n,
                    None => mine.refused.push((status, n)),
                }
            }
            for (name, b) in theirs.bots {
                let row = mine.row(name, b.category, b.known);
                row.requests += b.requests;
                row.violations += b.violations;
                row.robots_fetches += b.robots_fetches;
                for (slot, n) in row.identity.iter_mut().zip(b.identity) {
                    *slot += n;
                }
                for (key, n) in b.rules {
                    row.count_rule(key, n);
                }
                row.other_rules += b.other_rules;
            }
            for c in theirs.collateral {
                match mine.collateral.iter().position(|m| m.line == c.line && m.kind == c.kind) {
                    Some(i) => {
                        let m = &mut mine.collateral[i];
                        m.count += c.count;
                        if c.log_line < m.log_line {
                            (m.example, m.log_line) = (c.example, c.log_line);
                        }
                        for bot in c.bots {
                            if m.bots.len() < MAX_FINDING_BOTS && !m.bots.contains(&bot) {
                                m.bots.push(bot);
                            }
                        }
                    }
                    None if mine.collateral.len() < MAX_FINDINGS => mine.collateral.push(c),
                    None => mine.collateral_other += c.count,
                }
            }
            mine.collateral_other += theirs.collateral_other;
            for u in theirs.unsupported {
                match mine.unsupported.iter_mut().find(|m| m.line == u.line && m.directive == u.directive) {
                    Some(m) => {
                        m.count += u.count;
                        for bot in u.bots {
                            if m.bots.len() < MAX_FINDING_BOTS && !m.bots.contains(&bot) {
                                m.bots.push(bot);
                            }
                        }
                    }
                    None => mine.unsupported.push(u),
                }
            }
            for u in theirs.unjudged {
                match mine.unjudged.iter().position(|m| m.line == u.line) {
                    Some(i) => mine.unjudged[i].count += u.count,
                    None if mine.unjudged.len() < MAX_FINDINGS => mine.unjudged.push(u),
                    None => mine.unjudged_other += u.count,
                }
            }
            mine.unjudged_other += theirs.unjudged_other;
        }
    }
}

/// What a refused request-target suggests: a stylesheet or script (`.css`,
/// `.js`, `.mjs`), a sitemap (a `Sitemap:` URL's path, or `sitemap*.xml`),
/// else a page.
pub(super) fn kind_of(target: &[u8], sitemaps: &[String]) -> CollateralKind {
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    let lower = path.to_ascii_lowercase();
    if [&b".css"[..], b".js", b".mjs"].iter().any(|ext| lower.ends_with(ext)) {
        return CollateralKind::RenderResource;
    }
    let file = lower.rsplit(|&b| b == b'/').next().unwrap_or_default();
    let named = sitemaps.iter().any(|s| s.as_bytes() == path);
    if named || (file.starts_with(b"sitemap") && (file.ends_with(b".xml") || file.ends_with(b".xml.gz"))) {
        return CollateralKind::Sitemap;
    }
    CollateralKind::Page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_refused_paths() {
        let maps = vec!["/maps/all.xml".to_string()];
        assert_eq!(kind_of(b"/static/app.JS", &maps), CollateralKind::RenderResource);
        assert_eq!(kind_of(b"/a/site.css", &maps), CollateralKind::RenderResource);
        assert_eq!(kind_of(b"/maps/all.xml", &maps), CollateralKind::Sitemap);
        assert_eq!(kind_of(b"/sitemap_index.xml", &maps), CollateralKind::Sitemap);
        assert_eq!(kind_of(b"/private/report.html", &maps), CollateralKind::Page);
        assert_eq!(kind_of(b"/jsx", &maps), CollateralKind::Page);
    }
}
