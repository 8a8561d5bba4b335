//! The clock a decision reads: [`crate::time::Clock`], named here too.

pub use crate::time::Clock;
