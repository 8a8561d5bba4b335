//! robotgate: enforce a site's own robots.txt at the reverse proxy.
//!
//! The crate is a pure core (no I/O, no logging, no async) plus a thin Pingora
//! layer behind the `server` feature:
//!
//! * [`robots`]: RFC 9309 parser, compiled matcher and linter.
//! * [`agent`]: the bot database and the User-Agent classifier.
//! * [`identity`]: verified identity: crawler IP range feeds compiled into a
//!   prefix table, and the evidence they give about a claimed bot.
//! * [`time`]: the calendar and RFC 3339 times, written and read.
//! * [`target`]: request-target normalisation, so the proxy judges the path
//!   the origin serves (RFC 3986 6.2.2, RFC 9309 2.2.2).
//! * [`policy`]: what to do with a request: one [`policy::Outcome`] from the
//!   request's facts, the site's rules and the rate state.
//! * [`pipeline`]: one request's decision, from its facts to its verdict,
//!   resumable around the I/O it needs: what every driver (the proxy, the
//!   auth listener, replay) runs.
//! * [`record`]: the violation record and the aggregation of repeats.
//! * [`accesslog`]: combined, common and JSON access-log readers for
//!   `robotgate replay`.
//! * [`report`]: `robotgate report`: read violation logs, sum them up, render
//!   text, JSON or HTML.
//! * [`metric`]: the metrics both hosts serve: names, help, bucket bounds,
//!   and their Prometheus text.
//! * [`state`]: what outlives a request (rate-limit memory).
//! * [`config`]: the YAML configuration and its validation.
//! * [`managed`]: the robots.txt served: the site's file plus generated lines
//!   (traps, AI-training opt-out, Content-Signal).
//! * [`net`]: networks, `host:port` syntax, `Host` ports, as plain data.
//! * [`proxy_protocol`]: the PROXY protocol header (v1 and v2) a load
//!   balancer puts before a connection.
//! * [`deadline`]: the request-head deadline against slow clients.
//! * [`lines`]: bounded line reading for the log readers.
//! * [`load`]: reads the operator's files (config, robots.txt, humans.txt,
//!   bot database, feeds) into one immutable snapshot; no Pingora.
//! * `server` (feature `server`): the Pingora proxy, reload, telemetry.
//!
//! Data flows one way: core, then [`load`], then `server`, then the CLI.

pub mod accesslog;
pub mod agent;
pub mod config;
pub mod deadline;
pub mod hash;
pub mod head;
pub mod identity;
pub mod indexing;
pub mod lines;
pub mod load;
pub mod managed;
pub mod metric;
pub mod net;
pub mod pipeline;
pub mod policy;
pub mod proxy_protocol;
pub mod record;
pub mod replay;
pub mod report;
pub mod robots;
pub mod state;
pub mod target;
pub mod time;
pub mod x509;
pub mod yaml;

#[cfg(feature = "server")]
pub mod server;
