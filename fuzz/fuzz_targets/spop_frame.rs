//! See `fuzz/checks.rs`: `checks::spop_frame`.
//!
//! Run: `cargo +nightly fuzz run spop_frame`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::spop_frame(data));
