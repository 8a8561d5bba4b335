//! The robots.txt robotgate serves and enforces: the site's own file, with
//! the lines robotgate manages for it put inside the file's own groups.
//!
//! Parsers in daily use read a robots.txt differently: RFC 9309 2.2.1 and
//! Google's parser merge every group that names a user-agent, while many
//! others (Python's `urllib.robotparser`, Scrapy's default for years) obey
//! only the first group that matches, or only the first `*` group. A line
//! added as a new group at the end would bind the first kind and not the
//! second. So nothing is appended as a group of its own where the file
//! already has one for the same agents:
//!
//! * Traps: each group of the file gets `Disallow: <trap>` lines right after
//!   its `User-agent` lines, before its own rules (parsers that take the
//!   first matching rule then see them first; by longest match they win over
//!   any shorter rule such as `Allow: /`).
//! * `content_signal`, `content_usage`: a `Content-Signal:` line and a
//!   `Content-Usage:` rule (draft-ietf-aipref-attach) in the file's first `*` group.
//! * `ai_training: disallow`: every robots.txt token of the database's
//!   AI-training crawlers, and every usage-control token (Google-Extended,
//!   Applebot-Extended…), that no group of the file names, in one new group
//!   disallowing `/`. A token a group names is left to that group.
//! * A file without a `*` group gets one (the traps, `Content-Signal`, `Content-Usage`).
//!
//! New groups go before the file's first group (above the comment lines
//! directly over it), each ending in a rule and a blank line, so that no
//! parser reads them as part of a group of the file; in a file without
//! groups they go at the end. Added lines use the file's line end. A UTF-8
//! BOM is dropped: Google's parser skips it, but some parsers read it as part
//! of the first field and lose the first `User-agent` line.
//!
//! [`Effective::lines`] maps served lines back to the file's, so violation
//! records cite the site's own file; an added line has no file line.
//!
//! A file that already fills the 500 KiB that crawlers read leaves no room
//! for added lines: they would push its end past what is read.
//! [`Effective::cut_off`] says so.

use std::collections::HashMap;

use crate::agent::{BotDb, Category};
use crate::config::Managed;
use crate::robots::lines::{line_end, lines};
use crate::robots::{LineMap, RobotsTxt, DEFAULT_MAX_BYTES};

/// The robots.txt as served: the file with the added lines in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// The whole body.
    pub body: Vec<u8>,
    /// Which served lines were added, and the file line of every other.
    pub lines: LineMap,
    /// For each added line that carries meaning: its served number and where it came from.
    pub notes: Vec<(u32, String)>,
    /// Whether the body is longer than the 500 KiB crawlers read.
    pub cut_off: bool,
}

/// An added line and why it is there.
type Added = (String, Option<String>);

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Whether [`effective`] adds any line to a file: without, the served body
/// is the file itself (past a BOM), which a caller can share instead of copying.
pub fn adds_lines(managed: &Managed, trap_paths: &[String]) -> bool {
    managed.ai_training_disallow
        || managed.content_signal.is_some()
        || managed.content_usage.is_some()
        || !trap_paths.is_empty()
}

/// `file` past a UTF-8 byte order mark, as [`effective`] serves it.
pub fn without_bom(file: &[u8]) -> &[u8] {
    file.strip_prefix(BOM).unwrap_or(file)
}

/// Build the robots.txt a site serves: `file` with the managed lines in it.
///
/// Cost: one parse of the file and one pass writing it; linear in its size,
/// the database's, and the number of groups times the number of traps.
pub fn effective(file: &[u8], managed: &Managed, trap_paths: &[String], db: &BotDb) -> Effective {
    let file = without_bom(file);
    if !adds_lines(managed, trap_paths) {
        return Effective { body: file.to_vec(), lines: LineMap::default(), notes: Vec::new(), cut_off: false };
    }
    let parsed = RobotsTxt::compile(file);
    let traps = |why: &str| -> Vec<Added> {
        trap_paths.iter().map(|p| (format!("Disallow: {p}"), Some(format!("traps: trap path {p}{why}")))).collect()
    };
    // The `*` group's usage lines: Content-Signal, Content-Usage.
    let signal: Vec<Added> = (managed.content_signal.iter())
        .map(|s| (format!("Content-Signal: {s}"), Some("managed.content_signal".to_owned())))
        .chain(
            (managed.content_usage.iter())
                .map(|u| (format!("Content-Usage: {u}"), Some("managed.content_usage".to_owned()))),
        )
        .collect();
    // Lines to add after a line of the file (the last `User-agent` line of each group).
    let mut after: HashMap<u32, Vec<Added>> = HashMap::new();
    let global = parsed.groups().iter().position(|g| g.agents.iter().any(|a| a.global));
    for (i, g) in parsed.groups().iter().enumerate() {
        let Some(last) = g.agents.iter().map(|a| a.line).max() else { continue };
        let slot = after.entry(last).or_default();
        slot.extend(traps(""));
        if Some(i) == global {
            slot.extend(signal.clone());
        }
    }
    // New groups, each ending in a rule (only a rule ends a group's list of
    // `User-agent` lines, RFC 9309 2.1).
    let mut groups: Vec<Vec<Added>> = Vec::new();
    if managed.ai_training_disallow {
        let group = ai_training_group(&parsed, db);
        if !group.is_empty() {
            groups.push(group);
        }
    }
    if global.is_none() && (!trap_paths.is_empty() || !signal.is_empty()) {
        let mut group = vec![("User-agent: *".to_owned(), Some("the file has no `*` group".to_owned()))];
        group.extend(traps(" (a group for `*`, which the file has not)"));
        if trap_paths.is_empty() {
            group.push(("Disallow:".to_owned(), Some("ends the group; disallows nothing".to_owned())));
        }
        group.extend(signal);
        groups.push(group);
    }
    write(file, &after, &groups, first_group_line(file, &parsed))
}

/// The line before which new groups go: the first `User-agent` line, or the
/// first of the comment lines directly above it; `None` for a file without groups.
fn first_group_line(file: &[u8], parsed: &RobotsTxt) -> Option<u32> {
    let first = parsed.groups().first()?.agents.first()?.line;
    let mut comments_from = None;
    for (i, line) in lines(file).enumerate().take(first as usize - 1) {
        let text = crate::robots::parse::trim(line.text);
        comments_from = match (text.starts_with(b"#"), comments_from) {
            (true, None) => Some(i as u32 + 1),
            (true, c) => c,
            (false, _) => None,
        };
    }
    Some(comments_from.unwrap_or(first))
}

/// The group for `ai_training: disallow`: every AI-training token and
/// usage-control token of the database that no group of the file names.
fn ai_training_group(parsed: &RobotsTxt, db: &BotDb) -> Vec<Added> {
    let names_token = |token: &str| {
        parsed.groups().iter().flat_map(|g| g.agents.iter()).any(|a| {
            a.full_token().eq_ignore_ascii_case(token)
                || a.google_token().eq_ignore_ascii_case(token)
                || a.value.trim().eq_ignore_ascii_case(token)
        })
    };
    let mut tokens: Vec<&str> = Vec::new();
    // The AI crawlers' own tokens, and every usage-control token (they
    // exist to opt out of AI uses: Google-Extended, Applebot-Extended…).
    for bot in db.bots() {
        // Only robots checked by hand: a maintained list's tokens are for
        // recognition, not for lines every parser must read alike.
        if bot.listed {
            continue;
        }
        let own = if bot.category == Category::AiCrawler { &bot.robots_tokens[..] } else { &[] };
        for t in own.iter().chain(&bot.control_tokens) {
            if !names_token(t) && !tokens.iter().any(|x| x.eq_ignore_ascii_case(t)) {
                tokens.push(t);
            }
        }
    }
    if tokens.is_empty() {
        return Vec::new();
    }
    let mut group: Vec<Added> = tokens
        .iter()
        .map(|t| {
            let note = match db.bots().iter().find(|b| b.control_tokens.iter().any(|x| x == t)) {
                Some(b) => format!("managed.ai_training: usage-control token of {} ({})", b.name, b.operator),
                None => match db.bots().iter().find(|b| b.robots_tokens.iter().any(|x| x == t)) {
                    Some(b) => format!("managed.ai_training: AI crawler {} ({})", b.name, b.operator),
                    None => "managed.ai_training".to_owned(),
                },
            };
            (format!("User-agent: {t}"), Some(note))
        })
        .collect();
    group.push(("Disallow: /".to_owned(), Some("managed.ai_training: disallow".to_owned())));
    group
}

/// The served body as it is written: its lines, which were added, and why.
struct Writer {
    out: Vec<u8>,
    eol: &'static [u8],
    served: u32,
    added: Vec<u32>,
    notes: Vec<(u32, String)>,
}

impl Writer {
    fn add(&mut self, (text, note): &Added) {
        self.served += 1;
        self.out.extend_from_slice(text.as_bytes());
        self.out.extend_from_slice(self.eol);
        self.added.push(self.served);
        if let Some(n) = note {
            self.notes.push((self.served, n.clone()));
        }
    }

    fn blank(&mut self) {
        self.add(&(String::new(), None));
    }
}

/// Lay out the served body: the file's lines in order, `after` each line its
/// additions, and `groups` before line `groups_at` (or at the end).
fn write(file: &[u8], after: &HashMap<u32, Vec<Added>>, groups: &[Vec<Added>], groups_at: Option<u32>) -> Effective {
    let extra: usize = after.values().chain(groups).flatten().map(|(t, _)| t.len() + 2).sum();
    let out = Vec::with_capacity(file.len() + extra + 2 * groups.len() + 2);
    let mut w = Writer { out, eol: line_end(file), served: 0, added: Vec::new(), notes: Vec::new() };
    let mut file_line = 0u32;
    for line in lines(file) {
        file_line += 1;
        if groups_at == Some(file_line) {
            for g in groups {
                g.iter().for_each(|a| w.add(a));
                w.blank();
            }
        }
        w.served += 1;
        w.out.extend_from_slice(line.text);
        let more = after.get(&file_line);
        if !line.end.is_empty() {
            w.out.extend_from_slice(line.end);
        } else if more.is_some() || (groups_at.is_none() && !groups.is_empty()) {
            w.out.extend_from_slice(w.eol); // The file's last line, which had no end.
        }
        more.into_iter().flatten().for_each(|a| w.add(a));
    }
    if groups_at.is_none() {
        for (i, g) in groups.iter().enumerate() {
            if i > 0 || file_line > 0 {
                w.blank();
            }
            g.iter().for_each(|a| w.add(a));
        }
    }
    let cut_off = w.out.len() > DEFAULT_MAX_BYTES;
    Effective { body: w.out, lines: LineMap::new(w.added), notes: w.notes, cut_off }
}

/// The largest HTML page a trap link is put into; larger pages pass untouched
/// (the page must be held whole to be changed).
pub const INJECT_MAX_BYTES: usize = 1 << 20;

/// The link to a trap that robotgate puts into HTML pages: hidden from
/// people (not displayed, out of the tab order and the accessibility tree,
/// no text) and marked `nofollow`, so only a crawler that ignores both the
/// markup and robots.txt follows it.
pub fn trap_link(path: &str) -> String {
    // Trap paths are validated as plain normalised paths: nothing to escape
    // but `&` and `"`, which a path may hold.
    let href = path.replace('&', "&amp;").replace('"', "&quot;");
    format!("<a href=\"{href}\" rel=\"nofollow\" style=\"display:none\" aria-hidden=\"true\" tabindex=\"-1\"></a>")
}

/// `body` with `link` inserted before its last `</body>` (any case), or at
/// the end when it has none.
pub fn inject(body: &[u8], link: &[u8]) -> Vec<u8> {
    let at = body.windows(7).rposition(|w| w.eq_ignore_ascii_case(b"</body>")).unwrap_or(body.len());
    let mut out = Vec::with_capacity(body.len() + link.len());
    out.extend_from_slice(&body[..at]);
    out.extend_from_slice(link);
    out.extend_from_slice(&body[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn managed(ai: bool, signal: Option<&str>) -> Managed {
        Managed { ai_training_disallow: ai, content_signal: signal.map(str::to_owned), content_usage: None }
    }

    const FILE: &[u8] = b"User-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nUser-agent: GPTBot\nAllow: /";

    #[test]
    fn the_link_goes_before_the_last_body_end_tag() {
        let link = trap_link("/trap/");
        assert!(link.contains("href=\"/trap/\"") && link.contains("nofollow") && link.contains("display:none"));
        assert_eq!(inject(b"<html><BODY>hi</BODY></html>", b"L"), b"<html><BODY>hiL</BODY></html>");
        assert_eq!(inject(b"a</body>b</body>", b"L"), b"a</body>bL</body>");
        assert_eq!(inject(b"no end tag", b"L"), b"no end tagL");
        assert_eq!(inject(b"", b"L"), b"L");
    }

    #[test]
    fn nothing_managed_is_the_file_itself() {
        let e = effective(FILE, &managed(false, None), &[], &BotDb::builtin());
        assert_eq!(e.body, FILE);
        assert_eq!(e.lines, LineMap::default());
    }

    /// How many groups of `body` name each agent (lowercased), `*` included.
    fn groups_naming(body: &[u8]) -> HashMap<String, usize> {
        let mut n = HashMap::new();
        for g in RobotsTxt::compile(body).groups() {
            let mut names: Vec<String> = g.agents.iter().map(|a| a.value.to_ascii_lowercase()).collect();
            names.dedup();
            for a in names {
                *n.entry(a).or_default() += 1;
            }
        }
        n
    }

    /// The served body's lines that are the file's, in order, must be the file's lines.
    fn file_lines_kept(file: &[u8], e: &Effective) {
        let file = file.strip_prefix(BOM).unwrap_or(file);
        let kept: Vec<&[u8]> =
            lines(&e.body).enumerate().filter(|(i, _)| !e.lines.is_added(*i as u32 + 1)).map(|(_, l)| l.text).collect();
        let want: Vec<&[u8]> = lines(file).map(|l| l.text).collect();
        assert_eq!(kept, want);
    }

    #[test]
    fn issue_27_traps_go_into_every_group_before_its_rules_and_no_group_is_repeated() {
        let traps = vec!["/trap/".to_owned()];
        let e = effective(FILE, &managed(true, Some("ai-train=no")), &traps, &BotDb::builtin());
        let text = String::from_utf8(e.body.clone()).unwrap();
        file_lines_kept(FILE, &e);
        // Right after each group's user-agent lines, so a parser that takes
        // the first matching rule (urllib.robotparser) sees the trap first.
        assert!(
            text.contains("User-agent: *\nDisallow: /trap/\nContent-Signal: ai-train=no\nDisallow: /private/\n"),
            "{text}"
        );
        assert!(text.contains("User-agent: GPTBot\nDisallow: /trap/\nAllow: /"), "{text}");
        // Every agent is named by as many groups as in the file: a parser
        // that reads only the first group naming it misses nothing.
        let before = groups_naming(FILE);
        for (agent, n) in groups_naming(&e.body) {
            assert_eq!(n, before.get(&agent).copied().unwrap_or(1), "{agent} is named by {n} groups:\n{text}");
        }
        let robots = RobotsTxt::compile(&e.body);
        for agent in ["Googlebot", "GPTBot", "SomeBot", "ClaudeBot"] {
            let v = robots.allows(agent, "/trap/x");
            assert!(!v.allowed, "{agent} must be kept out of the trap");
            assert_eq!(e.lines.file_line(v.rule.unwrap().line), None, "{agent}: the rule is an added one");
        }
        // The file's rules keep their file lines through the map.
        let v = robots.allows("SomeBot", "/private/x");
        assert_eq!((v.allowed, e.lines.file_line(v.rule.unwrap().line)), (false, Some(2)));
        assert!(robots.allows("Googlebot", "/private/x").allowed, "Googlebot's own group still allows it");
        assert!(!e.cut_off);
        assert!(e.notes.iter().any(|(l, n)| n.contains("/trap/") && e.lines.is_added(*l)));
    }

    #[test]
    fn ai_training_lists_the_database_crawlers_the_file_does_not_name_in_one_group_before_the_files() {
        const FILE: &[u8] = b"# The site's robots.txt\nSitemap: https://e.com/s.xml\n\n# Everyone\nUser-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nUser-agent: GPTBot\nAllow: /";
        let e = effective(FILE, &managed(true, Some("search=yes, ai-train=no")), &[], &BotDb::builtin());
        let text = String::from_utf8(e.body.clone()).unwrap();
        file_lines_kept(FILE, &e);
        let robots = RobotsTxt::compile(&e.body);
        // Named by the file: its own group decides (GPTBot: allowed).
        assert!(robots.allows("GPTBot", "/page").allowed);
        assert_eq!(text.matches("User-agent: GPTBot").count(), 1, "not repeated");
        // Not named: the added group disallows everything.
        for t in ["ClaudeBot", "CCBot", "Google-Extended"] {
            assert!(!robots.allows(t, "/page").allowed, "{t} should be disallowed:\n{text}");
        }
        assert!(robots.allows("bingbot", "/page").allowed, "search engines are not AI training crawlers");
        assert!(
            text.contains("\nUser-agent: *\nContent-Signal: search=yes, ai-train=no\nDisallow: /private/\n"),
            "{text}"
        );
        // The new group sits above the comment over the file's first group, and ends in a blank line.
        assert!(text.starts_with("# The site's robots.txt\nSitemap: https://e.com/s.xml\n\nUser-agent: "), "{text}");
        assert!(text.contains("Disallow: /\n\n# Everyone\nUser-agent: *\n"), "{text}");
        // The file's last line, which had no end, gets none added.
        assert!(text.ends_with("\nAllow: /"), "{text}");
    }

    #[test]
    fn a_file_without_a_star_group_gets_one_and_an_empty_file_gets_only_it() {
        let file = b"User-agent: Googlebot\nDisallow: /x\n";
        let e = effective(file, &managed(false, Some("ai-train=no")), &[], &BotDb::builtin());
        let text = String::from_utf8(e.body.clone()).unwrap();
        // Ended by a rule that disallows nothing: `Googlebot` must not join it.
        assert_eq!(
            text,
            "User-agent: *\nDisallow:\nContent-Signal: ai-train=no\n\nUser-agent: Googlebot\nDisallow: /x\n"
        );
        assert!(RobotsTxt::compile(&e.body).allows("foo", "/x").allowed);
        assert!(!RobotsTxt::compile(&e.body).allows("Googlebot", "/x").allowed);
        assert_eq!(e.lines.added(), &[1, 2, 3, 4]);
        let e = effective(b"", &managed(false, None), &["/t/".into()], &BotDb::builtin());
        assert_eq!(e.body, b"User-agent: *\nDisallow: /t/\n");
        let e = effective(b"# nothing", &managed(false, None), &["/t/".into()], &BotDb::builtin());
        assert_eq!(e.body, b"# nothing\n\nUser-agent: *\nDisallow: /t/\n");
        assert_eq!(e.lines.file_line(1), Some(1));
    }

    #[test]
    fn added_lines_use_the_files_line_ends_and_a_bom_is_dropped() {
        let traps = ["/t/".to_owned()];
        let e = effective(
            b"\xEF\xBB\xBFUser-agent: *\r\nDisallow: /x\r\n",
            &managed(false, None),
            &traps,
            &BotDb::builtin(),
        );
        assert_eq!(e.body, b"User-agent: *\r\nDisallow: /t/\r\nDisallow: /x\r\n");
        let e = effective(b"User-agent: *\rDisallow: /x", &managed(false, None), &traps, &BotDb::builtin());
        assert_eq!(e.body, b"User-agent: *\rDisallow: /t/\rDisallow: /x");
        let robots = RobotsTxt::compile(&e.body);
        assert_eq!(e.lines.file_line(robots.allows("a", "/x").rule.unwrap().line), Some(2));
        // A group whose last line is the file's last, without an end.
        let e = effective(b"User-agent: *", &managed(false, None), &traps, &BotDb::builtin());
        assert_eq!(e.body, b"User-agent: *\nDisallow: /t/\n");
    }
}
