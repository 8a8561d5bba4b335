//! The forward DFA's transitions laid out again for the walk over a UA.
//!
//! Walking regex-automata's dense DFA costs about 17 instructions a byte
//! here: the byte is lowercased (the patterns are lowercase), mapped to its
//! class, and the state's row is bounds-checked; then a second comparison
//! tells special states (match, dead, quit and accelerated ones) apart. This
//! table folds the lowercasing into the class map (one 256-entry array
//! indexed by the raw byte) and numbers the states so that a single
//! comparison finds the states worth stopping at (match, dead and quit).
//! States whose only match is a browser marker come right after those, so
//! that once a walk has seen a marker, the comparison lets them pass: a
//! browser string names half a dozen markers, and each stop cost about 70
//! instructions. With the walk taking four bytes between comparisons
//! (`Automata::scan`), a byte costs about 9 instructions (`bash
//! benches/classify_instructions.sh`).
//!
//! A walk is bound by latency, not instructions: each step's load needs the
//! one before it, about six cycles a byte. Indexing through a mask instead
//! of a bounds check saved an instruction a byte but put an `and` on that
//! chain, and was about 5% slower (`cargo bench --bench classify`); it is
//! not done.
//!
//! It is built once per database from the DFA itself, by following every
//! column from the start state, so a walk over it visits exactly the states
//! the DFA would (tested against the DFA's own walk). The DFA stays for what
//! a state means: the patterns a match state holds, and the end-of-input
//! transition. The table costs about as much memory as the DFA's own.

use std::collections::HashMap;

use regex_automata::dfa::{dense, Automaton};
use regex_automata::util::primitives::StateID;
use regex_automata::Input;

#[derive(Debug, Clone)]
pub(super) struct Table {
    /// Byte → column: the DFA's class of the lowercased byte, renumbered
    /// densely.
    column: [u8; 256],
    /// Columns per state.
    stride: u32,
    /// `next[id + column]`: the next state's id. Ids are premultiplied by
    /// `stride`.
    next: Vec<u32>,
    /// Ids below this are match, dead or quit states, except those of
    /// `marker_below`.
    stop_below: u32,
    /// Ids from `stop_below` to below this are match states whose only
    /// match is a browser marker.
    marker_below: u32,
    /// The DFA's state of each id, at `id / stride`.
    dfa: Vec<StateID>,
    /// Id of the DFA's start state at the start of a UA.
    start: u32,
}

impl Table {
    /// The table of `fwd`, an unanchored forward DFA over lowercase bytes,
    /// whose match states for which `marker_only` holds report a browser
    /// marker alone; an error if it would need more than `u32` ids.
    pub(super) fn build(fwd: &dense::DFA<Vec<u32>>, marker_only: impl Fn(StateID) -> bool) -> Result<Table, String> {
        let start = fwd.start_state_forward(&Input::new(&[][..])).map_err(|e| e.to_string())?;
        // Columns, and one byte standing for each.
        let mut column = [0u8; 256];
        let mut class_column: HashMap<u8, u8> = HashMap::new();
        let mut reps: Vec<u8> = Vec::new();
        for b in 0..=255u8 {
            let class = fwd.byte_classes().get(b.to_ascii_lowercase());
            let n = reps.len();
            let c = *class_column.entry(class).or_insert_with(|| {
                reps.push(b.to_ascii_lowercase());
                n as u8
            });
            column[usize::from(b)] = c;
        }
        // Every state reachable from the start state, in the order found.
        let mut order = vec![start];
        let mut index: HashMap<StateID, usize> = HashMap::from([(start, 0)]);
        let mut at = 0;
        while at < order.len() {
            let s = order[at];
            at += 1;
            for &b in &reps {
                let t = fwd.next_state(s, b);
                if let std::collections::hash_map::Entry::Vacant(v) = index.entry(t) {
                    v.insert(order.len());
                    order.push(t);
                }
            }
        }
        // 0: stop; 1: a marker alone; 2: go on.
        let kind = |s: StateID| match () {
            _ if fwd.is_dead_state(s) || fwd.is_quit_state(s) => 0,
            _ if fwd.is_match_state(s) && marker_only(s) => 1,
            _ if fwd.is_match_state(s) => 0,
            _ => 2,
        };
        let mut dfa: Vec<StateID> = Vec::with_capacity(order.len());
        let mut bounds = [0; 3];
        for (k, bound) in bounds.iter_mut().enumerate() {
            dfa.extend(order.iter().copied().filter(|&s| kind(s) == k));
            *bound = dfa.len() as u32;
        }
        let stride = reps.len() as u32;
        let too_big = || format!("{} states of {} columns do not fit the walk's table", dfa.len(), stride);
        let total = u32::try_from(dfa.len()).ok().and_then(|n| n.checked_mul(stride)).ok_or_else(too_big)?;
        let ids: HashMap<StateID, u32> = dfa.iter().enumerate().map(|(i, &s)| (s, i as u32 * stride)).collect();
        let mut next = Vec::with_capacity(total as usize);
        for &s in &dfa {
            next.extend(reps.iter().map(|&b| ids[&fwd.next_state(s, b)]));
        }
        Ok(Table {
            column,
            stride,
            next,
            stop_below: bounds[0] * stride,
            marker_below: bounds[1] * stride,
            dfa,
            start: ids[&start],
        })
    }

    /// Id of the state at the start of a UA.
    #[inline]
    pub(super) fn start(&self) -> u32 {
        self.start
    }

    /// Id of a DFA state reachable from the start state (a linear search:
    /// for building only).
    pub(super) fn id(&self, dfa_state: StateID) -> Option<u32> {
        self.dfa.iter().position(|&s| s == dfa_state).map(|i| i as u32 * self.stride)
    }

    /// The state after `byte` (any case).
    #[inline]
    pub(super) fn step(&self, id: u32, byte: u8) -> u32 {
        self.next[(id + u32::from(self.column[usize::from(byte)])) as usize]
    }

    /// The states after four bytes from `id`: the last, and the lowest of
    /// the four (below [`Table::stop_bound`] if one of them stops).
    #[inline]
    pub(super) fn step4(&self, id: u32, [b0, b1, b2, b3]: [u8; 4]) -> (u32, u32) {
        let s0 = self.step(id, b0);
        let s1 = self.step(s0, b1);
        let s2 = self.step(s1, b2);
        let s3 = self.step(s2, b3);
        (s3, s0.min(s1).min(s2.min(s3)))
    }

    /// The bound below which a walk stops: [`Table::stops`] if `marker`
    /// (a marker was seen), else also at the marker-only states.
    #[inline]
    pub(super) fn stop_bound(&self, marker: bool) -> u32 {
        if marker {
            self.stop_below
        } else {
            self.marker_below
        }
    }

    /// Whether `id`, below [`Table::stop_bound`], is a marker-only state.
    #[inline]
    pub(super) fn is_marker_only(&self, id: u32) -> bool {
        id >= self.stop_below
    }

    /// The DFA's state for `id`.
    #[inline]
    pub(super) fn dfa_state(&self, id: u32) -> StateID {
        self.dfa[(id / self.stride) as usize]
    }

    pub(super) fn memory_usage(&self) -> usize {
        self.next.len() * 4 + self.dfa.len() * 4 + 256
    }
}
