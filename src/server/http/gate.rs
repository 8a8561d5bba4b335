//! The proxy application and its per-request state: what every service
//! (proxy and auth listener) and every step of a request share. The steps
//! are elsewhere: deciding ([`super::decide`]), answering and forwarding
//! ([`super::proxy`]), the edge's subrequests ([`super::auth`]).

use std::net::IpAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use bytes::Bytes;

use crate::load::LiveSite;
use crate::server::ops::crowd::Crowd;
use crate::server::ops::violations::{Record, ViolationLog};
use crate::server::snapshot::Snapshot;
use crate::server::store::reads::Reads;
use crate::server::store::redis::SharedStore;
use crate::server::verify::dns::DnsVerifier;
use crate::server::verify::wba::DirectoryCache;
use crate::state::MemoryState;

/// The proxy application. One per Pingora service: listeners with and
/// without the PROXY protocol are two services (see `server::serve_with`).
#[derive(Clone)]
pub struct Gate {
    /// The live snapshot; reload swaps it.
    pub snapshot: Arc<ArcSwap<Snapshot>>,
    /// Rate clocks, bans and robots.txt reads (survive reloads).
    pub state: Arc<MemoryState>,
    /// The violation log.
    pub violations: Arc<ViolationLog>,
    /// Forward-confirmed reverse DNS, when a resolver could be set up.
    pub dns: Option<Arc<DnsVerifier>>,
    /// Web Bot Auth key directories.
    pub wba: Arc<DirectoryCache>,
    /// The store shared with other instances (`state.redis`), if any.
    pub shared: Option<Arc<SharedStore>>,
    /// The robots.txt reads, kept across restarts.
    pub reads: Arc<Reads>,
    /// Whether every client looks like one ([`Crowd`]).
    pub crowd: Arc<Crowd>,
    /// Keep the last violations for the status page.
    pub status_page: bool,
    /// Seconds an idle keep-alive connection stays open (`limits.keepalive_timeout`).
    pub keepalive: u64,
    /// This service's listeners take the PROXY protocol: its header names
    /// the client, and the client's forwarding headers are dropped.
    pub proxy_protocol: bool,
    /// This service answers an edge proxy's authorisation subrequests
    /// (`auth.listen`, [`super::auth`]) instead of proxying.
    pub auth: bool,
}

/// An origin's answer being read for what it says about indexing.
pub struct Observing {
    /// Its head, as it streams.
    pub(super) head: crate::indexing::meta::HeadScanner,
    /// What its `X-Robots-Tag` said, and then its META tags.
    pub(super) told: crate::indexing::Told,
}

/// Per-request state.
#[derive(Default)]
pub struct Ctx {
    /// The snapshot this request is decided and proxied with.
    pub(super) snap: Option<Arc<Snapshot>>,
    /// The request's site, an index into `snap.sites`.
    pub(super) site: Option<usize>,
    /// The client address, after trusted proxies.
    pub(super) client: Option<IpAddr>,
    /// `X-Robots-Tag` to add to the proxied response.
    pub(super) noindex: Option<String>,
    /// `X-Robots-Tag` values of the site's indexing rules, added to the
    /// proxied response beside the origin's own.
    pub(super) indexing: Vec<String>,
    /// The origin's answer is read for what it says about indexing
    /// (`indexing.observe`).
    pub(super) observe: bool,
    /// The head of an HTML answer being read for its robots META tags.
    pub(super) observing: Option<Box<Observing>>,
    /// `Content-Usage` to add to the proxied response, unless the origin sets one.
    pub(super) content_usage: Option<String>,
    /// Refused as a spoofed claim of a robot that signs (Web Bot Auth): the
    /// refusal carries `Accept-Signature`.
    pub(super) accept_signature: bool,
    /// A page to put the trap link into: the link, and the body held so far.
    pub(super) inject: Option<(Bytes, Vec<u8>)>,
    /// The normalised target a robot was judged by, when it differs from
    /// what it sent: the origin gets exactly what was judged.
    pub(super) rewrite: Option<Vec<u8>>,
    /// A violation's record, made when the decision is; its time and final
    /// status are filled in by `logging`.
    /// Boxed: the context lives inside Pingora's per-request future, which is
    /// moved whole (copied) at every request; a record inline would add its
    /// size to each copy, for the few requests that make one.
    pub(super) pending: Option<Box<Record>>,
    /// The status answered, for the record.
    pub(super) status: u16,
}

impl Ctx {
    /// The request's site, once chosen.
    pub(super) fn site(&self) -> Option<&LiveSite> {
        self.snap.as_ref()?.sites.get(self.site?).map(|s| &**s)
    }
}
