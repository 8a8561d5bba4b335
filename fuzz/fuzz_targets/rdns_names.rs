//! See `fuzz/checks.rs`: `checks::rdns_names`.
//!
//! Run: `cargo +nightly fuzz run rdns_names`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::rdns_names(data));
