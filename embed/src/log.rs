//! The violation log (`log.violations`, a file): each refusal's record, as
//! the proxy writes it, repeats folded for `log.aggregate_window` by the
//! core's table ([`Aggregator`]). One table and one file for all of an
//! edge's threads, behind a lock held for a fold and a write; windows that
//! end with no new record are closed by the module's reload thread
//! ([`Violations::tick`]).
//!
//! The file is rotated by the module at `log.max_size` as the proxy rotates
//! its own (`log.keep` files kept, [`robotgate::record::rotate`]), and
//! opened again when another program moved or removed it (logrotate's
//! `create`): the same tick finds the path no longer names the open file.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use robotgate::config::LogTarget;
use robotgate::load::Snapshot;
use robotgate::record::aggregate::{Aggregator, Line, Offer};
use robotgate::record::{rotate, Record};

/// Bytes of records the table holds at most (as the nginx module's).
const MAX_BYTES: usize = 64 << 20;

/// The log of one filter configuration.
pub struct Violations {
    inner: Mutex<Inner>,
}

struct Inner {
    fold: Aggregator,
    out: Out,
}

/// The file written, and what its rotation needs.
struct Out {
    path: PathBuf,
    file: File,
    /// Bytes in it, as far as this writer knows.
    size: u64,
    max_size: Option<u64>,
    keep: u32,
    /// What went wrong last (said once, until it goes right again).
    failing: bool,
    say: Box<dyn Fn(&str) + Send + Sync>,
}

impl Violations {
    /// The log `snap` names, opened for appending; `None` when it names
    /// none a module can write (`stdout` is the edge's). `say` tells the
    /// edge's log what went wrong with the file (a rotation, a reopening).
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(snap: &Snapshot, say: impl Fn(&str) + Send + Sync + 'static) -> Result<Option<Violations>, String> {
        let LogTarget::File(path) = &snap.settings.boot.violations else { return Ok(None) };
        let (file, size) = open_append(path).map_err(|e| format!("log.violations {}: {e}", path.display()))?;
        let options = &snap.settings.boot.violation_log;
        let window = u64::try_from(options.aggregate_window.as_millis()).unwrap_or(u64::MAX);
        let fold = Aggregator::new(window, options.aggregate_max_keys, MAX_BYTES);
        let out = Out {
            path: path.clone(),
            file,
            size,
            max_size: options.max_size,
            keep: options.keep,
            failing: false,
            say: Box::new(say),
        };
        Ok(Some(Violations { inner: Mutex::new(Inner { fold, out }) }))
    }

    /// Offer `r` (written over: the caller's scratch record) at `now` (ms).
    pub fn offer(&self, r: &mut Record, now: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut lines = inner.fold.close_due(now);
        if let Offer::Write(r) = inner.fold.offer_scratch(r, now) {
            lines.push(Line::Record(r));
        }
        inner.out.write(&lines);
    }

    /// Write the aggregates whose window has ended by `now` (ms), and open
    /// the path again if another program moved the file away.
    pub fn tick(&self, now: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let lines = inner.fold.close_due(now);
        inner.out.write(&lines);
        if inner.out.moved() {
            inner.out.reopen();
        }
    }
}

impl Drop for Violations {
    /// What is still folded is written.
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        let lines = inner.fold.drain();
        inner.out.write(&lines);
    }
}

impl Out {
    /// `lines` as JSON lines, in one write (an append: whole lines, even
    /// beside another writer of the file), the file rotated first when
    /// they would take it past `log.max_size`.
    fn write(&mut self, lines: &[Line]) {
        if lines.is_empty() {
            return;
        }
        let mut text = Vec::new();
        for line in lines {
            if serde_json::to_writer(&mut text, line).is_ok() {
                text.push(b'\n');
            }
        }
        if rotate::due(self.size, text.len(), self.max_size) {
            self.rotate();
        }
        // A full disk loses these lines, not the request.
        match self.file.write_all(&text) {
            Ok(()) => self.size += text.len() as u64,
            Err(e) => self.failed(&format!("cannot write the violation log {}: {e}", self.path.display())),
        }
    }

    /// `path` moved to `path.1` (the older ones shifted), and opened afresh.
    fn rotate(&mut self) {
        let path = self.path.clone();
        let say = &self.say;
        let shifted = rotate::shift(&path, self.keep, |e| {
            say(&format!("robotgate: cannot shift a rotated violation log of {}: {e}", path.display()));
        });
        match shifted {
            Ok(()) => self.reopen(),
            // Still written to the file it has (past the size).
            Err(e) => self.failed(&format!("cannot rotate the violation log {}: {e}", path.display())),
        }
    }

    /// Whether `path` no longer names the open file (moved or removed).
    fn moved(&self) -> bool {
        let Ok(open) = self.file.metadata() else { return false };
        match std::fs::metadata(&self.path) {
            Ok(now) => (now.dev(), now.ino()) != (open.dev(), open.ino()),
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        }
    }

    /// Open `path` again; on failure keep writing to the open file.
    fn reopen(&mut self) {
        match open_append(&self.path) {
            Ok((file, size)) => {
                (self.file, self.size) = (file, size);
                self.failing = false;
            }
            Err(e) => self.failed(&format!("cannot open the violation log {} again: {e}", self.path.display())),
        }
    }

    /// Say `why`, once until the file works again.
    fn failed(&mut self, why: &str) {
        if !std::mem::replace(&mut self.failing, true) {
            (self.say)(&format!("robotgate: {why}"));
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<(File, u64)> {
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((file, size))
}

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}
