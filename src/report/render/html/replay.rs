//! The part `robotgate replay` adds to the report.

use maud::{html, Markup};

use super::MAX_BOT_ROWS;
use crate::report::render::markup::Text;
use crate::report::render::thousands;

/// The replay's own part: per site, what the proxy would have done to
/// each robot, and the collateral findings.
pub(super) fn replay_sections(r: &crate::report::replay::ReplayReport) -> Markup {
    html! {
        section data-testid="replay" {
            h2 { "Replay of " (thousands(r.lines)) " " (Text(&r.format)) " log lines" }
            ul.note {
                @if r.skipped > 0 {
                    li { (thousands(r.skipped)) " lines skipped by " code { "--since" } " or " code { "--site" } "." }
                }
                @for limit in &r.limits {
                    li { (Text(limit)) }
                }
                @for u in &r.unreadable {
                    li {
                        strong { "Unreadable:" } " " code { (Text(&u.source)) } " after line " (u.after_line)
                        " (the lines before it were judged): " (Text(&u.error))
                    }
                }
            }
            @for s in &r.sites {
                h3 {
                    "Site " code { (Text(&s.site)) } ": " (thousands(s.requests)) " requests, "
                    (thousands(s.browsers)) " from browsers, " (thousands(s.violations)) " would-be violations"
                }
                table.sortable {
                    thead {
                        tr {
                            th { "Robot" } th { "Category" } th { "Identity" } th.n { "Requests" }
                            th.n { "Violations" } th.n { "robots.txt fetches" } th { "Rules broken" }
                        }
                    }
                    tbody {
                        @for b in s.bots.iter().take(MAX_BOT_ROWS) {
                            @let rules: Vec<String> = b.rules.iter().take(5).map(|r| match r.line {
                                Some(l) => format!("{} line {l} ×{}", r.directive, thousands(r.count)),
                                None => format!("{} ×{}", r.directive, thousands(r.count)),
                            }).collect();
                            tr {
                                td.w { (Text(&b.bot)) }
                                td { (Text(b.category)) }
                                td { (b.identity().unwrap_or("-")) }
                                td.n data-v=(b.requests) { (thousands(b.requests)) }
                                td.n data-v=(b.violations) { (thousands(b.violations)) }
                                td.n data-v=(b.robots_fetches) { (thousands(b.robots_fetches)) }
                                td { (Text(&rules.join(", "))) }
                            }
                        }
                    }
                }
                @if !s.unsupported.is_empty() {
                    p { "Collateral, unsupported directives: paces or hours that would have limited robots whose operators say they ignore them." }
                    ul data-testid="unsupported" {
                        @for u in &s.unsupported {
                            li {
                                "line " (u.line) " " code { (u.directive) } ": " (thousands(u.count)) " requests by "
                                (Text(&u.bots.join(", ")))
                            }
                        }
                    }
                }
                @if s.collateral.is_empty() {
                    p { "Collateral: none. No robot that keeps to robots.txt would have been refused." }
                } @else {
                    p {
                        "Collateral: robots that keep to robots.txt were served what the policy would refuse them. \
                         On a healthy site, each is a mistake in robots.txt."
                    }
                    ul data-testid="collateral" {
                        @for c in &s.collateral {
                            li {
                                "line " (c.line) " " code { (Text(&c.pattern)) } " (" (c.kind.as_str()) "): "
                                (thousands(c.count)) " requests by " (Text(&c.bots.join(", "))) ", e.g. "
                                code { (Text(&c.example)) } " (log line " (c.log_line) ")"
                                @for l in &c.lint {
                                    br;
                                    "lint: " (Text(l))
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
