//! Responses robotgate writes itself: robots.txt, humans.txt, block pages,
//! alternate content, redirects, 429s and upstream errors.

use bytes::Bytes;
use pingora::http::{Method, ResponseHeader};
use pingora::proxy::Session;
use pingora::Result;

use super::snapshot::ServedFile;

/// Write a complete response. Always sets `Content-Length`, so keep-alive
/// survives; for `HEAD` only the header is sent.
pub async fn send(
    session: &mut Session,
    status: u16,
    content_type: &str,
    extra: &[(&'static str, String)],
    body: Bytes,
) -> Result<()> {
    let mut resp = ResponseHeader::build(status, Some(4 + extra.len()))?;
    resp.insert_header("content-type", content_type.to_owned())?;
    resp.insert_header("content-length", body.len())?;
    for (name, value) in extra {
        resp.insert_header(*name, value.as_str())?;
    }
    let head = session.req_header().method == Method::HEAD;
    let no_body = head || status == 304;
    session.write_response_header(Box::new(resp), no_body).await?;
    if !no_body {
        session.write_response_body(Some(body), true).await?;
    }
    Ok(())
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
        send(session, 304, content_type, &headers, Bytes::new()).await?;
        return Ok(304);
    }
    send(session, 200, content_type, &headers, file.body.clone()).await?;
    Ok(200)
}
