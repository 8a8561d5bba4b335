//! Parse arbitrary bytes as a PROXY protocol header (v1 or v2) and check
//! what the server's reading loop relies on. See `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run proxy_protocol`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::proxy_protocol(data));
