//! The answers robotgate gives itself without asking the origin (block
//! pages, alternate content, redirects), built once per snapshot.

use std::collections::HashMap;
use std::path::PathBuf;

use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::Result;

use crate::load::ServedFile;
use crate::policy::Action;

/// The head of a complete response: status, `Content-Type`, `Content-Length`
/// and `extra`. Without a case map ([`ResponseHeader::build_no_case`]): the
/// names are lowercase either way, so the bytes on the wire are the same, and
/// building and cloning it is cheaper.
pub fn head(status: u16, content_type: &str, len: usize, extra: &[(&'static str, &str)]) -> Result<ResponseHeader> {
    let mut resp = ResponseHeader::build_no_case(status, Some(2 + extra.len()))?;
    resp.insert_header("content-type", content_type)?;
    resp.insert_header("content-length", len)?;
    for (name, value) in extra {
        resp.insert_header(*name, *value)?;
    }
    Ok(resp)
}

/// A refusal that is the same for every request it answers (a block page,
/// alternate content, a redirect), built once when the snapshot loads and
/// cloned per request: cloning the header copies a few pointers and bumps
/// reference counts, where building it parses and copies every value, and
/// the body is shared.
#[derive(Debug, Clone)]
pub struct Prebuilt {
    /// Status, `Content-Type`, `Content-Length` and the action's own headers.
    pub header: ResponseHeader,
    /// The body, shared between requests.
    pub body: Bytes,
}

impl Prebuilt {
    /// A response of `status` with `body`, typed `content_type`, and `extra` headers.
    ///
    /// # Errors
    /// A status or a header value HTTP does not allow (the config validates both).
    pub fn new(status: u16, content_type: &str, extra: &[(&'static str, &str)], body: Bytes) -> Result<Prebuilt> {
        Ok(Prebuilt { header: head(status, content_type, body.len(), extra)?, body })
    }

    /// The status it answers with.
    pub fn status(&self) -> u16 {
        self.header.status.as_u16()
    }
}

/// What robotgate answers `action` with, when it answers it itself: the
/// block page or file, the alternate content, the redirect. `None` for the
/// actions that forward (noindex, log), and for a file that was not loaded
/// (a problem already).
pub fn prebuild(action: &Action, alternates: &HashMap<PathBuf, ServedFile>) -> Option<Result<Prebuilt, String>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    let file = |path: &PathBuf| alternates.get(path).map(|f| f.body.clone());
    let no_store = [("cache-control", "no-store")];
    let built = match action {
        Action::Block { status, file: Some((path, ct)), .. } => Prebuilt::new(*status, ct, &no_store, file(path)?),
        Action::Block { status, body, file: None } => {
            Prebuilt::new(*status, TEXT, &no_store, Bytes::from(body.clone()))
        }
        Action::Alternate { status, file: path, content_type } => {
            Prebuilt::new(*status, content_type, &no_store, file(path)?)
        }
        Action::Redirect { status, location } => {
            Prebuilt::new(*status, TEXT, &[("location", location.as_str())], Bytes::from_static(b"Moved\n"))
        }
        Action::Noindex { .. } | Action::Log => return None,
    };
    Some(built.map_err(|e| e.to_string()))
}
