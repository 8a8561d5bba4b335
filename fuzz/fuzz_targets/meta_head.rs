//! See `fuzz/checks.rs`: `checks::meta_head`.
//!
//! Run: `cargo +nightly fuzz run meta_head`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::meta_head(data));
