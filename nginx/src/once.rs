//! One decision per client request.
//!
//! nginx runs a request's phases again when it redirects it inside itself:
//! the directory index, `try_files`, `rewrite ... last`, `error_page` and
//! named locations all restart it at the rewrite phases, and the handler
//! runs again. Deciding again is wrong: the first pass has already counted
//! the request and set the robot's pace, so a compliant robot's first
//! request for `/` (index.html behind it) met its own pace and got 429, and
//! an `error_page` behind a pass refused the error page (issue 52).
//!
//! nginx clears the modules' request contexts on an internal redirect, so
//! the mark that a request was decided lives where a redirect does not
//! reach: a cleanup entry of the request's pool, which lives as long as the
//! request (as the Lua module keeps its context across `ngx.exec`). Its
//! handler does nothing; its data is the address of [`MARK`], which nothing
//! else in the process uses. A first pass (`r->internal` clear) never looks.

use std::ffi::c_void;

use ngx::ffi::{ngx_http_request_t, ngx_pool_cleanup_add};

/// The data of the mark's pool cleanup entry: an address of our own.
static MARK: u8 = 0;

extern "C" fn nothing(_data: *mut c_void) {}

fn mark_data() -> *mut c_void {
    std::ptr::from_ref(&MARK).cast_mut().cast()
}

/// Whether `r` was decided by an earlier pass of its phases (it has been
/// redirected inside nginx since).
///
/// # Safety
/// `r` is a live request of this worker, on nginx's thread.
pub unsafe fn decided(r: *const ngx_http_request_t) -> bool {
    // SAFETY: the caller's; the pool's cleanup list is nginx's, walked on
    // its thread, and ends with a null `next`.
    unsafe {
        if (*r).internal() == 0 {
            return false;
        }
        let mut c = (*(*r).pool).cleanup;
        while !c.is_null() {
            if (*c).data == mark_data() {
                return true;
            }
            c = (*c).next;
        }
    }
    false
}

/// Mark `r` decided: later passes of its phases take the first decision.
/// Without memory for the mark, the request stays unmarked (a later pass
/// decides again, as before).
///
/// # Safety
/// `r` is a live request of this worker, on nginx's thread.
pub unsafe fn mark(r: *mut ngx_http_request_t) {
    // SAFETY: the caller's; an entry of size 0 allocates no data.
    unsafe {
        let c = ngx_pool_cleanup_add((*r).pool, 0);
        if let Some(c) = c.as_mut() {
            c.handler = Some(nothing);
            c.data = mark_data();
        }
    }
}
