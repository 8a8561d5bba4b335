//! The shared-memory zone every worker of one nginx decides with: the
//! rates, bans and robots.txt reads of [`MemoryState::in_region`], the
//! metrics' series ([`Series`]) and decision times ([`Histogram`]), and the
//! crowd check's counts ([`Crowd`]).
//!
//! One zone, `robotgate`, sized from `limits.max_clients` as the proxy sizes
//! its tables. nginx maps it before it starts the workers, at one address
//! in each, and keeps it across `nginx -s reload` while its size stays the
//! same, so a reload forgets no ban. A size change (another
//! `limits.max_clients`) starts afresh.

use std::ffi::c_void;

use ngx::ffi::{
    ngx_conf_t, ngx_int_t, ngx_shared_memory_add, ngx_shm_zone_t, ngx_slab_alloc, ngx_slab_pool_t, ngx_str_t,
};
use ngx::ngx_string;

use robotgate::state::crowd::Crowd;
use robotgate::state::histogram::Histogram;
use robotgate::state::series::Series;
use robotgate::state::MemoryState;

/// Metrics series a zone holds.
pub const SERIES: usize = 4096;

/// What the workers share, once the zone is mapped.
pub struct Shared {
    /// Rates, bans and robots.txt reads.
    pub state: MemoryState,
    /// The metrics' counters.
    pub series: Series,
    /// `robotgate_decision_seconds`, a lane per worker.
    pub decisions: Histogram,
    /// Every worker's requests, for the crowd check: in the zone, mapped
    /// as long as the workers that use it.
    pub crowd: &'static Crowd,
}

/// Where the zone's regions are, kept in the slab pool's `data` so a
/// zone kept across a reload is found again.
#[repr(C)]
struct Regions {
    state: *mut u8,
    state_len: usize,
    series: *mut u8,
    series_len: usize,
    crowd: *mut u8,
    decisions: *mut u8,
}

/// What the zone's `init` needs: the table size, and where to put the
/// result (the main configuration's `shared`).
pub struct Pending {
    pub max_clients: usize,
    pub shared: *mut Option<Shared>,
}

/// Ask nginx for the zone (during configuration). `pending` must live as
/// long as the configuration (it is in the main configuration).
///
/// # Safety
/// `cf` is the configuration being read; `tag` is the module.
pub unsafe fn add(cf: *mut ngx_conf_t, pending: *mut Pending, tag: *mut c_void) -> Result<(), &'static str> {
    // SAFETY: the caller's.
    let max_clients = unsafe { (*pending).max_clients };
    let data = MemoryState::region_bytes(max_clients)
        + Series::region_bytes(SERIES)
        + Crowd::region_bytes()
        + Histogram::region_bytes();
    // The slab allocator's own pages and headers, and whole pages for each region.
    let size = data + data / 64 + (256 << 10);
    static mut NAME: ngx_str_t = ngx_string!("robotgate");
    // SAFETY: nginx keeps the name's pointer, which is static.
    let zone = unsafe { ngx_shared_memory_add(cf, &raw mut NAME, size, tag) };
    // SAFETY: null, or the zone nginx made (or found) for this name.
    let Some(zone) = (unsafe { zone.as_mut() }) else { return Err("cannot add the shared memory zone") };
    if !zone.data.is_null() && zone.data != pending as *mut c_void {
        return Err("the shared memory zone `robotgate` is already in use");
    }
    zone.init = Some(init);
    zone.data = pending as *mut c_void;
    Ok(())
}

/// nginx's call once the zone is mapped (in the master, before the workers
/// start; again after each reload, with the zone kept).
extern "C" fn init(zone: *mut ngx_shm_zone_t, _old: *mut c_void) -> ngx_int_t {
    // SAFETY: nginx passes the zone `add` made, whose data is the `Pending`.
    let zone = unsafe { &mut *zone };
    // SAFETY: as above.
    let pending = unsafe { &*(zone.data as *const Pending) };
    let pool = zone.shm.addr as *mut ngx_slab_pool_t;
    let state_len = MemoryState::region_bytes(pending.max_clients);
    let series_len = Series::region_bytes(SERIES);
    // SAFETY: nginx made the zone a slab pool; its `data` is ours.
    unsafe {
        if (*pool).data.is_null() {
            let regions = ngx_slab_alloc(pool, std::mem::size_of::<Regions>()) as *mut Regions;
            let state = ngx_slab_alloc(pool, state_len) as *mut u8;
            let series = ngx_slab_alloc(pool, series_len) as *mut u8;
            let crowd = ngx_slab_alloc(pool, Crowd::region_bytes()) as *mut u8;
            // Whole pages (its size is one): aligned for its lanes.
            let decisions = ngx_slab_alloc(pool, Histogram::region_bytes()) as *mut u8;
            if regions.is_null() || state.is_null() || series.is_null() || crowd.is_null() || decisions.is_null() {
                return ngx::ffi::NGX_ERROR as ngx_int_t;
            }
            std::ptr::write_bytes(decisions, 0, Histogram::region_bytes());
            std::ptr::write_bytes(series, 0, series_len);
            // All zeros: no request counted yet.
            std::ptr::write_bytes(crowd, 0, Crowd::region_bytes());
            regions.write(Regions { state, state_len, series, series_len, crowd, decisions });
            (*pool).data = regions as *mut c_void;
        }
        let r = &*((*pool).data as *const Regions);
        if r.state_len != state_len || r.series_len != series_len {
            return ngx::ffi::NGX_ERROR as ngx_int_t;
        }
        let state = MemoryState::in_region(r.state, r.state_len, pending.max_clients);
        let series = Series::in_region(r.series, r.series_len, SERIES);
        // Zeroed above, or placed there by this module before a reload;
        // the slab's allocations are aligned for any integer.
        let crowd = Crowd::in_region(r.crowd);
        let bounds = &robotgate::metric::DECISION_BOUNDS_NS;
        let decisions = Histogram::in_region(r.decisions, Histogram::region_bytes(), bounds);
        let (Some(state), Some(series), Some(crowd), Some(decisions)) = (state, series, crowd, decisions) else {
            return ngx::ffi::NGX_ERROR as ngx_int_t;
        };
        *pending.shared = Some(Shared { state, series, decisions, crowd });
    }
    ngx::ffi::NGX_OK as ngx_int_t
}
