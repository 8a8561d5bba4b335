//! Operations: what an operator runs and watches.
//!
//! * [`reload`]: file watching and SIGHUP.
//! * [`violations`]: the violation log writer (aggregation, SIGUSR1 reopen, rotation).
//! * [`status`]: what the status page shows (the last violations, the last reload).
//! * [`crowd`]: when every client looks like one (a proxy missing from `trusted_proxies`).
//! * [`check`]: `robotgate config check`.
//! * [`memory`]: giving the memory a snapshot load freed back to the system.
//! * [`demo`]: the demo site's origin.

pub mod check;
pub mod crowd;
pub mod demo;
pub mod memory;
pub mod reload;
pub mod status;
pub mod violations;
