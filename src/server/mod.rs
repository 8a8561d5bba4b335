//! The Pingora layer (feature `server`).
