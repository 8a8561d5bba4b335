//! What robotgate's in-process modules share (issue #69): one robotgate.yaml
//! loaded and kept current, the decision of a request from the facts an
//! edge read, the violation log, and the I/O halves of the core's lookups,
//! blocking, for a module's helper threads. The core says what to ask and
//! judges the answers; each module only translates its edge's API (how it
//! reads a request, when to park one, how to wake it, how to answer).
//!
//! * [`module`]: robotgate.yaml loaded, its reload thread, the shared state
//!   (the Envoy and HAProxy modules).
//! * [`decide`]: a request decided, counted and recorded.
//! * [`log`]: the violation log, one for the process.
//! * [`metrics`]: the proxy's metrics in the module's own tables, and the
//!   scrape's text (the HAProxy module's; the nginx module's from its zone).
//! * [`park`]: reverse DNS for a parked request, woken as the edge wakes one.
//! * [`reloads`], [`inotify`]: the watch of the snapshot's sources and its
//!   reloads (every module's: nginx on its loop, the others on the reload
//!   thread).
//! * [`dns`]: forward-confirmed reverse DNS (the nginx, Envoy and HAProxy
//!   modules).
//! * [`keys`]: Web Bot Auth's key directories, known and fetched (the same).
//! * [`store`], [`conn`]: `state.redis`, on two helper threads (the same).

pub mod conn;
pub mod decide;
pub mod dns;
pub mod inotify;
pub mod keys;
pub mod log;
pub mod metrics;
pub mod module;
pub mod park;
pub mod reloads;
pub mod store;

pub use module::{Level, Module, RELOAD_EVERY};
