//! Giving the pages a snapshot load freed back to the system (issue 55).
//!
//! A load builds every site, then drops what it parsed on the way and,
//! on a reload, the sites that changed. mimalloc keeps freed pages
//! resident for later allocations and purges them only later, on its own
//! schedule (a page still partly used, never), so without a nudge a
//! start at 10,000 sites stayed about 8 MB, and the empty process 11 MB,
//! above what they do with it (BENCHMARKS.md, 2026-11-29 late).
//! [`give_back`] asks it once, after each load: never per request.

// `mimalloc` is the binary's global allocator (src/main.rs); named here so
// that its C library is linked into every program with this module, even a
// test binary that keeps the system allocator (where `mi_collect` finds an
// empty heap and returns).
use mimalloc as _;

extern "C" {
    /// mimalloc's: free what the calling thread's heap holds unused and,
    /// with `force`, purge every free page of its arenas (give it back to
    /// the system with `madvise`).
    fn mi_collect(force: bool);
}

/// Ask the allocator to give back to the system the memory freed so far.
/// Call it once after a snapshot is built (and the one it replaced
/// dropped); it costs a few system calls, not a scan of what is in use.
pub fn give_back() {
    // SAFETY: `mi_collect` takes no pointer, touches only the allocator's
    // own state, and may be called from any thread at any time.
    unsafe { mi_collect(true) }
}
