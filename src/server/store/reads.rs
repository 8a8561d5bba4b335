//! The robots.txt reads of the last 24 hours, kept in a file so that they
//! outlive a restart, as the traps' arming does.
//!
//! A crawler may use the robots.txt it fetched for 24 hours (RFC 9309 2.4),
//! and robotgate judges a request by that copy ([`crate::policy::Stale`]):
//! which version each crawler read, and when, must not be forgotten when
//! the process restarts. Each read ([`Event::RobotsRead`], as announced to a
//! shared store) is noted here; a background task writes the notes to
//! `robotgate-robots-reads.json` beside the traps' state at most every five
//! seconds when something changed (a new reader, another version, or the
//! same one read a minute or more later), and at shutdown. At start they are applied to the
//! local tables like a store's announcements.
//!
//! Bounded: at most [`MAX_READS`] readers (one note per reader; the oldest
//! goes first). Only `/robots.txt` fetches take the lock, never other requests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

use super::redis::unix_ms;
use crate::state::shared::Event;
use crate::state::State;

/// Readers kept (each note is at most a few hundred bytes).
pub const MAX_READS: usize = 10_000;

/// The most bytes of the file read at start.
const FILE_MAX: u64 = 16 << 20;

/// How often changed notes are written, at most.
const WRITE_EVERY: Duration = Duration::from_secs(5);

/// A reader's repeated read of the same version moves its note only when
/// this much later: the grace it gives is 24 hours, so a minute's
/// difference after a restart is nothing, and a crawler fetching
/// robots.txt in a loop does not rewrite the file.
const MOVE_AFTER_MS: u64 = 60_000;

/// The reads of this process, by reader ([`Event::key`]).
pub struct Reads {
    path: PathBuf,
    notes: Mutex<HashMap<String, Event>>,
    changed: AtomicBool,
}

impl Reads {
    /// Where the file lives: beside the traps' state.
    pub fn state_path(traps_state: &Path) -> PathBuf {
        traps_state.with_file_name("robotgate-robots-reads.json")
    }

    /// Open the file at `path` and apply the reads it holds that are still
    /// within 24 hours to `local`. A missing or unreadable file holds none.
    pub fn open(path: PathBuf, local: &dyn State) -> Reads {
        let (now, now_ms) = (Instant::now(), unix_ms());
        let read: Vec<Event> = crate::load::file::read(&path, FILE_MAX)
            .ok()
            .and_then(|c| serde_json::from_slice(&c.body).ok())
            .unwrap_or_default();
        let mut notes = HashMap::new();
        for event in read.into_iter().filter(|e| matches!(e, Event::RobotsRead { .. })).take(MAX_READS) {
            if event.ttl(now_ms) > Duration::from_millis(1) {
                event.apply(local, now, now_ms);
                notes.insert(event.key(), event);
            }
        }
        Reads { path, notes: Mutex::new(notes), changed: AtomicBool::new(false) }
    }

    /// Note a read (other events are not kept here).
    pub fn note(&self, event: &Event) {
        let Event::RobotsRead { .. } = event else { return };
        let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        let key = event.key();
        if notes.len() >= MAX_READS && !notes.contains_key(&key) {
            let now_ms = unix_ms();
            notes.retain(|_, e| e.ttl(now_ms) > Duration::from_millis(1));
            if notes.len() >= MAX_READS {
                let oldest = notes.iter().min_by_key(|(_, e)| e.ttl(now_ms)).map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    notes.remove(&k);
                }
            }
        }
        let same = match (notes.get(&key), event) {
            (
                Some(Event::RobotsRead { version: v0, at_ms: t0, .. }),
                Event::RobotsRead { version: v1, at_ms: t1, .. },
            ) => v0 == v1 && t1.saturating_sub(*t0) < MOVE_AFTER_MS,
            _ => false,
        };
        if same {
            return;
        }
        notes.insert(key, event.clone());
        self.changed.store(true, Ordering::Relaxed);
    }

    /// Write the notes if they changed since the last write.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&self) -> std::io::Result<()> {
        if !self.changed.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        let now_ms = unix_ms();
        let body = {
            let notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
            let live: Vec<&Event> = notes.values().filter(|e| e.ttl(now_ms) > Duration::from_millis(1)).collect();
            serde_json::to_vec(&live).map_err(std::io::Error::other)?
        };
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, body)?;
        std::fs::rename(&tmp, &self.path).inspect_err(|_| self.changed.store(true, Ordering::Relaxed))
    }
}

/// The background task that writes [`Reads`].
pub struct Writer(pub Arc<Reads>);

impl Writer {
    fn write(&self) {
        if let Err(e) = self.0.write() {
            tracing::warn!(target: "robotgate::robots", file = %self.0.path.display(), error = %e, "cannot keep the robots.txt reads; a restart forgets them");
        }
    }
}

#[async_trait]
impl BackgroundService for Writer {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut every = tokio::time::interval(WRITE_EVERY);
        loop {
            tokio::select! {
                _ = every.tick() => self.write(),
                _ = shutdown.changed() => break,
            }
        }
        self.write();
    }
}
