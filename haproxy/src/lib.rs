//! robotgate inside HAProxy (issue #69): a native Lua module, `robotgate.so`,
//! that HAProxy's Lua 5.3 loads with `require "robotgate"`, and that decides
//! each request on robotgate's core pipeline ([`robotgate::pipeline`]) in
//! an `http-request lua.robotgate` action, on HAProxy's own threads: no
//! exchange with another process.
//!
//! ```text
//! global
//!     setenv ROBOTGATE_CONFIG /etc/robotgate/robotgate.yaml
//!     lua-prepend-path /usr/lib/robotgate/haproxy/?.so cpath
//!     lua-load-per-thread /etc/haproxy/robotgate.lua
//! frontend www
//!     http-request lua.robotgate
//!     http-response lua.robotgate-response
//! ```
//!
//! The Lua file (examples/edge/robotgate.lua) loads robotgate.yaml once for
//! the process, however many threads load the file; one that does not load
//! is a Lua error in the file's body, and HAProxy does not start. Its action
//! hands the module HAProxy's own facts (`src`, `method`, `pathq`,
//! `req.hdrs_bin`, `ssl_fc`) and writes the answer the module plans with
//! HAProxy's `txn:reply()`; a pass's `X-Robots-Tag` and `Content-Usage` go
//! on the origin's answer in the response action. A claim only reverse DNS
//! can settle parks the action: it sleeps (`core.msleep`, which yields to
//! HAProxy's scheduler) until a helper thread has the answer.
//!
//! [`request`] is the module's one decision, from those facts; the Lua
//! glue is [`lua`].

#[cfg(not(test))]
mod lua;

use std::time::Instant;

use robotgate::metric;
use robotgate::net::spop::hdrs_bin;
use robotgate::pipeline::answer::Plan;
use robotgate::state::State;
use robotgate_embed::decide::{decide, Answer, Fields, Line};
use robotgate_embed::park::Waited;
use robotgate_embed::Module;

/// What the crowd check says, at most hourly ([`robotgate::state::crowd::Crowd::tick`]).
pub const CROWD_WARNING: &str = "over 90% of the last minute's requests came from loopback or private addresses with a forwarding header of their own: every client looks like the proxy in front of HAProxy. Name the client from that proxy's header with `http-request set-src` (for its address only) before `lua.robotgate`; until then robots cannot be verified, and trap hits from its address ban no one";

/// HAProxy's facts of one request, as the Lua action fetches them.
pub struct Facts<'r> {
    /// `src`: the connection's peer, or what `http-request set-src` made
    /// it; `None` when HAProxy has none (a UNIX socket).
    pub src: Option<&'r [u8]>,
    /// `method`.
    pub method: &'r [u8],
    /// `pathq`: path and query, as sent (an absolute-form target's too).
    pub pathq: &'r [u8],
    /// `req.hdrs_bin`: every header, in order.
    pub headers: &'r [u8],
    /// `ssl_fc`: the client reached HAProxy over TLS.
    pub https: bool,
}

/// Decide `facts` with `module` (its snapshot in force and shared state),
/// with `waited`, the answer of the lookup it was parked for. HAProxy has
/// no stats a module can count in: the decision is counted in the module's
/// own tables ([`Module::metrics`], served by `gate:metrics()`), with its
/// time from here.
pub fn request<'s>(
    module: &Module,
    snap: &'s robotgate::load::Snapshot,
    facts: &Facts<'_>,
    waited: Option<Waited>,
) -> Answer<'s> {
    // HAProxy's own block; one it could not have written is refused, never
    // passed undecided.
    let Ok(all) = hdrs_bin(facts.headers) else {
        return Answer::Plan(Plan::refuse(400, "Bad Request: the request's headers could not be read"));
    };
    let fields = Fields { all: &all };
    // HTTP/1's `Host`; HTTP/2's `:authority`, which HAProxy keeps as `host`.
    let host = fields.first(b"host").unwrap_or(b"");
    let line = Line { method: facts.method, target: facts.pathq, host, https: facts.https };
    let client = facts.src.and_then(|s| std::str::from_utf8(s).ok()).and_then(|s| s.parse().ok());
    let (started, metrics) = (Instant::now(), &module.metrics);
    let count = |family: &'static str, values: &[&str]| {
        if family == metric::DECISION_SECONDS.name {
            metrics.observe(started);
        } else {
            metrics.count(family, values);
        }
    };
    let books = (&*module.state as &dyn State, &*module.crowd, module.violations.as_deref(), &count as _);
    // `option forwardfor` appends at the backend, after the action: every
    // `X-Forwarded-For` entry the module sees is the client's.
    let store = module.store();
    decide(snap, books, (&module.dns, &module.directories, store.as_deref(), waited), (line, &fields, 0), client)
}

/// A plan's body as sent: none for `HEAD` or a 304 (HTTP's rule; HAProxy's
/// reply would send what it is given).
pub fn body_of<'p>(plan: &'p Plan<'_>, method: &[u8]) -> &'p [u8] {
    if plan.status == 304 || method == b"HEAD" {
        b""
    } else {
        plan.body.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::body_of;
    use robotgate::pipeline::answer::Plan;

    #[test]
    fn a_head_and_a_304_are_answered_without_a_body() {
        let plan = Plan::refuse(403, "Forbidden");
        assert_eq!(body_of(&plan, b"GET"), b"Forbidden\n");
        assert_eq!(body_of(&plan, b"HEAD"), b"");
        let mut unchanged = Plan::refuse(304, "x");
        unchanged.status = 304;
        assert_eq!(body_of(&unchanged, b"GET"), b"");
    }
}
