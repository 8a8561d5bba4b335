//! See `fuzz/checks.rs`: `checks::store_reply`.
//!
//! Run: `cargo +nightly fuzz run store_reply`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::store_reply(data));
