//! The live status page (`GET /status` on the metrics listener) and its JSON
//! twin (`/status.json`), from a [`StatusView`] the server fills from memory:
//! no log is read.
//!
//! The page refreshes itself with a meta refresh (no script at all), and its
//! Content-Security-Policy allows only its own inline style. It is a `maud`
//! template like the report, and every string from a request (User-Agent,
//! path, client) goes through [`Text`] as in the report.

use maud::{html, Markup};
use serde::Serialize;

use super::markup::{document, Text};
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
    /// Warnings about the set-up (a proxy missing from `trusted_proxies`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The state backend.
    pub state: StateStatus,
    /// The crawler IP range feeds in force, and how old each is.
    pub feeds: Vec<FeedStatus>,
    /// One entry per site shown: a page of the sites in force
    /// (`/status?page=2&limit=50`) or the one asked for (`?site=NAME`).
    pub sites: Vec<SiteStatus>,
    /// Which sites `sites` are.
    pub paging: Paging,
}

/// Which page of the sites a status view shows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Paging {
    /// The sites in force.
    pub total: usize,
    /// This page, from 1.
    pub page: usize,
    /// Sites a page.
    pub limit: usize,
    /// Pages in all.
    pub pages: usize,
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

/// One crawler IP range feed.
#[derive(Debug, Clone, Serialize)]
pub struct FeedStatus {
    /// Its name (`google-common-crawlers`).
    pub name: String,
    /// The list's own date (`creationTime`), as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// When it was last known current (its date, or its last successful
    /// refresh), RFC 3339 UTC; absent: unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Seconds since then; absent: unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_seconds: Option<u64>,
    /// Whether it is younger than the refresh interval (`verify.refresh`),
    /// so that a complete list decides alone; always with refresh off.
    pub current: bool,
    /// The last refresh that failed for it since its last success, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_error: Option<String>,
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
    /// Pages whose own noindex (META tag, `X-Robots-Tag`) robots.txt hides
    /// from a robot (`indexing.observe`).
    pub hidden_noindex: Vec<crate::indexing::HiddenPage>,
    /// Disguised robots' violations since start per JA4 fingerprint of their
    /// connection (issue #67), most first.
    pub disguised_fingerprints: Vec<crate::report::FingerprintReport>,
    /// No fingerprint missing from `disguised_fingerprints` has more violations than this.
    pub disguised_fingerprints_floor: u64,
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

/// Which sites the page shows, with links to the pages beside it.
fn paging(p: &Paging, shown: usize) -> Markup {
    let first = (p.page.saturating_sub(1)) * p.limit;
    html! {
        p.note #paging {
            @if shown == 0 { "No site shown" } @else { "Sites " (first + 1) "–" (first + shown) }
            " of " (p.total) " · page " (p.page) " of " (p.pages.max(1))
            @if p.page > 1 { " · " a href=(format!("/status?page={}&limit={}", p.page - 1, p.limit)) { "previous" } }
            @if p.page < p.pages { " · " a href=(format!("/status?page={}&limit={}", p.page + 1, p.limit)) { "next" } }
        }
    }
}

/// The page, as one HTML document.
pub fn html(view: &StatusView) -> String {
    let body = html! {
        header {
            h1 { "robotgate status" }
            p.note {
                "robotgate " (Text(view.version)) " · started " (Text(&view.started)) " · now " (Text(&view.now))
                " · refreshes every " (REFRESH_SECS) " s · " a href="/status.json" { "JSON" }
            }
            table #process {
                tbody {
                    tr { th { "Last reload" } td { (reload(view.last_reload.as_ref())) } }
                    tr { th { "State" } td #state { (state(&view.state)) } }
                    @for w in &view.warnings {
                        tr { th { "Warning" } td.warning { (w) } }
                    }
                }
            }
            (feeds(&view.feeds))
        }
        (paging(&view.paging, view.sites.len()))
        @for (i, site) in view.sites.iter().enumerate() {
            (site_section(i, site))
        }
    };
    let mut page = document("robotgate status", Some(REFRESH_SECS), None, body).into_string();
    page.push('\n');
    page
}

/// The last reload: in force, or refused and why.
fn reload(r: Option<&ReloadStatus>) -> Markup {
    html! {
        @match r {
            None => "no reload since start",
            Some(r) if r.ok => { (Text(&r.at)) ": in force (" (Text(&r.message)) ")" }
            Some(r) => {
                (Text(&r.at)) ": " strong { "refused" } ", the last good configuration stays: " (Text(&r.message))
            }
        }
    }
}

/// The state backend: this instance's memory, or a shared store and its health.
fn state(s: &StateStatus) -> Markup {
    html! {
        @match (s.up, &s.url) {
            (Some(up), Some(url)) => {
                (Text(s.backend)) " at " code { (Text(url)) } ": "
                strong { @if up { "up" } @else { "down (serving from memory)" } }
                ", " (thousands(s.errors)) " errors since start"
            }
            _ => { (Text(s.backend)) " (this instance only)" }
        }
    }
}

/// The feeds and their ages.
fn feeds(feeds: &[FeedStatus]) -> Markup {
    html! {
        table #feeds {
            thead { tr { th { "Feed" } th { "Its date" } th { "Current as of" } th { "Age" } th { "Refresh" } } }
            tbody {
                @for f in feeds {
                    tr {
                        td { code { (Text(&f.name)) } }
                        td { (Text(f.date.as_deref().unwrap_or("-"))) }
                        td { (Text(f.as_of.as_deref().unwrap_or("unknown"))) }
                        td {
                            @match f.age_seconds { Some(a) => { (age(a)) }, None => "unknown" }
                            @if !f.current { " " strong { "(older than the refresh interval)" } }
                        }
                        td { @match &f.refresh_error { Some(e) => { "failed: " (Text(e)) }, None => "-" } }
                    }
                }
            }
        }
    }
}

/// An age as days, hours or minutes.
fn age(secs: u64) -> String {
    match secs {
        s if s >= 2 * 86_400 => format!("{} days", s / 86_400),
        s if s >= 3600 => format!("{} h", s / 3600),
        s => format!("{} min", s / 60),
    }
}

/// One site: its robots.txt, its bots' violations, its last violations.
fn site_section(i: usize, site: &SiteStatus) -> Markup {
    html! {
        section id=(format!("site-{i}")) {
            h2 { "Site " code { (Text(&site.name)) } }
            p {
                "robots.txt in force: "
                @if site.robots_hash.is_empty() { "none" } @else { code { (Text(&site.robots_hash)) } }
                ", loaded " (Text(&site.loaded_at)) "."
            }
            h3 { "Violations since start" }
            @if site.bots.is_empty() {
                p.note { "None." }
            } @else {
                table.bots {
                    thead { tr { th { "Bot" } th { "Category" } th.n { "Violations" } } }
                    tbody {
                        @for b in &site.bots {
                            tr { td { (Text(&b.bot)) } td { (Text(&b.category)) } td.n { (thousands(b.violations)) } }
                        }
                    }
                }
            }
            @if !site.disguised_fingerprints.is_empty() {
                h3 { "TLS fingerprints (JA4) of disguised robots" }
                table.fingerprints {
                    thead { tr { th { "JA4" } th.n { "Violations" } } }
                    tbody {
                        @for f in &site.disguised_fingerprints {
                            tr {
                                td { code { (Text(&f.ja4)) } }
                                td.n { @if f.error > 0 { "≤ " } (thousands(f.violations)) }
                            }
                        }
                    }
                }
                @if site.disguised_fingerprints_floor > 0 {
                    p.note { "Any fingerprint not listed has at most " (thousands(site.disguised_fingerprints_floor)) " violations." }
                }
            }
            @if !site.hidden_noindex.is_empty() {
                h3 { "Noindex hidden by robots.txt" }
                p.note { "These pages say noindex, but robots.txt keeps the robot from fetching them: it never sees the noindex, and can keep the URL in its index." }
                table.hidden {
                    thead { tr { th { "Page" } th { "Robot" } th { "The page says" } th { "robots.txt" } th { "Seen" } } }
                    tbody {
                        @for h in &site.hidden_noindex {
                            tr {
                                td { (Text(&h.path)) } td { (Text(&h.robot)) } td { (Text(&h.said)) }
                                td { "line " (h.robots_line) ": Disallow: " (Text(&h.robots_pattern)) } td { (Text(&h.seen)) }
                            }
                        }
                    }
                }
            }
            h3 { "Last violations" }
            @if site.recent.is_empty() {
                p.note { "None since start." }
            } @else {
                table.recent {
                    thead {
                        tr {
                            th { "Time" } th { "Client" } th { "Bot" } th { "Request" } th { "Rule" } th { "Action" }
                            th.n { "Status" } th.n { "Count" } th { "User-Agent" }
                        }
                    }
                    tbody {
                        @for r in &site.recent {
                            (recent_row(r))
                        }
                    }
                }
            }
        }
    }
}

/// One violation of the ring.
fn recent_row(r: &Record) -> Markup {
    let rule = match (r.line, &r.pattern) {
        (Some(line), Some(p)) => format!("line {line}: {} {p}", r.directive),
        (Some(line), None) => format!("line {line}: {}", r.directive),
        (None, Some(p)) => format!("{} {p}", r.directive),
        (None, None) => r.directive.to_owned(),
    };
    html! {
        tr {
            td { (Text(&r.time)) }
            td { (Text(&r.client)) }
            td {
                (Text(r.bot.as_deref().unwrap_or("-")))
                @if let Some(i) = r.identity { " (" (i) ")" }
                br;
                span.note { (Text(r.category)) }
            }
            td.w { (Text(&r.method)) " " (Text(&r.path)) }
            td.w { (Text(&rule)) }
            td { (Text(r.action)) }
            td.n { (r.status) }
            td.n { (thousands(r.count)) }
            td.w { (Text(&r.user_agent)) }
        }
    }
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
            warnings: Vec::new(),
            state: StateStatus {
                backend: "redis",
                up: Some(false),
                url: Some("redis://:***@127.0.0.1:6379/0".into()),
                errors: 4,
            },
            feeds: vec![FeedStatus {
                name: "google-common-crawlers".into(),
                date: Some("2026-08-21T14:45:42.000000".into()),
                as_of: Some("2026-08-21T14:45:42.000Z".into()),
                age_seconds: Some(8_000_000),
                current: false,
                refresh_error: Some("<cannot resolve>".into()),
            }],
            sites: vec![SiteStatus {
                name: "shop".into(),
                robots_hash: "abc123".into(),
                loaded_at: "2026-11-23T09:00:00.000Z".into(),
                bots: vec![BotCount { bot: "GPTBot".into(), category: "ai-crawler".into(), violations: 1234 }],
                recent: vec![rec],
                hidden_noindex: Vec::new(),
                disguised_fingerprints: Vec::new(),
                disguised_fingerprints_floor: 0,
            }],
            paging: Paging { total: 1, page: 1, limit: 50, pages: 1 },
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
        assert!(html.contains("92 days") && html.contains("(older than the refresh interval)"), "the feed's age");
        assert!(html.contains("failed: &lt;cannot resolve&gt;"));
    }

    #[test]
    fn issue_26_a_hostile_user_agent_and_path_come_out_escaped() {
        let ua = "Evil<script>alert(\"ua\")</script>'&Bot/1.0";
        let path = "/p?<script>alert('path')</script>&q=\"x\"";
        let html = html(&view(ua, path));
        assert!(html.contains("Evil&lt;script&gt;alert(&quot;ua&quot;)&lt;/script&gt;&#39;&amp;Bot/1.0"), "{html}");
        assert!(html.contains("/p?&lt;script&gt;alert(&#39;path&#39;)&lt;/script&gt;&amp;q=&quot;x&quot;"), "{html}");
        assert!(!html.contains("<script"), "no script element at all");
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
