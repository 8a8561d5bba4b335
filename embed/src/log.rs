//! The violation log (`log.violations`, a file): each refusal's record, as
//! the proxy writes it, repeats folded for `log.aggregate_window` by the
//! core's table ([`Aggregator`]). One table and one file for all of an
//! edge's threads, behind a lock held for a fold and a write; windows that
//! end with no new record are closed by the module's reload thread
//! ([`Violations::tick`]).

use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

use robotgate::config::LogTarget;
use robotgate::load::Snapshot;
use robotgate::record::aggregate::{Aggregator, Line, Offer};
use robotgate::record::Record;

/// Bytes of records the table holds at most (as the nginx module's).
const MAX_BYTES: usize = 64 << 20;

/// The log of one filter configuration.
pub struct Violations {
    inner: Mutex<Inner>,
}

struct Inner {
    fold: Aggregator,
    file: File,
}

impl Violations {
    /// The log `snap` names, opened for appending; `None` when it names
    /// none a module can write (`stdout` is the edge's).
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(snap: &Snapshot) -> Result<Option<Violations>, String> {
        let LogTarget::File(path) = &snap.settings.boot.violations else { return Ok(None) };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("log.violations {}: {e}", path.display()))?;
        let options = &snap.settings.boot.violation_log;
        let window = u64::try_from(options.aggregate_window.as_millis()).unwrap_or(u64::MAX);
        let fold = Aggregator::new(window, options.aggregate_max_keys, MAX_BYTES);
        Ok(Some(Violations { inner: Mutex::new(Inner { fold, file }) }))
    }

    /// Offer `r` (written over: the caller's scratch record) at `now` (ms).
    pub fn offer(&self, r: &mut Record, now: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut lines = inner.fold.close_due(now);
        if let Offer::Write(r) = inner.fold.offer_scratch(r, now) {
            lines.push(Line::Record(r));
        }
        write(&mut inner.file, &lines);
    }

    /// Write the aggregates whose window has ended by `now` (ms).
    pub fn tick(&self, now: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let lines = inner.fold.close_due(now);
        write(&mut inner.file, &lines);
    }
}

impl Drop for Violations {
    /// What is still folded is written.
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        let lines = inner.fold.drain();
        write(&mut inner.file, &lines);
    }
}

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// `lines` as JSON lines, in one write (an append: whole lines, even
/// beside another writer of the file).
fn write(file: &mut File, lines: &[Line]) {
    if lines.is_empty() {
        return;
    }
    let mut text = Vec::new();
    for line in lines {
        if serde_json::to_writer(&mut text, line).is_ok() {
            text.push(b'\n');
        }
    }
    // A full disk loses these lines, not the request.
    let _ = file.write_all(&text);
}
