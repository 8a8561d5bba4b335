//! `robotgate lint`: the mistakes site owners actually make in robots.txt.
//!
//! The linter is a second [`ParseHandler`] of the same events the matcher is
//! built from, so every message describes how crawlers really read the line.
//! An *error* is a line that does not do what its author meant (a rule that
//! can never match or is ignored); a *warning* is something crawlers tolerate
//! but that is fragile or differs between crawlers.

use std::collections::HashMap;

use super::build::{limit_body, Options, RobotsTxt};
pub use super::diagnostic::{Diagnostic, Severity};
use super::ext;
use super::parse::{self, Key, LineNote, ParseHandler};

/// Google's crawlers, which ignore `Crawl-delay` (Google's documentation says
/// the rate is set in Search Console instead).
const GOOGLE_TOKENS: &[&str] = &[
    "googlebot",
    "googlebot-image",
    "googlebot-news",
    "googlebot-video",
    "googlebot-mobile",
    "storebot-google",
    "google-inspectiontool",
    "googleother",
    "googleother-image",
    "googleother-video",
    "google-extended",
    "adsbot-google",
    "adsbot-google-mobile",
    "mediapartners-google",
    "apis-google",
    "google-cloudvertexbot",
];

/// Lint a robots.txt body. Findings come sorted by line.
pub fn lint(body: &[u8]) -> Vec<Diagnostic> {
    lint_with(body, Options::default())
}

/// Lint with explicit options (the size limit).
pub fn lint_with(body: &[u8], options: Options) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let (used, truncated) = limit_body(body, options.max_bytes);
    if looks_like_markup(used) {
        // Line-by-line findings about markup would only bury the one that matters.
        out.push(diag(1, Severity::Error, "html", "this is HTML or XML, not robots.txt: crawlers will find no rules in it (is the server returning an error page?)".into()));
        return out;
    }
    if holds_nothing(used) {
        // Legal, and robotgate serves and enforces it as it is; worth saying
        // what it means, since an emptied file is a common accident.
        out.push(diag(1, Severity::Warning, "allows-everything", "the file holds no rules (it is empty, or blank lines and comments only): it allows every crawler everything (RFC 9309 2.2.1: no group applies)".into()));
    }
    if truncated {
        let line = count_lines(used) + 1;
        out.push(diag(
            line,
            Severity::Error,
            "too-large",
            format!(
                "the file is {} bytes; crawlers read only the first {} bytes, so everything from here on is ignored",
                body.len(),
                options.max_bytes
            ),
        ));
    }
    let mut linter =
        Linter { out: &mut out, seen_agent: false, group_agents: Vec::new(), in_agents: false, global_group: false };
    parse::parse(used, &mut linter);
    invalid_utf8(used, &mut out);
    let compiled = RobotsTxt::compile_with(body, options);
    groups(&compiled, &mut out);
    super::usage_lint::contradictions(&compiled, &mut out);
    sitemaps_disallowed(&compiled, &mut out);
    out.sort_by(|a, b| a.line.cmp(&b.line).then(b.severity.cmp(&a.severity)));
    out
}

/// Whether the first line that is not blank or a comment starts like markup.
fn looks_like_markup(body: &[u8]) -> bool {
    let first = body
        .split(|&b| b == b'\n' || b == b'\r')
        .take(50)
        .map(parse::trim)
        .find(|l| !l.is_empty() && !l.starts_with(b"#"));
    let Some(first) = first else { return false };
    let lower = first[..first.len().min(16)].to_ascii_lowercase();
    ["<!doctype", "<html", "<?xml", "<head", "<body", "<!--"].iter().any(|m| lower.starts_with(m.as_bytes()))
}

/// Whether the file holds nothing but blank lines and comments (or nothing).
fn holds_nothing(body: &[u8]) -> bool {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    body.split(|&b| b == b'\n' || b == b'\r').map(parse::trim).all(|l| l.is_empty() || l.starts_with(b"#"))
}

fn diag(line: u32, severity: Severity, code: &'static str, message: String) -> Diagnostic {
    Diagnostic { line, severity, code, message }
}

/// Lines in `body` as the parser counts them (LF, CR and CRLF each end one).
fn count_lines(body: &[u8]) -> u32 {
    let mut n = 0u32;
    let mut last_cr = false;
    for &b in body {
        if !(b == b'\n' && last_cr) && (b == b'\n' || b == b'\r') {
            n += 1;
        }
        last_cr = b == b'\r';
    }
    n
}

struct Linter<'a> {
    out: &'a mut Vec<Diagnostic>,
    seen_agent: bool,
    /// Tokens of the current group's user-agent lines.
    group_agents: Vec<String>,
    /// Still in the list of user-agent lines of the current group.
    in_agents: bool,
    /// The current group includes `*`.
    global_group: bool,
}

fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s.into_owned()
    }
}

impl ParseHandler for Linter<'_> {
    fn note(&mut self, line: u32, note: LineNote, text: &[u8]) {
        let (severity, code, message) = match note {
            LineNote::Misspelt(key) => (
                Severity::Warning,
                "misspelt-field",
                format!(
                    "`{}` is read as `{}` by Google but not by every crawler; write `{}`",
                    show(text),
                    key.as_str(),
                    canonical(key)
                ),
            ),
            LineNote::MissingColon => (
                Severity::Warning,
                "missing-colon",
                format!("`{}` has no colon; only some crawlers accept that; write `key: value`", show(text)),
            ),
            LineNote::NotAField => {
                let first = text.split(|&b| b == b' ' || b == b'\t' || b == b':').next().unwrap_or(b"");
                let (key, _) = parse::classify_key(first);
                if key.is_rule() {
                    (
                        Severity::Error,
                        "unparsable-rule",
                        format!(
                            "`{}` cannot be read as a rule and is ignored; write one path per line, e.g. `{}: /path`",
                            show(text),
                            canonical(key)
                        ),
                    )
                } else {
                    (
                        Severity::Warning,
                        "not-a-field",
                        format!("`{}` is not a `field: value` line and is ignored", show(text)),
                    )
                }
            }
            LineNote::TooLong => (
                Severity::Warning,
                "line-too-long",
                format!("line longer than {} bytes; crawlers cut it there", parse::MAX_LINE_BYTES),
            ),
            LineNote::Nul => {
                (Severity::Warning, "nul-byte", "line holds a NUL byte; crawlers stop reading the line there".into())
            }
        };
        self.out.push(diag(line, severity, code, message));
    }

    fn field(&mut self, line: u32, key: Key, key_text: &[u8], value: &[u8]) {
        let text = String::from_utf8_lossy(value);
        let mut push = |severity, code, message| self.out.push(diag(line, severity, code, message));
        match key {
            Key::UserAgent => {
                if !self.in_agents {
                    self.group_agents.clear();
                    self.global_group = false;
                }
                self.in_agents = true;
                self.seen_agent = true;
                if parse::is_global_agent(value) {
                    self.global_group = true;
                } else {
                    let token = parse::full_agent_token(value);
                    if token.is_empty() {
                        push(
                            Severity::Error,
                            "bad-user-agent",
                            format!("`{}` is not a product token; it names no crawler", show(value)),
                        );
                    } else if token.len() < value.len() {
                        push(
                            Severity::Warning,
                            "user-agent-not-a-token",
                            format!(
                                "write only the product token: crawlers read `{}` as `{}`",
                                show(value),
                                show(parse::google_agent_token(value))
                            ),
                        );
                    } else if parse::google_agent_token(value).len() < token.len() {
                        push(
                            Severity::Warning,
                            "user-agent-digits",
                            format!(
                                "Google's parser reads `{}` as `{}` (digits and dots end a token); crawlers differ here",
                                show(value),
                                show(parse::google_agent_token(value))
                            ),
                        );
                    }
                    self.group_agents.push(String::from_utf8_lossy(token).to_ascii_lowercase());
                }
            }
            Key::Allow | Key::Disallow => {
                self.in_agents = false;
                let name = canonical(key);
                if !self.seen_agent {
                    push(
                        Severity::Error,
                        "rule-before-user-agent",
                        format!("`{name}` before any `User-agent` line is ignored by crawlers"),
                    );
                    return;
                }
                if value.is_empty() {
                    return;
                }
                let words: Vec<&str> = text.split_whitespace().collect();
                if words.len() > 1 && words.iter().all(|w| w.starts_with('/') || w.starts_with('*')) {
                    push(Severity::Error, "several-paths", format!("`{name}: {text}` holds several paths; crawlers read it as one path with a space; write one `{name}` line per path"));
                } else if words.len() > 1 {
                    push(Severity::Error, "space-in-path", format!("the path `{text}` contains a space, which never appears in a request; percent-encode it as %20"));
                } else if !(value.starts_with(b"/") || value.starts_with(b"*")) {
                    let looks_like_agent = self.global_group
                        && key == Key::Disallow
                        && value.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
                    if looks_like_agent {
                        push(
                            Severity::Error,
                            "inverted-rule",
                            format!("`Disallow: {text}` under `User-agent: *` looks like a crawler's name; to block it write `User-agent: {text}` then `Disallow: /`"),
                        );
                    } else {
                        push(Severity::Error, "path-without-slash", format!("the path `{text}` does not start with `/` or `*`, so it never matches; write `/{text}`"));
                    }
                } else if key == Key::Disallow && names_scripts_or_styles(value) {
                    push(Severity::Warning, "disallow-render-resources", format!("`Disallow: {text}` keeps crawlers from scripts or stylesheets; search engines render pages with them, and a page they cannot render is judged by what is left"));
                } else if let Some(a) = anchored_extension(value).filter(|_| key == Key::Disallow) {
                    push(Severity::Warning, "anchored-extension", format!("`Disallow: {text}` does not cover `{}`: `$` anchors at the end of the path and query (RFC 9309 2.2.3), so the file with a query string is allowed; `Disallow: {}` covers both (or add `Disallow: {}?`)", a.let_through, a.unanchored, a.unanchored));
                } else if value.len() > 1 && value.ends_with(b"*") && !value.ends_with(b"**") {
                    push(Severity::Warning, "redundant-wildcard", format!("the trailing `*` in `{text}` is redundant: rules already match every path that starts with `{}`", &text[..text.len() - 1]));
                }
            }
            Key::Sitemap => {
                let lower = text.to_ascii_lowercase();
                if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                    push(
                        Severity::Warning,
                        "sitemap-not-absolute",
                        format!("sitemap `{text}` is not an absolute http(s) URL; crawlers ignore it"),
                    );
                }
            }
            Key::CrawlDelay | Key::RequestRate | Key::VisitTime | Key::CleanParam | Key::ContentSignal => {
                let ok = match key {
                    Key::CrawlDelay => ext::parse_crawl_delay(&text).is_some(),
                    Key::RequestRate => ext::parse_request_rate(&text).is_some(),
                    Key::VisitTime => ext::parse_visit_time(&text).is_some(),
                    Key::CleanParam => ext::parse_clean_param(&text).is_some(),
                    _ => ext::parse_content_signal(&text).is_some(),
                };
                if !ok {
                    push(
                        Severity::Error,
                        "bad-value",
                        format!("`{}: {text}` has a value crawlers cannot read ({})", key.as_str(), expected(key)),
                    );
                }
                let group_level = !matches!(key, Key::CleanParam);
                if group_level && !self.seen_agent {
                    push(
                        Severity::Warning,
                        "record-before-user-agent",
                        format!("`{}` before any `User-agent` line applies to no group", key.as_str()),
                    );
                }
                if key == Key::CrawlDelay
                    && !self.global_group
                    && !self.group_agents.is_empty()
                    && self.group_agents.iter().all(|a| GOOGLE_TOKENS.contains(&a.as_str()))
                {
                    push(
                        Severity::Warning,
                        "crawl-delay-google",
                        "Google's crawlers ignore `Crawl-delay`; this group names only Google crawlers".into(),
                    );
                }
            }
            Key::ContentUsage => {
                for (severity, code, message) in super::usage_lint::line(&text, self.seen_agent) {
                    push(severity, code, message);
                }
            }
            Key::Host => {}
            Key::Unknown => push(
                Severity::Warning,
                "unknown-field",
                format!("unknown field `{}` is ignored by crawlers", show(key_text)),
            ),
        }
    }
}

fn canonical(key: Key) -> &'static str {
    match key {
        Key::UserAgent => "User-agent",
        Key::Allow => "Allow",
        Key::Disallow => "Disallow",
        Key::Sitemap => "Sitemap",
        Key::CrawlDelay => "Crawl-delay",
        Key::RequestRate => "Request-rate",
        Key::VisitTime => "Visit-time",
        Key::Host => "Host",
        Key::CleanParam => "Clean-param",
        Key::ContentSignal => "Content-Signal",
        Key::ContentUsage => "Content-Usage",
        Key::Unknown => "?",
    }
}

fn expected(key: Key) -> &'static str {
    match key {
        Key::CrawlDelay => "seconds, e.g. `10` or `0.5`",
        Key::RequestRate => "requests/period, e.g. `1/5s` or `30/1m`",
        Key::VisitTime => "a UTC window, e.g. `0600-0845`",
        Key::CleanParam => "`param1&param2 [/path]`",
        _ => "`use=yes|no, …`",
    }
}

fn invalid_utf8(body: &[u8], out: &mut Vec<Diagnostic>) {
    if std::str::from_utf8(body).is_ok() {
        return;
    }
    // Report each line with invalid UTF-8 once, numbered as the parser numbers lines.
    let mut line = 1u32;
    let mut start = 0;
    let mut i = 0;
    let mut reported = 0;
    while i <= body.len() {
        let end = i == body.len() || body[i] == b'\n' || body[i] == b'\r';
        if end {
            if std::str::from_utf8(&body[start..i]).is_err() && reported < 20 {
                out.push(diag(line, Severity::Warning, "invalid-utf8", "line is not valid UTF-8; RFC 9309 files are UTF-8 (non-ASCII bytes are percent-encoded as they are)".into()));
                reported += 1;
            }
            if i < body.len() && body[i] == b'\r' && body.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            line += 1;
            start = i + 1;
        }
        i += 1;
    }
}

/// Whether a rule's pattern is about scripts or stylesheets by their file
/// type (`/*.js$`, `/assets/app.css`): the rules that break rendering.
fn names_scripts_or_styles(pattern: &[u8]) -> bool {
    let p = pattern.to_ascii_lowercase();
    let p = p.strip_suffix(b"$").unwrap_or(&p);
    [&b".js"[..], b".mjs", b".css"].iter().any(|ext| p.ends_with(ext))
}

/// What a `$`-anchored rule that ends in a file extension lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnchoredExtension {
    /// A request it does not match: the file with a query (`/x.pdf?v=1`).
    pub let_through: String,
    /// The rule without `$`, which matches that too (`/*.pdf`).
    pub unanchored: String,
}

/// Whether `pattern` is `$`-anchored and ends in a file extension
/// (`/*.pdf$`, `/files/report.PDF$`): its author most likely meant the file
/// in any form, but `$` anchors at the end of path and query (RFC 9309
/// 2.2.3), so `/x.pdf?v=1` is not matched. A pattern that names a query
/// itself (`?`) is taken to mean what it says.
///
/// Shared by `lint` and by replay, which lists the requests such a rule let
/// through. Cost: one pass over the pattern.
///
/// ```
/// let a = robotgate::robots::lint::anchored_extension(b"/*.pdf$").unwrap();
/// assert_eq!((a.let_through.as_str(), a.unanchored.as_str()), ("/x.pdf?v=1", "/*.pdf"));
/// assert!(robotgate::robots::lint::anchored_extension(b"/files/$").is_none());
/// ```
pub fn anchored_extension(pattern: &[u8]) -> Option<AnchoredExtension> {
    let body = pattern.strip_suffix(b"$")?;
    if body.contains(&b'?') || body.contains(&b'$') {
        return None;
    }
    let file = &body[body.iter().rposition(|&b| b == b'/')? + 1..];
    let dot = file.iter().rposition(|&b| b == b'.')?;
    let ext = &file[dot + 1..];
    // `.htaccess$` names a file, not an extension.
    if dot == 0 || !(1..=8).contains(&ext.len()) || !ext.iter().all(u8::is_ascii_alphanumeric) {
        return None;
    }
    let unanchored = String::from_utf8_lossy(body).into_owned();
    let mut let_through = unanchored.replace('*', "x");
    let_through.push_str("?v=1");
    Some(AnchoredExtension { let_through, unanchored })
}

/// A `Sitemap:` the `*` group disallows: the crawlers that keep to the file
/// may not fetch the sitemap it announces. Reported on the rule's line.
fn sitemaps_disallowed(robots: &RobotsTxt, out: &mut Vec<Diagnostic>) {
    let global = robots.select::<&str>(&[]);
    for map in robots.sitemaps() {
        let rest = map.value.split_once("://").map_or(map.value.as_str(), |(_, r)| r);
        let Some(path) = rest.find('/').map(|i| &rest[i..]) else { continue };
        let verdict = robots.check(&global, path.as_bytes());
        if let (false, Some(rule)) = (verdict.allowed, verdict.rule) {
            out.push(diag(
                rule.line,
                Severity::Warning,
                "disallow-sitemap",
                format!("this rule disallows the sitemap of line {} (`{}`): crawlers that keep to robots.txt may not fetch it", map.line, show(path.as_bytes())),
            ));
        }
    }
}

fn groups(robots: &RobotsTxt, out: &mut Vec<Diagnostic>) {
    let mut first: HashMap<String, u32> = HashMap::new();
    for g in robots.groups() {
        let mut in_this: Vec<String> = Vec::new();
        for a in &g.agents {
            let key = if a.global { "*".to_owned() } else { a.full_token().to_ascii_lowercase() };
            if key.is_empty() || in_this.contains(&key) {
                continue;
            }
            in_this.push(key.clone());
            match first.get(&key) {
                Some(&line) => out.push(diag(
                    a.line,
                    Severity::Warning,
                    "duplicate-agent",
                    format!(
                        "`{}` already has a group at line {line}; crawlers merge the two, which is easy to miss",
                        a.value
                    ),
                )),
                None => {
                    first.insert(key, a.line);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_file_has_no_findings() {
        let d = lint(
            b"User-agent: *\nDisallow: /private/\nAllow: /private/ok\nCrawl-delay: 5\nSitemap: https://e.com/s.xml\n",
        );
        assert!(d.is_empty(), "{d:?}");
    }

    #[test]
    fn an_empty_file_is_said_to_allow_everything() {
        for body in ["", "\n\n", "\u{feff}# nothing here yet\n\n# still nothing\n", "  \t\r\n"] {
            let d = lint(body.as_bytes());
            assert_eq!(d.len(), 1, "{body:?}: {d:?}");
            assert_eq!((d[0].line, d[0].code, d[0].severity), (1, "allows-everything", Severity::Warning));
            assert!(d[0].message.contains("allows every crawler everything"));
        }
        assert!(lint(b"User-agent: *\n").iter().all(|d| d.code != "allows-everything"));
    }

    fn codes(body: &str) -> Vec<(u32, &'static str)> {
        lint(body.as_bytes()).into_iter().map(|d| (d.line, d.code)).collect()
    }

    #[test]
    fn rules_that_hide_scripts_or_styles() {
        let body = "User-agent: *\nDisallow: /*.js$\nDisallow: /theme/site.CSS\nDisallow: /jsdocs/\nAllow: /*.css\n";
        assert_eq!(codes(body), [(2, "disallow-render-resources"), (3, "disallow-render-resources")]);
    }

    #[test]
    fn a_rule_that_hides_the_sitemap_is_named() {
        let body = "User-agent: *\nDisallow: /maps/\nDisallow: /private/\nSitemap: https://e.com/maps/all.xml\n";
        assert_eq!(codes(body), [(2, "disallow-sitemap")]);
        // Another group's rules do not hide it from everyone; an Allow frees it.
        assert!(codes("User-agent: x\nDisallow: /\n\nSitemap: https://e.com/s.xml\n").is_empty());
        assert!(codes("User-agent: *\nDisallow: /m/\nAllow: /m/s.xml\nSitemap: https://e.com/m/s.xml\n").is_empty());
    }
}
