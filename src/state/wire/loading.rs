//! Loading the live bans and robots.txt reads from the store on
//! connecting: `SCAN` and `MGET`, bounded in count and time.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Scan,
    Mget { next: u64 },
    Done,
}

/// Loading the live bans and reads on connecting: `SCAN` each pattern,
/// `MGET` each page of keys, until the cursor comes back to 0 or
/// [`LOAD_MAX`] events of the pattern are in. The caller sends
/// [`Loading::first`], hands its reply to [`Loading::feed`], and bounds the
/// whole by [`LOAD_FOR`].
#[derive(Debug)]
pub struct Loading {
    patterns: [String; 2],
    at: usize,
    cursor: u64,
    of_pattern: usize,
    loaded: usize,
    pending: Pending,
}

impl Loading {
    /// Loading the keys of `patterns`, one after the other.
    pub(super) fn new(patterns: [String; 2]) -> Loading {
        Loading { patterns, at: 0, cursor: 0, of_pattern: 0, loaded: 0, pending: Pending::Scan }
    }

    /// The first command to send; each reply's [`Loading::feed`] gives the
    /// next.
    pub fn first(&self) -> Option<Command> {
        self.next_with(&[])
    }

    fn next_with(&self, keys: &[Vec<u8>]) -> Option<Command> {
        match self.pending {
            Pending::Done => None,
            Pending::Scan => Some(
                Command::new("SCAN")
                    .arg(self.cursor.to_string())
                    .arg("MATCH")
                    .arg(&self.patterns[self.at])
                    .arg("COUNT")
                    .arg(SCAN_COUNT.to_string()),
            ),
            Pending::Mget { .. } => {
                let mut c = Command::new("MGET");
                c.args.extend(keys.iter().cloned());
                Some(c)
            }
        }
    }

    /// Take the reply to the last command sent; each event it
    /// holds goes to `apply`. Returns the next command to send (the MGET of
    /// a page needs the keys the SCAN found), or `None` when loading is over.
    ///
    /// # Errors
    /// The server's error, or a reply of another shape.
    pub fn feed(&mut self, reply: Reply, mut apply: impl FnMut(Event)) -> Result<Option<Command>, WireError> {
        match self.pending {
            Pending::Done => return Ok(None),
            Pending::Scan => {
                let Reply::Array(mut parts) = reply.ok()? else { return Err(WireError::Unexpected("SCAN")) };
                if parts.len() != 2 {
                    return Err(WireError::Unexpected("SCAN"));
                }
                let keys = match parts.pop() {
                    Some(Reply::Array(keys)) => keys,
                    _ => return Err(WireError::Unexpected("SCAN")),
                };
                let next = parts[0].int("SCAN")?;
                let next = u64::try_from(next).map_err(|_| WireError::Unexpected("SCAN"))?;
                let keys: Vec<Vec<u8>> = keys
                    .into_iter()
                    .filter_map(|k| match k {
                        Reply::Text(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                if keys.is_empty() {
                    self.advance(next);
                    return Ok(self.next_with(&[]));
                }
                self.pending = Pending::Mget { next };
                return Ok(self.next_with(&keys));
            }
            Pending::Mget { next } => {
                let Reply::Array(values) = reply.ok()? else { return Err(WireError::Unexpected("MGET")) };
                for v in values {
                    if let Reply::Text(t) = v {
                        if let Ok(event) = serde_json::from_slice::<Event>(&t) {
                            apply(event);
                            self.of_pattern += 1;
                            self.loaded += 1;
                        }
                    }
                }
                self.advance(next);
            }
        }
        Ok(self.next_with(&[]))
    }

    /// The SCAN of the current pattern said `next`: go on, or to the next
    /// pattern, or stop.
    fn advance(&mut self, next: u64) {
        self.cursor = next;
        self.pending = Pending::Scan;
        if next == 0 || self.of_pattern >= LOAD_MAX {
            self.at += 1;
            self.cursor = 0;
            self.of_pattern = 0;
            if self.at >= self.patterns.len() {
                self.pending = Pending::Done;
            }
        }
    }

    /// Events applied so far.
    pub fn loaded(&self) -> usize {
        self.loaded
    }
}
