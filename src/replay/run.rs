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

/// A line for a worker: its log line, the entry, the site, and whether the
/// worker counts it.
type Job = (u64, Entry<'static>, usize, bool);

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
                Route::Judge { site, .. } => worker.decide(line, &entry, site, true, sink),
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
        let mut job_txs = Vec::with_capacity(n);
        let mut workers = Vec::with_capacity(n);
        for _ in 0..n {
            let (tx, rx) = mpsc::sync_channel::<Vec<Job>>(QUEUED);
            job_txs.push(tx);
            let records = record_tx.clone();
            workers.push(scope.spawn(move || {
                let mut worker = Worker::new(setup);
                let mut out = Vec::with_capacity(RECORDS);
                for batch in rx {
                    for (line, entry, site, counted) in batch {
                        worker.decide(line, &entry, site, counted, &mut |r| out.push(r));
                        if out.len() >= RECORDS {
                            // The collector only ends when every sender is gone.
                            let _ = records.send(std::mem::replace(&mut out, Vec::with_capacity(RECORDS)));
                        }
                    }
                }
                if !out.is_empty() {
                    let _ = records.send(out);
                }
                worker.tally
            }));
        }
        drop(record_tx);
        let mut out = Outcome::default();
        let mut pending: Vec<Vec<Job>> = (0..n).map(|_| Vec::with_capacity(BATCH)).collect();
        for input in inputs {
            let mut reader = Reader::new(input.reader, setup.format.clone());
            let read = reader.for_each_entry(|line, entry| {
                let Route::Judge { site, robots } = route(setup, &entry) else {
                    out.skipped += 1;
                    return;
                };
                let owner = (crate::state::shared::fnv1a(entry.client.as_bytes()) % n as u64) as usize;
                let entry = owned(entry);
                if robots {
                    for (w, batch) in pending.iter_mut().enumerate() {
                        batch.push((line, entry.clone(), site, w == owner));
                    }
                } else {
                    pending[owner].push((line, entry, site, true));
                }
                for (batch, tx) in pending.iter_mut().zip(&job_txs) {
                    if batch.len() >= BATCH {
                        // A worker gone (it panicked) shows when it is joined.
                        let _ = tx.send(std::mem::replace(batch, Vec::with_capacity(BATCH)));
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

fn owned(e: Entry<'_>) -> Entry<'static> {
    Entry {
        time_unix: e.time_unix,
        client: e.client.into_owned().into(),
        method: e.method.into_owned().into(),
        target: e.target.into_owned().into(),
        status: e.status,
        user_agent: e.user_agent.map(|u| u.into_owned().into()),
        host: e.host.map(|h| h.into_owned().into()),
    }
}
