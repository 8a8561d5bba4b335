//! Walk arbitrary bytes as a forwarded client-address chain. See `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run client_address`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::client_address(data));
