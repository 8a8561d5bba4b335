//! The violation log: one JSON object per line, written off the request path.
//!
//! * **Aggregation.** Each violation goes through the core's
//!   [`Aggregator`] first: the first of a key is written at once with
//!   `count: 1`, repeats within `log.aggregate_window` are only counted, and a
//!   closing window writes one record with `count`, `first` and `last`. The
//!   sum of `count` over the log equals the number of violations.
//! * **Backpressure.** A request never waits for the disk. Lines to write go
//!   to a bounded queue with `try_send`; when it is full the line is folded
//!   into the aggregation table as a repeat (written when its window closes,
//!   even with aggregation off), and when the table is full too, the
//!   violation is kept as a count in an `overflow` line. Both are counted in
//!   metrics; nothing is dropped without a trace in the log itself.
//! * **One writer thread** owns the file: it serializes records, closes due
//!   windows every [`TICK`], flushes at most [`TICK`] after a write, reopens
//!   the file on `SIGUSR1` (logrotate's `postrotate` convention: it finishes
//!   the line, flushes, reopens the path) and, with `log.max_size`, rotates by
//!   itself (`.jsonl` -> `.jsonl.1` -> ... -> `.jsonl.N`, keeping `log.keep`).
//! * Threads start in [`ViolationLog::start`], which the server calls from a
//!   background service: threads do not survive Pingora's daemon `fork`.
//! * [`ViolationLog::close`] (on shutdown) drops the sender, writes what is
//!   queued, then every pending aggregate, and joins the writer.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::{LogOptions, LogTarget};
use crate::record::aggregate::{Aggregator, FindingFold, Folded, Line, Offer};
pub use crate::record::{Finding, Record};
use crate::server::telemetry::metrics;

/// Lines queued for the writer before requests fold into the table instead.
pub const QUEUE: usize = 65_536;
/// How often the writer closes due windows and flushes what it wrote.
pub const TICK: Duration = Duration::from_millis(200);
/// Text kept in the aggregation table at most (its records' strings).
pub const MAX_TABLE_BYTES: usize = 64 << 20;
/// The window findings are folded over: a finding's key (site, page, robot,
/// what the page said, robots.txt line) writes one line per window.
pub const FINDING_WINDOW: Duration = Duration::from_secs(600);
/// Finding lines written per [`FINDING_WINDOW`] at most (the status page
/// lists every page whatever the log holds).
pub const FINDINGS_PER_WINDOW: usize = 1_000;

/// What the requests and the writer share.
struct Shared {
    table: Mutex<Aggregator>,
    /// Findings written in the current window.
    findings: Mutex<FindingFold>,
    /// The clock the table's times are on.
    start: Instant,
    /// Set by `SIGUSR1`: reopen the file at the next chance.
    reopen: AtomicBool,
}

impl Shared {
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Aggregator> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Handle to the writer thread.
pub struct ViolationLog {
    shared: Arc<Shared>,
    // Boxed: the channel allocates every slot up front, and a `Record` is
    // hundreds of bytes; 65,536 boxes cost 512 KiB, not 20 MiB of idle RSS.
    tx: Mutex<Option<SyncSender<Box<Line>>>>,
    /// The open file and the queue's end, until [`ViolationLog::start`] hands them to the writer.
    idle: Mutex<Option<(Out, Receiver<Box<Line>>)>>,
    writer: Mutex<Option<JoinHandle<io::Result<u64>>>>,
}

impl ViolationLog {
    /// Open the target and start the writer.
    ///
    /// # Errors
    /// When the file cannot be opened for appending.
    pub fn open(target: &LogTarget, options: &LogOptions) -> io::Result<ViolationLog> {
        let log = Self::open_with_queue(target, options, QUEUE)?;
        log.start()?;
        Ok(log)
    }

    /// Open the target (so a bad path fails at once) without starting any
    /// thread: threads do not survive Pingora's daemon `fork`, so the server
    /// calls [`ViolationLog::start`] after it. Records queue until then.
    ///
    /// # Errors
    /// When the file cannot be opened for appending.
    pub fn open_idle(target: &LogTarget, options: &LogOptions) -> io::Result<ViolationLog> {
        Self::open_with_queue(target, options, QUEUE)
    }

    fn open_with_queue(target: &LogTarget, options: &LogOptions, queue: usize) -> io::Result<ViolationLog> {
        let window = u64::try_from(options.aggregate_window.as_millis()).unwrap_or(u64::MAX);
        let shared = Arc::new(Shared {
            table: Mutex::new(Aggregator::new(window, options.aggregate_max_keys, MAX_TABLE_BYTES)),
            findings: Mutex::new(FindingFold::new(FINDING_WINDOW.as_millis() as u64, FINDINGS_PER_WINDOW)),
            start: Instant::now(),
            reopen: AtomicBool::new(false),
        });
        let out = Out::open(target, options)?;
        let (tx, rx) = mpsc::sync_channel::<Box<Line>>(queue);
        Ok(ViolationLog {
            shared,
            tx: Mutex::new(Some(tx)),
            idle: Mutex::new(Some((out, rx))),
            writer: Mutex::new(None),
        })
    }

    /// Start the writer thread and the `SIGUSR1` listener (a no-op when
    /// started already). Returns once the signal handler is installed, so a
    /// `SIGUSR1` sent after this cannot kill the process (its default action).
    ///
    /// # Errors
    /// When a thread or the signal handler cannot be set up.
    pub fn start(&self) -> io::Result<()> {
        let Some((out, rx)) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).take() else { return Ok(()) };
        let state = self.shared.clone();
        let writer = std::thread::Builder::new()
            .name("robotgate-violations".into())
            .spawn(move || write_until_closed(out, &rx, &state))?;
        *self.writer.lock().unwrap_or_else(|e| e.into_inner()) = Some(writer);
        reopen_on_sigusr1(self.shared.clone())
    }

    /// Log one violation. Never waits for the writer: see the module's
    /// notes on backpressure. Cost: one short lock of the aggregation table.
    pub fn write(&self, record: Record) {
        let now = self.shared.now();
        let record = match self.shared.table().offer(record, now) {
            Offer::Absorbed => {
                metrics().log_aggregated.inc();
                return;
            }
            Offer::Write(r) => r,
        };
        // Keep the sender until the record is placed, so that `close` drains
        // the table only after every record in flight reached it.
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(tx) = tx else { return };
        match tx.try_send(Box::new(Line::Record(record))) {
            Ok(()) => {}
            Err(TrySendError::Full(line)) => {
                if let Line::Record(record) = *line {
                    match self.shared.table().fold(record, now) {
                        Folded::Kept => metrics().log_folded.inc(),
                        Folded::Counted => metrics().log_overflow.inc(),
                    }
                }
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
        drop(tx);
    }

    /// Log a finding (not a violation: a page's hidden noindex). Findings
    /// come when a page's word changes, and are folded ([`FindingFold`]):
    /// one line per site, page, robot and word per [`FINDING_WINDOW`], at
    /// most [`FINDINGS_PER_WINDOW`] lines a window (those past it are said
    /// in the process's log, as a count, when the window ends). With the
    /// queue full one is dropped and said so in the process's log.
    pub fn note(&self, finding: Finding) {
        let now = self.shared.now();
        let admitted = self.shared.findings.lock().unwrap_or_else(|e| e.into_inner()).admit(&finding, now);
        if admitted.held > 0 {
            tracing::warn!(target: "robotgate::violations", held = admitted.held,
                "findings past the cap of a window were not written to the violation log (the status page lists every page)");
        }
        if !admitted.write {
            return;
        }
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(tx) = tx else { return };
        if let Err(TrySendError::Full(line)) = tx.try_send(Box::new(Line::Finding(finding))) {
            if let Line::Finding(f) = *line {
                tracing::warn!(target: "robotgate::violations", site = %f.site, path = %f.path,
                    "violation log queue full: a hidden-noindex finding was not written");
            }
        }
    }

    /// Ask the writer to reopen the file (what `SIGUSR1` does). It takes
    /// effect within [`TICK`], between two whole lines.
    pub fn reopen(&self) {
        self.shared.reopen.store(true, Ordering::SeqCst);
    }

    /// Stop accepting records, write out the rest (the queue, then every
    /// pending aggregate) and wait for the writer. Returns how many lines
    /// were written. Safe to call twice.
    pub fn close(&self) -> io::Result<u64> {
        // Never started (the server failed before it could): write the queue now.
        if let Some((out, rx)) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).take() {
            drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
            return write_until_closed(out, &rx, &self.shared);
        }
        drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        match writer {
            Some(w) => w.join().map_err(|_| io::Error::other("violation writer panicked"))?,
            None => Ok(0),
        }
    }
}

/// The writer: append queued records, close due windows and flush every
/// [`TICK`], reopen when asked; when every sender is gone, write the pending
/// aggregates. Returns the lines written.
fn write_until_closed(mut out: Out, rx: &Receiver<Box<Line>>, state: &Shared) -> io::Result<u64> {
    let mut written = 0u64;
    let mut next_tick = Instant::now() + TICK;
    loop {
        let wait = next_tick.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(line) => written += out.write(&line)?,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if Instant::now() >= next_tick {
            let due = state.table().close_due(state.now());
            for line in &due {
                written += out.write(line)?;
            }
            out.flush()?;
            if state.reopen.swap(false, Ordering::SeqCst) {
                out.reopen();
            }
            next_tick = Instant::now() + TICK;
        }
    }
    // The queue is empty and every sender is gone: write the pending aggregates.
    let rest = state.table().drain();
    for line in &rest {
        written += out.write(line)?;
    }
    out.flush()?;
    Ok(written)
}

/// Ask for a reopen on `SIGUSR1`, from a small thread of its own (with a
/// one-thread Tokio runtime for the signal). Returns once the handler is installed.
fn reopen_on_sigusr1(shared: Arc<Shared>) -> io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let (ready_tx, ready_rx) = mpsc::channel::<io::Result<()>>();
    std::thread::Builder::new().name("robotgate-sigusr1".into()).spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_io().build() {
            Ok(rt) => rt,
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        };
        rt.block_on(async move {
            let mut usr1 = match signal(SignalKind::user_defined1()) {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(()));
            while usr1.recv().await.is_some() {
                tracing::info!(target: "robotgate::violations", "SIGUSR1: reopening the violation log");
                shared.reopen.store(true, Ordering::SeqCst);
            }
        });
    })?;
    ready_rx.recv().map_err(|_| io::Error::other("SIGUSR1 thread ended"))?
}

/// Starts the writer inside the server (after Pingora's daemon `fork`, if any).
pub struct Starter(pub Arc<ViolationLog>);

#[async_trait::async_trait]
impl pingora::services::background::BackgroundService for Starter {
    async fn start(&self, _shutdown: pingora::server::ShutdownWatch) {
        if let Err(e) = self.0.start() {
            tracing::error!(target: "robotgate::violations", error = %e, "cannot start the violation log writer");
        }
    }
}

/// The writer's destination.
enum Out {
    Stdout(BufWriter<io::Stdout>),
    File {
        path: PathBuf,
        file: BufWriter<File>,
        /// Bytes in the file (as far as this writer knows).
        size: u64,
        max_size: Option<u64>,
        keep: u32,
    },
}

impl Out {
    fn open(target: &LogTarget, options: &LogOptions) -> io::Result<Out> {
        Ok(match target {
            LogTarget::Stdout => Out::Stdout(BufWriter::with_capacity(64 * 1024, io::stdout())),
            LogTarget::File(path) => {
                let (file, size) = open_append(path)?;
                Out::File {
                    path: path.clone(),
                    file: BufWriter::with_capacity(64 * 1024, file),
                    size,
                    max_size: options.max_size,
                    keep: options.keep,
                }
            }
        })
    }

    /// Write one line (rotating first if it would pass `max_size`). Returns 1.
    fn write(&mut self, line: &Line) -> io::Result<u64> {
        // serde_json escapes control characters, so a hostile User-Agent or path stays one line.
        let mut text = serde_json::to_vec(line).expect("a log line always serializes");
        text.push(b'\n');
        match self {
            Out::Stdout(w) => w.write_all(&text)?,
            Out::File { file, size, max_size, .. } => {
                if crate::record::rotate::due(*size, text.len(), *max_size) {
                    self.rotate();
                    return self.write_rotated(&text);
                }
                file.write_all(&text)?;
                *size += text.len() as u64;
            }
        }
        Ok(1)
    }

    fn write_rotated(&mut self, text: &[u8]) -> io::Result<u64> {
        if let Out::File { file, size, .. } = self {
            file.write_all(text)?;
            *size += text.len() as u64;
        }
        Ok(1)
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Stdout(w) => w.flush(),
            Out::File { file, .. } => file.flush(),
        }
    }

    /// Flush, then reopen the path (another program renamed the file away).
    /// On failure, say so and keep writing to the open file.
    fn reopen(&mut self) {
        let Out::File { path, file, size, .. } = self else { return };
        if let Err(e) = file.flush() {
            tracing::error!(target: "robotgate::violations", error = %e, "cannot flush the violation log");
        }
        match open_append(path) {
            Ok((f, s)) => {
                *file = BufWriter::with_capacity(64 * 1024, f);
                *size = s;
                metrics().log_reopens.inc();
            }
            Err(e) => {
                tracing::error!(target: "robotgate::violations", path = %path.display(), error = %e, "cannot reopen the violation log; still writing to the old file");
            }
        }
    }

    /// Flush, shift `path.(N-1)` .. `path.1` up by one and `path` to
    /// `path.1` (the oldest beyond `keep` is overwritten), then reopen `path`.
    fn rotate(&mut self) {
        let Out::File { path, file, keep, .. } = self else { return };
        if let Err(e) = file.flush() {
            tracing::error!(target: "robotgate::violations", error = %e, "cannot flush the violation log");
        }
        let result = crate::record::rotate::shift(path, *keep, |e| {
            tracing::warn!(target: "robotgate::violations", error = %e, "cannot shift a rotated violation log");
        });
        if let Err(e) = result {
            tracing::error!(target: "robotgate::violations", path = %path.display(), error = %e, "cannot rotate the violation log");
            return; // Reopening would append to the same file anyway.
        }
        metrics().log_rotations.inc();
        self.reopen();
    }
}

fn open_append(path: &Path) -> io::Result<(File, u64)> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((file, size))
}

/// Current time as RFC 3339 UTC with milliseconds ([`crate::time::rfc3339_ms`]:
/// the date and time are formatted once a second per thread).
pub fn now_rfc3339() -> String {
    crate::time::rfc3339_ms(crate::policy::Clock::System.unix_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(client: &str, ua: &str) -> Record {
        Record { pattern: Some("/p".into()), ..crate::record::sample(client, ua, "/p", 2, now_rfc3339()) }
    }

    fn lines(path: &Path) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).expect("every line is JSON")).collect()
    }

    fn sum(values: &[serde_json::Value]) -> u64 {
        values.iter().map(|v| v["count"].as_u64().unwrap()).sum()
    }

    #[test]
    fn without_aggregation_every_record_is_written_by_close_and_stays_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        let options = LogOptions { aggregate_window: Duration::ZERO, ..LogOptions::default() };
        let log = ViolationLog::open(&LogTarget::File(path.clone()), &options).unwrap();
        for i in 0..1000 {
            log.write(record("c", &format!("evil\"\r\nbot {i}")));
        }
        assert_eq!(log.close().unwrap(), 1000);
        let v = lines(&path);
        assert_eq!(v.len(), 1000);
        assert_eq!(v[999]["user_agent"], "evil\"\r\nbot 999");
        assert_eq!(v[999]["count"], 1);
        assert_eq!(log.close().unwrap(), 0, "closing twice is harmless");
    }

    #[test]
    fn repeats_become_one_record_and_close_writes_the_pending_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        let log = ViolationLog::open(&LogTarget::File(path.clone()), &LogOptions::default()).unwrap();
        for i in 0..1000 {
            log.write(record(if i % 2 == 0 { "a" } else { "b" }, "bot"));
        }
        assert_eq!(log.close().unwrap(), 4, "a and b: the first at once, then the repeats");
        let v = lines(&path);
        assert_eq!(sum(&v), 1000);
        assert!(v.iter().any(|v| v["count"] == 499 && v["first"].is_string() && v["last"].is_string()));
    }

    #[test]
    fn a_full_queue_never_waits_and_loses_no_count() {
        // A queue of one record: most lines find it full and are folded
        // (one key per client) or, beyond two keys, only counted.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        let options = LogOptions { aggregate_window: Duration::ZERO, aggregate_max_keys: 2, ..LogOptions::default() };
        let log = Arc::new(ViolationLog::open_with_queue(&LogTarget::File(path.clone()), &options, 1).unwrap());
        log.start().unwrap();
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        log.write(record(&format!("c{}", (t + i) % 5), "bot"));
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let written = log.close().unwrap();
        let v = lines(&path);
        assert_eq!(v.len() as u64, written);
        assert_eq!(sum(&v), 20_000, "every violation is counted in exactly one line");
        println!("20000 violations through a queue of 1: {written} lines");
    }

    #[test]
    fn size_rotation_keeps_n_files_of_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        let options =
            LogOptions { aggregate_window: Duration::ZERO, max_size: Some(2_000), keep: 2, ..LogOptions::default() };
        let log = ViolationLog::open(&LogTarget::File(path.clone()), &options).unwrap();
        for i in 0..100 {
            log.write(record(&i.to_string(), "bot"));
        }
        log.close().unwrap();
        let mut total = 0;
        for name in ["v.jsonl", "v.jsonl.1", "v.jsonl.2"] {
            let p = dir.path().join(name);
            assert!(std::fs::metadata(&p).unwrap().len() <= 2_000, "{name}");
            total += lines(&p).len();
        }
        assert!(!dir.path().join("v.jsonl.3").exists(), "keep: 2");
        assert!(total > 0 && total < 100, "older files were dropped: {total}");
    }

    #[test]
    fn reopen_follows_a_renamed_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        let options = LogOptions { aggregate_window: Duration::ZERO, ..LogOptions::default() };
        let log = ViolationLog::open(&LogTarget::File(path.clone()), &options).unwrap();
        log.write(record("a", "bot"));
        std::thread::sleep(TICK * 2);
        std::fs::rename(&path, dir.path().join("old.jsonl")).unwrap();
        log.reopen();
        std::thread::sleep(TICK * 3);
        log.write(record("b", "bot"));
        log.close().unwrap();
        assert_eq!(lines(&dir.path().join("old.jsonl")).len(), 1);
        assert_eq!(lines(&path).len(), 1);
    }

    #[test]
    fn rfc3339_shape() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'));
    }
}
