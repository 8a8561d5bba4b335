//! `state.redis` from inside nginx: the modules' store ([`robotgate_embed::store`],
//! its asker and keeper threads, one pair per worker, started with the
//! worker when the config names a store; a worker without one stays
//! single-threaded), putting what it learns in the workers' shared zone and
//! answering a parked request through the worker's waker ([`crate::park`]).

use std::sync::Arc;
use std::time::Instant;

use robotgate::config::SharedState;
use robotgate::state::series::Series;
use robotgate::state::shared::{Event, Question};
use robotgate::state::MemoryState;
use robotgate_embed::Level;

use crate::park::{Found, Ticket, Waker};

/// Where the threads put what they learn: the zone's tables and counters,
/// which outlive them (the threads are joined at the worker's exit).
#[derive(Clone, Copy)]
pub struct Zone {
    pub state: &'static MemoryState,
    pub series: &'static Series,
}

/// The worker's side of its store.
pub struct Worker {
    zone: Zone,
    waker: Arc<Waker>,
}

impl robotgate_embed::store::Host for Worker {
    fn apply(&self, event: &Event) {
        event.apply(self.zone.state, Instant::now(), robotgate::policy::Clock::System.unix_ms());
    }

    fn failed(&self) {
        self.zone.series.add("robotgate_state_errors_total", &[], &[], 1);
    }

    fn say(&self, level: Level, message: String) {
        let level = match level {
            Level::Info => ngx::ffi::NGX_LOG_NOTICE,
            Level::Warn => ngx::ffi::NGX_LOG_WARN,
            Level::Error => ngx::ffi::NGX_LOG_ERR,
        };
        self.waker.note(level as usize, message);
    }
}

/// This worker's store.
pub struct Store(robotgate_embed::store::Store<Worker>);

impl Store {
    /// Start the worker's threads for `settings`.
    ///
    /// # Errors
    /// The URL is not one the client accepts, or a thread cannot start.
    pub fn start(settings: &SharedState, zone: Zone, waker: Arc<Waker>) -> Result<Store, String> {
        robotgate_embed::store::Store::start(settings, Worker { zone, waker }, "this nginx").map(Store)
    }

    /// Whether the store answered lately: rate questions go to it only then.
    pub fn is_up(&self) -> bool {
        self.0.is_up()
    }

    /// Whether a rate question would be sent now (else the caller asks the zone).
    pub fn takes_questions(&self) -> bool {
        self.0.takes_questions()
    }

    /// Put `question` to the store for the parked request of `ticket`; its
    /// answer comes back through the waker. `false`: the asker is gone, and
    /// nothing will answer.
    pub fn ask(&self, question: Question, ticket: Ticket) -> bool {
        let waker = self.0.host().waker.clone();
        self.0.ask(question, Box::new(move |answer| waker.finish(ticket, Found::Rate(answer))))
    }

    /// Write and announce a ban or a robots.txt read, in the background.
    pub fn announce(&self, event: Event) {
        self.0.announce(event);
    }

    /// Stop the threads and wait for them (at most about a second).
    pub fn stop(self) {
        self.0.stop();
    }
}
