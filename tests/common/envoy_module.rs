//! The Envoy module (envoy/, issue #69) as its tests use it: built once per
//! test process by `envoy/build.sh`, the script operators run.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The built module (`librobotgate_envoy.so`), or `None` when it cannot be
/// built here: the test skips, loudly (under `CI` it fails instead).
pub fn module() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> Option<PathBuf> {
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/envoy/build.sh"))
        .stderr(Stdio::piped())
        .output()
        .expect("bash runs");
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(std::env::var_os("CI").is_none(), "envoy/build.sh failed:\n{why}");
        eprintln!("\n*** SKIPPED: envoy/build.sh cannot build the module here (.ci/run does):\n{why}\n***\n");
        return None;
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    Some(PathBuf::from(stdout.lines().last().expect("build.sh prints the module's path").trim()))
}
