//! Classify arbitrary bytes as a User-Agent and render its JSON line. See `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run classify`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(init: checks::classify_init(), |data: &[u8]| checks::classify(data));
