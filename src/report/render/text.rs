//! The report for a terminal, about 100 columns wide.
//!
//! Every string from the log goes through [`safe`]: control characters
//! (ESC, CR, LF, DEL, C1) and invisible bidirectional controls become
//! visible escapes (`\x1b`, `\u{202e}`), so a User-Agent or path can neither
//! send escape sequences to the terminal nor break a row.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

use super::{is_invisible_control, short_time, thousands};
use crate::report::replay::ReplayReport;
use crate::report::{BotReport, Report, SiteReport};

/// Bot rows shown per site.
pub const MAX_BOTS: usize = 30;
/// Rules shown per site.
pub const MAX_RULES: usize = 15;
/// Client addresses shown per site.
pub const MAX_CLIENTS: usize = 15;
/// Sites shown in detail.
pub const MAX_SITES: usize = 20;

/// `s` with control characters, backslashes and invisible controls escaped.
pub fn safe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() || c == '\\' || is_invisible_control(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x100 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || is_invisible_control(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` made safe, cut to `width` characters (ending in `…` when cut) and
/// padded to `width`. Characters are counted, not terminal cells, so wide
/// (CJK) characters can shift a row.
pub(crate) fn cell(s: &str, width: usize) -> String {
    let s = safe(s);
    let n = s.chars().count();
    if n <= width {
        let mut out = s.into_owned();
        out.extend(std::iter::repeat_n(' ', width - n));
        out
    } else {
        let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// `s` made safe and cut to `width` characters, not padded.
pub(crate) fn clipped(s: &str, width: usize) -> String {
    let out = cell(s, width);
    out.trim_end_matches(' ').to_owned()
}

fn time_cell(t: Option<&str>, width: usize) -> String {
    cell(&t.map_or(Cow::Borrowed("-"), short_time), width)
}

/// Writes `report` for a terminal.
///
/// # Errors
///
/// Errors of `out`.
pub fn write(report: &Report, out: &mut impl Write) -> io::Result<()> {
    out.write_all(to_string(report).as_bytes())
}

/// The text of [`write`].
pub fn to_string(report: &Report) -> String {
    let mut o = String::new();
    let span = match (&report.first, &report.last) {
        (Some(f), Some(l)) => format!(" from {} to {}", clipped(&short_time(f), 20), clipped(&short_time(l), 20)),
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "robotgate report: {} violations in {} records{span}",
        thousands(report.violations),
        thousands(report.records)
    );
    if report.stale_robots > 0 {
        let _ = writeln!(
            o,
            "  and {} stale-robots requests: crawlers within 24 hours of the robots.txt they fetched (not violations)",
            thousands(report.stale_robots)
        );
    }
    if report.weak_evidence > 0 {
        let _ = writeln!(
            o,
            "  of which {} only recorded: robots named only by weak evidence (policy.weak_evidence: log), marked weak below",
            thousands(report.weak_evidence)
        );
    }
    if let Some(since) = &report.since {
        let _ = writeln!(o, "  since {}", clipped(since, 40));
    }
    if let Some(site) = &report.site_filter {
        let _ = writeln!(o, "  site {}", clipped(site, 60));
    }
    if report.filtered_out > 0 {
        let _ = writeln!(o, "  {} lines skipped by the filter", thousands(report.filtered_out));
    }
    if report.overflow > 0 {
        let _ = writeln!(o, "  {} violations without details (log overflow lines)", thousands(report.overflow));
    }
    if let Some(replay) = &report.replay {
        write_replay(&mut o, replay);
    }
    for site in report.sites.iter().take(MAX_SITES) {
        write_site(&mut o, site);
    }
    if report.sites.len() > MAX_SITES {
        let _ = writeln!(o, "\n({} more sites: see --format json)", report.sites.len() - MAX_SITES);
    }
    if report.sites.len() > 1 {
        let _ = writeln!(o, "\nTotals per site");
        for site in &report.sites {
            let _ = writeln!(o, "  {} {:>14}", cell(&site.site, 40), thousands(site.violations));
        }
    }
    if !report.over_time.buckets.is_empty() {
        let _ = writeln!(o, "\nViolations per {} (all sites)", report.over_time.unit);
        let _ = write!(o, "  {:<14}", report.over_time.unit);
        for c in &report.over_time.categories {
            let _ = write!(o, " {:>10}", clipped(c, 10));
        }
        let _ = writeln!(o, " {:>11}", "total");
        let buckets = &report.over_time.buckets;
        let skip = buckets.len().saturating_sub(60);
        if skip > 0 {
            let _ = writeln!(o, "  ({skip} earlier rows: see --format json)");
        }
        for b in buckets.iter().skip(skip) {
            let _ = write!(o, "  {}", cell(&b.start, 14));
            for n in &b.counts {
                let _ = write!(o, " {:>10}", thousands(*n));
            }
            let _ = writeln!(o, " {:>11}", thousands(b.total));
        }
    }
    if report.undated > 0 {
        let _ = writeln!(o, "  {} violations with an unreadable time", thousands(report.undated));
    }
    if report.other_hours > 0 {
        let _ = writeln!(o, "  {} violations in hours past the report's cap", thousands(report.other_hours));
    }
    let m = &report.malformed;
    if m.count == 0 {
        let _ = writeln!(o, "\nMalformed lines: none");
    } else {
        let _ = writeln!(o, "\nMalformed lines: {} (skipped)", thousands(m.count));
        for s in &m.samples {
            let _ = writeln!(o, "  {}:{}: {}", clipped(&s.source, 40), s.line, clipped(&s.reason, 80));
        }
    }
    // Padding of a row's last cell is not needed.
    let mut trimmed = String::with_capacity(o.len());
    for line in o.lines() {
        trimmed.push_str(line.trim_end_matches(' '));
        trimmed.push('\n');
    }
    trimmed
}

/// The replay's own part: what the proxy would have done to each robot.
fn write_replay(o: &mut String, r: &ReplayReport) {
    let _ = writeln!(
        o,
        "\nReplay of {} {} log lines ({} skipped by --since/--site)",
        thousands(r.lines),
        r.format,
        thousands(r.skipped)
    );
    for limit in &r.limits {
        let _ = writeln!(o, "  note: {limit}");
    }
    for u in &r.unreadable {
        let _ = writeln!(
            o,
            "  UNREADABLE: {} after line {} (the lines before it were judged): {}",
            clipped(&u.source, 60),
            u.after_line,
            clipped(&u.error, 80)
        );
    }
    for s in &r.sites {
        let _ = writeln!(
            o,
            "\nSite {}: {} requests, {} from browsers, {} would-be violations",
            clipped(&s.site, 60),
            thousands(s.requests),
            thousands(s.browsers),
            thousands(s.violations)
        );
        for (status, n) in &s.refused {
            let _ = writeln!(o, "  {} requests refused {status} before any policy (unreadable target)", thousands(*n));
        }
        let _ = writeln!(
            o,
            "  {} {} {} {:>10} {:>10} {:>7}  RULES BROKEN",
            cell("ROBOT", 24),
            cell("CATEGORY", 11),
            cell("IDENTITY", 12),
            "REQUESTS",
            "VIOLATIONS",
            "ROBOTS",
        );
        for b in s.bots.iter().take(40) {
            let rules: Vec<String> = b
                .rules
                .iter()
                .take(3)
                .map(|r| match r.line {
                    Some(l) => format!("{} line {l} x{}", r.directive, thousands(r.count)),
                    None => format!("{} x{}", r.directive, thousands(r.count)),
                })
                .collect();
            let _ = writeln!(
                o,
                "  {} {} {} {:>10} {:>10} {:>7}  {}",
                cell(&b.bot, 24),
                cell(b.category, 11),
                cell(b.identity().unwrap_or("-"), 12),
                thousands(b.requests),
                thousands(b.violations),
                if b.robots_fetches > 0 { thousands(b.robots_fetches) } else { "no".to_owned() },
                rules.join(", ")
            );
        }
        let more = s.bots.len().saturating_sub(40) + s.bots_not_listed;
        if more > 0 {
            let _ = writeln!(o, "  ({more} more robots: see --format json)");
        }
        if s.collateral.is_empty() {
            let _ = writeln!(o, "  Collateral: none (no robot that keeps to robots.txt would have been refused)");
        } else {
            let _ =
                writeln!(o, "  Collateral: robots that keep to robots.txt were served what the policy would refuse");
            for c in &s.collateral {
                let _ = writeln!(
                    o,
                    "    line {} `{}` ({}): {} requests by {}, e.g. {} (log line {})",
                    c.line,
                    clipped(&c.pattern, 40),
                    c.kind.as_str(),
                    thousands(c.count),
                    clipped(&c.bots.join(", "), 60),
                    clipped(&c.example, 60),
                    c.log_line
                );
                for l in &c.lint {
                    let _ = writeln!(o, "      lint: {}", clipped(l, 100));
                }
            }
        }
        for u in &s.unsupported {
            let _ = writeln!(
                o,
                "  Collateral, unsupported directive: line {} {} would have limited {} requests by {}, whose operators say they ignore it",
                u.line,
                u.directive,
                thousands(u.count),
                clipped(&u.bots.join(", "), 60)
            );
        }
        for u in &s.unjudged {
            let _ = writeln!(
                o,
                "  no User-Agent: line {} `{}` disallows {} requested paths for every robot, e.g. {}",
                u.line,
                clipped(&u.pattern, 40),
                thousands(u.count),
                clipped(&u.example, 60)
            );
        }
    }
}

fn bot_header(o: &mut String) {
    let _ = writeln!(
        o,
        "{} {} {} {:>10} {:>7}  {} {}",
        cell("BOT", 20),
        cell("CATEGORY", 11),
        cell("IDENTITY", 12),
        "VIOLATIONS",
        "PATHS",
        cell("FIRST", 16),
        cell("LAST", 16)
    );
}

fn bot_row(o: &mut String, b: &BotReport) {
    let paths =
        if b.distinct_paths_exact { thousands(b.distinct_paths) } else { format!("~{}", thousands(b.distinct_paths)) };
    let _ = writeln!(
        o,
        "{} {} {} {:>10} {:>7}  {} {}",
        cell(&b.bot, 20),
        cell(b.category, 11),
        cell(b.identity.label().unwrap_or("-"), 12),
        thousands(b.violations),
        paths,
        time_cell(b.first.as_deref(), 16),
        time_cell(b.last.as_deref(), 16)
    );
    let actions: Vec<String> =
        b.actions.iter().take(3).map(|a| format!("{} {}", clipped(&a.name, 16), thousands(a.count))).collect();
    let mut actions = actions.join(", ");
    if b.weak_evidence > 0 {
        // Issue #68: what the default let through, robot by robot.
        let _ = write!(actions, "; weak evidence {} (only recorded)", thousands(b.weak_evidence));
    }
    match b.rules.first() {
        Some(r) => {
            let line = r.line.map_or("-".to_owned(), |l| l.to_string());
            let more = if b.rules.len() > 1 { format!(" (+{} rules)", b.rules.len() - 1) } else { String::new() };
            let _ = writeln!(
                o,
                "    line {line} {} {} x{}{more}; {actions}",
                clipped(&r.directive, 16),
                clipped(r.pattern.as_deref().unwrap_or(""), 36),
                thousands(r.violations),
            );
        }
        None => {
            let _ = writeln!(o, "    {actions}");
        }
    }
}

fn write_site(o: &mut String, s: &SiteReport) {
    let _ = writeln!(o, "\n== Site {}: {} violations", clipped(&s.site, 60), thousands(s.violations));
    let _ = writeln!(o, "\nBots");
    bot_header(o);
    for b in s.bots.iter().take(MAX_BOTS) {
        bot_row(o, b);
    }
    if s.bots.len() > MAX_BOTS {
        let rest = s.bots[MAX_BOTS..].iter().fold(0u64, |t, b| t.saturating_add(b.violations));
        let _ =
            writeln!(o, "({} more bots, {} violations: see --format json)", s.bots.len() - MAX_BOTS, thousands(rest));
    }
    if s.unknown_names_folded > 0 {
        let _ = writeln!(
            o,
            "({} violations of unknown robots past the name cap are in their unknown:<category> rows)",
            thousands(s.unknown_names_folded)
        );
    }

    if !s.rules.is_empty() {
        let _ = writeln!(o, "\nMost-broken robots.txt rules");
        let _ = writeln!(
            o,
            "{:>6} {} {} {:>10}  ACTIONS",
            "LINE",
            cell("DIRECTIVE", 14),
            cell("PATTERN", 40),
            "VIOLATIONS"
        );
        for r in s.rules.iter().take(MAX_RULES) {
            let line = r.line.map_or("-".to_owned(), |l| l.to_string());
            let actions: Vec<String> =
                r.actions.iter().take(3).map(|a| format!("{} {}", clipped(&a.name, 12), thousands(a.count))).collect();
            let pattern = r.pattern.as_deref().unwrap_or("");
            let pattern = if r.managed { format!("{pattern} (managed)") } else { pattern.to_owned() };
            let _ = writeln!(
                o,
                "{line:>6} {} {} {:>10}  {}",
                cell(&r.directive, 14),
                cell(&pattern, 40),
                thousands(r.violations),
                clipped(&actions.join(", "), 24)
            );
        }
        if s.rules.len() > MAX_RULES {
            let _ = writeln!(o, "({} more rules: see --format json)", s.rules.len() - MAX_RULES);
        }
    }
    if s.other_rules > 0 {
        let _ = writeln!(o, "({} violations of rules not listed)", thousands(s.other_rules));
    }

    if !s.unknown_clients.is_empty() {
        let _ = writeln!(o, "\nTop clients of robots not in the database");
        let _ = writeln!(o, "{} {:>10}", cell("CLIENT", 46), "VIOLATIONS");
        for c in s.unknown_clients.iter().take(MAX_CLIENTS) {
            let approx =
                if c.error > 0 { format!("  (at least {})", thousands(c.violations - c.error)) } else { String::new() };
            let _ = writeln!(o, "{} {:>10}{approx}", cell(&c.client, 46), thousands(c.violations));
        }
        if s.unknown_clients_floor > 0 {
            let _ =
                writeln!(o, "(approximate: no address left out has more than {})", thousands(s.unknown_clients_floor));
        }
    }

    if !s.unknown_user_agents.is_empty() {
        let _ = writeln!(o, "\nTop User-Agents of robots not in the database");
        for a in s.unknown_user_agents.iter().take(MAX_CLIENTS) {
            let _ = writeln!(o, "{:>10}  {}", thousands(a.violations), cell(&a.user_agent, 86).trim_end());
        }
    }

    if !s.disguised_fingerprints.is_empty() {
        let _ = writeln!(o, "\nTLS fingerprints (JA4) of disguised robots");
        for f in s.disguised_fingerprints.iter().take(MAX_CLIENTS) {
            let _ = writeln!(o, "{:>10}  {}", thousands(f.violations), cell(&f.ja4, 86).trim_end());
        }
    }

    if !s.days.is_empty() {
        let _ = writeln!(o, "\nPer day");
        let skip = s.days.len().saturating_sub(31);
        if skip > 0 {
            let _ = writeln!(o, "  ({skip} earlier days: see --format json)");
        }
        for d in s.days.iter().skip(skip) {
            let _ = writeln!(o, "  {} {:>14}", cell(&d.day, 10), thousands(d.violations));
        }
    }
    if s.other_days > 0 {
        let _ = writeln!(o, "  {} violations on other days", thousands(s.other_days));
    }

    if !s.hidden_noindex.is_empty() {
        let _ = writeln!(o, "\nNoindex hidden by robots.txt (the robot never fetches the page, so never reads it)");
        let _ = writeln!(o, "{} {} {} {:>6} PATTERN", cell("PAGE", 30), cell("ROBOT", 16), cell("SAID", 26), "LINE");
        for h in s.hidden_noindex.iter().take(MAX_RULES) {
            let line = h.line.map_or("-".to_owned(), |l| l.to_string());
            let _ = writeln!(
                o,
                "{} {} {} {line:>6} {}",
                cell(&h.path, 30),
                cell(&h.robot, 16),
                cell(&h.said, 26),
                clipped(&h.pattern, 30)
            );
        }
        let more = (s.hidden_noindex.len().saturating_sub(MAX_RULES) as u64).saturating_add(s.hidden_noindex_other);
        if more > 0 {
            let _ = writeln!(o, "({} more: see --format json)", thousands(more));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{sample, Record};
    use crate::report::{Filter, RecordView, Summary};

    #[test]
    fn safe_escapes_controls() {
        assert_eq!(safe("plain/ok"), "plain/ok");
        assert_eq!(safe("a\x1b[31mb\r\nc\u{7f}\u{9b}"), "a\\x1b[31mb\\x0d\\x0ac\\x7f\\x9b");
        assert_eq!(safe("x\u{202e}y\\"), "x\\u{202e}y\\\\");
    }

    #[test]
    fn hostile_strings_stay_in_their_cell() {
        let mut s = Summary::new(Filter::default());
        let evil = "Evil\x1b]0;pwned\x07\x1b[2J\r\nFAKE ROW\u{202e}";
        let r = Record {
            bot: Some(evil.into()),
            claims: Vec::new(),
            category: "other-bot",
            client: evil.into(),
            pattern: Some(evil.into()),
            ..sample("c", evil, evil, 1, "2025-01-01T00:00:00Z".into())
        };
        s.add(&RecordView::from_record(&r));
        let out = to_string(&Report::from_summary(&s));
        assert!(!out.contains('\x1b'));
        assert!(!out.contains('\r'));
        assert!(!out.contains('\x07'));
        assert!(!out.contains('\u{202e}'));
        assert!(!out.lines().any(|l| l.starts_with("FAKE ROW")), "{out}");
        for line in out.lines() {
            assert!(line.chars().count() <= 110, "{line}");
        }
    }

    #[test]
    fn shows_bots_rules_and_counts() {
        let mut s = Summary::new(Filter::default());
        let r = Record { count: 1234, ..sample("c", "u", "/private/x", 7, "2025-01-01T10:00:00Z".into()) };
        s.add(&RecordView::from_record(&r));
        let out = to_string(&Report::from_summary(&s));
        assert!(out.contains("GPTBot"), "{out}");
        assert!(out.contains("1,234"));
        assert!(out.contains("/private/"));
        assert!(out.contains("line 7 disallow"));
        assert!(out.contains("Malformed lines: none"));
    }
}
