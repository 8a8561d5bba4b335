//! A worker's reloads, off the request path (issues 52, 54, 55).
//!
//! A request only uses the worker's snapshot: it never looks at a file,
//! reads one or builds anything. Changes are noticed by inotify on the
//! directories of the snapshot's sources ([`crate::watch`]), whose
//! descriptor nginx's loop watches as it watches a socket: an event that
//! names a source starts (or extends) a burst, and [`DEBOUNCE`] after its
//! last event a helper thread reloads, below the priority of nginx's own
//! threads ([`robotgate::load::watch::spawn_below`];
//! [`robotgate::load::reload_whole`]:
//! a site whose files did not change is shared with the old snapshot, the
//! classifier is built again only when the bot database changed, a file
//! renamed into place is read at once, one written in place once it
//! settles). The new snapshot comes back to nginx's thread through the
//! worker's waker ([`crate::park::Waker::later`]), which puts it in force
//! at once, with no request needed, and writes what the reload said to
//! nginx's error log. A file refused on the way keeps its last good
//! version; a reload refused whole keeps the old snapshot and says why,
//! once until it changes.
//!
//! Events may be lost (a queue that overflowed, a watched directory that
//! went away): that counts as a change of anything. A directory that could
//! not be watched (the user's limit of watches reached) has its files
//! looked at by a once-a-second timer, [`SWEEP_FILES`] `stat`s a tick, going
//! round ([`robotgate::load::watch::Sweep`]); with every directory watched
//! an idle worker makes no `stat` at all.
//!
//! A worker stays single-threaded until a file changes (see
//! [`robotgate::load::file::Reader::Caller`]): the reload thread is
//! started for a reload, reads every file itself, and ends with it. One
//! reload at a time; changes meanwhile start another once it ends. The old
//! snapshot is dropped on a thread too (freeing a classifier takes a
//! while). At a worker's exit the watch is closed; a reload still running
//! is abandoned with the process.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use ngx::ffi::{ngx_connection_t, ngx_event_t, ngx_log_t, ngx_msec_t, NGX_LOG_ERR, NGX_LOG_NOTICE, NGX_LOG_WARN};
use ngx::ngx_log_error;

use robotgate::load::file::Reader;
use robotgate::load::watch::{
    same_sources, spawn_below, watch_dirs, Burst, Event, Sources, Sweep, DEBOUNCE, SWEEP_EVERY, SWEEP_FILES,
};
use robotgate::load::{Problem, Snapshot};
use robotgate::metric;
use robotgate::state::series::Series;

use crate::park::Waker;
use crate::watch::Inotify;

/// How often the sweep looks, in milliseconds ([`SWEEP_EVERY`]).
const SWEEP_MSEC: ngx_msec_t = SWEEP_EVERY.as_millis() as ngx_msec_t;

/// Puts a new snapshot in force in the worker; gives back what it replaced
/// (to be dropped off nginx's thread), or `None` when it could not.
pub type Install = fn(Arc<Snapshot>) -> Option<Vec<Arc<Snapshot>>>;

/// A worker's watch and reloads, on nginx's thread.
struct Watch {
    config: PathBuf,
    log: *mut ngx_log_t,
    waker: Arc<Waker>,
    install: Install,
    /// The snapshot in force (the next reload's previous one).
    current: Arc<Snapshot>,
    /// The inotify descriptor and nginx's connection for it; `None`: no
    /// watch could be made, the sweep looks at every source.
    inotify: Option<(Inotify, *mut ngx_connection_t)>,
    sources: Sources,
    burst: Burst,
    sweep: Sweep,
    /// A reload is under way.
    running: bool,
    /// A burst ended while one was: reload again when it ends.
    again: bool,
    /// What a refused reload said last: said once until it changes.
    said: Vec<String>,
    /// A burst's changes were not put in force (its reload was refused, or
    /// had no thread): the next reload looks at every file, not only at
    /// those its own events named.
    unsure: bool,
    /// Some sources are outside every watch (the sweep looks at them).
    unwatched: bool,
    /// Where this worker counts its reloads, if it is the one that does
    /// ([`count`]).
    counts: Option<&'static Series>,
    /// This worker (the first) keeps which site file holds each host for
    /// the next start ([`robotgate::load::sites_dir::keep`]), as the proxy
    /// does after each reload: every worker reloads the same files alike.
    keeper: bool,
}

thread_local! {
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
}

/// The timer that ends a burst ([`DEBOUNCE`]).
static mut QUIET: std::mem::MaybeUninit<ngx_event_t> = std::mem::MaybeUninit::zeroed();
/// The sweep's timer.
static mut SWEEP: std::mem::MaybeUninit<ngx_event_t> = std::mem::MaybeUninit::zeroed();

/// Start watching `snap`'s sources (in a worker's `init_process`, on
/// nginx's thread), and reload at once if one changed since the master read
/// it (an edit between `nginx` reading its configuration and this worker's
/// start raised no event it could see).
/// `counts`: where to count the reloads, given to one worker only;
/// `keeper`: this worker keeps the host record (one worker only).
pub fn start(
    log: *mut ngx_log_t,
    config: PathBuf,
    snap: Arc<Snapshot>,
    (install, counts): (Install, Option<&'static Series>),
    keeper: bool,
) -> Result<(), String> {
    let waker = crate::park::waker(log).ok_or("no free connection for the reloads' wake-ups")?;
    let inotify = match Inotify::new() {
        Ok(i) => watch_on_loop(i, log),
        Err(e) => Err(e.to_string()),
    };
    let inotify = match inotify {
        Ok(i) => Some(i),
        Err(why) => {
            ngx_log_error!(NGX_LOG_WARN, log, "robotgate: cannot watch files ({}): each is looked at in turn", why);
            None
        }
    };
    // SAFETY: the worker's own static events, used on nginx's thread only.
    unsafe {
        for (ev, handler) in [(&raw mut QUIET, on_quiet as _), (&raw mut SWEEP, on_sweep as _)] {
            let ev = ev.cast::<ngx_event_t>();
            (*ev).handler = Some(handler);
            (*ev).log = log;
            (*ev).data = ev.cast();
            // A graceful shutdown does not wait for them.
            (*ev).set_cancelable(1);
        }
    }
    let stale = snap.stale();
    let mut w = Watch {
        config,
        log,
        waker,
        install,
        current: snap.clone(),
        inotify,
        sources: Sources::default(),
        burst: Burst::default(),
        sweep: Sweep::default(),
        running: false,
        again: false,
        // What the first load refused was said by the master.
        said: snap.refused.iter().map(ToString::to_string).collect(),
        unsure: false,
        unwatched: false,
        counts,
        keeper,
    };
    if keeper {
        // The master decided by the record it read; what it decided is
        // the record from now on (at a first start there was none).
        let (first, waker) = (snap.clone(), w.waker.clone());
        let spawned = spawn_below("robotgate-record", move || {
            if let Err(e) = robotgate::load::sites_dir::keep(&first, None, Reader::Caller) {
                waker.later(Box::new(move || not_kept(&e)));
            }
        });
        if let Err(e) = spawned {
            ngx_log_error!(NGX_LOG_WARN, log, "robotgate: no thread to keep which site file holds each host: {}", e);
        }
    }
    w.watch(&snap, Sources::of(&snap.sources), watch_dirs(&snap.sources));
    if stale {
        // Whatever changed raised no event here: every file is looked at.
        w.burst.note(Event::Lost, &w.sources);
        w.begin();
    }
    WATCH.with_borrow_mut(|slot| *slot = Some(w));
    Ok(())
}

/// Have nginx's loop watch `inotify`'s descriptor.
fn watch_on_loop(inotify: Inotify, log: *mut ngx_log_t) -> Result<(Inotify, *mut ngx_connection_t), String> {
    // SAFETY: on nginx's thread, in a worker; nginx owns the connection
    // slot until `stop`, and the descriptor stays the watch's.
    unsafe {
        let conn = ngx::ffi::ngx_get_connection(inotify.fd(), log);
        if conn.is_null() {
            return Err("no free connection".into());
        }
        let rev = (*conn).read;
        (*rev).handler = Some(on_events);
        (*rev).log = log;
        (*conn).log = log;
        if ngx::ffi::ngx_handle_read_event(rev, 0) != ngx::ffi::NGX_OK as ngx::ffi::ngx_int_t {
            (*conn).fd = -1;
            ngx::ffi::ngx_free_connection(conn);
            return Err("nginx cannot watch the descriptor".into());
        }
        Ok((inotify, conn))
    }
}

impl Watch {
    /// Watch the directories of `snap`'s sources; sweep the sources none covers.
    fn watch(&mut self, snap: &Snapshot, sources: Sources, dirs: BTreeSet<PathBuf>) {
        let watched = match &mut self.inotify {
            Some((inotify, _)) => {
                let failed = inotify.set(&dirs);
                if let Some((dir, e)) = failed.first() {
                    ngx_log_error!(
                        NGX_LOG_WARN,
                        self.log,
                        "robotgate: cannot watch {} directories ({}: {}): their files are looked at in turn, {} a second",
                        failed.len(),
                        dir.display(),
                        e,
                        SWEEP_FILES
                    );
                }
                inotify.watched()
            }
            None => BTreeSet::new(),
        };
        self.sweep = Sweep::new(sources.outside(&watched), snap.read_at);
        self.unwatched = !self.sweep.is_empty();
        self.sources = sources;
        // SAFETY: the worker's own static event, on nginx's thread.
        unsafe {
            let ev = (&raw mut SWEEP).cast::<ngx_event_t>();
            if !self.sweep.is_empty() && (*ev).timer_set() == 0 {
                ngx::ffi::ngx_add_timer(ev, SWEEP_MSEC);
            }
        }
    }

    /// A burst ended: reload now, or once the reload under way ends.
    fn begin(&mut self) {
        if self.running {
            self.again = true;
            return;
        }
        let (whole, named) = self.burst.take();
        // The events named every change only when every directory is
        // watched and none was lost since the snapshot in force was read:
        // then a site none of whose files they named is kept without a
        // `stat` (20,000 of them a reload at 10,000 sites of two files each).
        let named = named.filter(|_| self.inotify.is_some() && !self.unwatched && !self.unsure);
        self.unsure = true;
        let (config, previous, waker) = (self.config.clone(), self.current.clone(), self.waker.clone());
        let keeper = self.keeper;
        let spawned = spawn_below("robotgate-reload", move || {
            let outcome = match &named {
                Some(named) => robotgate::load::reload_named(&config, Some(&previous), &whole, named, Reader::Caller),
                None => robotgate::load::reload_whole(&config, Some(&previous), &whole, Reader::Caller),
            };
            // Written here, off nginx's thread, when it changed (a site
            // file moved); a snapshot that then cannot be put in force
            // leaves the record one reload ahead, which the next start
            // reads as this reload's decision.
            let kept = match (&outcome, keeper) {
                (Ok(s), true) => robotgate::load::sites_dir::keep(s, Some(&previous), Reader::Caller).err(),
                _ => None,
            };
            // What the watch needs of the new snapshot, made here rather
            // than on nginx's thread; nothing when its sources are the old
            // one's (an edit): at 10,000 sites, setting up the same 10,000
            // directories again was most of an edit's time on nginx's thread.
            let watch = outcome.as_ref().ok().map(|s| {
                (!same_sources(&s.sources, &previous.sources))
                    .then(|| (Sources::of(&s.sources), watch_dirs(&s.sources)))
            });
            drop(previous);
            waker.later(Box::new(move || {
                if let Some(e) = kept {
                    not_kept(&e);
                }
                finished(outcome, watch);
            }));
        });
        match spawned {
            Ok(_) => self.running = true,
            Err(e) => {
                ngx_log_error!(
                    NGX_LOG_ERR,
                    self.log,
                    "robotgate: no thread for a reload, tried at the next change: {}",
                    e
                );
            }
        }
    }

    /// `lines`, unless they are what was said last; remembered.
    fn fresh(&mut self, lines: Vec<String>) -> Vec<String> {
        if lines == self.said {
            return Vec::new();
        }
        self.said.clone_from(&lines);
        lines
    }
}

type Outcome = Result<Snapshot, Vec<Problem>>;

/// Count a reload as the proxy counts one: `robotgate_reloads_total` when
/// it was put in force, `robotgate_reload_failures_total` when it was
/// refused or kept some file's last good version, and each refused file.
/// Every worker reloads the same files on its own: one of them counts
/// (`series` is given to it alone), so an edit counts once.
fn count(series: Option<&Series>, in_force: bool, refused: &[Problem]) {
    let Some(series) = series else { return };
    if in_force {
        series.add(metric::RELOADS.name, &[], &[], 1);
    }
    if !in_force || !refused.is_empty() {
        series.add(metric::RELOAD_FAILURES.name, &[], &[], 1);
    }
    for (file, reason) in refused.iter().filter_map(Problem::refused_series) {
        series.add(metric::RELOAD_REFUSED.name, &metric::RELOAD_REFUSED_LABELS, &[&file, reason], 1);
    }
}

/// Say (on nginx's thread) that the host record could not be written.
fn not_kept(e: &std::io::Error) {
    WATCH.with_borrow(|w| {
        if let Some(w) = w.as_ref() {
            ngx_log_error!(
                NGX_LOG_WARN,
                w.log,
                "robotgate: cannot keep which site file holds each host (state_dir must be writable by nginx's workers); a restart takes the files in name order: {}",
                e
            );
        }
    });
}

/// A reload ended (on nginx's thread, from the waker): put the new
/// snapshot in force and say what the reload said.
/// `watch`: what the watch needs of the new snapshot, `Some(None)` when its
/// sources are the old one's.
fn finished(outcome: Outcome, watch: Option<Option<(Sources, BTreeSet<PathBuf>)>>) {
    WATCH.with_borrow_mut(|w| {
        let Some(w) = w.as_mut() else { return };
        w.running = false;
        match (outcome, watch) {
            (Ok(new), Some(sources)) => {
                let kept: Vec<String> = new.refused.iter().map(ToString::to_string).collect();
                for problem in w.fresh(kept) {
                    ngx_log_error!(NGX_LOG_ERR, w.log, "robotgate: kept the last good version: {}", problem);
                }
                let c = &new.changes;
                ngx_log_error!(
                    NGX_LOG_NOTICE,
                    w.log,
                    "robotgate: reloaded {}: {} sites, {} added, {} rebuilt, {} removed",
                    w.config.display(),
                    new.sites.len(),
                    c.added,
                    c.rebuilt,
                    c.removed
                );
                let new = Arc::new(new);
                match (w.install)(new.clone()) {
                    Some(old) => {
                        count(w.counts, true, &new.refused);
                        let old = (old, std::mem::replace(&mut w.current, new.clone()));
                        // Freeing what only the old snapshot held (a
                        // classifier, sites) is not nginx's thread's work.
                        if let Err(e) = spawn_below("robotgate-drop", move || drop(old)) {
                            ngx_log_error!(NGX_LOG_WARN, w.log, "robotgate: no thread to free the old snapshot: {}", e);
                        }
                        // The same sources, every directory still watched
                        // and nothing swept: the watch stays as it is.
                        let keep = sources.is_none()
                            && !w.unwatched
                            && w.inotify.as_ref().is_some_and(|(i, _)| !i.lost_a_watch());
                        if !keep {
                            let (sources, dirs) =
                                sources.unwrap_or_else(|| (Sources::of(&new.sources), watch_dirs(&new.sources)));
                            w.watch(&new, sources, dirs);
                        }
                        w.unsure = false;
                    }
                    None => {
                        ngx_log_error!(
                            NGX_LOG_ERR,
                            w.log,
                            "robotgate: the reloaded snapshot could not be put in force"
                        );
                    }
                }
            }
            (Err(problems), _) => {
                count(w.counts, false, &problems);
                let lines = problems.iter().map(ToString::to_string).collect();
                for problem in w.fresh(lines) {
                    ngx_log_error!(
                        NGX_LOG_ERR,
                        w.log,
                        "robotgate: reload refused, the last good snapshot stays: {}",
                        problem
                    );
                }
            }
            (Ok(_), None) => {}
        }
        // SAFETY: the worker's own static event, on nginx's thread.
        let quiet = unsafe { (*(&raw mut QUIET).cast::<ngx_event_t>()).timer_set() != 0 };
        if w.again && !quiet {
            w.again = false;
            w.begin();
        }
    });
}

/// nginx's read event on the inotify descriptor: note each event; one that
/// may change a source starts the quiet time again.
extern "C" fn on_events(_ev: *mut ngx_event_t) {
    WATCH.with_borrow_mut(|w| {
        let Some(w) = w.as_mut() else { return };
        let Some((inotify, _)) = &mut w.inotify else { return };
        let (sources, burst) = (&w.sources, &mut w.burst);
        let mut changed = false;
        inotify.drain(&mut |event| changed |= burst.note(event, sources));
        if changed {
            // SAFETY: the worker's own static event, on nginx's thread.
            unsafe {
                let ev = (&raw mut QUIET).cast::<ngx_event_t>();
                // Moved, not kept: nginx keeps a timer that moves by less
                // than 300 ms where it was.
                if (*ev).timer_set() != 0 {
                    ngx::ffi::ngx_del_timer(ev);
                }
                ngx::ffi::ngx_add_timer(ev, DEBOUNCE.as_millis() as ngx_msec_t);
            }
        }
    });
}

/// The quiet time after a burst passed.
extern "C" fn on_quiet(_ev: *mut ngx_event_t) {
    WATCH.with_borrow_mut(|w| {
        if let Some(w) = w.as_mut() {
            w.begin();
        }
    });
}

/// The sweep's tick: a few files no watch covers looked at.
extern "C" fn on_sweep(ev: *mut ngx_event_t) {
    WATCH.with_borrow_mut(|w| {
        let Some(w) = w.as_mut() else { return };
        if w.sweep.look(SWEEP_FILES) {
            // No event named it. The reload, once in force, builds a new
            // sweep; till then it goes round finding what changes from
            // now (should the reload be refused, the fix that follows).
            w.burst.note(Event::Lost, &w.sources);
            w.sweep.again(std::time::SystemTime::now());
            w.begin();
        }
        // SAFETY: nginx's globals, read on its thread; the event is ours.
        unsafe {
            if !w.sweep.is_empty() && ngx::ffi::ngx_exiting == 0 && ngx::ffi::ngx_quit == 0 {
                ngx::ffi::ngx_add_timer(ev, SWEEP_MSEC);
            }
        }
    });
}

/// A worker's exit: the watch is closed and its timers stopped.
pub fn stop() {
    let Some(w) = WATCH.with_borrow_mut(Option::take) else { return };
    // SAFETY: the worker's own static events, on nginx's thread.
    unsafe {
        for ev in [(&raw mut QUIET).cast::<ngx_event_t>(), (&raw mut SWEEP).cast()] {
            if (*ev).timer_set() != 0 {
                ngx::ffi::ngx_del_timer(ev);
            }
        }
    }
    if let Some((inotify, conn)) = w.inotify {
        // SAFETY: the connection `watch_on_loop` made. Its descriptor is
        // closed with `inotify` below, which takes it out of nginx's epoll
        // set as nginx's own close does.
        unsafe {
            (*(*conn).read).set_active(0);
            // Not an open socket left behind, to nginx's exit check.
            (*conn).fd = -1;
            ngx::ffi::ngx_free_connection(conn);
        }
        drop(inotify);
    }
}
