//! The nginx module built by `bash nginx/build.sh` and Debian's nginx, for
//! the tests that load it.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The module, built (or found built) once per test binary; `None` where it
/// cannot be built here (never under CI, where that fails the test).
pub fn module() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> Option<PathBuf> {
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/nginx/build.sh"))
        .stderr(Stdio::piped())
        .output()
        .expect("bash runs");
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(std::env::var_os("CI").is_none(), "nginx/build.sh failed:\n{why}");
        eprintln!("\n*** SKIPPED: nginx/build.sh cannot build the module here (.ci/run does):\n{why}\n***\n");
        return None;
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    Some(PathBuf::from(stdout.lines().last().expect("build.sh prints the module's path").trim()))
}

/// Debian's nginx.
pub fn nginx() -> PathBuf {
    ["/usr/sbin/nginx", "/usr/bin/nginx"].iter().map(PathBuf::from).find(|p| p.exists()).unwrap_or("nginx".into())
}
