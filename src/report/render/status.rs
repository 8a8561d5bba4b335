//! The live status page (`GET /status` on the metrics listener) and its JSON
//! twin (`/status.json`), from a [`StatusView`] the server fills from memory:
//! no log is read.
//!
//! The page refreshes itself with a meta refresh (no script at all), and its
//! Content-Security-Policy allows only its own inline style. Every string
//! from a request (User-Agent, path, client) is escaped as in the report.

use std::fmt::Write as _;

use serde::Serialize;

use super::html::{csp_hash, escape, STYLE};
use super::thousands;
use crate::record::Record;

/// Seconds between refreshes of the page.
pub const REFRESH_SECS: u32 = 5;

/// What the status page shows.
#[derive(Debug, Clone, Serialize)]
pub struct StatusView {
    /// robotgate's version.
    pub version: &'static str,
    /// When this process started (RFC 3339 UTC).
    pub started: String,
    /// Now (RFC 3339 UTC).
    pub now: String,
    /// The last reload attempt, if there was one.
    pub last_reload: Option<ReloadStatus>,
    /// The state backend.
    pub state: StateStatus,
    /// One entry per site of the configuration in force.
    pub sites: Vec<SiteStatus>,
}

/// A reload attempt.
#[derive(Debug, Clone, Serialize)]
pub struct ReloadStatus {
    /// When (RFC 3339 UTC).
    pub at: String,
    /// Whether the new configuration is in force.
    pub ok: bool,
    /// Why not, or what was reloaded.
    pub message: String,
}

/// The state backend's health.
#[derive(Debug, Clone, Serialize)]
pub struct StateStatus {
    /// `memory` or `redis`.
    pub backend: &'static str,
    /// For a shared store: whether it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up: Option<bool>,
    /// For a shared store: its URL, password hidden.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Failed or timed-out commands since start.
    pub errors: u64,
}

/// One site.
#[derive(Debug, Clone, Serialize)]
pub struct SiteStatus {
    /// The site's name.
    pub name: String,
    /// Hash of the robots.txt in force (empty: the site has none).
    pub robots_hash: String,
    /// When the configuration in force was loaded (RFC 3339 UTC).
    pub loaded_at: String,
    /// Violations since start per bot, most first.
    pub bots: Vec<BotCount>,
    /// The last violations, newest first (repeats of one folded, with `count`).
    pub recent: Vec<Record>,
}

/// Violations of one bot since start.
#[derive(Debug, Clone, Serialize)]
pub struct BotCount {
    /// Database name, or `other`.
    pub bot: String,
    /// Category.
    pub category: String,
    /// Violations.
    pub violations: u64,
}

/// The page, as one HTML document.
pub fn html(view: &StatusView) -> String {
    let mut o = String::with_capacity(32 * 1024);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"refresh\" content=\"{REFRESH_SECS}\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src {}; img-src data:\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<title>robotgate status</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        csp_hash(STYLE)
    );
    let _ = writeln!(o, "<header><h1>robotgate status</h1>");
    let _ = writeln!(
        o,
        "<p class=\"note\">robotgate {} &middot; started {} &middot; now {} &middot; refreshes every {REFRESH_SECS} s \
         &middot; <a href=\"/status.json\">JSON</a></p>",
        escape(view.version),
        escape(&view.started),
        escape(&view.now)
    );
    let reload = match &view.last_reload {
        None => "no reload since start".to_owned(),
        Some(r) if r.ok => format!("{}: in force ({})", escape(&r.at), escape(&r.message)),
        Some(r) => format!(
            "{}: <strong>refused</strong>, the last good configuration stays: {}",
            escape(&r.at),
            escape(&r.message)
        ),
    };
    let state = match (view.state.up, &view.state.url) {
        (Some(up), Some(url)) => format!(
            "{} at <code>{}</code>: <strong>{}</strong>, {} errors since start",
            escape(view.state.backend),
            escape(url),
            if up { "up" } else { "down (serving from memory)" },
            thousands(view.state.errors)
        ),
        _ => format!("{} (this instance only)", escape(view.state.backend)),
    };
    let _ = writeln!(
        o,
        "<table id=\"process\"><tbody><tr><th>Last reload</th><td>{reload}</td></tr>\
         <tr><th>State</th><td id=\"state\">{state}</td></tr></tbody></table></header>"
    );
    for (i, site) in view.sites.iter().enumerate() {
        let _ = writeln!(o, "<section id=\"site-{i}\"><h2>Site <code>{}</code></h2>", escape(&site.name));
        let hash = if site.robots_hash.is_empty() {
            "none".to_owned()
        } else {
            format!("<code>{}</code>", escape(&site.robots_hash))
        };
        let _ = writeln!(o, "<p>robots.txt in force: {hash}, loaded {}.</p>", escape(&site.loaded_at));
        let _ = writeln!(o, "<h3>Violations since start</h3>");
        if site.bots.is_empty() {
            let _ = writeln!(o, "<p class=\"note\">None.</p>");
        } else {
            let _ = writeln!(
                o,
                "<table class=\"bots\"><thead><tr><th>Bot</th><th>Category</th><th class=\"n\">Violations</th></tr></thead><tbody>"
            );
            for b in &site.bots {
                let _ = writeln!(
                    o,
                    "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
                    escape(&b.bot),
                    escape(&b.category),
                    thousands(b.violations)
                );
            }
            let _ = writeln!(o, "</tbody></table>");
        }
        let _ = writeln!(o, "<h3>Last violations</h3>");
        if site.recent.is_empty() {
            let _ = writeln!(o, "<p class=\"note\">None since start.</p>");
        } else {
            let _ = writeln!(
                o,
                "<table class=\"recent\"><thead><tr><th>Time</th><th>Client</th><th>Bot</th><th>Request</th>\
                 <th>Rule</th><th>Action</th><th class=\"n\">Status</th><th class=\"n\">Count</th><th>User-Agent</th></tr></thead><tbody>"
            );
            for r in &site.recent {
                let rule = match (r.line, &r.pattern) {
                    (Some(line), Some(p)) => format!("line {line}: {} {}", r.directive, escape(p)),
                    (Some(line), None) => format!("line {line}: {}", r.directive),
                    (None, Some(p)) => format!("{} {}", r.directive, escape(p)),
                    (None, None) => r.directive.to_owned(),
                };
                let bot = r.bot.as_deref().unwrap_or("-");
                let identity = r.identity.map(|i| format!(" ({i})")).unwrap_or_default();
                let _ = writeln!(
                    o,
                    "<tr><td>{}</td><td>{}</td><td>{}{identity}<br><span class=\"note\">{}</span></td><td class=\"w\">{} {}</td>\
                     <td class=\"w\">{rule}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"w\">{}</td></tr>",
                    escape(&r.time),
                    escape(&r.client),
                    escape(bot),
                    escape(r.category),
                    escape(&r.method),
                    escape(&r.path),
                    escape(r.action),
                    r.status,
                    thousands(r.count),
                    escape(&r.user_agent)
                );
            }
            let _ = writeln!(o, "</tbody></table>");
        }
        let _ = writeln!(o, "</section>");
    }
    o.push_str("</body>\n</html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(ua: &str, path: &str) -> StatusView {
        let mut rec = crate::record::sample("203.0.113.9", ua, path, 3, "2026-11-23T10:00:00.000Z".into());
        rec.identity = Some("spoofed");
        rec.count = 7;
        StatusView {
            version: "0.1.0",
            started: "2026-11-23T09:00:00.000Z".into(),
            now: "2026-11-23T10:00:01.000Z".into(),
            last_reload: Some(ReloadStatus {
                at: "2026-11-23T09:30:00.000Z".into(),
                ok: false,
                message: "robots.txt: <bad>".into(),
            }),
            state: StateStatus {
                backend: "redis",
                up: Some(false),
                url: Some("redis://:***@127.0.0.1:6379/0".into()),
                errors: 4,
            },
            sites: vec![SiteStatus {
                name: "shop".into(),
                robots_hash: "abc123".into(),
                loaded_at: "2026-11-23T09:00:00.000Z".into(),
                bots: vec![BotCount { bot: "GPTBot".into(), category: "ai-crawler".into(), violations: 1234 }],
                recent: vec![rec],
            }],
        }
    }

    #[test]
    fn hostile_strings_are_text_and_the_page_has_no_script() {
        let ua = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>\u{1b}[31m";
        let html = html(&view(ua, "/a?<b>"));
        assert!(!html.contains("<script"), "no script element at all");
        assert!(!html.contains("<img"));
        assert!(!html.contains('\u{1b}'));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"));
        assert!(html.contains("/a?&lt;b&gt;"));
        assert!(html.contains("http-equiv=\"refresh\""));
        assert!(html.contains("<strong>refused</strong>") && html.contains("robots.txt: &lt;bad&gt;"));
        assert!(html.contains("down (serving from memory)") && html.contains("1,234"));
        assert!(html.contains("(spoofed)"));
    }

    #[test]
    fn the_json_twin_carries_the_same_data() {
        let v = view("UA", "/p");
        let json: serde_json::Value = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(json["sites"][0]["recent"][0]["count"], 7);
        assert_eq!(json["sites"][0]["bots"][0]["violations"], 1234);
        assert_eq!(json["state"]["up"], false);
        assert_eq!(json["last_reload"]["ok"], false);
    }
}
