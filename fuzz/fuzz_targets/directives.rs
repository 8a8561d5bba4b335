//! See `fuzz/checks.rs`: `checks::directives`.
//!
//! Run: `cargo +nightly fuzz run directives`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::directives(data));
