//! Reading the logs and spreading their lines over workers.
//!
//! One reader (the calling thread) parses every line and routes it. With
//! one thread it decides the line itself. With more, it sends each line to
//! the worker of its client address (a hash), in batches over bounded
//! channels, so memory stays bounded whatever the log's size; a
//! `/robots.txt` fetch goes to every worker, counted by its client's. The
//! records come back to the caller's `sink` on a thread of their own.

use std::io::{self, BufRead};
use std::sync::mpsc;

use super::{route, Route, Setup, Tally, Worker};
use crate::accesslog::{Entry, Reader};
use crate::record::Record;
use crate::report::read::Malformed;

/// One log to replay.
pub struct Input {
    /// Its name (a file name, or `-`), for the list of skipped lines.
    pub name: String,
    /// Its lines (already decompressed).
    pub reader: Box<dyn BufRead + Send>,
}

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Worker threads (at least 1).
    pub threads: usize,
}

/// What a replay found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The counts.
    pub tally: Tally,
    /// Lines read, over all inputs (blank and malformed ones included).
    pub lines: u64,
    /// Lines skipped by `--since` or `--site`.
    pub skipped: u64,
    /// Per input: its name and the lines that could not be read.
    pub malformed: Vec<(String, Malformed)>,
    /// Inputs that ended in a read error (a truncated gzip, say): name, the
    /// last line read, the error. What was read before counts.
    pub unreadable: Vec<(String, u64, String)>,
}

/// Lines per batch sent to a worker, and batches queued per worker.
const BATCH: usize = 1_024;
const QUEUED: usize = 4;
/// Records per batch sent back.
const RECORDS: usize = 256;

/// Lines for a worker, with no allocation per line: the entries' strings
/// one after another in `text`, and where each is.
#[derive(Default)]
struct Batch {
    text: String,
    jobs: Vec<Job>,
}

/// One line of a [`Batch`]: its log line, the entry's strings as spans of
/// the batch's text, the site, and whether the worker counts it.
struct Job {
    line: u64,
    time_unix: Option<i64>,
    status: Option<u16>,
    /// client, method, target, user agent, host (`u32::MAX` start: absent).
    spans: [(u32, u32); 5],
    site: usize,
    counted: bool,
}

const ABSENT: (u32, u32) = (u32::MAX, 0);

impl Batch {
    fn with_capacity(lines: usize) -> Batch {
        Batch { text: String::with_capacity(lines * 160), jobs: Vec::with_capacity(lines) }
    }

    fn push(&mut self, line: u64, e: &Entry<'_>, site: usize, counted: bool) {
        let mut span = |s: Option<&str>| match s {
            None => ABSENT,
            Some(s) => {
                let start = self.text.len() as u32;
                self.text.push_str(s);
                (start, self.text.len() as u32)
            }
        };
        let spans = [
            span(Some(&e.client)),
            span(Some(&e.method)),
            span(Some(&e.target)),
            span(e.user_agent.as_deref()),
            span(e.host.as_deref()),
        ];
        self.jobs.push(Job { line, time_unix: e.time_unix, status: e.status, spans, site, counted });
    }

    fn clear(&mut self) {
        self.text.clear();
        self.jobs.clear();
    }

    /// Whether the batch is due to be sent: enough lines, or enough text
    /// (a few long User-Agents).
    fn full(&self) -> bool {
        self.jobs.len() >= BATCH || self.text.len() >= 1 << 20
    }

    /// Each line's entry, borrowed from the batch (in the order pushed).
    fn each(&self, mut f: impl FnMut(u64, &Entry<'_>, usize, bool)) {
        let get = |(start, end): (u32, u32)| (start != u32::MAX).then(|| &self.text[start as usize..end as usize]);
        for job in &self.jobs {
            let [client, method, target, ua, host] = job.spans.map(get);
            let entry = Entry {
                time_unix: job.time_unix,
                client: client.unwrap_or_default().into(),
                method: method.unwrap_or_default().into(),
                target: target.unwrap_or_default().into(),
                status: job.status,
                user_agent: ua.map(Into::into),
                host: host.map(Into::into),
            };
            f(job.line, &entry, job.site, job.counted);
        }
    }
}

/// Replays `inputs` in order, passing every would-be violation record to
/// `sink` (in log order with one thread; grouped by worker with more).
///
/// A read error of an input ends that input only ([`Outcome::unreadable`]).
pub fn run(setup: &Setup<'_>, inputs: Vec<Input>, options: &Options, sink: &mut (dyn FnMut(Record) + Send)) -> Outcome {
    if options.threads <= 1 {
        let mut worker = Worker::new(setup);
        let mut out = Outcome::default();
        for input in inputs {
            let mut reader = Reader::new(input.reader, setup.format.clone());
            let read = reader.for_each_entry(|line, entry| match route(setup, &entry) {
                Route::Skip => out.skipped += 1,
                Route::Judge { site, .. } => {
                    worker.decide(line, &entry, site, true, sink);
                }
            });
            out.end_of(input.name, &reader, read);
        }
        out.tally = worker.tally;
        return out;
    }
    let n = options.threads;
    std::thread::scope(|scope| {
        let (record_tx, record_rx) = mpsc::sync_channel::<Vec<Record>>(n * QUEUED);
        scope.spawn(move || {
            for batch in record_rx {
                batch.into_iter().for_each(&mut *sink);
            }
        });
        // Emptied batches come back to be refilled: their buffers are
        // allocated once, not per batch.
        let (free_tx, free_rx) = mpsc::channel::<Batch>();
        let mut job_txs = Vec::with_capacity(n);
        let mut workers = Vec::with_capacity(n);
        for _ in 0..n {
            let (tx, rx) = mpsc::sync_channel::<Batch>(QUEUED);
            job_txs.push(tx);
            let records = record_tx.clone();
            let free = free_tx.clone();
            workers.push(scope.spawn(move || {
                let mut worker = Worker::new(setup);
                let mut out = Vec::with_capacity(RECORDS);
                for mut batch in rx {
                    batch.each(|line, entry, site, counted| {
                        worker.decide(line, entry, site, counted, &mut |r| out.push(r));
                        if out.len() >= RECORDS {
                            // The collector only ends when every sender is gone.
                            let _ = records.send(std::mem::replace(&mut out, Vec::with_capacity(RECORDS)));
                        }
                    });
                    batch.clear();
                    let _ = free.send(batch);
                }
                if !out.is_empty() {
                    let _ = records.send(out);
                }
                worker.tally
            }));
        }
        drop(record_tx);
        let mut out = Outcome::default();
        let mut pending: Vec<Batch> = (0..n).map(|_| Batch::with_capacity(BATCH)).collect();
        for input in inputs {
            let mut reader = Reader::new(input.reader, setup.format.clone());
            let read = reader.for_each_entry(|line, entry| {
                let Route::Judge { site, robots } = route(setup, &entry) else {
                    out.skipped += 1;
                    return;
                };
                let owner = (crate::state::shared::fnv1a(entry.client.as_bytes()) % n as u64) as usize;
                if robots {
                    for (w, batch) in pending.iter_mut().enumerate() {
                        batch.push(line, &entry, site, w == owner);
                    }
                } else {
                    pending[owner].push(line, &entry, site, true);
                }
                for (batch, tx) in pending.iter_mut().zip(&job_txs) {
                    if batch.full() {
                        // A worker gone (it panicked) shows when it is joined.
                        let empty = free_rx.try_recv().unwrap_or_else(|_| Batch::with_capacity(BATCH));
                        let _ = tx.send(std::mem::replace(batch, empty));
                    }
                }
            });
            out.end_of(input.name, &reader, read);
        }
        for (batch, tx) in pending.into_iter().zip(job_txs) {
            let _ = tx.send(batch);
        }
        for worker in workers {
            match worker.join() {
                Ok(tally) => {
                    if out.tally.sites.is_empty() {
                        out.tally = tally;
                    } else {
                        out.tally.merge(tally);
                    }
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

impl Outcome {
    /// Counts an input read to its end, or to a read error (a truncated
    /// gzip, say): what was read counts, and the error is kept, so one bad
    /// rotation spoils nothing else.
    fn end_of<R: BufRead>(&mut self, name: String, reader: &Reader<R>, read: io::Result<()>) {
        self.lines += reader.lines();
        if let Err(e) = read {
            self.unreadable.push((name.clone(), reader.lines(), e.to_string()));
        }
        self.malformed.push((name, reader.malformed().clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_gives_back_what_was_pushed() {
        let line = r#"2001:db8::7 - - [23/Nov/2026:22:09:50 +0100] "GET /a?b=1 HTTP/1.1" 200 5 "-" "GPTBot/1.2""#;
        let full = crate::accesslog::Format::Combined.parse(line.as_bytes()).unwrap();
        let bare = Entry { user_agent: None, host: None, time_unix: None, status: None, ..full.clone() };
        let with_host = Entry { host: Some("shop.example".into()), ..full.clone() };
        let mut batch = Batch::with_capacity(4);
        for (i, e) in [&full, &bare, &with_host].into_iter().enumerate() {
            batch.push(i as u64 + 1, e, i, i % 2 == 0);
        }
        let mut got = Vec::new();
        batch.each(|line, e, site, counted| got.push((line, format!("{e:?}"), site, counted)));
        let want = [(1, full, 0, true), (2, bare, 1, false), (3, with_host, 2, true)];
        let want: Vec<_> = want.into_iter().map(|(l, e, s, c)| (l, format!("{e:?}"), s, c)).collect();
        assert_eq!(got, want);
        batch.clear();
        batch.each(|_, _, _, _| panic!("cleared"));
    }
}
