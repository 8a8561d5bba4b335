//! The violation log inside nginx: the proxy's JSON lines and their folding
//! ([`Aggregator`]), written by every worker to one file.
//!
//! * The file is nginx's own open file (`ngx_conf_open_file`), as an
//!   `access_log`'s is: the master opens it, and `nginx -s reopen` reopens
//!   it in every process, so a rotation by logrotate works as for nginx's
//!   logs.
//! * Each write is whole lines in one `write(2)` on a file opened with
//!   `O_APPEND`: lines of several workers never interleave.
//! * Repeats are folded per worker, as the proxy folds them
//!   (`log.aggregate_window`): the first of a kind is written at once, the
//!   count of its repeats when its window closes. A timer closes windows
//!   once a second, so a count is written whether traffic goes on or not,
//!   and a worker that exits writes what it holds.

use std::cell::RefCell;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;

use ngx::ffi::{ngx_event_t, ngx_open_file_t};

use robotgate::record::aggregate::{Aggregator, Line, Offer};
use robotgate::record::Record;

/// This worker's folding of repeated records, and the file it writes to.
struct Fold {
    lines: Aggregator,
    file: *mut ngx_open_file_t,
}

thread_local! {
    /// Made with the folding settings of the worker's configuration.
    static FOLD: RefCell<Option<Fold>> = const { RefCell::new(None) };
}

/// Set up this worker's folding (at its start): `window` ms and at most
/// `max_keys` kinds held.
pub fn start(file: *mut ngx_open_file_t, window: u64, max_keys: usize) {
    FOLD.with_borrow_mut(|fold| *fold = Some(Fold { lines: Aggregator::new(window, max_keys, 64 << 20), file }));
}

/// The time as nginx has it for this turn of its loop (what its own logs
/// write), in Unix milliseconds: no clock read per record.
pub fn now_ms() -> u64 {
    // SAFETY: nginx's cached time, updated and read on this thread only;
    // it points at one of its slots, always written whole before.
    let t = unsafe { &*ngx::ffi::ngx_cached_time };
    (t.sec as u64) * 1000 + t.msec as u64
}

/// Offer a record of `now` ([`now_ms`]): written now, or folded into a
/// count written later. `r` is a scratch record, written whole before each
/// offer: a folded repeat leaves an older one's fields in it.
pub fn offer(r: &mut Record, now: u64) {
    FOLD.with_borrow_mut(|fold| {
        let Some(fold) = fold.as_mut() else { return };
        let mut lines = fold.lines.close_due(now);
        if let Offer::Write(r) = fold.lines.offer_scratch(r, now) {
            lines.push(Line::Record(r));
        }
        write_lines(fold.file, &lines);
    });
}

/// Write the counts of the windows that have closed.
pub fn tick() {
    let now = now_ms();
    FOLD.with_borrow_mut(|fold| {
        if let Some(fold) = fold.as_mut() {
            let lines = fold.lines.close_due(now);
            write_lines(fold.file, &lines);
        }
    });
}

/// A worker's exit: what it folded is written.
pub fn drain() {
    FOLD.with_borrow_mut(|fold| {
        if let Some(fold) = fold.as_mut() {
            let lines = fold.lines.drain();
            write_lines(fold.file, &lines);
        }
    });
}

/// Lines as JSON, in one write.
fn write_lines(file: *mut ngx_open_file_t, lines: &[Line]) {
    if lines.is_empty() || file.is_null() {
        return;
    }
    let mut text = Vec::new();
    for line in lines {
        if serde_json::to_writer(&mut text, line).is_ok() {
            text.push(b'\n');
        }
    }
    // SAFETY: nginx's open file, alive with the cycle; its descriptor is
    // read at each write, since `nginx -s reopen` replaces it.
    let fd = unsafe { (*file).fd };
    if fd < 0 {
        return;
    }
    // SAFETY: a descriptor nginx owns: borrowed, never closed here.
    let mut f = ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let _ = f.write_all(&text);
}

/// The once-a-second timer of a worker.
static mut TIMER: std::mem::MaybeUninit<ngx_event_t> = std::mem::MaybeUninit::zeroed();

/// Start the timer (in a worker's `init_process`).
///
/// # Safety
/// Called once per worker, on nginx's thread, with the cycle's log.
pub unsafe fn start_timer(log: *mut ngx::ffi::ngx_log_t) {
    // SAFETY: the worker's own static event, used only on nginx's thread.
    unsafe { crate::timer::start((&raw mut TIMER).cast::<ngx_event_t>(), log, Some(on_timer), 1000) };
}

extern "C" fn on_timer(ev: *mut ngx_event_t) {
    tick();
    // SAFETY: our event, in its handler.
    unsafe { crate::timer::again(ev, 1000) };
}
