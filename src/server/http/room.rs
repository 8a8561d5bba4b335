//! A listener's places for connections: at most `max_connections` open at
//! once and, when all are taken, a place made for a newcomer by closing the
//! connection that has waited longest without sending a whole first request
//! head.
//!
//! Why: a bound alone lets connections that say nothing hold a listener
//! shut until their head deadline ends them, and a client that keeps
//! opening them holds it shut for good (issue 66: 200 idle connections kept
//! every scrape of the metrics listener out). A connection that has not
//! sent its first head has cost nothing to close and is owed nothing; a
//! real client sends its head at once, so the newest connections, a
//! scrape's among them, are the last ever closed this way. A connection
//! that sent a head is never closed to make room.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::task::AtomicWaker;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a newcomer waits for the place of the connection closed for it.
pub const EVICT_WAIT: Duration = Duration::from_secs(1);

/// One connection's standing, shared between the room and its stream.
#[derive(Debug)]
pub struct Seat {
    /// It has not sent a whole first head yet.
    headless: AtomicBool,
    /// The room asked it to go.
    evicted: AtomicBool,
    /// Its task, to wake when it is asked to go.
    waker: AtomicWaker,
}

impl Default for Seat {
    fn default() -> Self {
        Seat { headless: AtomicBool::new(true), evicted: AtomicBool::new(false), waker: AtomicWaker::new() }
    }
}

impl Seat {
    /// Its first head is whole: it is never asked to go.
    pub fn seated(&self) {
        self.headless.store(false, Ordering::Relaxed);
    }

    /// Whether the room asked it to go (never once it is seated); `waker`
    /// is woken when it does.
    pub fn is_evicted(&self, waker: &std::task::Waker) -> bool {
        if !self.headless.load(Ordering::Relaxed) {
            return false;
        }
        if self.evicted.load(Ordering::Acquire) {
            return true;
        }
        self.waker.register(waker);
        self.evicted.load(Ordering::Acquire)
    }

    fn evict(&self) -> bool {
        if !self.headless.load(Ordering::Relaxed) || self.evicted.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.waker.wake();
        true
    }
}

/// A connection's place, held for its life.
#[derive(Debug)]
pub struct Place {
    _permit: OwnedSemaphorePermit,
    /// Its standing.
    pub seat: Arc<Seat>,
}

/// The places of one listener.
#[derive(Debug)]
pub struct Room {
    permits: Arc<Semaphore>,
    max: usize,
    /// Connections in the order they came (those gone, or seated, are
    /// skipped and dropped as they are met).
    waiting: Mutex<VecDeque<Weak<Seat>>>,
}

impl Room {
    /// Room for `max` connections at once.
    pub fn new(max: usize) -> Room {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Room { permits: Arc::new(Semaphore::new(max)), max, waiting: Mutex::new(VecDeque::new()) }
    }

    /// A place for a new connection: a free one, else the place of the
    /// oldest connection still without a first head, which is asked to go
    /// (waiting at most [`EVICT_WAIT`] for it); `None` when there is none
    /// to ask, and the newcomer is refused.
    pub async fn enter(&self) -> Option<Place> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Some(self.seat(permit));
        }
        if !self.evict_oldest() {
            return None;
        }
        match tokio::time::timeout(EVICT_WAIT, self.permits.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Some(self.seat(permit)),
            _ => None,
        }
    }

    fn seat(&self, permit: OwnedSemaphorePermit) -> Place {
        let seat = Arc::new(Seat::default());
        let mut waiting = self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Bounded: past twice the places, the gone and the seated are
        // dropped (amortised constant per connection).
        if waiting.len() >= 2 * self.max {
            waiting.retain(|w| w.upgrade().is_some_and(|s| s.headless.load(Ordering::Relaxed)));
        }
        waiting.push_back(Arc::downgrade(&seat));
        Place { _permit: permit, seat }
    }

    /// Ask the oldest connection without a first head to go.
    fn evict_oldest(&self) -> bool {
        let mut waiting = self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while let Some(weak) = waiting.pop_front() {
            if weak.upgrade().is_some_and(|seat| seat.evict()) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_room_closes_its_oldest_headless_connection_for_a_newcomer() {
        let room = Room::new(2);
        let first = room.enter().await.unwrap();
        let second = room.enter().await.unwrap();
        // The first has sent its head: the second is the one asked to go.
        first.seat.seated();
        let waker = futures_util::task::noop_waker();
        let (room, second_seat) = (Arc::new(room), second.seat.clone());
        let newcomer = {
            let room = room.clone();
            tokio::spawn(async move { room.enter().await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(second_seat.is_evicted(&waker) && !first.seat.is_evicted(&waker));
        drop(second);
        let third = newcomer.await.unwrap().expect("the newcomer's place");
        // Nobody left to ask: refused.
        third.seat.seated();
        assert!(room.enter().await.is_none());
    }
}
