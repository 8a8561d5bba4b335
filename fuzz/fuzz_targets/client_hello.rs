//! See `fuzz/checks.rs`: `checks::client_hello`.
//!
//! Run: `cargo +nightly fuzz run client_hello`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::client_hello(data));
