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

use std::io::{self, Write};

use maud::{html, Markup};

pub use super::markup::escape;
use super::markup::{document, Text};
use super::{short_time, thousands};
use crate::report::aggregate::category_index;
use crate::report::{Report, Series, SiteReport};

/// Sites shown.
pub const MAX_SITES: usize = 20;
/// Rows of the bot table per site.
pub const MAX_BOT_ROWS: usize = 200;
/// Bars of the top-bots chart.
const TOP_BOTS: usize = 15;
/// Bars of the rules chart.
const TOP_RULES: usize = 10;
/// Client addresses listed per site.
const MAX_CLIENTS: usize = 25;

/// Chart width in SVG units (the page scales it to the window).
const WIDTH: f64 = 960.0;

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
                (replay_sections(replay))
            }
            section {
                h2 { "Violations per " (report.over_time.unit) " and category" }
                (over_time(&report.over_time))
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
                (write_site(site, &if i == 0 { String::new() } else { format!("-{}", i + 1) }))
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

/// The replay's own part: per site, what the proxy would have done to
/// each robot, and the collateral findings.
fn replay_sections(r: &crate::report::replay::ReplayReport) -> Markup {
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

/// A time as the report shows it (`-` when there is none).
fn time(t: Option<&str>) -> Markup {
    html! {
        @match t {
            Some(t) => (Text(&short_time(t))),
            None => "-",
        }
    }
}

/// A round scale maximum at or above `max` (1, 2 or 5 times a power of ten).
fn nice_max(max: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            let v = step.saturating_mul(m);
            if v >= max || v == u64::MAX {
                return v.max(1);
            }
        }
        step = step.saturating_mul(10);
    }
}

/// `v` with `digits` decimals, for SVG coordinates.
fn num(v: f64, digits: usize) -> String {
    format!("{v:.digits$}")
}

/// Chart (a): stacked bars of violations per time bucket and category.
fn over_time(s: &Series) -> Markup {
    const H: f64 = 260.0;
    const LEFT: f64 = 70.0;
    const RIGHT: f64 = 10.0;
    const TOP: f64 = 10.0;
    const BOTTOM: f64 = 30.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let max = s.buckets.iter().map(|b| b.total).max().unwrap_or(0);
    let aria = format!("Violations per {} and category", s.unit);
    let view_box = format!("0 0 {WIDTH} {H}");
    if max == 0 {
        return html! {
            svg class="chart" id="chart-over-time" data-testid="chart-over-time" xmlns="http://www.w3.org/2000/svg"
                viewBox=(view_box) width=(WIDTH) height=(H) role="img" aria-label=(aria) {
                text x=(WIDTH / 2.0) y=(H / 2.0) text-anchor="middle" fill="#555" { "No violations." }
            }
        };
    }
    let top = nice_max(max) as f64;
    let n = s.buckets.len() as f64;
    let bw = plot_w / n;
    let gap = if bw > 4.0 { 1.0 } else { 0.0 };
    // Each bucket's categories, stacked from the bottom.
    let mut rects = Vec::new();
    for (i, b) in s.buckets.iter().enumerate() {
        let x = LEFT + bw * i as f64;
        let mut y = TOP + plot_h;
        for (c, &count) in s.categories.iter().zip(&b.counts) {
            if count == 0 {
                continue;
            }
            let h = plot_h * count as f64 / top;
            y -= h;
            rects.push(html! {
                rect x=(num(x, 2)) y=(num(y, 2)) width=(num((bw - gap).max(0.5), 2)) height=(num(h, 2)) fill=(colour(c)) {
                    title { (Text(&b.start)) " " (Text(c)) ": " (thousands(count)) }
                }
            });
        }
    }
    // First, middle and last bucket labels.
    let mut labels = vec![0, s.buckets.len() - 1];
    if s.buckets.len() > 2 {
        labels.insert(1, s.buckets.len() / 2);
    }
    labels.dedup();
    html! {
        svg class="chart" id="chart-over-time" data-testid="chart-over-time" xmlns="http://www.w3.org/2000/svg"
            viewBox=(view_box) width=(WIDTH) height=(H) role="img" aria-label=(aria) {
            // Axis and grid.
            @for k in 0..=4 {
                @let v = top * f64::from(k) / 4.0;
                @let y = TOP + plot_h - plot_h * f64::from(k) / 4.0;
                line x1=(LEFT) x2=(WIDTH - RIGHT) y1=(num(y, 1)) y2=(num(y, 1)) stroke="#e4e4e4" {}
                text x=(LEFT - 6.0) y=(num(y + 4.0, 1)) text-anchor="end" font-size="11" fill="#555" {
                    (thousands(v.round() as u64))
                }
            }
            @for r in &rects {
                (r)
            }
            @for i in labels {
                @let anchor = if i == 0 && s.buckets.len() > 1 {
                    "start"
                } else if i + 1 == s.buckets.len() && i > 0 {
                    "end"
                } else {
                    "middle"
                };
                @let x = match anchor {
                    "start" => LEFT,
                    "end" => WIDTH - RIGHT,
                    _ => LEFT + bw * (i as f64 + 0.5),
                };
                text x=(num(x, 1)) y=(H - 10.0) text-anchor=(anchor) font-size="11" fill="#555" {
                    (Text(&s.buckets[i].start.replace('T', " ")))
                }
            }
        }
        ul.legend {
            @for c in &s.categories {
                li {
                    svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" {
                        rect width="12" height="12" fill=(colour(c)) {}
                    }
                    (Text(c))
                }
            }
        }
    }
}

/// One bar of [`bars`]: label, value, colour, tooltip.
struct Bar<'a> {
    label: String,
    value: u64,
    fill: &'a str,
    tip: String,
}

/// A horizontal bar chart.
fn bars(id: &str, testid: &str, aria: &str, rows: &[Bar<'_>]) -> Markup {
    const ROW: f64 = 24.0;
    const LABEL: f64 = 360.0;
    const COUNT: f64 = 90.0;
    let h = (ROW * rows.len().max(1) as f64 + 10.0).round();
    let max = rows.iter().map(|r| r.value).max().unwrap_or(0).max(1) as f64;
    let plot = WIDTH - LABEL - COUNT - 10.0;
    html! {
        svg class="chart" id=(id) data-testid=(testid) xmlns="http://www.w3.org/2000/svg"
            viewBox=(format!("0 0 {WIDTH} {h}")) width=(WIDTH) height=(h) role="img" aria-label=(Text(aria)) {
            @if rows.is_empty() {
                text x="10" y="22" fill="#555" { "None." }
            }
            @for (i, r) in rows.iter().enumerate() {
                @let y = 5.0 + ROW * i as f64;
                @let w = (plot * r.value as f64 / max).max(1.0);
                g {
                    title { (Text(&r.tip)) }
                    text x=(LABEL - 8.0) y=(num(y + 16.0, 1)) text-anchor="end" font-size="12" { (Text(&r.label)) }
                    rect x=(LABEL) y=(num(y + 3.0, 1)) width=(num(w, 1)) height=(num(ROW - 6.0, 1)) fill=(r.fill) {}
                    text x=(num(LABEL + w + 6.0, 1)) y=(num(y + 16.0, 1)) font-size="12" fill="#333" {
                        (thousands(r.value))
                    }
                }
            }
        }
    }
}

fn rule_label(directive: &str, pattern: Option<&str>, line: Option<u32>) -> String {
    let line = line.map_or("-".to_owned(), |l| l.to_string());
    format!("line {line}: {directive}: {}", pattern.unwrap_or(""))
}

/// `name count, name count, ...` of action counts.
fn action_counts(actions: &[crate::report::NamedCount]) -> String {
    actions.iter().map(|a| format!("{} {}", a.name, thousands(a.count))).collect::<Vec<_>>().join(", ")
}

fn write_site(s: &SiteReport, suffix: &str) -> Markup {
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
                        td { (Text(&action_counts(&b.actions))) }
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

    #[test]
    fn nice_scale() {
        assert_eq!(nice_max(0), 1);
        assert_eq!(nice_max(7), 10);
        assert_eq!(nice_max(120), 200);
        assert_eq!(nice_max(u64::MAX), u64::MAX);
    }
}
