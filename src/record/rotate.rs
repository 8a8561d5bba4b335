//! Rotation of a log file by size (`log.max_size`, `log.keep`), as the
//! proxy and the in-process modules do it: `path.(keep-1)` .. `path.1`
//! shifted up by one (the oldest beyond `keep` overwritten), `path` renamed
//! to `path.1`; the writer then opens `path` afresh. No clock, no logging:
//! the caller says what failed.

use std::io;
use std::path::{Path, PathBuf};

/// `path` with `.n` appended.
pub fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut p = path.to_path_buf().into_os_string();
    p.push(format!(".{n}"));
    PathBuf::from(p)
}

/// Shift the rotated files and move `path` to `path.1` (`keep` 0: remove
/// `path`). A rotated file that cannot be shifted is passed to `shift_failed`
/// and the rest goes on.
///
/// # Errors
/// `path` itself could not be moved (or removed): it was not rotated.
pub fn shift(path: &Path, keep: u32, mut shift_failed: impl FnMut(io::Error)) -> io::Result<()> {
    if keep == 0 {
        return std::fs::remove_file(path);
    }
    for n in (1..keep).rev() {
        match std::fs::rename(numbered(path, n), numbered(path, n + 1)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => shift_failed(e),
            _ => {}
        }
    }
    std::fs::rename(path, numbered(path, 1))
}

/// Whether a line of `len` bytes, written to a file of `size` bytes, would
/// take it past `max_size` (a first line always goes in, however long).
pub fn due(size: u64, len: usize, max_size: Option<u64>) -> bool {
    max_size.is_some_and(|m| size > 0 && size + len as u64 > m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_shift_up_and_the_oldest_goes() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("v.jsonl");
        for round in 0..4 {
            std::fs::write(&log, format!("{round}\n")).unwrap();
            shift(&log, 2, |e| panic!("{e}")).unwrap();
        }
        assert!(!log.exists());
        assert_eq!(std::fs::read_to_string(numbered(&log, 1)).unwrap(), "3\n");
        assert_eq!(std::fs::read_to_string(numbered(&log, 2)).unwrap(), "2\n");
        assert!(!numbered(&log, 3).exists());
        std::fs::write(&log, "x").unwrap();
        shift(&log, 0, |e| panic!("{e}")).unwrap();
        assert!(!log.exists() && numbered(&log, 1).exists());
    }

    #[test]
    fn a_line_is_due_past_the_size() {
        assert!(!due(0, 500, Some(100)), "a first line goes in");
        assert!(!due(50, 50, Some(100)));
        assert!(due(51, 50, Some(100)));
        assert!(!due(1 << 40, 1, None));
    }
}
