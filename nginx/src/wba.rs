//! Web Bot Auth inside nginx: the key directories of a signed request's
//! agents fetched off nginx's event loop ([`robotgate_embed::keys`], whose
//! rules and cache are the proxy's), the request parked meanwhile.
//!
//! * A directory already known to the worker answers at once, on nginx's thread.
//! * Otherwise the request is parked ([`crate::park`]) and a helper thread
//!   fetches what is missing; the worker's waker brings the request back,
//!   and its phases run again, the keys now at hand. A request comes back
//!   once: what is still missing then counts as unavailable.
//! * At most [`robotgate::identity::signature::fetch::IN_FLIGHT_MAX`]
//!   fetches run at once in a worker; a request beyond that is judged at
//!   once, its missing directories unavailable.
//!
//! The directories are the worker's: each of nginx's workers fetches a
//! directory once per TTL (the proxy, one process, once).

use std::sync::{Arc, OnceLock};

use ngx::ffi::ngx_http_request_t;

use robotgate::config::Verify;
use robotgate::identity::signature::fetch::FetchLimits;
use robotgate::identity::signature::Inspection;
use robotgate_embed::keys::{Directories, Known};

use crate::park::{self, Found};

/// The worker's directories (a worker is a process: this is per worker).
fn directories() -> &'static Arc<Directories> {
    static DIRECTORIES: OnceLock<Arc<Directories>> = OnceLock::new();
    DIRECTORIES.get_or_init(Arc::default)
}

/// What a signed request comes to now.
pub enum Start {
    /// Judged: the host of the agent whose signature verified, if any.
    Known(Option<String>),
    /// The request is parked until its directories are fetched.
    Parked,
}

/// Judge `inspection` with the worker's directories, or park request `r`
/// and fetch the missing ones on a helper thread. `fetched`: the request
/// was parked for them already (what is still missing is unavailable).
pub fn signed_by(r: *mut ngx_http_request_t, inspection: &Inspection, verify: &Verify, fetched: bool) -> Start {
    let limits = FetchLimits::allowing_private(verify.allow_private_directories);
    let dirs = directories();
    let missing = match dirs.known(inspection, &limits, fetched) {
        Known::Judged(host) => return Start::Known(host),
        Known::Missing(agents) => agents,
    };
    // No helper, or no parking: the slot back, judged now, the missing
    // directories unavailable.
    let unavailable = || {
        dirs.give_back();
        match dirs.known(inspection, &limits, true) {
            Known::Judged(host) => Start::Known(host),
            Known::Missing(_) => Start::Known(None),
        }
    };
    // SAFETY: nginx's cycle, on its thread; its log lives as long as it.
    let log = unsafe { (*ngx::ffi::ngx_cycle).log };
    let Some(waker) = park::waker(log) else { return unavailable() };
    let Some(ticket) = park::park(r) else { return unavailable() };
    let (helper, wanted) = (dirs.clone(), limits.clone());
    let spawned = std::thread::Builder::new().name("robotgate-wba".into()).stack_size(512 * 1024).spawn(move || {
        helper.fetch(&missing, &wanted, &|why| waker.note(ngx::ffi::NGX_LOG_INFO as usize, why));
        waker.finish(ticket, Found::Keys);
    });
    if spawned.is_err() {
        park::unpark(ticket);
        return unavailable();
    }
    Start::Parked
}
