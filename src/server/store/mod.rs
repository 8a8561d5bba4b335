//! State shared between instances ([`redis`]: Redis 6+ or Valkey).

pub mod redis;
