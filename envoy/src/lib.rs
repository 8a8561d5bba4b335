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
//! threads. An edit of robotgate.yaml or of a file it names is in force
//! within about [`RELOAD_EVERY`], loaded by a thread of the module's, never
//! by Envoy's.
//!
//! Envoy's ABI is declared by hand in [`abi`]; the hooks Envoy calls are in
//! [`hooks`].

pub mod abi;
pub mod decide;
#[cfg(not(test))]
mod hooks;
pub mod log;
pub mod park;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use robotgate::load::file::Reader;
use robotgate::load::Snapshot;
use robotgate::state::crowd::Crowd;
use robotgate::state::memory::MemoryState;

use crate::log::Violations;
use crate::park::Dns;

/// The ABI version the module was written against: the
/// `ENVOY_DYNAMIC_MODULES_ABI_VERSION` of Envoy 1.40's abi.h. Envoy loads a
/// module of another version with a warning; of its own, with an
/// `info` line "Dynamic module ABI version … matched".
pub const ABI_VERSION: &[u8] = b"v0.2.0\0";

/// How often the reload thread looks at the snapshot's files (a `stat` of
/// each): an edit is in force within about this, plus its load.
pub const RELOAD_EVERY: Duration = Duration::from_millis(250);

/// The snapshot requests are decided with, replaced whole by a reload.
type Current = Arc<RwLock<Arc<Snapshot>>>;

/// One filter configuration of Envoy's (one `filter_config`): the snapshot
/// its requests are decided with, kept current by a thread of its own, and
/// the state every thread of the process shares.
pub struct Module {
    snapshot: Current,
    /// Rates, bans and robots.txt reads, for every worker thread.
    pub state: MemoryState,
    /// The crowd check's counts, for every worker thread.
    pub crowd: Arc<Crowd>,
    /// Reverse DNS: its name servers, verdicts and lookups under way.
    pub dns: Arc<Dns>,
    /// The violation log, when robotgate.yaml names a file.
    pub violations: Option<Arc<Violations>>,
    /// The counters of [`decide::families`] in Envoy's stats, by family:
    /// the host's ids (none outside Envoy).
    pub counters: Vec<(&'static str, usize)>,
    /// Set to stop the reload thread; it drops the other end on its way out.
    stop: Arc<AtomicBool>,
    stopped: Option<Receiver<()>>,
}

impl Module {
    /// Load robotgate.yaml at `path` (on the caller's thread: Envoy's main
    /// thread, while it loads its configuration), and start the thread that
    /// keeps it current. A site file refused alone is in `refused` of the
    /// snapshot: the other sites are served. `log` says what the reload
    /// thread does (Envoy's log).
    ///
    /// # Errors
    /// Each problem, as `robotgate config check` words it (file, line, why).
    pub fn load(path: &Path, log: fn(Level, &str)) -> Result<Module, Vec<String>> {
        let whole = HashSet::new();
        let snapshot = robotgate::load::reload_whole(path, None, &whole, Reader::Caller)
            .map_err(|problems| problems.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        let state = MemoryState::new(snapshot.settings.boot.max_clients);
        let violations = Violations::open(&snapshot).map_err(|e| vec![e])?.map(Arc::new);
        let dns = Arc::new(Dns::new(&snapshot.settings.boot.dns));
        let snapshot: Current = Arc::new(RwLock::new(Arc::new(snapshot)));
        let stop = Arc::new(AtomicBool::new(false));
        let (done, stopped) = std::sync::mpsc::channel();
        let crowd = Arc::new(Crowd::default());
        let (current, halt, config) = (snapshot.clone(), stop.clone(), path.to_owned());
        let (book, counts) = (violations.clone(), crowd.clone());
        let started = robotgate::load::watch::spawn_below("robotgate-reload", move || {
            reload(&config, &current, &halt, (book.as_deref(), &counts), log);
            drop(done);
        });
        let stopped = match started {
            Ok(()) => Some(stopped),
            Err(e) => {
                log(Level::Warn, &format!("robotgate: edits are in force only when Envoy loads the filter again: {e}"));
                None
            }
        };
        Ok(Module { snapshot, state, crowd, dns, violations, counters: Vec::new(), stop, stopped })
    }

    /// The snapshot to decide a request with.
    pub fn current(&self) -> Arc<Snapshot> {
        read(&self.snapshot)
    }
}

impl Drop for Module {
    /// The reload thread stops (within [`RELOAD_EVERY`]) before the module
    /// goes: Envoy may unload the library after this.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(stopped) = self.stopped.take() {
            let _ = stopped.recv();
        }
        self.dns.settle();
    }
}

/// What the crowd check says, at most hourly ([`Crowd::tick`]).
pub const CROWD_WARNING: &str = "over 90% of the last minute's requests came from loopback or private addresses with a forwarding header of their own: every client looks like the proxy in front of Envoy. Trust that proxy in Envoy's xff_num_trusted_hops; until then robots cannot be verified, and trap hits from its address ban no one";

/// Levels of what the module logs.
#[derive(Debug, Clone, Copy)]
pub enum Level {
    Info,
    Warn,
    Error,
}

fn read(current: &Current) -> Arc<Snapshot> {
    // A writer that panicked left a whole snapshot: it is still good.
    current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

/// The reload thread: each [`RELOAD_EVERY`], whether a file of the snapshot
/// changed since it was read (or since a refused reload began); if so, a
/// reload (only what changed is read and compiled again), put in force
/// whole. A reload that fails keeps the rules in force, says why, and is
/// tried again when a file changes again. Each look also closes the
/// violation log's windows that have ended, and folds the crowd check's
/// second (once a second: [`Crowd::tick`] folds nothing more often).
fn reload(
    config: &Path,
    current: &Current,
    stop: &AtomicBool,
    (book, crowd): (Option<&Violations>, &Crowd),
    log: fn(Level, &str),
) {
    let mut since = read(current).read_at;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(RELOAD_EVERY);
        let now = log::now_ms();
        if let Some(book) = book {
            book.tick(now);
        }
        // Envoy names the client itself (`xff_num_trusted_hops`), which
        // robotgate.yaml's `trusted_proxies` does not see: the minute's
        // traffic alone says it.
        if crowd.tick(true, now) {
            log(Level::Warn, &format!("robotgate: {CROWD_WARNING}"));
        }
        let previous = read(current);
        if stop.load(Ordering::Relaxed) || !previous.changed_since(since) {
            continue;
        }
        let began = SystemTime::now();
        match robotgate::load::reload_whole(config, Some(&previous), &HashSet::new(), Reader::Caller) {
            Ok(snapshot) => {
                for problem in &snapshot.refused {
                    log(Level::Warn, &format!("robotgate: site file refused, the other sites are served: {problem}"));
                }
                since = snapshot.read_at;
                *current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(snapshot);
                log(Level::Info, &format!("robotgate: {} reloaded", config.display()));
            }
            Err(problems) => {
                for problem in problems {
                    log(Level::Error, &format!("robotgate: not reloaded, the rules in force stay: {problem}"));
                }
                since = began;
            }
        }
    }
}
