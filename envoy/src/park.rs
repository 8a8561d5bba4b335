//! A stream parked for a lookup, and woken through Envoy's scheduler.
//!
//! The request hook returns `StopIteration` with a [`Lookup`] under way: a
//! scheduler made on the stream's worker thread
//! (`…_http_filter_scheduler_new`), and a helper thread
//! ([`robotgate_embed::park`]) that does the lookup, keeps its answer in
//! the [`Lookup`] and commits the scheduler (`…_scheduler_commit`, from its
//! own thread). Envoy then calls `…_on_http_filter_scheduled` on the
//! stream's worker thread, where the request is decided again with the
//! answer ([`crate::hooks`]). A stream reset meanwhile destroys its filter:
//! Envoy's scheduler holds the stream weakly and delivers nothing then; the
//! helper never touches the filter, only the [`Lookup`] both hold, whose
//! last holder deletes the scheduler.

use std::ffi::c_void;

use robotgate_embed::park::Wake;

use crate::abi::{self, FilterEnvoyPtr};

/// One parked stream's lookup, woken by its scheduler.
pub type Lookup = robotgate_embed::park::Lookup<Scheduler>;

/// Envoy's scheduler of one stream (its `_module_ptr`: the module deletes it).
pub struct Scheduler(*mut c_void);

// SAFETY: Envoy's scheduler may be committed from any thread, and deleted
// from any (it holds its stream weakly, and a reference to the worker's
// dispatcher, which outlives it).
unsafe impl Send for Scheduler {}
// SAFETY: as above; nothing of it is read by the module.
unsafe impl Sync for Scheduler {}

impl Scheduler {
    /// The stream's scheduler; `None` when Envoy gives none (then judge at once).
    ///
    /// # Safety
    /// `envoy` is the stream's filter, on its worker thread, in a hook.
    pub unsafe fn of(envoy: FilterEnvoyPtr) -> Option<Scheduler> {
        // SAFETY: the caller's: Envoy's stream, its thread, in a hook.
        let scheduler = unsafe { abi::envoy_dynamic_module_callback_http_filter_scheduler_new(envoy) };
        (!scheduler.is_null()).then_some(Scheduler(scheduler))
    }
}

impl Wake for Scheduler {
    fn wake(&self) {
        // SAFETY: the scheduler lives as long as its lookup; committing is
        // what it is for, from any thread.
        unsafe { abi::envoy_dynamic_module_callback_http_filter_scheduler_commit(self.0, 0) };
    }
}

impl Drop for Scheduler {
    /// Its lookup's last holder (the woken or destroyed filter, or the
    /// helper) deletes the scheduler.
    fn drop(&mut self) {
        // SAFETY: made by `scheduler_new`, deleted once, here.
        unsafe { abi::envoy_dynamic_module_callback_http_filter_scheduler_delete(self.0) };
    }
}
