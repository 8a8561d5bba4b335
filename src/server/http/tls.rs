//! HTTPS listeners: a certificate per site, chosen by SNI at each handshake,
//! reloaded with everything else.
//!
//! The certificates are part of the snapshot ([`CertSet`](crate::server::snapshot::certs::CertSet), loaded by
//! [`crate::server::snapshot`]): a renewed pair written over the old files is in
//! force for the next handshake once the watcher has reloaded, and a broken
//! or mismatched pair refuses the reload, so the last good pair stays and
//! the reason is logged. Established connections keep the certificate they
//! were made with. Each HTTPS listener's rustls configuration asks
//! [`SniResolver`], which reads the snapshot in force: the site whose hosts
//! include the SNI name gives its certificate; otherwise the listener's own
//! `tls:` does; otherwise the handshake fails.
//!
//! Protocols: TLS 1.2 and 1.3 (Pingora's rustls settings), rustls's default
//! cipher suites (AEAD only, forward secrecy only); ALPN offers `h2` then
//! `http/1.1` unless the listener says `http2: false`.

use std::sync::Arc;

use arc_swap::ArcSwap;
use pingora::tls::sign::CertifiedKey;
use pingora::tls::{ClientHello, ResolvesServerCert};

use crate::server::snapshot::Snapshot;

/// The certificate of each handshake on one listener, from the snapshot in force.
pub struct SniResolver {
    /// The live snapshot.
    pub snapshot: Arc<ArcSwap<Snapshot>>,
    /// The listener's address, as configured.
    pub listener: String,
}

impl std::fmt::Debug for SniResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SniResolver").field("listener", &self.listener).finish_non_exhaustive()
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.snapshot.load().certs.resolve(&self.listener, hello.server_name())
    }
}
