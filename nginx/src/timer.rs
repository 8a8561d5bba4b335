//! A worker's timers: events of its own on nginx's loop, which a graceful
//! shutdown does not wait for.

use ngx::ffi::{ngx_event_handler_pt, ngx_event_t, ngx_log_t, ngx_msec_t};

/// Make `ev` a timer calling `handler` with `log`, first in `ms`.
///
/// # Safety
/// `ev` is the worker's own event, alive as long as the worker and used
/// only on nginx's thread; `log` is the cycle's.
pub(crate) unsafe fn start(ev: *mut ngx_event_t, log: *mut ngx_log_t, handler: ngx_event_handler_pt, ms: ngx_msec_t) {
    // SAFETY: as the caller promises.
    unsafe {
        (*ev).handler = handler;
        (*ev).log = log;
        (*ev).set_cancelable(1);
        ngx::ffi::ngx_add_timer(ev, ms);
    }
}

/// Arm `ev` again in `ms`, unless the worker is exiting.
///
/// # Safety
/// As [`start`]; called from `ev`'s handler.
pub(crate) unsafe fn again(ev: *mut ngx_event_t, ms: ngx_msec_t) {
    // SAFETY: nginx's globals, read on its thread; the event is the
    // caller's.
    unsafe {
        if ngx::ffi::ngx_exiting == 0 && ngx::ffi::ngx_quit == 0 {
            ngx::ffi::ngx_add_timer(ev, ms);
        }
    }
}
