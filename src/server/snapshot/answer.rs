//! The answers robotgate gives itself without asking the origin (block
//! pages, alternate content, redirects), built once per snapshot.

use std::collections::HashMap;
use std::path::PathBuf;

use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::Result;

use crate::load::ServedFile;
use crate::pipeline::answer::{Body, Plan};
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
    /// The status it answers with.
    pub fn status(&self) -> u16 {
        self.header.status.as_u16()
    }
}

/// What robotgate answers `action` with, when it answers it itself (the
/// core's [`Plan::refusal`]), written once for each reader: the client's,
/// then the edge's ([`crate::server::http::respond::Reader`]). `None` for the
/// actions that forward (noindex, log), and for a file that was not loaded
/// (a problem already).
pub fn prebuild(action: &Action, alternates: &HashMap<PathBuf, ServedFile>) -> Option<Result<[Prebuilt; 2], String>> {
    let plan = Plan::refusal(action, alternates)?;
    let built = |to| build(plan.clone(), to).map(|(header, body)| Prebuilt { header, body });
    Some(built(Reader::Client).and_then(|c| Ok([c, built(Reader::Edge)?])).map_err(|e| e.to_string()))
}

/// Who reads an answer: the client itself, or an edge proxy that asked the
/// auth listener on the client's behalf (`crate::server::http::auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The client: the answer goes out as it is.
    Client,
    /// An edge proxy's authorisation subrequest: the plan as
    /// [`Plan::for_edge`] makes it.
    Edge,
}

/// The bytes of a plan's body: a file's shared, text copied once.
pub fn body_bytes(body: Body<'_>) -> Bytes {
    match body {
        Body::File(f) => f.body.clone(),
        Body::Text(std::borrow::Cow::Borrowed(t)) => Bytes::copy_from_slice(t.as_bytes()),
        Body::Text(std::borrow::Cow::Owned(t)) => Bytes::from(t),
    }
}

/// A plan as Pingora's response head and body, for `to`.
///
/// # Errors
/// A status or header value HTTP does not allow (the config validates them).
pub fn build(plan: Plan<'_>, to: Reader) -> Result<(ResponseHeader, Bytes)> {
    let plan = if to == Reader::Edge { plan.for_edge() } else { plan };
    let body = body_bytes(plan.body);
    let mut resp = head(plan.status, plan.content_type, body.len(), &[])?;
    for (name, value) in &plan.headers {
        resp.append_header(*name, value.as_ref())?;
    }
    Ok((resp, body))
}
