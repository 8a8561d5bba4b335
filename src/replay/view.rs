//! The replay's own part of the report, sorted: requests per robot,
//! identity, robots.txt fetches, collateral. The violations themselves are
//! the report's ([`crate::report::Report`]), from the same records.

use crate::report::replay::{ReplayBot, ReplayReport, ReplayRule, ReplaySite, Unreadable, LIMITS};

/// Robot rows shown per site (the JSON has them all).
const TOP_BOTS: usize = 500;

impl ReplayReport {
    /// The sorted view of a replay's outcome, for sites named `names` (config order).
    pub fn new(outcome: &super::RunOutcome, names: &[&str], format: &str) -> ReplayReport {
        let (tally, lines, skipped) = (&outcome.tally, outcome.lines, outcome.skipped);
        let unreadable = outcome
            .unreadable
            .iter()
            .map(|(source, after_line, error)| Unreadable {
                source: source.clone(),
                after_line: *after_line,
                error: error.clone(),
            })
            .collect();
        let sites = tally
            .sites
            .iter()
            .zip(names)
            .filter(|(s, _)| s.requests > 0)
            .map(|(s, name)| {
                let mut bots: Vec<ReplayBot> = s
                    .bots
                    .iter()
                    .map(|(name, b)| {
                        let mut rules: Vec<ReplayRule> = b
                            .rules
                            .iter()
                            .map(|((directive, line), count)| ReplayRule { directive, line: *line, count: *count })
                            .collect();
                        rules.sort_by(|a, b| b.count.cmp(&a.count).then(a.line.cmp(&b.line)));
                        ReplayBot {
                            bot: name.clone(),
                            category: b.category,
                            known: b.known,
                            requests: b.requests,
                            violations: b.violations,
                            robots_fetches: b.robots_fetches,
                            verified: b.identity[0],
                            spoofed: b.identity[1],
                            unverifiable: b.identity[2],
                            rules,
                            other_rules: b.other_rules,
                        }
                    })
                    .collect();
                bots.sort_by(|a, b| {
                    (b.violations, b.requests).cmp(&(a.violations, a.requests)).then_with(|| a.bot.cmp(&b.bot))
                });
                let bots_not_listed = bots.len().saturating_sub(TOP_BOTS);
                bots.truncate(TOP_BOTS);
                let mut collateral = s.collateral.clone();
                collateral.sort_by(|a, b| b.count.cmp(&a.count).then(a.line.cmp(&b.line)));
                let mut unjudged = s.unjudged.clone();
                unjudged.sort_by(|a, b| b.count.cmp(&a.count).then(a.line.cmp(&b.line)));
                let mut refused = s.refused.clone();
                refused.sort_unstable();
                ReplaySite {
                    site: (*name).to_owned(),
                    requests: s.requests,
                    browsers: s.browsers,
                    violations: s.violations,
                    refused,
                    bots,
                    bots_not_listed,
                    collateral,
                    collateral_other: s.collateral_other,
                    unsupported: s.unsupported.clone(),
                    unjudged,
                    unjudged_other: s.unjudged_other,
                }
            })
            .collect();
        ReplayReport { format: format.to_owned(), lines, skipped, limits: LIMITS.to_vec(), unreadable, sites }
    }
}
