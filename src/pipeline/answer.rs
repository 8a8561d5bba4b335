//! The one answer robotgate writes itself (issue #54): from an
//! [`Enforcement`], the status, every header and the body, and the one list
//! of what a decision counts. The proxy, the auth listener's hand-back and
//! the nginx module only write the [`Plan`] and add the [`Counts`]: none of
//! them words a body, picks a header or decides what counts.
//!
//! What is not in a plan is the hosts' own business: `Content-Length` (each
//! writes the body it is given), `Connection` (the proxy's, on a refused
//! request it read two ways), and what a pass adds to the origin's answer
//! ([`pass_headers`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::agent::Category;
use crate::load::{LiveSite, ServedFile};
use crate::policy::{Action, Decision, Enforcement, Outcome, SiteFile};

/// `text/plain; charset=utf-8`: robotgate's own words.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// `Accept-Signature` (RFC 9421 5.1) as draft-meunier-webbotauth-httpsig-protocol
/// asks of a Web Bot Auth signature: the target's authority and the
/// `Signature-Agent` field covered, `created` and `expires` given, tagged
/// `web-bot-auth`. Sent with the refusal of a claimed robot that signs, so
/// it can retry with a signature.
pub const ACCEPT_SIGNATURE: &str = "sig1=(\"@authority\" \"signature-agent\");created;expires;tag=\"web-bot-auth\"";

/// The body of a redirect.
pub const MOVED: &str = "Moved\n";

/// The start of a 429's body (the directive and its line follow).
const SLOW_DOWN: &str = "Too Many Requests: this site's robots.txt asks your crawler to slow down (";

/// A response robotgate writes itself. Header names are lower case.
#[derive(Debug, Clone)]
pub struct Plan<'a> {
    /// The status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'a str,
    /// Every other header, in order (`Content-Length` is the writer's).
    pub headers: Vec<(&'static str, Cow<'a, str>)>,
    /// The body (none is sent for `HEAD` or a 304: the writer's rule).
    pub body: Body<'a>,
}

/// What a [`Plan`] answers with.
#[derive(Debug, Clone)]
pub enum Body<'a> {
    /// Text robotgate words.
    Text(Cow<'a, str>),
    /// One of the site's files, shared (robots.txt, humans.txt, an alternate page).
    File(&'a ServedFile),
}

impl Body<'_> {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Body::Text(t) => t.as_bytes(),
            Body::File(f) => &f.body,
        }
    }
}

/// What a conditional request says it has (RFC 9110 13.1), as sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Conditional<'r> {
    /// `If-None-Match`.
    pub if_none_match: Option<&'r [u8]>,
    /// `If-Modified-Since`.
    pub if_modified_since: Option<&'r [u8]>,
}

impl Conditional<'_> {
    /// Whether the client already has `file` (`If-None-Match` wins over
    /// `If-Modified-Since`, RFC 9110 13.2.2). Cost: one pass over the header.
    pub fn has(&self, file: &ServedFile) -> bool {
        if let Some(inm) = self.if_none_match {
            let Ok(inm) = std::str::from_utf8(inm) else { return false };
            return inm.split(',').map(str::trim).any(|t| t == "*" || t.trim_start_matches("W/") == file.etag);
        }
        if let Some(ims) = self.if_modified_since.and_then(|v| std::str::from_utf8(v).ok()) {
            if let (Ok(since), Ok(modified)) =
                (httpdate::parse_http_date(ims), httpdate::parse_http_date(&file.last_modified))
            {
                return modified <= since;
            }
        }
        false
    }
}

impl<'a> Plan<'a> {
    /// The answer of a request refused before judging: `status`, `why`.
    pub fn refuse(status: u16, why: &str) -> Plan<'static> {
        Plan {
            status,
            content_type: TEXT,
            headers: vec![("cache-control", Cow::Borrowed("no-store"))],
            body: Body::Text(Cow::Owned(format!("{why}\n"))),
        }
    }

    /// The answer to a request for a host no site has (and no site is the default).
    pub fn no_site() -> Plan<'static> {
        Plan {
            status: crate::config::NO_SITE_STATUS,
            content_type: TEXT,
            headers: vec![("cache-control", Cow::Borrowed("no-store"))],
            body: Body::Text(Cow::Borrowed(crate::config::NO_SITE_BODY)),
        }
    }

    /// The answer when the origin failed: 502 (refused, reset), 504 (timed
    /// out), or another status the proxy could not complete the request with.
    pub fn upstream_failed(status: u16) -> Plan<'static> {
        let body = match status {
            502 => "Bad Gateway: the origin server could not be reached.\n",
            504 => "Gateway Timeout: the origin server did not answer in time.\n",
            _ => "The request could not be completed.\n",
        };
        Plan {
            status,
            content_type: TEXT,
            headers: vec![("cache-control", Cow::Borrowed("no-store"))],
            body: Body::Text(Cow::Borrowed(body)),
        }
    }

    /// The answer of a refusing action (`block`, `alternate`, `redirect`),
    /// the same for every request it answers (so a host may build it once
    /// per snapshot); `None` for the actions that pass, and for a file that
    /// was not loaded (a problem the load reported already).
    pub fn refusal(action: &'a Action, alternates: &'a HashMap<PathBuf, ServedFile>) -> Option<Plan<'a>> {
        let no_store = || vec![("cache-control", Cow::Borrowed("no-store"))];
        Some(match action {
            Action::Block { status, file: Some((path, ct)), .. } => {
                Plan { status: *status, content_type: ct, headers: no_store(), body: Body::File(alternates.get(path)?) }
            }
            Action::Block { status, body, file: None } => {
                Plan { status: *status, content_type: TEXT, headers: no_store(), body: Body::Text(Cow::Borrowed(body)) }
            }
            Action::Alternate { status, file, content_type } => {
                Plan { status: *status, content_type, headers: no_store(), body: Body::File(alternates.get(file)?) }
            }
            Action::Redirect { status, location } => Plan {
                status: *status,
                content_type: TEXT,
                headers: vec![("cache-control", Cow::Borrowed("no-store")), ("location", Cow::Borrowed(location))],
                body: Body::Text(Cow::Borrowed(MOVED)),
            },
            Action::Noindex { .. } | Action::Log => return None,
        })
    }

    /// 429 to a crawler over its robots.txt rate: `Retry-After` in whole
    /// seconds (at least 1), and a body naming the directive and its line.
    /// With the group's interval, also `RateLimit-Policy` and `RateLimit`
    /// (draft-ietf-httpapi-ratelimit-headers): a policy named after the
    /// directive, one request (`q=1`) per window of the interval (`w`, whole
    /// seconds, rounded up), none left (`r=0`) for `t` seconds.
    pub fn too_many_requests(
        retry_after: u64,
        directive: &str,
        line: u32,
        interval: Option<Duration>,
    ) -> Plan<'static> {
        let retry_after = retry_after.max(1);
        let mut headers =
            vec![("cache-control", Cow::Borrowed("no-store")), ("retry-after", retry_after.to_string().into())];
        if let Some(interval) = interval {
            let window = (interval.as_secs() + u64::from(interval.subsec_nanos() > 0)).max(1);
            headers.push(("ratelimit-policy", format!("\"{directive}\";q=1;w={window}").into()));
            headers.push(("ratelimit", format!("\"{directive}\";r=0;t={retry_after}").into()));
        }
        let body = format!("{SLOW_DOWN}{directive}, line {line}).\n");
        Plan { status: 429, content_type: TEXT, headers, body: Body::Text(body.into()) }
    }

    /// robots.txt or humans.txt with its validators, or 304 when the client
    /// has this version.
    pub fn file(file: &'a ServedFile, has: Conditional<'_>) -> Plan<'a> {
        let headers = vec![
            ("etag", Cow::Borrowed(file.etag.as_str())),
            ("last-modified", Cow::Borrowed(file.last_modified.as_str())),
            // Crawlers cache robots.txt for up to a day; keep browsers honest about edits.
            ("cache-control", Cow::Borrowed("public, max-age=300")),
        ];
        if has.has(file) {
            return Plan { status: 304, content_type: TEXT, headers, body: Body::Text(Cow::Borrowed("")) };
        }
        Plan { status: 200, content_type: TEXT, headers, body: Body::File(file) }
    }

    /// What robotgate answers `enforcement` with, when it answers itself;
    /// `None` when the origin answers (a pass, or a site file that was not
    /// loaded). `signature`: the refusal asks for a signature
    /// ([`crate::pipeline::Pipeline::asks_for_signature`]).
    pub fn of(
        enforcement: Enforcement<'a>,
        site: &'a LiveSite,
        signature: bool,
        has: Conditional<'_>,
    ) -> Option<Plan<'a>> {
        match enforcement {
            Enforcement::Pass { .. } => None,
            Enforcement::File(which) => Some(Plan::file(site_file(site, which)?, has)),
            Enforcement::Answer(action) => {
                let mut plan = Plan::refusal(action, &site.alternates)?;
                if signature {
                    plan.headers.push(("accept-signature", Cow::Borrowed(ACCEPT_SIGNATURE)));
                }
                Some(plan)
            }
            Enforcement::TooManyRequests { retry_after, directive, line, interval } => {
                Some(Plan::too_many_requests(retry_after, directive, line, interval))
            }
        }
    }

    /// The plan as an edge's authorisation subrequest reads it (nginx
    /// `auth_request`, Caddy `forward_auth`): `X-Robotgate-Status` carries
    /// the plan's own status, for an edge that passes on only 401 and 403
    /// and maps the rest itself; and a 2xx answer (an `alternate` page) goes
    /// out as 403, because to every edge a 2xx answer means "let it through".
    pub fn for_edge(mut self) -> Plan<'a> {
        self.headers.push(("x-robotgate-status", Cow::Owned(self.status.to_string())));
        if (200..300).contains(&self.status) {
            self.status = 403;
        }
        self
    }
}

/// The site's `which` file, if loaded.
pub fn site_file(site: &LiveSite, which: SiteFile) -> Option<&ServedFile> {
    match which {
        SiteFile::Robots => site.robots.as_ref().map(|r| &r.file),
        SiteFile::Humans => site.humans.as_ref(),
    }
}

/// The `X-Robots-Tag` values a pass adds to the origin's answer, beside
/// the origin's own: the `noindex` action's, then the site's indexing
/// rules' for the target. An answer robotgate writes itself carries none.
pub fn pass_headers<'a>(noindex: Option<&'a str>, indexing: Vec<String>) -> impl Iterator<Item = Cow<'a, str>> {
    noindex.map(Cow::Borrowed).into_iter().chain(indexing.into_iter().map(Cow::Owned))
}

/// The answer of an edge's subrequest that lets the request through: the
/// headers of a `200` without a body. Each `X-Robots-Tag` value for the
/// edge to copy ([`pass_headers`]), once as itself and once in a header of
/// its own, `X-Robotgate-Robots-Tag-1`, `-2`, ...: an edge's variable holds
/// one value of a header (nginx's `$upstream_http_…` the first).
pub fn edge_pass<'a>(tags: impl Iterator<Item = Cow<'a, str>>) -> Vec<(Cow<'static, str>, Cow<'a, str>)> {
    let mut out = Vec::new();
    for (i, value) in tags.enumerate() {
        out.push((Cow::Owned(format!("x-robotgate-robots-tag-{}", i + 1)), value.clone()));
        out.push((Cow::Borrowed("x-robots-tag"), value));
    }
    out
}

/// What one decision counts, the one list every host adds to its counters
/// (labels: the site's name and these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// `robotgate_preferences_total{site, result}`.
    pub preference: Option<&'static str>,
    /// `robotgate_files_served_total{site, file}`: only a file robotgate
    /// answered with (not one that was not loaded, nor one the edge serves).
    pub file: Option<SiteFile>,
    /// `robotgate_requests_total{site, category}`: every classified
    /// request but a served file's.
    pub request: Option<Category>,
    /// A record is to be made (and its [`Decision::tally`] counted): a
    /// classified request with an outcome other than a pass.
    pub record: bool,
    /// The decision's time is observed in `robotgate_decision_seconds`
    /// ([`crate::metric::DECISION_SECONDS`]): a robot's request, or one that
    /// makes a record (not a browser's pass, nor a served file).
    pub timed: bool,
}

impl Counts {
    /// What `d` counts; `served`: whether the host answered with the site
    /// file the decision named.
    pub fn of(d: &Decision<'_, '_>, served: bool) -> Counts {
        let preference = match d.outcome {
            _ if d.preference_unknown => Some("preference-unknown"),
            Outcome::Refused(_) => Some("refused"),
            _ => None,
        };
        if let Outcome::File(which) = d.outcome {
            // robots.txt: classified only to remember the read.
            return Counts { preference, file: served.then_some(which), request: None, record: false, timed: false };
        }
        let Some(agent) = d.agent.as_ref() else { return Counts { preference, ..Counts::default() } };
        let record = !matches!(d.outcome, Outcome::Pass);
        let timed = record || agent.is_bot();
        Counts { preference, file: None, request: Some(agent.category), record, timed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn file(body: &str) -> ServedFile {
        ServedFile::new(body.as_bytes().to_vec(), SystemTime::UNIX_EPOCH)
    }

    fn header<'p>(plan: &'p Plan<'_>, name: &str) -> Option<&'p str> {
        plan.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_ref())
    }

    #[test]
    fn every_refusal_is_not_stored_and_a_redirect_has_a_body() {
        let alternates = HashMap::from([(PathBuf::from("/a.html"), file("<p>other</p>"))]);
        let block = Action::Block { status: 403, body: "no\n".into(), file: None };
        let alternate = Action::Alternate { status: 200, file: "/a.html".into(), content_type: "text/html".into() };
        let redirect = Action::Redirect { status: 302, location: "/elsewhere".into() };
        for action in [&block, &alternate, &redirect] {
            let plan = Plan::refusal(action, &alternates).unwrap();
            assert_eq!(header(&plan, "cache-control"), Some("no-store"), "{action:?}");
            assert_eq!(Some(plan.status), action.status());
        }
        let plan = Plan::refusal(&redirect, &alternates).unwrap();
        assert_eq!((header(&plan, "location"), plan.body.bytes()), (Some("/elsewhere"), MOVED.as_bytes()));
        assert_eq!(Plan::refusal(&alternate, &alternates).unwrap().body.bytes(), b"<p>other</p>");
        let missing = Action::Alternate { status: 200, file: "/gone".into(), content_type: "text/html".into() };
        assert!(Plan::refusal(&missing, &alternates).is_none());
        assert!(Plan::refusal(&Action::Log, &alternates).is_none());
        // For an edge: the status in a header, a 2xx as 403.
        let edge = Plan::refusal(&alternate, &alternates).unwrap().for_edge();
        assert_eq!((edge.status, header(&edge, "x-robotgate-status")), (403, Some("200")));
    }

    #[test]
    fn a_429_names_its_directive_and_window() {
        let plan = Plan::too_many_requests(0, "crawl-delay", 4, Some(Duration::from_millis(2_500)));
        assert_eq!(plan.status, 429);
        assert_eq!(header(&plan, "retry-after"), Some("1"));
        assert_eq!(header(&plan, "ratelimit-policy"), Some("\"crawl-delay\";q=1;w=3"));
        assert_eq!(header(&plan, "ratelimit"), Some("\"crawl-delay\";r=0;t=1"));
        let body = std::str::from_utf8(plan.body.bytes()).unwrap();
        assert!(body.ends_with("(crawl-delay, line 4).\n"), "{body}");
        assert!(header(&Plan::too_many_requests(3, "visit-time", 1, None), "ratelimit").is_none());
    }

    #[test]
    fn a_file_is_304_to_a_client_that_has_it() {
        let f = file("User-agent: *\n");
        assert_eq!(Plan::file(&f, Conditional::default()).status, 200);
        let etag = f.etag.clone();
        let has = Conditional { if_none_match: Some(etag.as_bytes()), if_modified_since: None };
        assert_eq!(Plan::file(&f, has).status, 304);
        let stale = Conditional { if_none_match: Some(b"\"other\""), if_modified_since: None };
        assert_eq!(Plan::file(&f, stale).status, 200);
        let garbage = Conditional { if_none_match: Some(b"\xff"), if_modified_since: Some(b"\xff") };
        assert_eq!(Plan::file(&f, garbage).status, 200);
    }
}
