//! Requests that wait on the outside world (the shared store; reverse DNS;
//! Web Bot Auth key directories)
//! without holding up nginx's event loop.
//!
//! The work itself runs on a helper thread of the worker ([`crate::store`],
//! [`crate::dns`], [`crate::wba`]). The request is parked the way nginx parks one on its own
//! thread pools (`aio threads`): its main request's `blocked` count is
//! raised, so nginx neither frees nor finalizes it meanwhile, and the
//! handler returns `NGX_DONE`. The helper hands its answer back through
//! [`Waker::finish`], which writes one byte to a pipe that nginx's loop
//! watches; on nginx's thread, [`on_wake`] stores each answer in its
//! request's context, lowers `blocked`, and runs the request's phases again
//! (`write_event_handler`), which re-enter the handler with the answer at
//! hand: the pipeline is run again and asks nothing it was answered.
//!
//! A request nginx terminated meanwhile (the client went away, a timeout)
//! finds its `write_event_handler` set to nginx's finalizer, which ends it
//! then, as for a thread task.
//!
//! Every helper answers within a deadline (`state.timeout_ms`, the DNS
//! timeout, a directory fetch's 2 s), so a parked request always resumes.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ngx::ffi::{ngx_connection_t, ngx_event_t, ngx_http_request_t, ngx_log_t};

use robotgate::identity::Identity;

/// A parked request, as a helper thread carries it: only an address, read
/// again only on nginx's thread, where the request is (`blocked` keeps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(usize);

/// What a helper found out.
#[derive(Debug, Clone, Copy)]
pub enum Found {
    /// The store's answer to a rate question ([`robotgate::pipeline::Pipeline::answer_store`]).
    Rate(Option<Result<(), Duration>>),
    /// What reverse DNS said of the client as database robot `bot`.
    Dns { bot: usize, identity: Identity },
    /// The key directories of a signed request were fetched (or failed):
    /// what came of each is in the worker's cache ([`crate::wba`]).
    Keys,
}

/// A request's context while it waits, and the answers it got (allocated
/// in the request's pool, plain data: nothing to drop).
#[derive(Debug, Default, Clone, Copy)]
pub struct Wait {
    /// Parked: a write event that runs its phases meanwhile finds it here.
    pub waiting: bool,
    /// The store's answer, once given.
    pub rate: Option<Option<Result<(), Duration>>>,
    /// Reverse DNS's answer, once given.
    pub dns: Option<(usize, Identity)>,
    /// Its key directories were fetched.
    pub keys: bool,
}

/// Work a helper hands back to nginx's thread ([`Waker::later`]).
pub type Later = Box<dyn FnOnce() + Send>;

/// The way back to nginx's thread: answers, and the pipe that wakes it.
pub struct Waker {
    found: Mutex<Vec<(Ticket, Found)>>,
    /// Messages for nginx's error log, written on nginx's thread.
    notes: Mutex<Vec<(usize, String)>>,
    /// Work to run on nginx's thread (a finished reload, [`crate::reload`]).
    later: Mutex<Vec<Later>>,
    pipe: OwnedFd,
}

impl Waker {
    /// Hand `found` back to the request of `ticket`.
    pub fn finish(&self, ticket: Ticket, found: Found) {
        self.found.lock().unwrap_or_else(|e| e.into_inner()).push((ticket, found));
        self.wake();
    }

    /// Have `text` written to nginx's error log at `level` (`NGX_LOG_*`).
    pub fn note(&self, level: usize, text: String) {
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).push((level, text));
        self.wake();
    }

    /// Run `work` on nginx's thread, at its loop's next turn.
    pub fn later(&self, work: Later) {
        self.later.lock().unwrap_or_else(|e| e.into_inner()).push(work);
        self.wake();
    }

    fn wake(&self) {
        // One byte; a full pipe means a wake is pending already.
        // SAFETY: the pipe's write end, owned here; borrowed for one write.
        let mut f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(self.pipe.as_raw_fd()) });
        let _ = f.write(&[1]);
    }
}

/// This worker's end of the pipe, watched by nginx's loop.
struct Loop {
    waker: Arc<Waker>,
    conn: *mut ngx_connection_t,
    read: std::fs::File,
}

thread_local! {
    static LOOP: RefCell<Option<Loop>> = const { RefCell::new(None) };
}

/// The worker's waker: made, and its pipe watched by nginx's loop, on first
/// use. `None` when nginx cannot watch one more descriptor (no free
/// connection): what needs a helper is then answered as if it had none.
pub fn waker(log: *mut ngx_log_t) -> Option<Arc<Waker>> {
    LOOP.with_borrow_mut(|l| {
        if let Some(l) = l {
            return Some(l.waker.clone());
        }
        let mut fds = [0; 2];
        // SAFETY: a pipe of two new descriptors, non-blocking and closed on exec.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: the descriptors just made, owned from here.
        let (read, write) = unsafe { (std::fs::File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: on nginx's thread, in a worker; nginx owns the connection
        // slot until `stop`, and the descriptor stays ours.
        let conn = unsafe { ngx::ffi::ngx_get_connection(read.as_raw_fd(), log) };
        if conn.is_null() {
            return None;
        }
        // SAFETY: the connection nginx just gave, and its read event.
        unsafe {
            let rev = (*conn).read;
            (*rev).handler = Some(on_wake);
            (*rev).log = log;
            (*conn).log = log;
            if ngx::ffi::ngx_handle_read_event(rev, 0) != ngx::ffi::NGX_OK as ngx::ffi::ngx_int_t {
                ngx::ffi::ngx_free_connection(conn);
                return None;
            }
        }
        let waker = Arc::new(Waker {
            found: Mutex::new(Vec::new()),
            notes: Mutex::new(Vec::new()),
            later: Mutex::new(Vec::new()),
            pipe: write,
        });
        *l = Some(Loop { waker: waker.clone(), conn, read });
        Some(waker)
    })
}

/// The request's context, if it has one.
///
/// # Safety
/// `r` is a live request, on nginx's thread.
unsafe fn context(r: *mut ngx_http_request_t) -> Option<&'static mut Wait> {
    // SAFETY: the caller's; the slot is null or a `Wait` made by `park`.
    unsafe {
        let index = crate::module().ctx_index;
        ((*(*r).ctx.add(index)) as *mut Wait).as_mut()
    }
}

/// What the request has waited for so far (default: nothing).
pub fn waited(request: &ngx::http::Request) -> Wait {
    let r = std::ptr::from_ref(request).cast_mut().cast::<ngx_http_request_t>();
    // SAFETY: the request nginx is running, on its thread.
    unsafe { context(r) }.copied().unwrap_or_default()
}

/// Park request `r`: nginx keeps it until [`on_wake`] brings the answer.
/// The caller hands the ticket to a helper and returns `NGX_DONE`.
/// `None` (nothing parked) when its pool cannot hold the context.
pub fn park(r: *mut ngx_http_request_t) -> Option<Ticket> {
    // SAFETY: the request nginx is running, on its thread; its context slot
    // is ours, and the context lives in its pool as long as it does.
    unsafe {
        let wait = match context(r) {
            Some(w) => w,
            None => {
                let w = ngx::ffi::ngx_pcalloc((*r).pool, std::mem::size_of::<Wait>()) as *mut Wait;
                if w.is_null() {
                    return None;
                }
                w.write(Wait::default());
                *(*r).ctx.add(crate::module().ctx_index) = w.cast();
                &mut *w
            }
        };
        wait.waiting = true;
        let main = (*r).main;
        (*main).set_blocked((*main).blocked() + 1);
        hold((*(*r).connection).log);
    }
    Some(Ticket(r as usize))
}

thread_local! {
    /// Requests parked in this worker.
    static PARKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The timer that keeps a worker told to stop gracefully (`nginx -s
/// reload`, `quit`) alive while requests are parked: nginx ends such a
/// worker once no timer that may not be cancelled is left, and a parked
/// request has none of its own.
static mut HOLD: std::mem::MaybeUninit<ngx_event_t> = std::mem::MaybeUninit::zeroed();

/// How often the hold looks whether requests are still parked.
const HOLD_EVERY: ngx::ffi::ngx_msec_t = 100;

/// One more request parked: arm the hold if it is not.
///
/// # Safety
/// On nginx's thread.
unsafe fn hold(log: *mut ngx_log_t) {
    PARKED.set(PARKED.get() + 1);
    // SAFETY: the worker's own static event, on nginx's thread.
    unsafe {
        let ev = (&raw mut HOLD).cast::<ngx_event_t>();
        if (*ev).timer_set() == 0 {
            (*ev).handler = Some(on_hold);
            (*ev).log = log;
            (*ev).data = ev.cast();
            ngx::ffi::ngx_add_timer(ev, HOLD_EVERY);
        }
    }
}

/// One parked request fewer.
fn release() {
    PARKED.set(PARKED.get().saturating_sub(1));
}

extern "C" fn on_hold(ev: *mut ngx_event_t) {
    if PARKED.get() > 0 {
        // SAFETY: the hold event, on nginx's thread.
        unsafe { ngx::ffi::ngx_add_timer(ev, HOLD_EVERY) };
    }
}

/// Undo [`park`] when no helper took the ticket: the request goes on now.
pub fn unpark(Ticket(r): Ticket) {
    let r = r as *mut ngx_http_request_t;
    release();
    // SAFETY: a request just parked, still running on nginx's thread.
    unsafe {
        if let Some(wait) = context(r) {
            wait.waiting = false;
        }
        let main = (*r).main;
        (*main).set_blocked((*main).blocked().saturating_sub(1));
    }
}

/// nginx's read event on the pipe: answers are in.
extern "C" fn on_wake(_ev: *mut ngx_event_t) {
    let taken = LOOP.with_borrow_mut(|l| {
        let l = l.as_mut()?;
        // Drain the pipe (nginx watches it edge-triggered).
        let mut buf = [0u8; 256];
        while matches!(l.read.read(&mut buf), Ok(n) if n > 0) {}
        let found = std::mem::take(&mut *l.waker.found.lock().unwrap_or_else(|e| e.into_inner()));
        let notes = std::mem::take(&mut *l.waker.notes.lock().unwrap_or_else(|e| e.into_inner()));
        let later = std::mem::take(&mut *l.waker.later.lock().unwrap_or_else(|e| e.into_inner()));
        // SAFETY: the connection `waker` made, alive until `stop`.
        Some((found, notes, later, unsafe { (*l.conn).log }))
    });
    let Some((found, notes, later, log)) = taken else { return };
    for (level, text) in notes {
        ngx::ngx_log_error!(level, log, "robotgate: {}", text);
    }
    for work in later {
        work();
    }
    for (ticket, answer) in found {
        resume(ticket, answer);
    }
}

/// Bring `answer` to the parked request of `ticket`, and run its phases.
fn resume(Ticket(r): Ticket, answer: Found) {
    release();
    let r = r as *mut ngx_http_request_t;
    // SAFETY: a request parked by `park`: `blocked` kept it alive, and
    // this is nginx's thread. What nginx's own thread tasks do at their
    // end (ngx_http_copy_thread_event_handler).
    unsafe {
        if let Some(wait) = context(r) {
            wait.waiting = false;
            match answer {
                Found::Rate(a) => wait.rate = Some(a),
                Found::Dns { bot, identity } => wait.dns = Some((bot, identity)),
                Found::Keys => wait.keys = true,
            }
        }
        let main = (*r).main;
        (*main).set_blocked((*main).blocked().saturating_sub(1));
        let c = (*r).connection;
        if let Some(handler) = (*r).write_event_handler {
            handler(r);
        }
        ngx::ffi::ngx_http_run_posted_requests(c);
    }
}

/// A worker's exit: the pipe is no longer watched.
pub fn stop() {
    LOOP.with_borrow_mut(|l| {
        if let Some(l) = l.take() {
            // SAFETY: the connection `waker` made. Its descriptor is closed
            // by `l.read` below, which takes it out of nginx's epoll set as
            // nginx's own close does (NGX_CLOSE_EVENT: no system call).
            unsafe {
                (*(*l.conn).read).set_active(0);
                // Not an open socket left behind, to nginx's exit check.
                (*l.conn).fd = -1;
                ngx::ffi::ngx_free_connection(l.conn);
            }
        }
    });
}
