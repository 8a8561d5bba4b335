//! robotgate inside Envoy (issue #69): a dynamic module, `librobotgate_envoy.so`,
//! an HTTP filter that drives robotgate's core pipeline
//! ([`robotgate::pipeline`]) from the request's headers, in Envoy's own
//! worker threads: no exchange with another process.
//!
//! ```yaml
//! http_filters:
//!   - name: robotgate
//!     typed_config:
//!       "@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter
//!       dynamic_module_config: { name: robotgate_envoy, do_not_close: true }
//!       filter_name: robotgate
//!       filter_config:
//!         "@type": type.googleapis.com/google.protobuf.StringValue
//!         value: /etc/robotgate/robotgate.yaml
//! ```
//!
//! Envoy finds `librobotgate_envoy.so` in `ENVOY_DYNAMIC_MODULES_SEARCH_PATH`
//! (examples/edge/envoy-module.yaml). The filter's `filter_config` is the
//! path of robotgate.yaml, the same file as `robotgate serve`'s, loaded when
//! Envoy loads the filter's configuration; one that does not load refuses
//! Envoy's configuration, with each problem in Envoy's log.
//!
//! A preview (docs/edge.md, "In-process module (preview)", says what it
//! does not do yet): each request is decided on its request headers;
//! robots.txt and humans.txt are answered by the module; a refusal, a 429
//! and every answer robotgate writes itself are Envoy local replies with the
//! plan's status, headers and body; a pass gets the site's `X-Robots-Tag`
//! and `Content-Usage` on the origin's answer. The client is Envoy's
//! `source.address` (its downstream peer after `xff_num_trusted_hops`);
//! rates, bans and robots.txt reads are in one table for all of Envoy's
//! threads.
//!
//! Envoy's ABI is declared by hand in [`abi`]; the hooks Envoy calls are in
//! [`hooks`].

pub mod abi;
pub mod decide;
#[cfg(not(test))]
mod hooks;

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use robotgate::load::file::Reader;
use robotgate::load::Snapshot;
use robotgate::state::memory::MemoryState;

/// The ABI version the module was written against: the
/// `ENVOY_DYNAMIC_MODULES_ABI_VERSION` of Envoy 1.40's abi.h. Envoy loads a
/// module of another version with a warning; of its own, with an
/// `info` line "Dynamic module ABI version … matched".
pub const ABI_VERSION: &[u8] = b"v0.2.0\0";

/// One filter configuration of Envoy's (one `filter_config`): the snapshot
/// its requests are decided with, and the state every thread of the
/// process shares.
pub struct Module {
    /// robotgate.yaml, as `filter_config` named it.
    pub config: PathBuf,
    /// The snapshot requests are decided with.
    pub snapshot: RwLock<Arc<Snapshot>>,
    /// Rates, bans and robots.txt reads, for every worker thread.
    pub state: MemoryState,
}

impl Module {
    /// Load robotgate.yaml at `path` (on the caller's thread: Envoy's main
    /// thread, while it loads its configuration). A site file refused alone
    /// is in `refused` of the snapshot: the other sites are served.
    ///
    /// # Errors
    /// Each problem, as `robotgate config check` words it (file, line, why).
    pub fn load(path: &Path) -> Result<Module, Vec<String>> {
        let whole = std::collections::HashSet::new();
        let snapshot = robotgate::load::reload_whole(path, None, &whole, Reader::Caller)
            .map_err(|problems| problems.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        let state = MemoryState::new(snapshot.settings.boot.max_clients);
        Ok(Module { config: path.to_owned(), snapshot: RwLock::new(Arc::new(snapshot)), state })
    }

    /// The snapshot to decide a request with.
    pub fn current(&self) -> Arc<Snapshot> {
        // A writer that panicked left a whole snapshot: it is still good.
        self.snapshot.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}
