//! Read arbitrary bytes with the User-Agent grammar reader (issue #53). See `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run ua_grammar`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::ua_grammar(data));
