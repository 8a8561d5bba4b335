//! Load arbitrary text as a robotgate configuration. See `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run load_config`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::load_config(data));
