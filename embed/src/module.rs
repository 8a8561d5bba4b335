//! One robotgate.yaml loaded into an edge's process: the snapshot requests
//! are decided with, replaced whole by a reload thread of the module's
//! (never the edge's threads), and the state, crowd check, reverse DNS and
//! violation log every thread of the edge shares.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use robotgate::config::{Boot, SharedState};
use robotgate::load::file::Reader;
use robotgate::load::watch::{DEBOUNCE, SWEEP_EVERY};
use robotgate::load::Snapshot;
use robotgate::state::crowd::Crowd;
use robotgate::state::memory::MemoryState;
use robotgate::state::shared::Event;

use crate::inotify::Inotify;
use crate::keys::Directories;
use crate::log::Violations;
use crate::metrics::Metrics;
use crate::park::Dns;
use crate::reloads::{self, Reloads};
use crate::store::{self, Store};

/// How often the reload thread folds the crowd check and closes the
/// violation log's windows; also how soon it stops once asked to.
pub const RELOAD_EVERY: Duration = Duration::from_millis(250);

/// The snapshot requests are decided with, replaced whole by a reload.
type Current = Arc<RwLock<Arc<Snapshot>>>;

/// One loaded robotgate.yaml (an Envoy `filter_config`, a HAProxy
/// `robotgate.load`): the snapshot its requests are decided with, kept
/// current by a thread of its own, and the state every thread of the
/// edge's process shares.
pub struct Module {
    snapshot: Current,
    /// Rates, bans and robots.txt reads, for every thread of the edge.
    pub state: Arc<MemoryState>,
    /// The crowd check's counts, for every thread of the edge.
    pub crowd: Arc<Crowd>,
    /// Reverse DNS: its name servers, verdicts and lookups under way.
    pub dns: Arc<Dns>,
    /// Web Bot Auth's key directories known, and their fetches under way.
    pub directories: Arc<Directories>,
    /// The violation log, when robotgate.yaml names a file.
    pub violations: Option<Arc<Violations>>,
    /// The proxy's metrics in the module's own tables, for an edge that has
    /// no stats to count in (HAProxy's scrape service); reloads are counted
    /// there by every edge.
    pub metrics: Arc<Metrics>,
    /// `state.redis` (as robotgate.yaml named it when loaded: a change
    /// needs the edge to load the module's configuration again, as the
    /// proxy needs a restart), and its threads once started.
    shared_state: Option<SharedState>,
    /// The settings a running module cannot change, as loaded.
    boot: Boot,
    store: RwLock<Started>,
    /// The reload thread.
    watcher: Mutex<Watcher>,
    /// What the reload thread needs to start again ([`Module::watch_again`]).
    config: PathBuf,
    log: fn(Level, &str),
    crowd_warning: &'static str,
}

/// A module's store, started on the first request of the process that
/// serves (HAProxy's master-worker mode forks the worker after loading: no
/// thread of the store's runs in the master, nor holds a lock at the fork).
enum Started {
    NotYet,
    Running(Arc<Store<Books>>),
    /// It could not start (said once): the process's tables answer.
    Failed,
}

/// The module's side of its store: the process's state, metrics and log.
pub struct Books {
    state: Arc<MemoryState>,
    metrics: Arc<Metrics>,
    log: fn(Level, &str),
}

impl store::Host for Books {
    fn apply(&self, event: &Event) {
        event.apply(&*self.state, std::time::Instant::now(), robotgate::policy::Clock::System.unix_ms());
    }

    fn failed(&self) {
        self.metrics.state_error();
    }

    fn say(&self, level: Level, message: String) {
        (self.log)(level, &format!("robotgate: {message}"));
    }
}

/// The reload thread of a [`Module`].
struct Watcher {
    /// Set to stop it; it drops the other end of `stopped` on its way out.
    stop: Arc<AtomicBool>,
    stopped: Option<Receiver<()>>,
}

impl Module {
    /// Load robotgate.yaml at `path` (on the caller's thread: the edge's
    /// main thread, while it loads its configuration), and start the thread
    /// that keeps it current. A site file refused alone is in `refused` of
    /// the snapshot: the other sites are served. `log` says what the reload
    /// thread does (into the edge's log); `crowd_warning` is what the crowd
    /// check says, in the edge's words ([`Crowd::tick`]).
    ///
    /// # Errors
    /// Each problem, as `robotgate config check` words it (file, line, why).
    pub fn load(path: &Path, log: fn(Level, &str), crowd_warning: &'static str) -> Result<Module, Vec<String>> {
        let whole = HashSet::new();
        let snapshot = robotgate::load::reload_whole(path, None, &whole, Reader::Caller)
            .map_err(|problems| problems.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        let state = Arc::new(MemoryState::new(snapshot.settings.boot.max_clients));
        let shared_state = snapshot.settings.boot.shared_state.clone();
        let snapshot_boot = snapshot.settings.boot.clone();
        let violations = Violations::open(&snapshot, move |m| log(Level::Warn, m)).map_err(|e| vec![e])?.map(Arc::new);
        let dns = Arc::new(Dns::new(&snapshot.settings.boot.dns));
        let snapshot: Current = Arc::new(RwLock::new(Arc::new(snapshot)));
        let crowd = Arc::new(Crowd::default());
        let mut module = Module {
            snapshot,
            state,
            crowd,
            dns,
            directories: Arc::default(),
            violations,
            boot: snapshot_boot,
            metrics: Arc::default(),
            shared_state,
            store: RwLock::new(Started::NotYet),
            watcher: Mutex::new(Watcher { stop: Arc::new(AtomicBool::new(true)), stopped: None }),
            config: path.to_owned(),
            log,
            crowd_warning,
        };
        let watcher = module.watch();
        *module.watcher.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner) = watcher;
        Ok(module)
    }

    /// Start the reload thread again: in a child the edge forked after it
    /// loaded the module (HAProxy's master-worker mode loads `lua-load`
    /// files in the master), where no thread of the parent's runs. The
    /// parent's thread, if this process has it, is stopped first.
    pub fn watch_again(&self) {
        let mut watcher = self.watcher.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        watcher.stop.store(true, Ordering::Relaxed);
        // Dropped, not waited for: in a forked child its thread is not there.
        watcher.stopped = None;
        *watcher = self.watch();
        // A store started before the fork has no thread here either: left
        // as it is (never joined), and started afresh on the next request.
        let mut store = self.store.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Started::Running(old) = std::mem::replace(&mut *store, Started::NotYet) {
            std::mem::forget(old);
        }
    }

    /// The shared store (`state.redis`), started on the first call; `None`
    /// when robotgate.yaml names none, or it could not start.
    pub fn store(&self) -> Option<Arc<Store<Books>>> {
        let settings = self.shared_state.as_ref()?;
        if let Started::Running(s) = &*self.store.read().unwrap_or_else(std::sync::PoisonError::into_inner) {
            return Some(s.clone());
        }
        let mut started = self.store.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Started::NotYet = &*started {
            let books = Books { state: self.state.clone(), metrics: self.metrics.clone(), log: self.log };
            *started = match Store::start(settings, books, "this process") {
                Ok(s) => Started::Running(Arc::new(s)),
                Err(e) => {
                    (self.log)(Level::Error, &format!("robotgate: state.redis not used: {e}"));
                    Started::Failed
                }
            };
        }
        match &*started {
            Started::Running(s) => Some(s.clone()),
            _ => None,
        }
    }

    /// A reload thread started for this module.
    fn watch(&self) -> Watcher {
        let stop = Arc::new(AtomicBool::new(false));
        let (done, stopped) = std::sync::mpsc::channel();
        let (current, halt, config) = (self.snapshot.clone(), stop.clone(), self.config.clone());
        let (book, counts, metrics) = (self.violations.clone(), self.crowd.clone(), self.metrics.clone());
        let (log, crowd_warning) = (self.log, self.crowd_warning);
        let started = robotgate::load::watch::spawn_below("robotgate-reload", move || {
            reload(&config, &current, &halt, (book.as_deref(), &counts, &metrics), (log, crowd_warning));
            drop(done);
        });
        match started {
            Ok(()) => Watcher { stop, stopped: Some(stopped) },
            Err(e) => {
                log(
                    Level::Warn,
                    &format!("robotgate: edits are in force only when the edge loads robotgate.yaml again: {e}"),
                );
                Watcher { stop, stopped: None }
            }
        }
    }

    /// The settings robotgate.yaml now has that this module cannot put in
    /// force (listed as `robotgate config check` names them): an edge that
    /// loads the module's configuration again loads the file afresh when
    /// there are some, rather than sharing this module.
    pub fn restart_only(&self) -> Vec<&'static str> {
        self.boot.changes(&self.current().settings.boot)
    }

    /// The snapshot to decide a request with.
    pub fn current(&self) -> Arc<Snapshot> {
        read(&self.snapshot)
    }
}

impl Drop for Module {
    /// The reload thread stops (within [`RELOAD_EVERY`]) before the module
    /// goes: the edge may unload the library after this.
    fn drop(&mut self) {
        let watcher = self.watcher.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        watcher.stop.store(true, Ordering::Relaxed);
        if let Some(stopped) = watcher.stopped.take() {
            let _ = stopped.recv();
        }
        let store =
            std::mem::replace(self.store.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner), Started::Failed);
        if let Started::Running(s) = store {
            // Its threads stop within about a second; a parked request's
            // answer may still hold it, and then it stops when that goes.
            match Arc::try_unwrap(s) {
                Ok(s) => s.stop(),
                Err(s) => s.halt(),
            }
        }
        self.dns.settle();
    }
}

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

/// The reload thread: it waits on the watch of the snapshot's sources
/// ([`Reloads`]), reloads [`DEBOUNCE`] after a burst of changes ends
/// (only what changed is read and compiled again), and puts the new
/// snapshot in force whole. A reload that fails keeps the rules in force
/// and says why. Each [`RELOAD_EVERY`] it also closes the violation log's
/// windows that have ended, and folds the crowd check's second (once a
/// second: [`Crowd::tick`] folds nothing more often).
fn reload(
    config: &Path,
    current: &Current,
    stop: &AtomicBool,
    (book, crowd, metrics): (Option<&Violations>, &Crowd, &Metrics),
    (log, crowd_warning): (fn(Level, &str), &str),
) {
    let mut say = |level: Level, message: &str| log(level, message);
    let snap = read(current);
    if let Err(e) = reloads::keep_first(&snap) {
        reloads::not_kept(&e, &mut say);
    }
    let mut reloads = Reloads::new(config.to_owned(), snap, true, &mut say);
    // A file changed since the load: reloaded at once.
    let mut quiet = reloads.pending().then(Instant::now);
    let (mut tick, mut sweep) = (Instant::now() + RELOAD_EVERY, Instant::now() + SWEEP_EVERY);
    while !stop.load(Ordering::Relaxed) {
        let mut until = quiet.map_or(tick, |q| q.min(tick));
        if reloads.sweeping() {
            until = until.min(sweep);
        }
        wait(reloads.inotify(), until.saturating_duration_since(Instant::now()));
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if reloads.drain() {
            quiet = Some(Instant::now() + DEBOUNCE);
        }
        let now = Instant::now();
        if now >= tick {
            tick = now + RELOAD_EVERY;
            let ms = crate::log::now_ms();
            if let Some(book) = book {
                book.tick(ms);
            }
            // The edge names the client itself (Envoy's
            // `xff_num_trusted_hops`, HAProxy's `set-src`), which
            // robotgate.yaml's `trusted_proxies` does not see: the
            // minute's traffic alone says it.
            if crowd.tick(true, ms) {
                log(Level::Warn, &format!("robotgate: {crowd_warning}"));
            }
        }
        if reloads.sweeping() && now >= sweep {
            sweep = now + SWEEP_EVERY;
            if reloads.sweep() {
                quiet = Some(now);
            }
        }
        if quiet.is_none_or(|q| now < q) {
            continue;
        }
        quiet = None;
        let Some(job) = reloads.begin() else { continue };
        let install = |new| Some(std::mem::replace(&mut *current.write().unwrap_or_else(PoisonError::into_inner), new));
        // What it replaced is freed here, off the edge's threads.
        drop(reloads.finished(job.run(), install, Some(metrics.series()), &mut say));
        if reloads.pending() {
            // A new source changed between this reload's read and its watch.
            quiet = Some(Instant::now());
        }
    }
}

/// Wait up to `timeout` for an event on `inotify` (all of `timeout` when
/// there is no watch).
fn wait(inotify: Option<&Inotify>, timeout: Duration) {
    let Some(inotify) = inotify else {
        std::thread::sleep(timeout);
        return;
    };
    let mut fd = libc::pollfd { fd: inotify.fd(), events: libc::POLLIN, revents: 0 };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one pollfd, alive for the call. An interrupted or failed
    // poll only ends the wait early.
    unsafe { libc::poll(&raw mut fd, 1, ms) };
}
