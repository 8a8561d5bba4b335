//! What robotgate's in-process modules share (issue #69): the I/O halves
//! of the core's lookups, blocking, for a module's helper threads. The core
//! says what to ask and judges the answers; each module only translates its
//! edge's API (when to park a request, how to wake it).
//!
//! * [`dns`]: forward-confirmed reverse DNS (the nginx and Envoy modules).

pub mod dns;
