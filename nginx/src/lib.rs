//! robotgate inside nginx (issue #41): a dynamic module, `ngx_http_robotgate_module`,
//! that drives robotgate's core pipeline ([`robotgate::pipeline`]) from nginx's
//! rewrite phase. It is a thin host, as the proxy is: it gathers nothing the
//! pipeline gathers, answers what the pipeline asks, and turns the one
//! [`Enforcement`] into nginx's response.
//!
//! ```nginx
//! load_module modules/ngx_http_robotgate_module.so;
//! http {
//!     robotgate_config /etc/robotgate/robotgate.yaml;   # the same file as `robotgate serve`
//!     server { robotgate on; ... }                      # http, server or location
//! }
//! ```
//!
//! What it does (docs/nginx-module.md lists what still differs from the
//! proxy):
//!
//! * `/robots.txt` and `/humans.txt` are answered from the snapshot (the
//!   site's files with robotgate's managed and trap lines);
//! * every other request is decided; refusals are the action's status and
//!   body (or its file, or its redirect), a limit is 429 with `Retry-After`,
//!   a `noindex` pass gets `X-Robots-Tag`, and the site's `Content-Usage`
//!   is added to what nginx serves;
//! * the client address is nginx's own, after its realip module, read as
//!   the proxy reads a socket's peer (`trusted_proxies` still apply), and
//!   HTTPS is the connection's;
//! * the crowd check counts every worker's clients in the zone ([`crowd`]);
//! * rates, bans and robots.txt reads are shared by every worker, in a
//!   shared-memory zone ([`zone`]), as `limit_req_zone` shares its counters;
//! * violation records go to the configured file as nginx's own logs do,
//!   reopened on `nginx -s reopen` ([`log`]);
//! * `robotgate_metrics;` in a location serves the proxy's counters, counted
//!   by every worker, its `robotgate_decision_seconds` histogram and its
//!   gauges, as Prometheus text ([`scrape`]);
//! * a robots.txt (or any source) edit is in force without `nginx -s
//!   reload`: each worker watches the files with inotify on its loop and
//!   rebuilds off the request path ([`reload`]); a request never looks;
//! * with `state.redis`, rates, bans and robots.txt reads are shared with
//!   other nginx and `robotgate serve` instances through the same keys as
//!   the proxy's ([`store`]); a request whose rate question goes there is
//!   parked meanwhile, not nginx's loop ([`park`]);
//! * a robot that only reverse DNS can confirm is looked up on the worker's
//!   DNS threads (UDP, then TCP when truncated: every PTR name is read), the
//!   request parked meanwhile ([`dns`]);
//! * a Web Bot Auth signature's key directory is fetched on a helper
//!   thread, the request parked meanwhile, and cached per worker ([`wba`]).
//!
//! The decision runs in the rewrite phase: a handler that answers the
//! request itself (robots.txt, a refusal with a body) must end it, which the
//! rewrite phase does with the handler's result; the access phase reads a
//! result of `NGX_OK` as "allowed, go on". nginx's realip module has set the
//! client address by then (post-read phase).

mod answer;
mod books;
mod crowd;
mod directives;
mod dns;
mod driver;
mod headers;
mod log;
mod once;
mod park;
mod reload;
mod scrape;
mod store;
mod timer;
mod wba;
mod worker;
mod zone;

use std::path::PathBuf;
use std::sync::Arc;

// Where dns.rs finds it.
use ngx::core::Status;
use ngx::ffi::{
    ngx_array_push, ngx_command_t, ngx_conf_t, ngx_cycle_t, ngx_http_handler_pt, ngx_http_module_t,
    ngx_http_phases_NGX_HTTP_REWRITE_PHASE, ngx_int_t, ngx_module_t, ngx_open_file_t, ngx_uint_t, NGX_CONF_NOARGS,
    NGX_CONF_TAKE1, NGX_HTTP_LOC_CONF, NGX_HTTP_LOC_CONF_OFFSET, NGX_HTTP_MAIN_CONF, NGX_HTTP_MAIN_CONF_OFFSET,
    NGX_HTTP_MODULE, NGX_HTTP_SRV_CONF, NGX_LOG_ERR,
};
use ngx::http::{self, HttpModule, HttpModuleLocationConf, HttpModuleMainConf, MergeConfigError, NgxHttpCoreModule};
use ngx::{http_request_handler, ngx_log_error, ngx_string};

use directives::{set_config, set_enable, set_metrics};
use robotgate::load::Snapshot;
use worker::{install, STORE, WORKER};

struct Module;

impl http::HttpModule for Module {
    fn module() -> &'static ngx_module_t {
        // SAFETY: the module's static, set up once by nginx before any request.
        unsafe { &*::core::ptr::addr_of!(ngx_http_robotgate_module) }
    }

    unsafe extern "C" fn postconfiguration(cf: *mut ngx_conf_t) -> ngx_int_t {
        // SAFETY: nginx calls this with a valid configuration.
        let cf = unsafe { &mut *cf };
        let Some(cmcf) = NgxHttpCoreModule::main_conf_mut(cf) else { return Status::NGX_ERROR.into() };
        let phase = &mut cmcf.phases[ngx_http_phases_NGX_HTTP_REWRITE_PHASE as usize].handlers;
        // SAFETY: an nginx array of handler pointers, pushed as nginx's own modules do.
        let h = unsafe { ngx_array_push(phase) } as *mut ngx_http_handler_pt;
        if h.is_null() {
            return Status::NGX_ERROR.into();
        }
        // SAFETY: `h` points at the slot just pushed.
        unsafe { *h = Some(robotgate_handler) };
        Status::NGX_OK.into()
    }
}

/// `http { robotgate_config FILE; }`: the snapshot every worker decides with.
struct MainConf {
    /// The snapshot the master read; each worker keeps its own from there
    /// ([`worker::current`]).
    snapshot: Option<Arc<Snapshot>>,
    /// The file `robotgate_config` named.
    config: PathBuf,
    /// The violation log, nginx's open file (`log.violations` when it is a file).
    violations: *mut ngx_open_file_t,
    /// What the zone's `init` needs.
    pending: zone::Pending,
    /// The shared zone, once nginx has mapped it.
    shared: Option<zone::Shared>,
    /// The name servers of reverse DNS checks (`verify.dns`); none: no check.
    resolver: dns::Resolver,
}

impl Default for MainConf {
    fn default() -> MainConf {
        MainConf {
            snapshot: None,
            config: PathBuf::new(),
            violations: std::ptr::null_mut(),
            pending: zone::Pending { max_clients: 0, shared: std::ptr::null_mut() },
            shared: None,
            resolver: dns::Resolver::default(),
        }
    }
}

/// `robotgate on|off;` in http, server or location.
#[derive(Debug, Default)]
struct LocConf {
    enable: Option<bool>,
}

// SAFETY: the configuration types are the ones the module context creates.
unsafe impl HttpModuleMainConf for Module {
    type MainConf = MainConf;
}
// SAFETY: as above.
unsafe impl HttpModuleLocationConf for Module {
    type LocationConf = LocConf;
}

impl http::Merge for LocConf {
    fn merge(&mut self, prev: &LocConf) -> Result<(), MergeConfigError> {
        if self.enable.is_none() {
            self.enable = prev.enable;
        }
        Ok(())
    }
}

static mut COMMANDS: [ngx_command_t; 4] = [
    ngx_command_t {
        name: ngx_string!("robotgate_config"),
        type_: (NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1) as ngx_uint_t,
        set: Some(set_config),
        conf: NGX_HTTP_MAIN_CONF_OFFSET,
        offset: 0,
        post: std::ptr::null_mut(),
    },
    ngx_command_t {
        name: ngx_string!("robotgate"),
        type_: (NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1) as ngx_uint_t,
        set: Some(set_enable),
        conf: NGX_HTTP_LOC_CONF_OFFSET,
        offset: 0,
        post: std::ptr::null_mut(),
    },
    ngx_command_t {
        name: ngx_string!("robotgate_metrics"),
        type_: (NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS) as ngx_uint_t,
        set: Some(set_metrics),
        conf: NGX_HTTP_LOC_CONF_OFFSET,
        offset: 0,
        post: std::ptr::null_mut(),
    },
    ngx_command_t::empty(),
];

static MODULE_CTX: ngx_http_module_t = ngx_http_module_t {
    preconfiguration: Some(Module::preconfiguration),
    postconfiguration: Some(Module::postconfiguration),
    create_main_conf: Some(Module::create_main_conf),
    init_main_conf: Some(Module::init_main_conf),
    create_srv_conf: None,
    merge_srv_conf: None,
    create_loc_conf: Some(Module::create_loc_conf),
    merge_loc_conf: Some(Module::merge_loc_conf),
};

// Not in the unit tests' build (`cargo test -p robotgate-nginx --lib`): an
// executable cannot leave nginx's symbols to nginx, and nothing the tests
// run reaches them once the module's roots are out.
#[cfg(not(test))]
ngx::ngx_modules!(ngx_http_robotgate_module);

/// The module nginx loads.
#[cfg_attr(not(test), used)]
#[allow(non_upper_case_globals)]
pub static mut ngx_http_robotgate_module: ngx_module_t = ngx_module_t {
    ctx: std::ptr::addr_of!(MODULE_CTX) as _,
    // SAFETY: a pointer to the static table above, read by nginx only.
    commands: unsafe { &COMMANDS[0] as *const _ as *mut _ },
    type_: NGX_HTTP_MODULE as _,
    init_process: Some(init_process),
    exit_process: Some(exit_process),
    ..ngx_module_t::default()
};

/// The module's static, as nginx filled it in (its context index).
fn module() -> &'static ngx_module_t {
    <Module as HttpModule>::module()
}

// The rewrite phase's handler: each request decided ([`driver`]).
http_request_handler!(robotgate_handler, |request: &mut http::Request| driver::handle(request));

/// A worker's start: its folding of the
/// violation log, the timer that closes its windows, the crowd check's
/// timer, and its store threads when the config names a store
/// (`state.redis`).
extern "C" fn init_process(cycle: *mut ngx_cycle_t) -> ngx_int_t {
    // The worker's memo and tables, made now rather than amid the first
    // request: below the heap's top, not between nginx's request pools.
    WORKER.with(|_| ());
    // SAFETY: nginx passes its cycle.
    let Some(main) = Module::main_conf(unsafe { &*cycle }) else { return Status::NGX_OK.into() };
    let Some(snap) = main.snapshot.as_ref() else { return Status::NGX_OK.into() };
    // SAFETY: nginx's cycle, alive as long as this worker.
    let log = unsafe { (*cycle).log };
    if !main.violations.is_null() {
        let fold = &snap.settings.boot.violation_log;
        log::start(main.violations, fold.aggregate_window.as_millis() as u64, fold.aggregate_max_keys);
        // SAFETY: once, in this worker, on nginx's thread.
        unsafe { log::start_timer(log) };
    }
    if let (Some(settings), Some(shared)) = (&snap.settings.boot.shared_state, main.shared.as_ref()) {
        // SAFETY: the zone's handles live in the main configuration, as long
        // as the cycle; the store's threads are joined at the worker's exit,
        // before nginx frees it.
        let zone = unsafe {
            store::Zone { state: &*std::ptr::from_ref(&shared.state), series: &*std::ptr::from_ref(&shared.series) }
        };
        let started = park::waker(log).ok_or_else(|| "no free connection for the store's wake-ups".to_owned());
        match started.and_then(|waker| store::Store::start(settings, zone, waker)) {
            Ok(s) => STORE.with_borrow_mut(|store| *store = Some(s)),
            Err(why) => {
                ngx_log_error!(NGX_LOG_ERR, log, "robotgate: state.redis not used by this worker: {}", why);
            }
        }
    }
    if let Some(shared) = main.shared.as_ref() {
        // SAFETY: once, in this worker, on nginx's thread; the zone is
        // mapped as long as the worker.
        unsafe { crowd::start(log, shared.crowd) };
    }
    // Changes noticed and rebuilt off the request path.
    // The first worker counts the reloads (every worker makes its own).
    // SAFETY: nginx's global, set before `init_process`.
    let first = unsafe { ngx::ffi::ngx_worker } == 0;
    // SAFETY: the zone's series live in the main configuration, as long
    // as the worker.
    let counts = main.shared.as_ref().filter(|_| first).map(|s| unsafe { &*std::ptr::from_ref(&s.series) });
    if let Err(why) = reload::start(log, main.config.clone(), snap.clone(), (install, counts), first) {
        ngx_log_error!(NGX_LOG_ERR, log, "robotgate: edits are in force only after `nginx -s reload`: {}", why);
    }
    Status::NGX_OK.into()
}

/// A worker's exit: what it folded is written, and its helper threads end.
extern "C" fn exit_process(_cycle: *mut ngx_cycle_t) {
    log::drain();
    reload::stop();
    if let Some(store) = STORE.with_borrow_mut(Option::take) {
        store.stop();
    }
    dns::stop();
    park::stop();
}
