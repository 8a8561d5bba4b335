//! Responses robotgate writes itself: robots.txt, humans.txt, block pages,
//! alternate content, redirects, 429s and upstream errors.

use bytes::Bytes;
use pingora::http::{Method, ResponseHeader};
use pingora::proxy::Session;
use pingora::Result;

use super::gate::Gate;
use crate::load::ServedFile;
use crate::server::snapshot::answer::{head, Prebuilt};

/// Whether the answer to this request carries no body: `HEAD`, or a 304.
fn no_body(session: &Session, status: u16) -> bool {
    session.req_header().method == Method::HEAD || status == 304
}

/// Who reads an answer: the client itself, or an edge proxy that asked the
/// auth listener on the client's behalf (`super::auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The client: the answer goes out as it is.
    Client,
    /// An edge proxy's authorisation subrequest: see [`for_edge`].
    Edge,
}

/// Make a refusal fit an authorisation subrequest: `X-Robotgate-Status`
/// carries the action's own status, for an edge (nginx `auth_request`) that
/// passes on only 401 and 403 and must map the rest itself; and a refusal
/// with a 2xx status (an `alternate` page) goes out as 403, because to every
/// edge a 2xx answer means "let the request through".
pub fn for_edge(resp: &mut ResponseHeader) -> Result<()> {
    let status = resp.status.as_u16();
    resp.insert_header("x-robotgate-status", status)?;
    if (200..300).contains(&status) {
        resp.set_status(403)?;
    }
    Ok(())
}

/// Write `resp` and then `body`, ending the response. `Content-Length` is
/// set, so keep-alive survives; for `HEAD` only the header is sent.
async fn write(session: &mut Session, mut resp: Box<ResponseHeader>, body: Bytes, to: Reader) -> Result<()> {
    if to == Reader::Edge {
        for_edge(&mut resp)?;
    }
    let no_body = no_body(session, resp.status.as_u16());
    session.write_response_header(resp, no_body).await?;
    if !no_body {
        session.write_response_body(Some(body), true).await?;
    }
    Ok(())
}

/// Write a complete response. Always sets `Content-Length`, so keep-alive
/// survives; for `HEAD` only the header is sent.
pub async fn send(
    session: &mut Session,
    status: u16,
    content_type: &str,
    extra: &[(&'static str, String)],
    body: Bytes,
    to: Reader,
) -> Result<()> {
    let mut resp = head(status, content_type, body.len(), &[])?;
    for (name, value) in extra {
        resp.insert_header(*name, value.as_str())?;
    }
    write(session, Box::new(resp), body, to).await
}

/// Answer with a prebuilt response. Returns the status sent.
pub async fn send_prebuilt(session: &mut Session, answer: &Prebuilt, to: Reader) -> Result<u16> {
    send_prebuilt_with(session, answer, None, to).await
}

/// [`send_prebuilt`] with one more header (`Accept-Signature` on a refused
/// claim of a signing robot).
pub async fn send_prebuilt_with(
    session: &mut Session,
    answer: &Prebuilt,
    extra: Option<(&'static str, &'static str)>,
    to: Reader,
) -> Result<u16> {
    let mut header = answer.header.clone();
    if let Some((name, value)) = extra {
        header.insert_header(name, value)?;
    }
    write(session, Box::new(header), answer.body.clone(), to).await?;
    Ok(answer.status())
}

/// `Accept-Signature` (RFC 9421 5.1) as draft-meunier-webbotauth-httpsig-protocol
/// asks of a Web Bot Auth signature: the target's authority and the
/// `Signature-Agent` field covered, `created` and `expires` given, tagged
/// `web-bot-auth`. Sent with the 403 for a claimed robot that signs, so it
/// can retry with a signature.
pub const ACCEPT_SIGNATURE: &str = "sig1=(\"@authority\" \"signature-agent\");created;expires;tag=\"web-bot-auth\"";

/// Answer 429 to a crawler over its robots.txt rate: `Retry-After` in whole
/// seconds (at least 1), and a body naming the directive and its line. The
/// numbers go into the header without the formatter; the body is written
/// into one buffer of its final size.
///
/// With the group's interval, also `RateLimit-Policy` and `RateLimit`
/// (draft-ietf-httpapi-ratelimit-headers): a policy named after the
/// directive, one request (`q=1`) per window of the interval (`w`, whole
/// seconds, rounded up), none left (`r=0`) for `t` seconds.
pub async fn too_many_requests(
    session: &mut Session,
    retry_after: u64,
    directive: &str,
    line: u32,
    interval: Option<std::time::Duration>,
    to: Reader,
) -> Result<()> {
    use std::io::Write;
    const BEFORE: &str = "Too Many Requests: this site's robots.txt asks your crawler to slow down (";
    let mut body = Vec::with_capacity(BEFORE.len() + directive.len() + 20);
    // Writing into a Vec cannot fail.
    let _ = writeln!(body, "{BEFORE}{directive}, line {line}).");
    let mut resp = head(429, "text/plain; charset=utf-8", body.len(), &[])?;
    resp.insert_header("retry-after", retry_after.max(1))?;
    if let Some(interval) = interval {
        let window = interval.as_secs() + u64::from(interval.subsec_nanos() > 0);
        resp.insert_header("ratelimit-policy", format!("\"{directive}\";q=1;w={}", window.max(1)))?;
        resp.insert_header("ratelimit", format!("\"{directive}\";r=0;t={}", retry_after.max(1)))?;
    }
    write(session, Box::new(resp), Bytes::from(body), to).await
}

/// Answer 400 with `why`, and close the connection when the client reads
/// it (a request read two ways leaves the connection out of step). Returns
/// `Ok(true)`, answered.
pub async fn bad_request(
    session: &mut Session,
    ctx: &mut super::gate::Ctx,
    why: impl std::fmt::Display,
    to: Reader,
) -> Result<bool> {
    ctx.status = 400;
    let body = Bytes::from(format!("{why}\n"));
    let close: &[_] = if to == Reader::Edge { &[] } else { &[("connection", "close".into())] };
    send(session, 400, "text/plain; charset=utf-8", close, body, to).await?;
    if to == Reader::Client {
        session.set_keepalive(None);
    }
    Ok(true)
}

/// Answer 421: no site has the request's host. Returns `Ok(true)`, answered.
pub async fn no_site(session: &mut Session, to: Reader) -> Result<bool> {
    let body = Bytes::from_static(crate::config::NO_SITE_BODY.as_bytes());
    send(session, crate::config::NO_SITE_STATUS, "text/plain; charset=utf-8", &[], body, to).await?;
    Ok(true)
}

/// Whether a conditional request already has this version
/// (`If-None-Match` wins over `If-Modified-Since`, RFC 9110 13.2.2).
pub fn not_modified(session: &Session, file: &ServedFile) -> bool {
    let req = session.req_header();
    if let Some(inm) = req.headers.get("if-none-match").and_then(|v| v.to_str().ok()) {
        return inm.split(',').map(str::trim).any(|t| t == "*" || t.trim_start_matches("W/") == file.etag);
    }
    if let Some(ims) = req.headers.get("if-modified-since").and_then(|v| v.to_str().ok()) {
        if let (Ok(since), Ok(modified)) =
            (httpdate::parse_http_date(ims), httpdate::parse_http_date(&file.last_modified))
        {
            return modified <= since;
        }
    }
    false
}

/// Serve robots.txt or humans.txt with validators, answering 304 when the
/// client has the current version. Returns the status sent.
pub async fn serve_file(session: &mut Session, file: &ServedFile, content_type: &str) -> Result<u16> {
    let headers = [
        ("etag", file.etag.clone()),
        ("last-modified", file.last_modified.clone()),
        // Crawlers cache robots.txt for up to a day; keep browsers honest about edits.
        ("cache-control", "public, max-age=300".to_owned()),
    ];
    if not_modified(session, file) {
        send(session, 304, content_type, &headers, Bytes::new(), Reader::Client).await?;
        return Ok(304);
    }
    send(session, 200, content_type, &headers, file.body.clone(), Reader::Client).await?;
    Ok(200)
}

impl Gate {
    /// Who reads this service's answers.
    pub(super) fn reader(&self) -> Reader {
        if self.auth {
            Reader::Edge
        } else {
            Reader::Client
        }
    }
}
