//! When each trap path was first served, kept in a small JSON file so that
//! arming survives restarts.
//!
//! A trap bans only after it has been in the served robots.txt for
//! `arm_after` (crawlers may cache robots.txt for a day, RFC 9309 2.4); the
//! clock for that starts when robotgate first served the path, which must
//! not reset when robotgate restarts. The file is `robotgate-traps.json`,
//! `{"site\tpath": unix_seconds, ...}`, in `state_dir` when the
//! configuration names one, otherwise beside the violation log (beside the
//! config when the log is stdout). robotgate's other state files sit beside
//! it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{LogTarget, Settings};

/// First-served times, by `site\tpath`.
pub type FirstServed = BTreeMap<String, u64>;

/// The key of a site's trap path.
pub fn key(site: &str, path: &str) -> String {
    format!("{site}\t{path}")
}

/// Where the file lives: in `state_dir`, else beside the violation log, else
/// (the log is stdout) beside the configuration file; a bare file name's
/// directory is the working directory.
pub fn state_path(settings: &Settings, config_path: &Path) -> PathBuf {
    let dir = match (&settings.boot.state_dir, &settings.boot.violations) {
        (Some(dir), _) => Some(dir.clone()),
        (None, LogTarget::File(f)) => f.parent().map(Path::to_path_buf),
        (None, LogTarget::Stdout) => config_path.parent().map(Path::to_path_buf),
    };
    dir.filter(|d| !d.as_os_str().is_empty()).unwrap_or_else(|| PathBuf::from(".")).join(FILE)
}

/// The file's name.
const FILE: &str = "robotgate-traps.json";

/// Read the file; a missing, refused ([`super::file::read`]) or unreadable
/// one is empty (every trap then starts its arming clock now, which only
/// delays bans).
pub fn read(path: &Path, reader: super::file::Reader) -> FirstServed {
    super::file::read_with(path, super::file::TRAPS_MAX, &super::file::Timing { reader, ..Default::default() })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(extra: &str, violations: &str) -> Settings {
        let yaml = format!(
            "listen: [\"127.0.0.1:8080\"]\nsites:\n  - {{ hosts: [a], upstream: \"127.0.0.1:8000\" }}\n\
             log: {{ violations: \"{violations}\" }}\n{extra}"
        );
        crate::config::parse(&yaml).unwrap().settings
    }

    #[test]
    fn without_state_dir_the_file_sits_beside_the_log_or_the_config() {
        let config = Path::new("/etc/robotgate/robotgate.yaml");
        let beside_log = settings("", "/var/log/robotgate/violations.jsonl");
        assert_eq!(state_path(&beside_log, config), Path::new("/var/log/robotgate/robotgate-traps.json"));
        let stdout = settings("", "stdout");
        assert_eq!(state_path(&stdout, config), Path::new("/etc/robotgate/robotgate-traps.json"));
        // A bare name on either side: the working directory.
        assert_eq!(state_path(&settings("", "violations.jsonl"), config), Path::new("./robotgate-traps.json"));
        assert_eq!(state_path(&stdout, Path::new("robotgate.yaml")), Path::new("./robotgate-traps.json"));
    }

    #[test]
    fn state_dir_holds_the_file_wherever_the_log_goes() {
        let config = Path::new("/etc/robotgate/robotgate.yaml");
        for log in ["/var/log/robotgate/violations.jsonl", "stdout"] {
            let s = settings("state_dir: /var/lib/robotgate\n", log);
            assert_eq!(state_path(&s, config), Path::new("/var/lib/robotgate/robotgate-traps.json"), "{log}");
        }
        // Relative, like every path in the file: to the working directory.
        let s = settings("state_dir: state\n", "stdout");
        assert_eq!(state_path(&s, config), Path::new("state/robotgate-traps.json"));
    }
}
