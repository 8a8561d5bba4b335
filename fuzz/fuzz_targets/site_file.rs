//! Read arbitrary text as a file of `sites_dir`. See `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run site_file`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::site_file(data));
