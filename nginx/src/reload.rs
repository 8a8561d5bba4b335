//! A worker's reloads, off nginx's event loop.
//!
//! Once a second at most, on a request, the worker asks whether a source
//! file changed since its snapshot was read (a `stat` of each: the config,
//! robots.txt, humans.txt, ...). When one did, a helper thread reads and
//! builds the new snapshot ([`robotgate::load::reload`]): reading a file
//! that an editor is still writing in place waits until it settles, and a
//! changed bot database takes a while to compile, and neither may hold up
//! the requests nginx serves meanwhile (issue 52: an in-place edit made
//! requests wait up to 2 s, `robotgate off` locations included). Requests go
//! on with the old snapshot until the new one is in; a later look takes it
//! and writes what the reload said to nginx's error log, on nginx's thread.
//!
//! No thread is started until a file changes: a worker that never sees an
//! edit stays single-threaded (see [`robotgate::load::file::read_on_this_thread`]).
//! One reload at a time; a refused reload is tried again when a file
//! changes again, and a problem is logged once until it changes.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use robotgate::load::{Problem, Snapshot};

type Outcome = Result<Snapshot, Vec<Problem>>;

/// A worker's reload state.
#[derive(Default)]
pub struct Reloads {
    /// The reload under way, and where it leaves its outcome.
    running: Option<Arc<Mutex<Option<Outcome>>>>,
    /// When the last reload that was refused began: files unchanged since
    /// are not read again.
    refused_at: Option<SystemTime>,
    /// What was last written to the error log, so a refusal that stays is
    /// said once.
    said: Vec<String>,
}

/// What a look found, for the caller to write to nginx's error log.
pub enum Look {
    /// Nothing new.
    Nothing,
    /// A new snapshot, and the files it refused (each kept its last good version).
    New(Box<Snapshot>, Vec<String>),
    /// The reload was refused whole: the old snapshot stays. Empty when the
    /// same was said already.
    Refused(Vec<String>),
    /// No thread could be started for it.
    NoThread(String),
}

impl Reloads {
    /// A reload is under way.
    pub fn running(&self) -> bool {
        self.running.is_some()
    }

    /// Take a finished reload's outcome, or start one if `snap`'s files
    /// changed. Never waits: on nginx's thread, at most a `stat` per source.
    pub fn look(&mut self, config: &Path, snap: &Arc<Snapshot>) -> Look {
        if let Some(slot) = &self.running {
            // The helper holds the lock only to leave its outcome.
            let Ok(mut done) = slot.try_lock() else { return Look::Nothing };
            let Some(outcome) = done.take() else { return Look::Nothing };
            drop(done);
            self.running = None;
            return self.finished(outcome);
        }
        let changed = match self.refused_at {
            Some(at) => snap.changed_since(at),
            None => snap.stale(),
        };
        if !changed {
            return Look::Nothing;
        }
        let slot = Arc::new(Mutex::new(None));
        let (out, config, previous) = (slot.clone(), config.to_path_buf(), snap.clone());
        let tried = SystemTime::now();
        let spawned = std::thread::Builder::new().name("robotgate-reload".into()).spawn(move || {
            let outcome = robotgate::load::reload(&config, Some(&previous));
            *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        });
        match spawned {
            Ok(_) => {
                self.running = Some(slot);
                // Files changed from now on are read by the next reload.
                self.refused_at = Some(tried);
                Look::Nothing
            }
            Err(e) => Look::NoThread(e.to_string()),
        }
    }

    fn finished(&mut self, outcome: Outcome) -> Look {
        match outcome {
            Ok(new) => {
                self.refused_at = None;
                let kept: Vec<String> = new.refused.iter().map(ToString::to_string).collect();
                let fresh = self.fresh(kept);
                Look::New(Box::new(new), fresh)
            }
            Err(problems) => {
                let said = self.fresh(problems.iter().map(ToString::to_string).collect());
                Look::Refused(said)
            }
        }
    }

    /// `lines`, unless they are what was said last; remembered.
    fn fresh(&mut self, lines: Vec<String>) -> Vec<String> {
        if lines == self.said {
            return Vec::new();
        }
        self.said.clone_from(&lines);
        lines
    }
}
