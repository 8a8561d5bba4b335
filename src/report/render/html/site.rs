//! One site's section: its charts, its bots, the clients and User-Agents of
//! robots the database does not know, its days, and the pages whose
//! noindex robots.txt hides.

use maud::{html, Markup};

use super::chart::{bars, Bar};
use super::{colour, short, time, MAX_BOT_ROWS};
use crate::report::render::markup::Text;
use crate::report::render::thousands;
use crate::report::SiteReport;

/// Bars of the top-bots chart.
const TOP_BOTS: usize = 15;

/// Bars of the rules chart.
const TOP_RULES: usize = 10;

/// Client addresses listed per site.
const MAX_CLIENTS: usize = 25;

fn rule_label(directive: &str, pattern: Option<&str>, line: Option<u32>) -> String {
    let line = line.map_or("-".to_owned(), |l| l.to_string());
    format!("line {line}: {directive}: {}", pattern.unwrap_or(""))
}

/// `name count, name count, ...` of action counts.
fn action_counts(actions: &[crate::report::NamedCount]) -> String {
    actions.iter().map(|a| format!("{} {}", a.name, thousands(a.count))).collect::<Vec<_>>().join(", ")
}

/// A site's section; `suffix` tells its charts' ids from the first site's.
pub(super) fn write_site(s: &SiteReport, suffix: &str) -> Markup {
    let bots: Vec<Bar<'_>> = s
        .bots
        .iter()
        .take(TOP_BOTS)
        .map(|b| Bar {
            label: short(&b.bot, 40),
            value: b.violations,
            fill: colour(b.category),
            tip: format!("{} ({})", b.bot, b.category),
        })
        .collect();
    let rules: Vec<Bar<'_>> = s
        .rules
        .iter()
        .take(TOP_RULES)
        .map(|r| {
            let label = rule_label(&r.directive, r.pattern.as_deref(), r.line);
            let tip = format!("{label}; {}", action_counts(&r.actions));
            Bar { label: short(&label, 48), value: r.violations, fill: "#d62728", tip }
        })
        .collect();
    html! {
        section {
            h2 { "Site " code { (Text(&s.site)) } ": " (thousands(s.violations)) " violations" }
            p.note { (time(s.first.as_deref())) " to " (time(s.last.as_deref())) "." }
            h3 { "Top bots" }
            (bars(&format!("chart-top-bots{suffix}"), "chart-top-bots", "Top bots by violations", &bots))
            h3 { "Most-broken robots.txt rules" }
            (bars(&format!("chart-rules{suffix}"), "chart-rules", "Most-broken robots.txt rules", &rules))
            @if s.other_rules > 0 {
                p.note { (thousands(s.other_rules)) " violations of rules not listed." }
            }
            h3 { "Bots" }
            (bot_table(s, suffix))
            (unknown_tables(s))
            @if !s.days.is_empty() {
                h3 { "Per day" }
                table {
                    thead { tr { th { "Day" } th.n { "Violations" } } }
                    tbody {
                        @for d in &s.days {
                            tr { td { (Text(&d.day)) } td.n { (thousands(d.violations)) } }
                        }
                    }
                }
            }
            @if s.other_days > 0 {
                p.note { (thousands(s.other_days)) " violations on other days." }
            }
            (hidden_table(s))
        }
    }
}

/// The pages whose noindex robots.txt hides (findings of `indexing.observe`).
fn hidden_table(s: &SiteReport) -> Markup {
    html! {
        @if !s.hidden_noindex.is_empty() {
            h3 { "Noindex hidden by robots.txt" }
            p.note {
                "These pages say noindex, but robots.txt keeps the robot from fetching them: "
                "it never sees the noindex, and can keep the URL in its index."
            }
            table.sortable data-testid="table-hidden" {
                thead { tr { th { "Page" } th { "Robot" } th { "The page says" } th { "robots.txt" } th { "Seen" } } }
                tbody {
                    @for h in &s.hidden_noindex {
                        tr {
                            td.w { (Text(&h.path)) } td { (Text(&h.robot)) } td { (Text(&h.said)) }
                            td { (rule_label("disallow", Some(&h.pattern), h.line)) } td { (time(Some(&h.seen))) }
                        }
                    }
                }
            }
            @if s.hidden_noindex_other > 0 {
                p.note { (thousands(s.hidden_noindex_other)) " more pages past the cap." }
            }
        }
    }
}

/// The sortable table of a site's bots.
fn bot_table(s: &SiteReport, suffix: &str) -> Markup {
    html! {
        table.sortable id=(format!("table-bots{suffix}")) data-testid="table-bots" {
            thead {
                tr {
                    th { "Bot" } th { "Category" } th { "Identity" } th.n { "Violations" } th.n { "Distinct paths" }
                    th { "First" } th { "Last" } th { "Top rule broken" } th { "Actions" }
                }
            }
            tbody {
                @for b in s.bots.iter().take(MAX_BOT_ROWS) {
                    tr {
                        td.w { (Text(&b.bot)) }
                        td { (Text(b.category)) }
                        td {
                            @match b.identity.label() {
                                None => "-",
                                Some(label) => {
                                    @let i = &b.identity;
                                    span title=(format!(
                                        "verified {}, spoofed {}, unverifiable {}",
                                        i.verified, i.spoofed, i.unverifiable
                                    )) { (label) }
                                }
                            }
                        }
                        td.n data-v=(b.violations) { (thousands(b.violations)) }
                        td.n data-v=(b.distinct_paths) {
                            @if !b.distinct_paths_exact { "~" }
                            (thousands(b.distinct_paths))
                        }
                        td { (time(b.first.as_deref())) }
                        td { (time(b.last.as_deref())) }
                        td.w {
                            @match b.rules.first() {
                                None => "-",
                                Some(r) => (Text(&format!(
                                    "{} ({})",
                                    rule_label(&r.directive, r.pattern.as_deref(), r.line),
                                    thousands(r.violations)
                                ))),
                            }
                        }
                        td { (Text(&action_counts(&b.actions))) @if b.weak_evidence > 0 { " (weak evidence: " (Text(&thousands(b.weak_evidence))) " only recorded)" } }
                    }
                }
            }
        }
        @if s.bots.len() > MAX_BOT_ROWS {
            p.note { (s.bots.len() - MAX_BOT_ROWS) " more bots: see the JSON report." }
        }
        @if s.unknown_names_folded > 0 {
            p.note {
                (thousands(s.unknown_names_folded))
                " violations of unknown robots past the cap on their names are in the "
                code { "unknown:" } " rows."
            }
        }
    }
}

/// The top clients and User-Agents of robots the database does not know.
fn unknown_tables(s: &SiteReport) -> Markup {
    html! {
        @if !s.unknown_clients.is_empty() {
            h3 { "Top clients of robots not in the database" }
            table.sortable {
                thead { tr { th { "Client" } th.n { "Violations" } th.n { "At least" } } }
                tbody {
                    @for c in s.unknown_clients.iter().take(MAX_CLIENTS) {
                        @let low = c.violations - c.error;
                        tr {
                            td.w { (Text(&c.client)) }
                            td.n data-v=(c.violations) { (thousands(c.violations)) }
                            td.n data-v=(low) { (thousands(low)) }
                        }
                    }
                }
            }
            @if s.unknown_clients_floor > 0 {
                p.note {
                    "Approximate counts: no address left out has more than "
                    (thousands(s.unknown_clients_floor)) " violations."
                }
            }
        }
        @if !s.unknown_user_agents.is_empty() {
            h3 { "Top User-Agents of robots not in the database" }
            table.sortable {
                thead { tr { th { "User-Agent" } th.n { "Violations" } } }
                tbody {
                    @for a in s.unknown_user_agents.iter().take(MAX_CLIENTS) {
                        tr {
                            td.w { (Text(&a.user_agent)) }
                            td.n data-v=(a.violations) { (thousands(a.violations)) }
                        }
                    }
                }
            }
        }
    }
}
