//! The clock a decision reads.

use std::time::Instant;

/// The clock a decision reads: monotonic for rates, wall time for Visit-time.
/// Read only when a bot's group has a pace or hours, so most requests never
/// ask the system for the time.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    /// The system's clocks.
    System,
    /// A fixed time (tests, replays of logs).
    Fixed {
        /// Now, monotonic.
        instant: Instant,
        /// Now, seconds since the Unix epoch (UTC).
        unix_secs: u64,
    },
}

impl Clock {
    /// Now, monotonic.
    pub fn instant(self) -> Instant {
        match self {
            Clock::System => Instant::now(),
            Clock::Fixed { instant, .. } => instant,
        }
    }

    /// Now, milliseconds since the Unix epoch (UTC).
    pub fn unix_ms(self) -> u64 {
        match self {
            Clock::System => {
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
            }
            Clock::Fixed { unix_secs, .. } => unix_secs.saturating_mul(1000),
        }
    }

    /// Now, seconds since the Unix epoch (UTC).
    pub fn unix_secs(self) -> u64 {
        match self {
            Clock::System => {
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
            }
            Clock::Fixed { unix_secs, .. } => unix_secs,
        }
    }
}
