//! The robots.txt robotgate serves and enforces: the site's own file, plus
//! the lines robotgate manages for it.
//!
//! Generated lines are appended after the file, never inserted into it, so
//! every line number of the file stays what it is in the file (violation
//! records point into it); a line number past [`Effective::file_lines`] is a
//! generated one. Appending works because RFC 9309 2.2.1 combines the rules
//! of every group that names a user-agent (Google's parser does the same), so
//! a group added at the end for `GPTBot` extends the file's own `GPTBot` group.
//!
//! * Traps: one group naming every user-agent of the file, and `*`, that
//!   disallows each trap path. A specific group replaces `*` for its bot, so
//!   adding the trap to `*` alone would not bind a bot with a group of its own.
//! * `ai_training: disallow`: one group disallowing `/` to every robots.txt
//!   token of the database's AI-training crawlers, and every usage-control
//!   token (Google-Extended, Applebot-Extended…), that the file does not name.
//! * `content_signal`: a `Content-Signal:` line in a group for `*`.
//! * `content_usage`: a `Content-Usage:` rule (draft-ietf-aipref-attach) in a group for `*`.
//!
//! A file that already fills the 500 KiB that crawlers read leaves no room
//! for generated lines: they would be cut off. [`Effective::cut_off`] says so.

use crate::agent::{BotDb, Category};
use crate::config::Managed;
use crate::robots::{RobotsTxt, DEFAULT_MAX_BYTES};

/// The robots.txt as served: the file and the generated lines after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// The whole body.
    pub body: Vec<u8>,
    /// Lines of the site's own file; later lines are generated.
    pub file_lines: u32,
    /// For each generated line that carries meaning: its number and where it came from.
    pub notes: Vec<(u32, String)>,
    /// Whether generated lines fall past the 500 KiB crawlers read.
    pub cut_off: bool,
}

impl Effective {
    /// Whether `line` (1-based) is one robotgate generated.
    pub fn is_generated(&self, line: u32) -> bool {
        line > self.file_lines
    }
}

/// Number of lines of a body, as the robots.txt parser counts them (CR, LF
/// and CRLF each end a line; a last line without an end counts).
fn count_lines(body: &[u8]) -> u32 {
    let mut n = 0u32;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'\n' => n += 1,
            b'\r' => {
                n += 1;
                if body.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if !body.is_empty() && !matches!(body.last(), Some(b'\n' | b'\r')) {
        n += 1;
    }
    n
}

struct Writer {
    body: Vec<u8>,
    line: u32,
    notes: Vec<(u32, String)>,
}

impl Writer {
    fn line(&mut self, text: &str, note: Option<String>) {
        self.line += 1;
        self.body.extend_from_slice(text.as_bytes());
        self.body.push(b'\n');
        if let Some(note) = note {
            self.notes.push((self.line, note));
        }
    }
}

/// Build the robots.txt a site serves: `file` plus the managed lines.
///
/// Cost: one parse of the file; linear in its size and the database's.
pub fn effective(file: &[u8], managed: &Managed, trap_paths: &[String], db: &BotDb) -> Effective {
    let file_lines = count_lines(file);
    let nothing = !managed.ai_training_disallow
        && managed.content_signal.is_none()
        && managed.content_usage.is_none()
        && trap_paths.is_empty();
    if nothing {
        return Effective { body: file.to_vec(), file_lines, notes: Vec::new(), cut_off: false };
    }
    let parsed = RobotsTxt::compile(file);
    // The user-agent values the file names, once each (case-insensitively), in file order.
    let mut named: Vec<&str> = Vec::new();
    for a in parsed.groups().iter().flat_map(|g| g.agents.iter()) {
        let v = a.value.trim();
        if !a.global && !v.is_empty() && !named.iter().any(|n| n.eq_ignore_ascii_case(v)) {
            named.push(v);
        }
    }
    let names_token = |token: &str| {
        parsed.groups().iter().flat_map(|g| g.agents.iter()).any(|a| {
            a.full_token.eq_ignore_ascii_case(token)
                || a.google_token.eq_ignore_ascii_case(token)
                || a.value.trim().eq_ignore_ascii_case(token)
        })
    };
    let mut w = Writer { body: file.to_vec(), line: file_lines, notes: Vec::new() };
    if !w.body.is_empty() && !matches!(w.body.last(), Some(b'\n' | b'\r')) {
        w.body.push(b'\n');
    }
    w.line("", None);
    w.line("# Added by robotgate, which serves this file.", None);
    if !trap_paths.is_empty() {
        w.line("", None);
        w.line("User-agent: *", Some("traps: every group disallows the trap paths".into()));
        for name in &named {
            w.line(&format!("User-agent: {name}"), Some("traps: a group of this file".into()));
        }
        for path in trap_paths {
            w.line(&format!("Disallow: {path}"), Some(format!("traps: trap path {path}")));
        }
    }
    if managed.ai_training_disallow {
        let mut tokens: Vec<&str> = Vec::new();
        // The AI crawlers' own tokens, and every usage-control token (they
        // exist to opt out of AI uses: Google-Extended, Applebot-Extended…).
        for bot in db.bots() {
            let own = if bot.category == Category::AiCrawler { &bot.robots_tokens[..] } else { &[] };
            for t in own.iter().chain(&bot.control_tokens) {
                if !names_token(t) && !tokens.iter().any(|x| x.eq_ignore_ascii_case(t)) {
                    tokens.push(t);
                }
            }
        }
        if !tokens.is_empty() {
            w.line("", None);
            for t in &tokens {
                let note = match db.bots().iter().find(|b| b.control_tokens.iter().any(|x| x == t)) {
                    Some(b) => format!("managed.ai_training: usage-control token of {} ({})", b.name, b.operator),
                    None => match db.bots().iter().find(|b| b.robots_tokens.iter().any(|x| x == t)) {
                        Some(b) => format!("managed.ai_training: AI crawler {} ({})", b.name, b.operator),
                        None => "managed.ai_training".to_owned(),
                    },
                };
                w.line(&format!("User-agent: {t}"), Some(note));
            }
            w.line("Disallow: /", Some("managed.ai_training: disallow".into()));
        }
    }
    if let Some(signal) = &managed.content_signal {
        w.line("", None);
        w.line("User-agent: *", Some("managed.content_signal".into()));
        w.line(&format!("Content-Signal: {signal}"), Some("managed.content_signal".into()));
    }
    if let Some(usage) = &managed.content_usage {
        w.line("", None);
        w.line("User-agent: *", Some("managed.content_usage".into()));
        w.line(&format!("Content-Usage: {usage}"), Some("managed.content_usage".into()));
    }
    let cut_off = w.body.len() > DEFAULT_MAX_BYTES;
    Effective { body: w.body, file_lines, notes: w.notes, cut_off }
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
        assert_eq!(e.file_lines, 6);
    }

    #[test]
    fn traps_are_disallowed_for_every_group_and_lines_of_the_file_keep_their_numbers() {
        let traps = vec!["/trap/".to_owned()];
        let e = effective(FILE, &managed(false, None), &traps, &BotDb::builtin());
        let robots = RobotsTxt::compile(&e.body);
        for agent in ["Googlebot", "GPTBot", "SomeBot"] {
            let v = robots.allows(agent, "/trap/x");
            assert!(!v.allowed, "{agent} must be kept out of the trap");
            assert!(e.is_generated(v.rule.unwrap().line), "{agent}: the rule is a generated one");
        }
        // The file's own rules are unchanged, and keep their lines.
        let v = robots.allows("SomeBot", "/private/x");
        assert_eq!((v.allowed, v.rule.unwrap().line), (false, 2));
        assert!(robots.allows("Googlebot", "/private/x").allowed, "Googlebot's own group still allows it");
        assert!(!e.cut_off);
        assert!(e.notes.iter().any(|(_, n)| n.contains("/trap/")));
    }

    #[test]
    fn ai_training_lists_the_database_crawlers_the_file_does_not_name() {
        let e = effective(FILE, &managed(true, Some("search=yes, ai-train=no")), &[], &BotDb::builtin());
        let text = String::from_utf8(e.body.clone()).unwrap();
        let robots = RobotsTxt::compile(&e.body);
        // Named by the file: its own group decides (GPTBot: allowed).
        assert!(robots.allows("GPTBot", "/page").allowed);
        assert_eq!(text.matches("User-agent: GPTBot").count(), 1, "not repeated");
        // Not named: the generated group disallows everything.
        for t in ["ClaudeBot", "CCBot", "Google-Extended"] {
            assert!(!robots.allows(t, "/page").allowed, "{t} should be disallowed:\n{text}");
        }
        assert!(robots.allows("bingbot", "/page").allowed, "search engines are not AI training crawlers");
        assert!(text.contains("\nContent-Signal: search=yes, ai-train=no\n"));
    }

    #[test]
    fn a_file_without_a_final_newline_or_with_cr_lines_is_counted_right() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a"), 1);
        assert_eq!(count_lines(b"a\r\nb\rc\n"), 3);
        let e = effective(b"User-agent: *\rDisallow: /x", &managed(false, None), &["/t/".into()], &BotDb::builtin());
        assert_eq!(e.file_lines, 2);
        let robots = RobotsTxt::compile(&e.body);
        assert_eq!(robots.allows("a", "/x").rule.unwrap().line, 2);
    }
}
