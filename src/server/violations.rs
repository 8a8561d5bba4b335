//! The violation log: one JSON object per line, written off the request path.
//!
//! Requests hand a finished line to a channel; one writer thread appends it to
//! a buffered file (or stdout) and flushes when the channel goes quiet, at
//! most [`FLUSH_EVERY`] after a write. [`ViolationLog::close`] (called on
//! shutdown) drops the sender and joins the writer, so every record accepted
//! before a clean shutdown reaches the file. When the channel is full the
//! request waits for room rather than drop a record; the wait is counted.

use std::fs::OpenOptions;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;

use crate::config::LogTarget;

/// Records queued before a writer must wait.
pub const QUEUE: usize = 65_536;
/// Longest time a written record stays in the buffer.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// One violation, as logged.
#[derive(Debug, Serialize)]
pub struct Record<'a> {
    /// RFC 3339 UTC time.
    pub time: String,
    /// Site name.
    pub site: &'a str,
    /// Client address (after trusted-proxy resolution).
    pub client: String,
    /// Request method.
    pub method: &'a str,
    /// Path and query as received.
    pub path: &'a str,
    /// Host header.
    pub host: &'a str,
    /// User-Agent header (lossy UTF-8).
    pub user_agent: &'a str,
    /// Bot name.
    pub bot: Option<&'a str>,
    /// Category.
    pub category: &'a str,
    /// robots.txt group obeyed.
    pub group: Option<&'a str>,
    /// What was broken: `disallow`, `crawl-delay`, `request-rate`, `visit-time`.
    pub directive: &'a str,
    /// The rule's pattern (for `disallow`) or value.
    pub pattern: Option<&'a str>,
    /// Line in robots.txt.
    pub line: Option<u32>,
    /// Version of the robots.txt in force.
    pub robots_hash: &'a str,
    /// The rule broken is one robotgate generated (a trap, a managed group),
    /// not a line of the site's file.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub managed: bool,
    /// Whether the bot had fetched the site's robots.txt in the last 24 hours.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub robots_seen: Option<bool>,
    /// Action taken.
    pub action: &'a str,
    /// Status returned (for proxied actions, the upstream's).
    pub status: u16,
}

/// Handle to the writer thread.
pub struct ViolationLog {
    tx: Mutex<Option<SyncSender<String>>>,
    writer: Mutex<Option<JoinHandle<io::Result<u64>>>>,
}

impl ViolationLog {
    /// Open the target and start the writer.
    ///
    /// # Errors
    /// When the file cannot be opened for appending.
    pub fn open(target: &LogTarget) -> io::Result<ViolationLog> {
        let out: Box<dyn Write + Send> = match target {
            LogTarget::Stdout => Box::new(io::stdout()),
            LogTarget::File(path) => Box::new(open_append(path)?),
        };
        let (tx, rx) = mpsc::sync_channel::<String>(QUEUE);
        let writer = std::thread::Builder::new().name("robotgate-violations".into()).spawn(move || {
            let mut out = BufWriter::with_capacity(64 * 1024, out);
            let mut written = 0u64;
            let mut dirty = false;
            loop {
                match rx.recv_timeout(FLUSH_EVERY) {
                    Ok(line) => {
                        out.write_all(line.as_bytes())?;
                        out.write_all(b"\n")?;
                        written += 1;
                        dirty = true;
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        if dirty {
                            out.flush()?;
                            dirty = false;
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            out.flush()?;
            Ok(written)
        })?;
        Ok(ViolationLog { tx: Mutex::new(Some(tx)), writer: Mutex::new(Some(writer)) })
    }

    /// Queue one record. Returns `true` when the queue was full and the caller waited.
    pub fn write(&self, record: &Record<'_>) -> bool {
        // serde_json escapes control characters, so a hostile User-Agent or path stays one line.
        let line = serde_json::to_string(record).expect("a Record always serializes");
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(tx) = tx else { return false };
        match tx.try_send(line) {
            Ok(()) => false,
            Err(TrySendError::Full(line)) => {
                let _ = tx.send(line);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Stop accepting records, write out the rest and wait for the writer.
    /// Returns how many records were written. Safe to call twice.
    pub fn close(&self) -> io::Result<u64> {
        drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        match writer {
            Some(w) => w.join().map_err(|_| io::Error::other("violation writer panicked"))?,
            None => Ok(0),
        }
    }
}

fn open_append(path: &Path) -> io::Result<std::fs::File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// Current time as RFC 3339 UTC with milliseconds, without a date crate.
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, rem % 3600 / 60, rem % 60, now.subsec_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(ua: &'a str) -> Record<'a> {
        Record {
            time: now_rfc3339(),
            site: "s",
            client: "127.0.0.1".into(),
            method: "GET",
            path: "/p",
            host: "h",
            user_agent: ua,
            bot: Some("GPTBot"),
            category: "ai-crawler",
            group: Some("*"),
            directive: "disallow",
            pattern: Some("/p"),
            line: Some(2),
            robots_hash: "0123456789ab",
            managed: false,
            robots_seen: Some(false),
            action: "block",
            status: 403,
        }
    }

    #[test]
    fn every_record_is_written_by_close_and_stays_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        let log = ViolationLog::open(&LogTarget::File(path.clone())).unwrap();
        for i in 0..1000 {
            log.write(&record(&format!("evil\"\r\nbot {i}")));
        }
        assert_eq!(log.close().unwrap(), 1000);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1000);
        let v: serde_json::Value = serde_json::from_str(lines[999]).unwrap();
        assert_eq!(v["user_agent"], "evil\"\r\nbot 999");
        assert_eq!(log.close().unwrap(), 0, "closing twice is harmless");
    }

    #[test]
    fn rfc3339_shape() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'));
    }
}
