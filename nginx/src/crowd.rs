//! The crowd check inside nginx ([`robotgate::state::crowd`]): every worker
//! counts its requests into the one [`Crowd`] in the zone, and each
//! worker's once-a-second timer offers to fold the second (one fold a
//! second, whichever worker claims it). The warning goes to nginx's error
//! log, once an hour at most across the workers.

use ngx::ffi::{ngx_event_t, NGX_LOG_WARN};
use ngx::ngx_log_error;

use robotgate::state::crowd::Crowd;

/// The warning, in nginx's words: the client is what realip leaves.
pub(crate) const WARNING: &str = "over 90% of the last minute's requests came from loopback or private addresses with X-Forwarded-For or Forwarded: every client looks like the proxy in front. Name that proxy in nginx's set_real_ip_from (with real_ip_header); until then robots cannot be verified, and trap hits from its address ban no one";

/// The worker's timer, and the crowd it ticks.
static mut TIMER: std::mem::MaybeUninit<ngx_event_t> = std::mem::MaybeUninit::zeroed();
static mut CROWD: Option<&'static Crowd> = None;

/// Start ticking `crowd` once a second (in a worker's `init_process`).
///
/// # Safety
/// Called once per worker, on nginx's thread, with the cycle's log;
/// `crowd` is the zone's, mapped as long as the worker.
pub(crate) unsafe fn start(log: *mut ngx::ffi::ngx_log_t, crowd: &'static Crowd) {
    // SAFETY: the worker's own statics, used only on nginx's thread.
    unsafe {
        CROWD = Some(crowd);
        crate::timer::start((&raw mut TIMER).cast::<ngx_event_t>(), log, Some(on_timer), 1000);
    }
}

extern "C" fn on_timer(ev: *mut ngx_event_t) {
    // SAFETY: set by `start` before the timer was added, on this thread.
    let crowd = unsafe { CROWD };
    // nginx names the client through realip, whose trusted addresses
    // robotgate cannot see: the minute's traffic alone says it.
    if crowd.is_some_and(|c| c.tick(true, crate::log::now_ms())) {
        // SAFETY: the event is ours; its log is the cycle's.
        ngx_log_error!(NGX_LOG_WARN, unsafe { (*ev).log }, "robotgate: {}", WARNING);
    }
    // SAFETY: our event, in its handler.
    unsafe { crate::timer::again(ev, 1000) };
}
