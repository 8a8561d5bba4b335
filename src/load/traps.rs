//! When each trap path was first served, kept in a small JSON file so that
//! arming survives restarts.
//!
//! A trap bans only after it has been in the served robots.txt for
//! `arm_after` (crawlers may cache robots.txt for a day, RFC 9309 2.4); the
//! clock for that starts when robotgate first served the path, which must
//! not reset when robotgate restarts. The file sits beside the violation log
//! (beside the config when the log is stdout) as `robotgate-traps.json`:
//! `{"site\tpath": unix_seconds, ...}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{LogTarget, Settings};

/// First-served times, by `site\tpath`.
pub type FirstServed = BTreeMap<String, u64>;

/// The key of a site's trap path.
pub fn key(site: &str, path: &str) -> String {
    format!("{site}\t{path}")
}

/// Where the file lives.
pub fn state_path(settings: &Settings, config_path: &Path) -> PathBuf {
    let dir = match &settings.violations {
        LogTarget::File(f) => f.parent().map(Path::to_path_buf),
        LogTarget::Stdout => config_path.parent().map(Path::to_path_buf),
    };
    dir.filter(|d| !d.as_os_str().is_empty()).unwrap_or_else(|| PathBuf::from(".")).join("robotgate-traps.json")
}

/// Read the file; a missing, refused ([`super::file::read`]) or unreadable
/// one is empty (every trap then starts its arming clock now, which only
/// delays bans).
pub fn read(path: &Path) -> FirstServed {
    super::file::read(path, super::file::TRAPS_MAX)
        .ok()
        .and_then(|c| serde_json::from_slice(&c.body).ok())
        .unwrap_or_default()
}

/// Write the file (through a temporary file and a rename, so a crash never
/// leaves half a file).
///
/// # Errors
/// The file cannot be written.
pub fn write(path: &Path, times: &FirstServed) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(times).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, path)
}
