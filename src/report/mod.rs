//! `robotgate report`: what the violation log says, summed up.
//!
//! The pure core of the command (issue #18), in three steps the CLI chains:
//!
//! 1. [`read`]: parse log lines (plain or gzip, through [`read::decoder`])
//!    from any [`std::io::BufRead`] into borrowed [`RecordView`]s, skipping
//!    and counting malformed ones.
//! 2. [`Summary`] ([`aggregate`]): fold records into bounded aggregates per
//!    site, bot, rule, client, day and hour. `replay` feeds the same type
//!    from in-memory [`crate::record::Record`]s.
//! 3. [`render`]: write the summary as text (a terminal), JSON or one
//!    self-contained HTML page.
//!
//! The module opens no files and reads no clock: callers pass readers and
//! the filter's cut-off time.

pub mod aggregate;
pub mod read;
pub mod render;
pub mod replay;
pub mod sketch;
mod view;

pub use aggregate::{Filter, Limits, Summary};
pub use read::{decoder, feed, Entry, OverflowView, Reader, RecordView};
pub use view::*;
