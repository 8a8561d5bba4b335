//! The report as one self-contained HTML page.
//!
//! No external resource of any kind: inline CSS, inline SVG charts drawn
//! here, and a few lines of inline script that make the bot table sortable
//! (the page reads the same without it). A Content-Security-Policy allows
//! exactly that style and that script, by hash, and nothing else, so even a
//! string that escaped escaping could not run.
//!
//! Every string from the log goes through [`escape`] (`&`, `<`, `>`, `"`,
//! `'`; control and invisible bidirectional characters become U+FFFD).
//! Charts carry `id` and `data-testid` (`chart-over-time`, `chart-top-bots`,
//! `chart-rules`, `table-bots`) for browser tests; per-site charts after the
//! first get `-2`, `-3`, ... on their `id`.
//!
//! Size: bounded by the aggregates, not the log (at most [`MAX_SITES`]
//! sites of [`MAX_BOT_ROWS`] bot rows each).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::{is_invisible_control, short_time, thousands};
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

/// `s` escaped for HTML text and quoted attribute values.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| matches!(c, '&' | '<' | '>' | '"' | '\'') || c.is_control() || is_invisible_control(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() || is_invisible_control(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` escaped and cut to `max` characters (ending in `…` when cut).
fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        escape(s).into_owned()
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", escape(&cut))
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

pub(crate) const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:1rem 1.5rem;color:#1b1b1b;background:#fff}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd}h3{font-size:1.05rem;margin-top:1.5rem}
svg.chart{width:100%;height:auto;display:block;background:#fcfcfc;border:1px solid #eee}
svg text{font-family:inherit}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{padding:.25rem .5rem;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}td.w{word-break:break-all}
table.sortable th{cursor:pointer;user-select:none}table.sortable th[aria-sort=descending]::after{content:' \\25BE'}table.sortable th[aria-sort=ascending]::after{content:' \\25B4'}
ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.25rem 1rem}ul.legend svg{vertical-align:middle;margin-right:.25rem}
.note{color:#555}code{background:#f4f4f4;padding:0 .2rem}
";

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

/// `'sha256-…'` of an inline element's text, for the CSP.
pub(crate) fn csp_hash(text: &str) -> String {
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes())))
}

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
    let mut o = String::with_capacity(64 * 1024);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src {}; script-src {}; img-src data:\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<title>robotgate report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        csp_hash(STYLE),
        csp_hash(SCRIPT)
    );
    let _ = writeln!(o, "<header><h1>robotgate report</h1>");
    let span = match (&report.first, &report.last) {
        (Some(f), Some(l)) => format!(" from {} to {}", escape(&short_time(f)), escape(&short_time(l))),
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "<p><strong>{}</strong> violations in {} records{span}.</p>",
        thousands(report.violations),
        thousands(report.records)
    );
    let mut notes = Vec::new();
    if let Some(since) = &report.since {
        notes.push(format!("since <code>{}</code>", escape(since)));
    }
    if let Some(site) = &report.site_filter {
        notes.push(format!("site <code>{}</code>", escape(site)));
    }
    if report.filtered_out > 0 {
        notes.push(format!("{} lines skipped by the filter", thousands(report.filtered_out)));
    }
    if report.overflow > 0 {
        notes.push(format!("{} violations without details (log overflow lines)", thousands(report.overflow)));
    }
    if !notes.is_empty() {
        let _ = writeln!(o, "<p class=\"note\">{}.</p>", notes.join("; "));
    }
    let _ = writeln!(o, "</header>\n<main>");
    if let Some(replay) = &report.replay {
        replay_sections(&mut o, replay);
    }

    let _ = writeln!(o, "<section>\n<h2>Violations per {} and category</h2>", report.over_time.unit);
    over_time(&mut o, &report.over_time);
    if report.undated > 0 || report.other_hours > 0 {
        let _ = writeln!(
            o,
            "<p class=\"note\">Not in the chart: {} violations with an unreadable time, {} past the report's cap of hours.</p>",
            thousands(report.undated),
            thousands(report.other_hours)
        );
    }
    let _ = writeln!(o, "</section>");

    if report.sites.len() > 1 {
        let _ = writeln!(o, "<section>\n<h2>Totals per site</h2>\n<table class=\"sortable\">");
        let _ = writeln!(
            o,
            "<thead><tr><th>Site</th><th class=\"n\">Violations</th><th>First</th><th>Last</th></tr></thead><tbody>"
        );
        for s in &report.sites {
            let _ = writeln!(
                o,
                "<tr><td class=\"w\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
                escape(&s.site),
                s.violations,
                thousands(s.violations),
                time(s.first.as_deref()),
                time(s.last.as_deref())
            );
        }
        let _ = writeln!(o, "</tbody></table>\n</section>");
    }
    for (i, site) in report.sites.iter().take(MAX_SITES).enumerate() {
        let suffix = if i == 0 { String::new() } else { format!("-{}", i + 1) };
        write_site(&mut o, site, &suffix);
    }
    if report.sites.len() > MAX_SITES {
        let _ =
            writeln!(o, "<p class=\"note\">{} more sites: see the JSON report.</p>", report.sites.len() - MAX_SITES);
    }

    let m = &report.malformed;
    let _ = writeln!(o, "<section>\n<h2>Malformed lines</h2>");
    if m.count == 0 {
        let _ = writeln!(o, "<p>None.</p>");
    } else {
        let _ = writeln!(o, "<p>{} lines skipped. The first:</p>\n<ul>", thousands(m.count));
        for s in &m.samples {
            let _ = writeln!(o, "<li><code>{}:{}</code>: {}</li>", escape(&s.source), s.line, escape(&s.reason));
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = write!(o, "</section>\n</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n");
    o
}

/// The replay's own part: per site, what the proxy would have done to
/// each robot, and the collateral findings.
fn replay_sections(o: &mut String, r: &crate::report::replay::ReplayReport) {
    let _ = writeln!(
        o,
        "<section data-testid=\"replay\">\n<h2>Replay of {} {} log lines</h2>\n<ul class=\"note\">",
        thousands(r.lines),
        escape(&r.format)
    );
    if r.skipped > 0 {
        let _ = writeln!(
            o,
            "<li>{} lines skipped by <code>--since</code> or <code>--site</code>.</li>",
            thousands(r.skipped)
        );
    }
    for limit in &r.limits {
        let _ = writeln!(o, "<li>{}</li>", escape(limit));
    }
    for u in &r.unreadable {
        let _ = writeln!(
            o,
            "<li><strong>Unreadable:</strong> <code>{}</code> after line {} (the lines before it were judged): {}</li>",
            escape(&u.source),
            u.after_line,
            escape(&u.error)
        );
    }
    let _ = writeln!(o, "</ul>");
    for s in &r.sites {
        let _ = writeln!(
            o,
            "<h3>Site <code>{}</code>: {} requests, {} from browsers, {} would-be violations</h3>",
            escape(&s.site),
            thousands(s.requests),
            thousands(s.browsers),
            thousands(s.violations)
        );
        let _ = writeln!(
            o,
            "<table class=\"sortable\">\n<thead><tr><th>Robot</th><th>Category</th><th>Identity</th>\
             <th class=\"n\">Requests</th><th class=\"n\">Violations</th><th class=\"n\">robots.txt fetches</th>\
             <th>Rules broken</th></tr></thead><tbody>"
        );
        for b in s.bots.iter().take(MAX_BOT_ROWS) {
            let rules: Vec<String> = b
                .rules
                .iter()
                .take(5)
                .map(|r| match r.line {
                    Some(l) => format!("{} line {l} ×{}", escape(r.directive), thousands(r.count)),
                    None => format!("{} ×{}", escape(r.directive), thousands(r.count)),
                })
                .collect();
            let _ = writeln!(
                o,
                "<tr><td class=\"w\">{}</td><td>{}</td><td>{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
                 <td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td>{}</td></tr>",
                escape(&b.bot),
                escape(b.category),
                b.identity().unwrap_or("-"),
                b.requests,
                thousands(b.requests),
                b.violations,
                thousands(b.violations),
                b.robots_fetches,
                thousands(b.robots_fetches),
                rules.join(", ")
            );
        }
        let _ = writeln!(o, "</tbody></table>");
        if s.collateral.is_empty() {
            let _ = writeln!(o, "<p>Collateral: none. No robot that keeps to robots.txt would have been refused.</p>");
            continue;
        }
        let _ = writeln!(
            o,
            "<p>Collateral: robots that keep to robots.txt were served what the policy would refuse them. \
             On a healthy site, each is a mistake in robots.txt.</p>\n<ul data-testid=\"collateral\">"
        );
        for c in &s.collateral {
            let lint: Vec<String> = c.lint.iter().map(|l| format!("<br>lint: {}", escape(l))).collect();
            let _ = writeln!(
                o,
                "<li>line {} <code>{}</code> ({}): {} requests by {}, e.g. <code>{}</code> (log line {}){}</li>",
                c.line,
                escape(&c.pattern),
                c.kind.as_str(),
                thousands(c.count),
                escape(&c.bots.join(", ")),
                escape(&c.example),
                c.log_line,
                lint.concat()
            );
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = writeln!(o, "</section>");
}

fn time(t: Option<&str>) -> String {
    t.map_or("-".into(), |t| escape(&short_time(t)).into_owned())
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

/// Chart (a): stacked bars of violations per time bucket and category.
fn over_time(o: &mut String, s: &Series) {
    const H: f64 = 260.0;
    const LEFT: f64 = 70.0;
    const RIGHT: f64 = 10.0;
    const TOP: f64 = 10.0;
    const BOTTOM: f64 = 30.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let _ = writeln!(
        o,
        "<svg class=\"chart\" id=\"chart-over-time\" data-testid=\"chart-over-time\" xmlns=\"http://www.w3.org/2000/svg\" \
         viewBox=\"0 0 {WIDTH} {H}\" width=\"{WIDTH}\" height=\"{H}\" role=\"img\" aria-label=\"Violations per {} and category\">",
        s.unit
    );
    let max = s.buckets.iter().map(|b| b.total).max().unwrap_or(0);
    if max == 0 {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">No violations.</text></svg>",
            WIDTH / 2.0,
            H / 2.0
        );
        return;
    }
    let top = nice_max(max) as f64;
    // Axis and grid.
    for k in 0..=4 {
        let v = top * f64::from(k) / 4.0;
        let y = TOP + plot_h - plot_h * f64::from(k) / 4.0;
        let _ = writeln!(
            o,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\" fill=\"#555\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            thousands(v.round() as u64)
        );
    }
    let n = s.buckets.len() as f64;
    let bw = plot_w / n;
    let gap = if bw > 4.0 { 1.0 } else { 0.0 };
    for (i, b) in s.buckets.iter().enumerate() {
        let x = LEFT + bw * i as f64;
        let mut y = TOP + plot_h;
        for (c, &count) in s.categories.iter().zip(&b.counts) {
            if count == 0 {
                continue;
            }
            let h = plot_h * count as f64 / top;
            y -= h;
            let _ = writeln!(
                o,
                "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{h:.2}\" fill=\"{}\"><title>{} {}: {}</title></rect>",
                (bw - gap).max(0.5),
                colour(c),
                escape(&b.start),
                escape(c),
                thousands(count)
            );
        }
    }
    // First, middle and last bucket labels.
    let mut labels = vec![0, s.buckets.len() - 1];
    if s.buckets.len() > 2 {
        labels.insert(1, s.buckets.len() / 2);
    }
    labels.dedup();
    for i in labels {
        let x = LEFT + bw * (i as f64 + 0.5);
        let anchor = if i == 0 && s.buckets.len() > 1 {
            "start"
        } else if i + 1 == s.buckets.len() && i > 0 {
            "end"
        } else {
            "middle"
        };
        let x = match anchor {
            "start" => LEFT,
            "end" => WIDTH - RIGHT,
            _ => x,
        };
        let _ = writeln!(
            o,
            "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"{anchor}\" font-size=\"11\" fill=\"#555\">{}</text>",
            H - 10.0,
            escape(&s.buckets[i].start.replace('T', " "))
        );
    }
    let _ = writeln!(o, "</svg>\n<ul class=\"legend\">");
    for c in &s.categories {
        let _ = writeln!(
            o,
            "<li><svg width=\"12\" height=\"12\" viewBox=\"0 0 12 12\" aria-hidden=\"true\"><rect width=\"12\" height=\"12\" fill=\"{}\"/></svg>{}</li>",
            colour(c),
            escape(c)
        );
    }
    let _ = writeln!(o, "</ul>");
}

/// A horizontal bar chart of `(label, value, colour, tooltip)`.
fn bars(o: &mut String, id: &str, testid: &str, aria: &str, rows: &[(String, u64, &str, String)]) {
    const ROW: f64 = 24.0;
    const LABEL: f64 = 360.0;
    const COUNT: f64 = 90.0;
    let h = (ROW * rows.len().max(1) as f64 + 10.0).round();
    let _ = writeln!(
        o,
        "<svg class=\"chart\" id=\"{id}\" data-testid=\"{testid}\" xmlns=\"http://www.w3.org/2000/svg\" \
         viewBox=\"0 0 {WIDTH} {h}\" width=\"{WIDTH}\" height=\"{h}\" role=\"img\" aria-label=\"{}\">",
        escape(aria)
    );
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1) as f64;
    if rows.is_empty() {
        let _ = writeln!(o, "<text x=\"10\" y=\"22\" fill=\"#555\">None.</text>");
    }
    let plot = WIDTH - LABEL - COUNT - 10.0;
    for (i, (label, value, fill, tip)) in rows.iter().enumerate() {
        let y = 5.0 + ROW * i as f64;
        let w = (plot * *value as f64 / max).max(1.0);
        let _ = writeln!(
            o,
            "<g><title>{tip}</title><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"12\">{label}</text>\
             <rect x=\"{LABEL}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{fill}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"#333\">{}</text></g>",
            LABEL - 8.0,
            y + 16.0,
            y + 3.0,
            ROW - 6.0,
            LABEL + w + 6.0,
            y + 16.0,
            thousands(*value)
        );
    }
    let _ = writeln!(o, "</svg>");
}

fn rule_label(directive: &str, pattern: Option<&str>, line: Option<u32>) -> String {
    let line = line.map_or("-".to_owned(), |l| l.to_string());
    format!("line {line}: {directive}: {}", pattern.unwrap_or(""))
}

fn write_site(o: &mut String, s: &SiteReport, suffix: &str) {
    let _ = writeln!(
        o,
        "<section>\n<h2>Site <code>{}</code>: {} violations</h2>\n<p class=\"note\">{} to {}.</p>",
        escape(&s.site),
        thousands(s.violations),
        time(s.first.as_deref()),
        time(s.last.as_deref())
    );

    let _ = writeln!(o, "<h3>Top bots</h3>");
    let rows: Vec<(String, u64, &str, String)> = s
        .bots
        .iter()
        .take(TOP_BOTS)
        .map(|b| {
            (
                short(&b.bot, 40),
                b.violations,
                colour(b.category),
                format!("{} ({})", escape(&b.bot), escape(b.category)),
            )
        })
        .collect();
    bars(o, &format!("chart-top-bots{suffix}"), "chart-top-bots", "Top bots by violations", &rows);

    let _ = writeln!(o, "<h3>Most-broken robots.txt rules</h3>");
    let rows: Vec<(String, u64, &str, String)> = s
        .rules
        .iter()
        .take(TOP_RULES)
        .map(|r| {
            let label = rule_label(&r.directive, r.pattern.as_deref(), r.line);
            let actions: Vec<String> =
                r.actions.iter().map(|a| format!("{} {}", escape(&a.name), thousands(a.count))).collect();
            (short(&label, 48), r.violations, "#d62728", format!("{}; {}", escape(&label), actions.join(", ")))
        })
        .collect();
    bars(o, &format!("chart-rules{suffix}"), "chart-rules", "Most-broken robots.txt rules", &rows);
    if s.other_rules > 0 {
        let _ = writeln!(o, "<p class=\"note\">{} violations of rules not listed.</p>", thousands(s.other_rules));
    }

    let _ = writeln!(o, "<h3>Bots</h3>");
    let _ = writeln!(
        o,
        "<table class=\"sortable\" id=\"table-bots{suffix}\" data-testid=\"table-bots\">\n<thead><tr>\
         <th>Bot</th><th>Category</th><th>Identity</th><th class=\"n\">Violations</th><th class=\"n\">Distinct paths</th>\
         <th>First</th><th>Last</th><th>Top rule broken</th><th>Actions</th></tr></thead>\n<tbody>"
    );
    for b in s.bots.iter().take(MAX_BOT_ROWS) {
        let identity = match b.identity.label() {
            None => "-".to_owned(),
            Some(label) => {
                let i = &b.identity;
                format!(
                    "<span title=\"verified {}, spoofed {}, unverifiable {}\">{label}</span>",
                    i.verified, i.spoofed, i.unverifiable
                )
            }
        };
        let paths = if b.distinct_paths_exact {
            thousands(b.distinct_paths)
        } else {
            format!("~{}", thousands(b.distinct_paths))
        };
        let rule = b.rules.first().map_or("-".to_owned(), |r| {
            format!("{} ({})", escape(&rule_label(&r.directive, r.pattern.as_deref(), r.line)), thousands(r.violations))
        });
        let actions: Vec<String> =
            b.actions.iter().map(|a| format!("{} {}", escape(&a.name), thousands(a.count))).collect();
        let _ = writeln!(
            o,
            "<tr><td class=\"w\">{}</td><td>{}</td><td>{identity}</td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\" data-v=\"{}\">{paths}</td><td>{}</td><td>{}</td><td class=\"w\">{rule}</td><td>{}</td></tr>",
            escape(&b.bot),
            escape(b.category),
            b.violations,
            thousands(b.violations),
            b.distinct_paths,
            time(b.first.as_deref()),
            time(b.last.as_deref()),
            actions.join(", ")
        );
    }
    let _ = writeln!(o, "</tbody></table>");
    if s.bots.len() > MAX_BOT_ROWS {
        let _ = writeln!(o, "<p class=\"note\">{} more bots: see the JSON report.</p>", s.bots.len() - MAX_BOT_ROWS);
    }
    if s.unknown_names_folded > 0 {
        let _ = writeln!(
            o,
            "<p class=\"note\">{} violations of unknown robots past the cap on their names are in the <code>unknown:</code> rows.</p>",
            thousands(s.unknown_names_folded)
        );
    }

    if !s.unknown_clients.is_empty() {
        let _ = writeln!(o, "<h3>Top clients of robots not in the database</h3>\n<table class=\"sortable\">");
        let _ = writeln!(o, "<thead><tr><th>Client</th><th class=\"n\">Violations</th><th class=\"n\">At least</th></tr></thead><tbody>");
        for c in s.unknown_clients.iter().take(MAX_CLIENTS) {
            let low = c.violations - c.error;
            let _ = writeln!(
                o,
                "<tr><td class=\"w\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{low}\">{}</td></tr>",
                escape(&c.client),
                c.violations,
                thousands(c.violations),
                thousands(low)
            );
        }
        let _ = writeln!(o, "</tbody></table>");
        if s.unknown_clients_floor > 0 {
            let _ = writeln!(
                o,
                "<p class=\"note\">Approximate counts: no address left out has more than {} violations.</p>",
                thousands(s.unknown_clients_floor)
            );
        }
    }

    if !s.unknown_user_agents.is_empty() {
        let _ = writeln!(o, "<h3>Top User-Agents of robots not in the database</h3>\n<table class=\"sortable\">");
        let _ = writeln!(o, "<thead><tr><th>User-Agent</th><th class=\"n\">Violations</th></tr></thead><tbody>");
        for a in s.unknown_user_agents.iter().take(MAX_CLIENTS) {
            let _ = writeln!(
                o,
                "<tr><td class=\"w\">{}</td><td class=\"n\" data-v=\"{}\">{}</td></tr>",
                escape(&a.user_agent),
                a.violations,
                thousands(a.violations)
            );
        }
        let _ = writeln!(o, "</tbody></table>");
    }

    if !s.days.is_empty() {
        let _ = writeln!(
            o,
            "<h3>Per day</h3>\n<table>\n<thead><tr><th>Day</th><th class=\"n\">Violations</th></tr></thead><tbody>"
        );
        for d in &s.days {
            let _ = writeln!(o, "<tr><td>{}</td><td class=\"n\">{}</td></tr>", escape(&d.day), thousands(d.violations));
        }
        let _ = writeln!(o, "</tbody></table>");
    }
    if s.other_days > 0 {
        let _ = writeln!(o, "<p class=\"note\">{} violations on other days.</p>", thousands(s.other_days));
    }
    let _ = writeln!(o, "</section>");
}

#[cfg(test)]
mod tests {
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
    fn escape_all_five() {
        assert_eq!(escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&#39;f");
        assert_eq!(escape("x\x1by\u{202e}"), "x\u{FFFD}y\u{FFFD}");
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
