//! State shared between instances ([`redis`]: Redis 6+ or Valkey), and
//! the robots.txt reads kept across restarts ([`reads`]).

pub mod reads;
pub mod redis;
