//! The report as one self-contained HTML page.
//!
//! No external resource of any kind: inline CSS, inline SVG charts drawn
//! here, and a few lines of inline script that make the bot table sortable
//! (the page reads the same without it). A Content-Security-Policy allows
//! exactly that style and that script, by hash, and nothing else, so even a
//! string that escaped escaping could not run.
//!
//! The page is a `maud` template, so every value spliced into it is escaped
//! by construction; every string from the log also goes through
//! [`Text`] ([`escape`]: `&`, `<`, `>`, `"`, `'`; control and invisible
//! bidirectional characters become U+FFFD).
//! Charts carry `id` and `data-testid` (`chart-over-time`, `chart-top-bots`,
//! `chart-rules`, `table-bots`) for browser tests; per-site charts after the
//! first get `-2`, `-3`, ... on their `id`.
//!
//! Size: bounded by the aggregates, not the log (at most [`MAX_SITES`]
//! sites of [`MAX_BOT_ROWS`] bot rows each).
//!
//! One concern per file: this file holds the page and its header; `chart`
//! draws the SVG charts, `site` each site's section, `replay` the part
//! `robotgate replay` adds.

mod chart;
mod replay;
mod site;

use std::io::{self, Write};

use maud::{html, Markup};

pub use super::markup::escape;
use super::markup::{document, Text};
use super::{short_time, thousands};
use crate::report::aggregate::category_index;
use crate::report::Report;

/// Sites shown.
pub const MAX_SITES: usize = 20;

/// Rows of the bot table per site.
pub const MAX_BOT_ROWS: usize = 200;

/// `s` cut to `max` characters (ending in `…` when cut).
fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Colours per category slot (see [`crate::report::aggregate::CATEGORIES`]),
/// distinguishable and readable on white.
const PALETTE: [&str; 13] = [
    "#1f77b4", "#d62728", "#ff7f0e", "#9467bd", "#2ca02c", "#e377c2", "#17becf", "#8c564b", "#bcbd22", "#7f7f7f",
    "#393b79", "#aec7e8", "#636363",
];

fn colour(category: &str) -> &'static str {
    PALETTE[category_index(category) % PALETTE.len()]
}

const SCRIPT: &str = r#"
"use strict";

for (const table of document.querySelectorAll("table.sortable")) {
  const body = table.tBodies[0];
  const heads = table.tHead ? table.tHead.rows[0].cells : [];
  for (let col = 0; col < heads.length; col++) {
    const th = heads[col];
    th.tabIndex = 0;
    const key = (row) => {
      const cell = row.cells[col];
      if (!cell) return "";
      const v = cell.getAttribute("data-v");
      return v === null ? cell.textContent : Number(v);
    };
    const sort = () => {
      const desc = th.getAttribute("aria-sort") !== "descending";
      for (const h of heads) h.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = key(a), y = key(b);
        const o = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return desc ? -o : o;
      });
      for (const row of rows) body.appendChild(row);
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
    });
  }
}

"#;

/// Writes `report` as one HTML page.
///
/// # Errors
///
/// Errors of `out`.
pub fn write(report: &Report, out: &mut impl Write) -> io::Result<()> {
    out.write_all(to_string(report).as_bytes())
}

/// The page of [`write`].
pub fn to_string(report: &Report) -> String {
    let body = html! {
        (header(report))
        main {
            @if let Some(replay) = &report.replay {
                (replay::replay_sections(replay))
            }
            section {
                h2 { "Violations per " (report.over_time.unit) " and category" }
                (chart::over_time(&report.over_time))
                @if report.undated > 0 || report.other_hours > 0 {
                    p.note {
                        "Not in the chart: " (thousands(report.undated)) " violations with an unreadable time, "
                        (thousands(report.other_hours)) " past the report's cap of hours."
                    }
                }
            }
            @if report.sites.len() > 1 {
                section {
                    h2 { "Totals per site" }
                    table.sortable {
                        thead { tr { th { "Site" } th.n { "Violations" } th { "First" } th { "Last" } } }
                        tbody {
                            @for s in &report.sites {
                                tr {
                                    td.w { (Text(&s.site)) }
                                    td.n data-v=(s.violations) { (thousands(s.violations)) }
                                    td { (time(s.first.as_deref())) }
                                    td { (time(s.last.as_deref())) }
                                }
                            }
                        }
                    }
                }
            }
            @for (i, site) in report.sites.iter().take(MAX_SITES).enumerate() {
                (site::write_site(site, &if i == 0 { String::new() } else { format!("-{}", i + 1) }))
            }
            @if report.sites.len() > MAX_SITES {
                p.note { (report.sites.len() - MAX_SITES) " more sites: see the JSON report." }
            }
            section {
                h2 { "Malformed lines" }
                @let m = &report.malformed;
                @if m.count == 0 {
                    p { "None." }
                } @else {
                    p { (thousands(m.count)) " lines skipped. The first:" }
                    ul {
                        @for s in &m.samples {
                            li { code { (Text(&s.source)) ":" (s.line) } ": " (Text(&s.reason)) }
                        }
                    }
                }
            }
        }
    };
    let mut page = document("robotgate report", None, Some(SCRIPT), body).into_string();
    page.push('\n');
    page
}

/// The page's header: totals, the time span, and what the filter left out.
fn header(report: &Report) -> Markup {
    let mut notes: Vec<Markup> = Vec::new();
    if let Some(since) = &report.since {
        notes.push(html! { "since " code { (Text(since)) } });
    }
    if let Some(site) = &report.site_filter {
        notes.push(html! { "site " code { (Text(site)) } });
    }
    if report.filtered_out > 0 {
        notes.push(html! { (thousands(report.filtered_out)) " lines skipped by the filter" });
    }
    if report.overflow > 0 {
        notes.push(html! { (thousands(report.overflow)) " violations without details (log overflow lines)" });
    }
    html! {
        header {
            h1 { "robotgate report" }
            p {
                strong { (thousands(report.violations)) } " violations in " (thousands(report.records)) " records"
                @if let (Some(f), Some(l)) = (&report.first, &report.last) {
                    " from " (Text(&short_time(f))) " to " (Text(&short_time(l)))
                }
                "."
            }
            @if !notes.is_empty() {
                p.note {
                    @for (i, n) in notes.iter().enumerate() {
                        @if i > 0 { "; " }
                        (n)
                    }
                    "."
                }
            }
        }
    }
}

/// A time as the report shows it (`-` when there is none).
fn time(t: Option<&str>) -> Markup {
    html! {
        @match t {
            Some(t) => (Text(&short_time(t))),
            None => "-",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::markup::{csp_hash, STYLE};
    use super::*;
    use crate::record::{sample, Record};
    use crate::report::{Filter, RecordView, Summary};

    fn page(records: &[Record]) -> String {
        let mut s = Summary::new(Filter::default());
        for r in records {
            s.add(&RecordView::from_record(r));
        }
        to_string(&Report::from_summary(&s))
    }

    #[test]
    fn hostile_strings_are_text() {
        let evil = ["<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "'><svg onload=alert(1)>"];
        let mut records = Vec::new();
        for (i, e) in evil.iter().enumerate() {
            records.push(Record {
                bot: Some((*e).into()),
                claims: Vec::new(),
                category: "other-bot",
                client: (*e).into(),
                site: (*e).into(),
                pattern: Some((*e).into()),
                directive: "disallow",
                ..sample("c", e, e, i as u32, "2025-01-01T00:00:00Z".into())
            });
        }
        let html = page(&records);
        assert!(!html.contains("<script>alert"), "raw script tag");
        assert!(!html.contains("<img"));
        assert!(!html.contains("<svg onload"));
        assert!(!html.contains("onerror=alert(1)>"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        // Exactly the one script element of the page.
        assert_eq!(html.matches("<script").count(), 1);
    }

    #[test]
    fn issue_26_a_hostile_user_agent_and_path_come_out_escaped() {
        let ua = "Evil<script>alert(\"ua\")</script>'&Bot/1.0";
        let path = "/p?<script>alert('path')</script>&q=\"x\"";
        let r = Record {
            bot: Some("EvilBot".into()),
            claims: Vec::new(),
            category: "other-bot",
            pattern: Some(path.into()),
            ..sample("192.0.2.1", ua, path, 1, "2025-01-01T00:00:00Z".into())
        };
        let html = page(&[r]);
        // The User-Agent (top User-Agents of unknown robots) and the path (the
        // rule broken, in the bot table and the rules chart's tooltip).
        assert!(html.contains("Evil&lt;script&gt;alert(&quot;ua&quot;)&lt;/script&gt;&#39;&amp;Bot/1.0"), "{html}");
        assert!(html.contains("/p?&lt;script&gt;alert(&#39;path&#39;)&lt;/script&gt;&amp;q=&quot;x&quot;"), "{html}");
        assert!(!html.contains("<script>alert"));
        assert_eq!(html.matches("<script").count(), 1, "the page's own script only");
    }

    #[test]
    fn charts_are_present_sized_and_self_contained() {
        let mut records = Vec::new();
        for h in 0..30 {
            records.push(Record {
                count: h + 1,
                ..sample("c", "u", "/private/x", 3, format!("2025-01-01T{:02}:00:00Z", h % 24))
            });
        }
        let html = page(&records);
        for id in ["chart-over-time", "chart-top-bots", "chart-rules", "table-bots"] {
            assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
            assert!(html.contains(&format!("data-testid=\"{id}\"")), "{id}");
        }
        for svg in html.split("<svg").skip(1) {
            let tag = &svg[..svg.find('>').unwrap()];
            assert!(tag.contains("viewBox=\"0 0 ") && tag.contains("width=\""), "{tag}");
        }
        for banned in ["http://", "https://", "src=", "@import", "url(", " on"] {
            let hits: Vec<&str> = html
                .match_indices(banned)
                .map(|(i, _)| &html[i.saturating_sub(30)..(i + 40).min(html.len())])
                .collect();
            // The SVG namespace is an identifier, not a fetch.
            assert!(hits.iter().all(|h| h.contains("www.w3.org/2000/svg")), "{banned}: {hits:?}");
        }
        assert!(html.contains("Content-Security-Policy"));
        assert!(html.contains(&csp_hash(SCRIPT)) && html.contains(&csp_hash(STYLE)));
        // An empty report still draws sized charts.
        let empty = page(&[]);
        assert!(empty.contains("id=\"chart-over-time\""));
    }
}
