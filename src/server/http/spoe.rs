//! The SPOE agent (`spoe.listen`): robotgate as the decision service of an
//! HAProxy that stays in front, asked over SPOP (HAProxy's `filter spoe`,
//! `examples/edge/spoe-robotgate.conf`) instead of by a subrequest.
//!
//! HAProxy opens connections to the agent, agrees on a frame size and
//! capabilities (HELLO), then sends one NOTIFY per request with the
//! `robotgate-check` message: the client address (HAProxy's own `src`, never
//! a header), method, path and query, host, `ssl_fc` and the request's
//! headers ([`crate::net::spop::read_check`]). The request goes through the
//! same steps as the auth listener's ([`Gate::settle`]): normalisation,
//! classification, identity, rates, bans, traps, record and metrics. The
//! ACK sets transaction variables (HAProxy prefixes them with the agent's
//! `var-prefix`, `robotgate`):
//!
//! * a pass: `txn.robotgate.pass` (true) and the `X-Robots-Tag` values to
//!   add to the response, `txn.robotgate.x_robots_tag_1`, `_2`, ...;
//! * robotgate's own answer (the core's [`Plan`]): `txn.robotgate.status`,
//!   `.content_type`, `.body`, and each of its headers by name, `-` as `_`
//!   (`.cache_control`, `.retry_after`, `.location`, `.ratelimit_policy`,
//!   `.ratelimit`, `.accept_signature`). A body the frame cannot hold is
//!   left out (counted, `body-too-big`): the status and headers still go.
//!
//! A message that lacks a fact is answered `400`, as the auth listener
//! answers a subrequest that lacks one. An agent that does not answer in
//! time leaves the variables unset, and the shipped `haproxy.cfg` then lets
//! the request pass; so each message is decided within
//! [`decide_by`] of `spoe.edge_timeout_ms` (HAProxy's `timeout processing`)
//! after it came, with what is known by then: a lookup still running is
//! judged as failed (docs/edge.md, "Deadlines").
//!
//! Limits, as the other listeners': `limits.max_connections` connections,
//! `limits.request_head_timeout` for the whole HELLO from the accept (first
//! byte and frame alike) and for the rest of each later frame once its
//! first byte came, `limits.keepalive_timeout` idle between frames, frames
//! up to the size agreed (at most [`spop::MAX_FRAME_SIZE`]), and
//! [`IN_FLIGHT`] NOTIFY frames decided at once per connection. The accept
//! loop pauses when descriptors run out ([`super::listen::accept`]).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use http::{HeaderMap, HeaderName, HeaderValue};
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio::time::Instant;

use super::decide::{Due, Incoming, Step};
use super::gate::{Ctx, Gate};
use crate::config::deadlines::decide_by;
use crate::head::Unreadable;
use crate::net::spop::{self, kind, Frame, Scope, Status, Value};
use crate::pipeline::answer::{pass_headers, Conditional, Plan};
use crate::policy::Enforcement;
use crate::server::ops::violations::now_rfc3339;
use crate::server::telemetry::metrics;

/// NOTIFY frames decided at once on one connection; past it, the next
/// frame is read when one is answered.
pub const IN_FLIGHT: usize = 64;

/// The SPOE agent service: listeners, each connection a task.
pub struct Agent {
    /// The gate every decision goes through (`auth: true`: the edge serves
    /// what passes, robots.txt included).
    pub gate: Arc<Gate>,
    /// The addresses.
    pub listen: Vec<String>,
    /// Connections open at once, over all listeners.
    pub max_connections: usize,
    /// The longest HELLO (from the accept), and the rest of a later frame
    /// once its first byte came, may take.
    pub frame_timeout: Duration,
    /// The longest a connection may wait for its next frame.
    pub idle_timeout: Duration,
}

#[async_trait]
impl BackgroundService for Agent {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let slots = Arc::new(Semaphore::new(self.max_connections));
        let mut accepting = Vec::new();
        for addr in &self.listen {
            let listener = match TcpListener::bind(addr.as_str()).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!(target: "robotgate", listen = %addr, error = %e, "SPOE agent cannot listen");
                    continue;
                }
            };
            let (gate, slots) = (self.gate.clone(), slots.clone());
            let limits = Limits { frame: self.frame_timeout, idle: self.idle_timeout };
            accepting.push(tokio::spawn(async move {
                loop {
                    let stream = super::listen::accept(&listener, "spoe").await;
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        metrics().connections_refused.with_label_values(&["spoe"]).inc();
                        drop(stream);
                        continue;
                    };
                    let gate = gate.clone();
                    tokio::spawn(async move {
                        let _slot = slot;
                        if let Err(status) = serve(gate, stream, limits).await {
                            metrics().spoe_failures.with_label_values(&[status.as_str()]).inc();
                        }
                    });
                }
            }));
        }
        let _ = shutdown.changed().await;
        for task in accepting {
            task.abort();
        }
    }
}

/// A connection's deadlines.
#[derive(Clone, Copy)]
struct Limits {
    frame: Duration,
    idle: Duration,
}

/// Read one frame: its first byte by `first_by` (`None` at a clean end of
/// the connection), the whole frame by `whole_by` when given (HELLO: one
/// deadline from the accept), else within `limits.frame` of its first byte;
/// no longer than `max`. A deadline passed is counted and is `Timeout`.
async fn read_frame(
    rd: &mut OwnedReadHalf,
    max: u32,
    first_by: Instant,
    whole_by: Option<Instant>,
    limits: Limits,
) -> Result<Option<Vec<u8>>, Status> {
    let timed_out = |phase: &str| {
        metrics().connections_timed_out.with_label_values(&["spoe", phase]).inc();
        Status::Timeout
    };
    let mut head = [0u8; 4];
    let first = match tokio::time::timeout_at(first_by, rd.read(&mut head)).await {
        Err(_) => return Err(timed_out(if whole_by.is_some() { "head" } else { "idle" })),
        Ok(Err(_)) => return Err(Status::Io),
        Ok(Ok(0)) => return Ok(None),
        Ok(Ok(n)) => n,
    };
    let by = whole_by.unwrap_or_else(|| Instant::now() + limits.frame);
    let rest = async {
        rd.read_exact(&mut head[first..]).await.map_err(|_| Status::Io)?;
        let len = spop::frame_len(head, max)?;
        let mut buf = vec![0u8; len];
        rd.read_exact(&mut buf).await.map_err(|_| Status::Io)?;
        Ok(buf)
    };
    match tokio::time::timeout_at(by, rest).await {
        Ok(r) => r.map(Some),
        Err(_) => Err(timed_out("head")),
    }
}

/// One connection: HELLO, then NOTIFY frames until HAProxy disconnects.
/// A protocol failure is answered with AGENT-DISCONNECT and returned.
async fn serve(gate: Arc<Gate>, stream: TcpStream, limits: Limits) -> Result<(), Status> {
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    // Issue 66: the whole HELLO within one `request_head_timeout` of the accept.
    let hello_by = Instant::now() + limits.frame;
    let hello = async {
        let Some(buf) = read_frame(&mut rd, spop::MAX_FRAME_SIZE, hello_by, Some(hello_by), limits).await? else {
            return Err(Status::Io);
        };
        let f = Frame::parse(&buf)?;
        if f.kind != kind::HAPROXY_HELLO {
            return Err(Status::Interlaced);
        }
        spop::Hello::read(f.payload)
    };
    let hello = match hello.await {
        Ok(h) => h,
        Err(status) => return refuse(&mut wr, status, limits).await,
    };
    let mut out = Vec::new();
    spop::write_agent_hello(&mut out, &hello);
    send(&mut wr, &out, limits).await?;
    if hello.healthcheck {
        return Ok(());
    }
    let max = hello.max_frame_size;
    // ACKs leave through one writer, in the order they are ready.
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(IN_FLIGHT);
    let writer = tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if send(&mut wr, &frame, limits).await.is_err() {
                return None;
            }
        }
        Some(wr)
    });
    let in_flight = Arc::new(Semaphore::new(if hello.pipelining { IN_FLIGHT } else { 1 }));
    let ended = loop {
        let buf = match read_frame(&mut rd, max, Instant::now() + limits.idle, None, limits).await {
            Ok(Some(buf)) => buf,
            Ok(None) => break Err(Status::Io),
            Err(status) => break Err(status),
        };
        let f = match Frame::parse(&buf) {
            Ok(f) => f,
            Err(e) => break Err(e.into()),
        };
        match f.kind {
            kind::NOTIFY => {
                // robotgate offers no fragmentation: a NOTIFY is whole.
                if f.flags & spop::FLAG_FIN == 0 {
                    break Err(Status::Fragmented);
                }
                if spop::messages(f.payload).is_err() {
                    break Err(Status::Invalid);
                }
                // HAProxy's `timeout processing` runs from before it sent the frame.
                let edge = gate.snapshot.load().settings.boot.edge_timeouts.spoe;
                let due = Due { by: std::time::Instant::now() + decide_by(edge), listener: "spoe" };
                let Ok(slot) = in_flight.clone().acquire_owned().await else { break Err(Status::Resources) };
                let (gate, tx) = (gate.clone(), tx.clone());
                let (stream_id, frame_id) = (f.stream_id, f.frame_id);
                let start = buf.len() - f.payload.len();
                tokio::spawn(async move {
                    let ack = notified(&gate, stream_id, frame_id, &buf[start..], max, due).await;
                    let _ = tx.send(ack).await;
                    drop(slot);
                });
            }
            kind::HAPROXY_DISCONNECT => break Ok(()),
            kind::UNSET => break Err(Status::Fragmented),
            kind::HAPROXY_HELLO => break Err(Status::Interlaced),
            // SPOE.txt 3.2.2: unknown frames may be skipped.
            _ => {}
        }
    };
    // Every answer in flight is written before the DISCONNECT.
    drop(tx);
    let Ok(Some(mut wr)) = writer.await else { return Err(Status::Io) };
    match ended {
        Ok(()) => {
            let mut out = Vec::new();
            spop::write_disconnect(&mut out, Status::Normal);
            let _ = send(&mut wr, &out, limits).await;
            Ok(())
        }
        Err(Status::Io) => Ok(()), // HAProxy closed the connection: nothing to say.
        Err(status) => refuse(&mut wr, status, limits).await,
    }
}

/// Write `bytes` within the frame deadline.
async fn send(wr: &mut tokio::net::tcp::OwnedWriteHalf, bytes: &[u8], limits: Limits) -> Result<(), Status> {
    match tokio::time::timeout(limits.frame, wr.write_all(bytes)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(Status::Io),
        Err(_) => Err(Status::Timeout),
    }
}

/// Say why the connection ends (AGENT-DISCONNECT), and end it.
async fn refuse(wr: &mut tokio::net::tcp::OwnedWriteHalf, status: Status, limits: Limits) -> Result<(), Status> {
    let mut out = Vec::new();
    spop::write_disconnect(&mut out, status);
    let _ = send(wr, &out, limits).await;
    Err(status)
}

/// What robotgate tells HAProxy about one request.
enum Told<'a> {
    /// Let it through, adding these `X-Robots-Tag` values to the response.
    Pass(Vec<Cow<'a, str>>),
    /// Answer it with this plan.
    Answer(Plan<'a>),
}

/// The ACK of one NOTIFY: its `robotgate-check` message decided (no such
/// message: an ACK without actions).
async fn notified(gate: &Gate, stream_id: u64, frame_id: u64, payload: &[u8], max: u32, due: Due) -> Vec<u8> {
    let mut out = Vec::new();
    let messages = spop::messages(payload).unwrap_or_default();
    let Some(message) = messages.iter().find(|m| m.name == spop::CHECK_MESSAGE) else {
        let _ = spop::write_ack(&mut out, stream_id, frame_id, Scope::Transaction, &[], max);
        return out;
    };
    let snap = gate.snapshot.load_full();
    let mut ctx = Ctx { snap: Some(snap.clone()), ..Ctx::default() };
    let told = match spop::read_check(&message.args) {
        Err(why) => {
            metrics().spoe_notifications.with_label_values(&["refused"]).inc();
            Told::Answer(Plan::refuse(400, &why.to_string()))
        }
        Ok(check) => {
            let (headers, unreadable) = header_map(&check.headers);
            let req = Incoming {
                method: check.method,
                target: check.target,
                host: check.host,
                https: check.https,
                headers: &headers,
                peer: crate::pipeline::Peer::Logged(Some(check.client)),
                unreadable,
                due: Some(due),
                hello: None,
            };
            let told = match gate.site_for(&snap, &req, &mut ctx) {
                None => Told::Answer(Plan::no_site()),
                Some(site) => {
                    let step = gate.settle(&req, &snap, site, &mut ctx).await;
                    told_of(step, &snap.sites[site], &mut ctx)
                }
            };
            let result = if matches!(told, Told::Pass(_)) { "pass" } else { "answer" };
            metrics().spoe_notifications.with_label_values(&[result]).inc();
            told
        }
    };
    ctx.status = match &told {
        Told::Pass(_) => 200,
        Told::Answer(plan) => plan.status,
    };
    ack(&mut out, stream_id, frame_id, &told, max);
    if let Some(mut record) = ctx.pending.take() {
        record.time = now_rfc3339();
        record.status = ctx.status;
        if gate.status_page {
            crate::server::ops::status::board().push(&record);
        }
        gate.violations.write(*record);
    }
    out
}

/// The request's headers as the pipeline reads them, and whether one
/// could not be read as sent (a control byte: refused with a record, as
/// the proxy refuses it).
fn header_map(headers: &[(&[u8], &[u8])]) -> (HeaderMap, Option<Unreadable>) {
    let mut map = HeaderMap::with_capacity(headers.len());
    let mut unreadable = None;
    for (name, value) in headers {
        match (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
            (Ok(n), Ok(v)) => {
                map.append(n, v);
            }
            _ => unreadable = Some(Unreadable::ControlByte),
        }
    }
    (map, unreadable)
}

/// The decision as what HAProxy is told: the same plan the auth listener
/// writes ([`Plan::of`]); a site file passes (the edge routes robots.txt
/// and humans.txt to the proxy listener).
fn told_of<'s>(step: Step<'s>, live: &'s crate::load::LiveSite, ctx: &mut Ctx) -> Told<'s> {
    let enforcement = match step {
        Step::Refuse(status, why) => return Told::Answer(Plan::refuse(status, &why)),
        Step::Decided(outcome) => outcome.enforcement(),
    };
    fn pass<'s>(noindex: Option<&'s str>, ctx: &mut Ctx) -> Told<'s> {
        Told::Pass(pass_headers(noindex, std::mem::take(&mut ctx.indexing)).collect())
    }
    match enforcement {
        Enforcement::Pass { noindex } => pass(noindex, ctx),
        Enforcement::File(_) => pass(None, ctx),
        e => match Plan::of(e, live, ctx.accept_signature, Conditional::default()) {
            Some(plan) => Told::Answer(plan),
            None => pass(None, ctx),
        },
    }
}

/// Write the ACK: the variables of `told`; an answer's body is left out
/// when the frame cannot hold it.
fn ack(out: &mut Vec<u8>, stream_id: u64, frame_id: u64, told: &Told<'_>, max: u32) {
    let names: Vec<String>;
    let mut vars: Vec<(&str, Value<'_>)> = Vec::new();
    match told {
        Told::Pass(tags) => {
            names = (1..=tags.len()).map(|i| format!("x_robots_tag_{i}")).collect();
            vars.push(("pass", Value::Bool(true)));
            for (name, value) in names.iter().zip(tags) {
                vars.push((name, Value::Str(value.as_bytes())));
            }
        }
        Told::Answer(plan) => {
            names = plan.headers.iter().map(|(n, _)| n.replace('-', "_")).collect();
            vars.push(("status", Value::Int32(i32::from(plan.status))));
            vars.push(("content_type", Value::Str(plan.content_type.as_bytes())));
            for (name, (_, value)) in names.iter().zip(&plan.headers) {
                vars.push((name, Value::Str(value.as_bytes())));
            }
            vars.push(("body", Value::Str(plan.body.bytes())));
        }
    }
    if spop::write_ack(out, stream_id, frame_id, Scope::Transaction, &vars, max).is_ok() {
        return;
    }
    metrics().spoe_failures.with_label_values(&["body-too-big"]).inc();
    vars.retain(|(name, _)| *name != "body");
    if spop::write_ack(out, stream_id, frame_id, Scope::Transaction, &vars, max).is_err() {
        // Headers alone past the frame: the status still goes.
        vars.retain(|(name, _)| *name == "status" || *name == "pass");
        let _ = spop::write_ack(out, stream_id, frame_id, Scope::Transaction, &vars, max);
    }
}
