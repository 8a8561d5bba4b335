//! The in-process modules of issue #69 as their tests use them: each built
//! once per test process by its own build script (`envoy/build.sh`,
//! `haproxy/build.sh`), the scripts operators run.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The Envoy module (`librobotgate_envoy.so`), or `None` when it cannot be
/// built here: the test skips, loudly (under `CI` it fails instead).
pub fn envoy() -> Option<PathBuf> {
    built("envoy")
}

/// The HAProxy module (`robotgate.so`), as [`envoy`].
pub fn haproxy() -> Option<PathBuf> {
    built("haproxy")
}

/// What `<dir>/build.sh` printed last: the module's path.
fn built(dir: &'static str) -> Option<PathBuf> {
    static BUILT: Mutex<Option<HashMap<&'static str, Option<PathBuf>>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    built.get_or_insert_with(HashMap::new).entry(dir).or_insert_with(|| build(dir)).clone()
}

fn build(dir: &str) -> Option<PathBuf> {
    let script = format!("{}/{dir}/build.sh", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash").arg(&script).stderr(Stdio::piped()).output().expect("bash runs");
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(std::env::var_os("CI").is_none(), "{dir}/build.sh failed:\n{why}");
        eprintln!("\n*** SKIPPED: {dir}/build.sh cannot build the module here (.ci/run does):\n{why}\n***\n");
        return None;
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    Some(PathBuf::from(stdout.lines().last().expect("build.sh prints the module's path").trim()))
}
