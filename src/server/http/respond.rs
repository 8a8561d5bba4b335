//! Writing what robotgate answers itself: the core's [`Plan`]
//! ([`crate::pipeline::answer`]) as Pingora's response, and the answers
//! built once per snapshot ([`Prebuilt`]). Nothing here words a body or
//! picks a header.

use bytes::Bytes;
use pingora::http::{Method, ResponseHeader};
use pingora::proxy::Session;
use pingora::Result;

use super::gate::Gate;
use crate::pipeline::answer::{Conditional, Plan};
pub use crate::server::snapshot::answer::Reader;
use crate::server::snapshot::answer::{build, Prebuilt};

/// Whether the answer to this request carries no body: `HEAD`, or a 304.
fn no_body(session: &Session, status: u16) -> bool {
    session.req_header().method == Method::HEAD || status == 304
}

/// Write `resp` and then `body`, ending the response. `Content-Length` is
/// set, so keep-alive survives; for `HEAD` and a 304 only the header is sent.
async fn write(session: &mut Session, resp: Box<ResponseHeader>, body: Bytes) -> Result<()> {
    let no_body = no_body(session, resp.status.as_u16());
    session.write_response_header(resp, no_body).await?;
    if !no_body {
        session.write_response_body(Some(body), true).await?;
    }
    Ok(())
}

/// Write `plan` for `to`, and close the connection after it when `close`
/// (a request read two ways leaves the connection out of step). Returns
/// the status sent.
pub async fn send(session: &mut Session, plan: Plan<'_>, to: Reader, close: bool) -> Result<u16> {
    let (mut resp, body) = build(plan, to)?;
    let close = close && to == Reader::Client;
    if close {
        resp.insert_header("connection", "close")?;
    }
    let status = resp.status.as_u16();
    write(session, Box::new(resp), body).await?;
    if close {
        session.set_keepalive(None);
    }
    Ok(status)
}

/// Answer with a prebuilt response, with `Accept-Signature` when the plan
/// asks for it. Returns the status sent.
pub async fn send_prebuilt(session: &mut Session, answer: &Prebuilt, signature: bool) -> Result<u16> {
    let mut header = answer.header.clone();
    if signature {
        header.insert_header("accept-signature", crate::pipeline::answer::ACCEPT_SIGNATURE)?;
    }
    write(session, Box::new(header), answer.body.clone()).await?;
    Ok(answer.status())
}

/// Answer 400 with `why`, and close the connection when the client reads
/// it. Returns `Ok(true)`, answered.
pub async fn bad_request(
    session: &mut Session,
    ctx: &mut super::gate::Ctx,
    why: impl std::fmt::Display,
    to: Reader,
) -> Result<bool> {
    ctx.status = 400;
    send(session, Plan::refuse(400, &why.to_string()), to, true).await?;
    Ok(true)
}

/// Answer 421: no site has the request's host. Returns `Ok(true)`, answered.
pub async fn no_site(session: &mut Session, to: Reader) -> Result<bool> {
    send(session, Plan::no_site(), to, false).await?;
    Ok(true)
}

/// What a conditional request says it has. Looked up by the standard
/// names' constants: a name given as text is parsed again at each lookup.
pub fn conditional(headers: &http::HeaderMap) -> Conditional<'_> {
    Conditional {
        if_none_match: headers.get(http::header::IF_NONE_MATCH).map(|v| v.as_bytes()),
        if_modified_since: headers.get(http::header::IF_MODIFIED_SINCE).map(|v| v.as_bytes()),
    }
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
