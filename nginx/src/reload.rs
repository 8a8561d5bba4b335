//! A worker's reloads, off the request path (issues 52, 54, 55, 69): the
//! module's shared watch and reloads ([`robotgate_embed::reloads`]) on
//! nginx's loop.
//!
//! A request only uses the worker's snapshot: it never looks at a file,
//! reads one or builds anything. The watch's inotify descriptor is watched
//! by nginx's loop as it watches a socket; an event that names a source
//! starts (or extends) a burst, and [`DEBOUNCE`] after its last event a
//! helper thread reloads, below the priority of nginx's own threads
//! ([`robotgate::load::watch::spawn_below`]). The new snapshot comes back
//! to nginx's thread through the worker's waker
//! ([`crate::park::Waker::later`]), which puts it in force at once, with no
//! request needed, and writes what the reload said to nginx's error log.
//! Files no watch covers are looked at by a once-a-second timer.
//!
//! A worker stays single-threaded until a file changes (see
//! [`robotgate::load::file::Reader::Caller`]): the reload thread is
//! started for a reload, reads every file itself, and ends with it. One
//! reload at a time; changes meanwhile start another once it ends. The old
//! snapshot is dropped on a thread too (freeing a classifier takes a
//! while). At a worker's exit the watch is closed; a reload still running
//! is abandoned with the process.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Arc;

use ngx::ffi::{ngx_connection_t, ngx_event_t, ngx_log_t, ngx_msec_t, NGX_LOG_ERR, NGX_LOG_NOTICE, NGX_LOG_WARN};
use ngx::ngx_log_error;

use robotgate::load::watch::spawn_below;
use robotgate::load::Snapshot;
use robotgate::state::series::Series;
use robotgate_embed::reloads::{self, Done, Reloads, DEBOUNCE, SWEEP_EVERY};
use robotgate_embed::Level;

use crate::park::Waker;

/// How often the sweep looks, in milliseconds ([`SWEEP_EVERY`]).
const SWEEP_MSEC: ngx_msec_t = SWEEP_EVERY.as_millis() as ngx_msec_t;

/// Puts a new snapshot in force in the worker; gives back what it replaced
/// (to be dropped off nginx's thread), or `None` when it could not.
pub type Install = fn(Arc<Snapshot>) -> Option<Vec<Arc<Snapshot>>>;

/// A worker's watch and reloads, on nginx's thread.
struct Watch {
    log: *mut ngx_log_t,
    waker: Arc<Waker>,
    install: Install,
    reloads: Reloads,
    /// nginx's connection for the watch's descriptor; `None`: no watch
    /// could be made, the sweep looks at every source.
    conn: Option<*mut ngx_connection_t>,
    /// Where this worker counts its reloads, if it is the one that does
    /// ([`reloads::count`]).
    counts: Option<&'static Series>,
}

thread_local! {
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
}

/// The timer that ends a burst ([`DEBOUNCE`]).
static mut QUIET: std::mem::MaybeUninit<ngx_event_t> = std::mem::MaybeUninit::zeroed();
/// The sweep's timer.
static mut SWEEP: std::mem::MaybeUninit<ngx_event_t> = std::mem::MaybeUninit::zeroed();

/// What a reload says, into nginx's error log (`log`).
fn say(log: *mut ngx_log_t) -> impl FnMut(Level, &str) {
    move |level, message| {
        let level = match level {
            Level::Info => NGX_LOG_NOTICE,
            Level::Warn => NGX_LOG_WARN,
            Level::Error => NGX_LOG_ERR,
        };
        ngx_log_error!(level, log, "{}", message);
    }
}

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
    if keeper {
        let (first, waker) = (snap.clone(), waker.clone());
        let spawned = spawn_below("robotgate-record", move || {
            if let Err(e) = reloads::keep_first(&first) {
                waker.later(Box::new(move || {
                    WATCH.with_borrow(|w| {
                        if let Some(w) = w.as_ref() {
                            reloads::not_kept(&e, &mut say(w.log));
                        }
                    });
                }));
            }
        });
        if let Err(e) = spawned {
            ngx_log_error!(NGX_LOG_WARN, log, "robotgate: no thread to keep which site file holds each host: {}", e);
        }
    }
    let mut reloads = Reloads::new(config, snap, keeper, &mut say(log));
    let conn = match reloads.inotify().map(|i| watch_on_loop(i.fd(), log)) {
        Some(Ok(conn)) => Some(conn),
        Some(Err(why)) => {
            ngx_log_error!(NGX_LOG_WARN, log, "robotgate: cannot watch files ({}): each is looked at in turn", why);
            reloads.unwatch(&mut say(log));
            None
        }
        None => None,
    };
    let mut w = Watch { log, waker, install, reloads, conn, counts };
    w.arm_sweep();
    if w.reloads.pending() {
        // Whatever changed raised no event here: every file is looked at.
        w.begin();
    }
    WATCH.with_borrow_mut(|slot| *slot = Some(w));
    Ok(())
}

/// Have nginx's loop watch the inotify descriptor `fd`.
fn watch_on_loop(fd: std::os::fd::RawFd, log: *mut ngx_log_t) -> Result<*mut ngx_connection_t, String> {
    // SAFETY: on nginx's thread, in a worker; nginx owns the connection
    // slot until `stop`, and the descriptor stays the watch's.
    unsafe {
        let conn = ngx::ffi::ngx_get_connection(fd, log);
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
        Ok(conn)
    }
}

impl Watch {
    /// The sweep's timer, when some files are swept and it is not set.
    fn arm_sweep(&self) {
        // SAFETY: the worker's own static event, on nginx's thread.
        unsafe {
            let ev = (&raw mut SWEEP).cast::<ngx_event_t>();
            if self.reloads.sweeping() && (*ev).timer_set() == 0 {
                ngx::ffi::ngx_add_timer(ev, SWEEP_MSEC);
            }
        }
    }

    /// A burst ended: reload now on a helper thread, or once the reload
    /// under way ends.
    fn begin(&mut self) {
        let Some(job) = self.reloads.begin() else { return };
        let waker = self.waker.clone();
        let spawned = spawn_below("robotgate-reload", move || {
            let done = job.run();
            waker.later(Box::new(move || finished(done)));
        });
        if let Err(e) = spawned {
            self.reloads.not_begun(&e, &mut say(self.log));
        }
    }
}

/// A reload ended (on nginx's thread, from the waker): put the new
/// snapshot in force and say what the reload said.
fn finished(done: Done) {
    WATCH.with_borrow_mut(|w| {
        let Some(w) = w.as_mut() else { return };
        let log = w.log;
        if let Some(old) = w.reloads.finished(done, w.install, w.counts, &mut say(log)) {
            // Freeing what only the old snapshot held (a classifier, sites)
            // is not nginx's thread's work.
            if let Err(e) = spawn_below("robotgate-drop", move || drop(old)) {
                ngx_log_error!(NGX_LOG_WARN, log, "robotgate: no thread to free the old snapshot: {}", e);
            }
        }
        w.arm_sweep();
        // SAFETY: the worker's own static event, on nginx's thread.
        let quiet = unsafe { (*(&raw mut QUIET).cast::<ngx_event_t>()).timer_set() != 0 };
        // A burst ended meanwhile, or a new source changed between the
        // reload's read and its watch: reloaded now, unless another burst's
        // quiet time is running (which begins it).
        if !quiet && (w.reloads.again() || w.reloads.pending()) {
            w.begin();
        }
    });
}

/// nginx's read event on the inotify descriptor: note each event; one that
/// may change a source starts the quiet time again.
extern "C" fn on_events(_ev: *mut ngx_event_t) {
    WATCH.with_borrow_mut(|w| {
        let Some(w) = w.as_mut() else { return };
        if w.reloads.drain() {
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
        if w.reloads.sweep() {
            w.begin();
        }
        // SAFETY: nginx's globals, read on its thread; the event is ours.
        unsafe {
            if w.reloads.sweeping() && ngx::ffi::ngx_exiting == 0 && ngx::ffi::ngx_quit == 0 {
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
    if let Some(conn) = w.conn {
        // SAFETY: the connection `watch_on_loop` made. Its descriptor is
        // closed with the watch below, which takes it out of nginx's epoll
        // set as nginx's own close does.
        unsafe {
            (*(*conn).read).set_active(0);
            // Not an open socket left behind, to nginx's exit check.
            (*conn).fd = -1;
            ngx::ffi::ngx_free_connection(conn);
        }
    }
    drop(w.reloads);
}
