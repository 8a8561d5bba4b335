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
//! What it does today, and what it does not yet (docs/nginx-module.md):
//!
//! * `/robots.txt` and `/humans.txt` are answered from the snapshot (the
//!   site's files with robotgate's managed and trap lines);
//! * every other request is decided; refusals are the action's status and
//!   body (or its file, or its redirect), a limit is 429 with `Retry-After`,
//!   a `noindex` pass gets `X-Robots-Tag`, and the site's `Content-Usage`
//!   is added to what nginx serves;
//! * the client address is nginx's own, after its realip module;
//! * rates, bans and robots.txt reads are shared by every worker, in a
//!   shared-memory zone ([`zone`]), as `limit_req_zone` shares its counters;
//! * violation records go to the configured file as nginx's own logs do,
//!   reopened on `nginx -s reopen` ([`log`]);
//! * `robotgate_metrics;` in a location serves the proxy's counters, counted
//!   by every worker, as Prometheus text;
//! * a robots.txt (or any source) edit is in force without `nginx -s
//!   reload`: each worker watches the files with inotify on its loop and
//!   rebuilds off the request path ([`reload`]); a request never looks;
//! * with `state.redis`, rates, bans and robots.txt reads are shared with
//!   other nginx and `robotgate serve` instances through the same keys as
//!   the proxy's ([`store`]); a request whose rate question goes there is
//!   parked meanwhile, not nginx's loop ([`park`]).
//!
//! * a robot that only reverse DNS can confirm is looked up with nginx's
//!   own resolver, on its event loop, the request parked meanwhile ([`dns`]).
//!
//! Not yet: Web Bot Auth key directories (a signed request is judged by
//! its other evidence).
//!
//! The decision runs in the rewrite phase: a handler that answers the
//! request itself (robots.txt, a refusal with a body) must end it, which the
//! rewrite phase does with the handler's result; the access phase reads a
//! result of `NGX_OK` as "allowed, go on". nginx's realip module has set the
//! client address by then (post-read phase).

mod answer;
mod conn;
mod dns;
mod log;
mod once;
mod park;
mod reload;
mod store;
mod watch;
mod zone;

use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use answer::Answer;
// Where dns.rs finds it.
use answer::ngx_str;
use ngx::core::Status;
use ngx::ffi::{
    ngx_array_push, ngx_command_t, ngx_conf_t, ngx_cycle_t, ngx_http_handler_pt, ngx_http_module_t,
    ngx_http_phases_NGX_HTTP_REWRITE_PHASE, ngx_int_t, ngx_module_t, ngx_open_file_t, ngx_str_t, ngx_uint_t,
    NGX_CONF_NOARGS, NGX_CONF_TAKE1, NGX_HTTP_LOC_CONF, NGX_HTTP_LOC_CONF_OFFSET, NGX_HTTP_MAIN_CONF,
    NGX_HTTP_MAIN_CONF_OFFSET, NGX_HTTP_MODULE, NGX_HTTP_SRV_CONF, NGX_LOG_EMERG, NGX_LOG_ERR, NGX_LOG_NOTICE,
    NGX_LOG_WARN,
};
use ngx::http::{self, HttpModule, HttpModuleLocationConf, HttpModuleMainConf, MergeConfigError, NgxHttpCoreModule};
use ngx::{http_request_handler, ngx_conf_log_error, ngx_log_error, ngx_string};

use robotgate::agent::{Category, Memo};
use robotgate::load::Snapshot;
use robotgate::pipeline::answer::{Counts, Plan};
use robotgate::pipeline::{Env, Header, Headers, Need, Next, Peer, Pipeline, Request, SiteView, Verdict};
use robotgate::policy::{Clock, Decision, Outcome, Rates};
use robotgate::state::series::{Counter, Series};

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
    /// ([`current`]).
    snapshot: Option<Arc<Snapshot>>,
    /// The file `robotgate_config` named.
    config: PathBuf,
    /// The violation log, nginx's open file (`log.violations` when it is a file).
    violations: *mut ngx_open_file_t,
    /// What the zone's `init` needs.
    pending: zone::Pending,
    /// The shared zone, once nginx has mapped it.
    shared: Option<zone::Shared>,
    /// The resolver of reverse DNS checks (`verify.dns`); null: none.
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
            resolver: dns::Resolver(std::ptr::null_mut()),
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

ngx::ngx_modules!(ngx_http_robotgate_module);

/// The module nginx loads.
#[used]
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

/// The directive's one argument, as text.
///
/// # Safety
/// `cf` is the configuration nginx passes a directive handler.
unsafe fn argument<'a>(cf: *mut ngx_conf_t) -> Option<&'a str> {
    // SAFETY: a directive taking one argument has two words.
    let args: &[ngx_str_t] = unsafe { (*(*cf).args).as_slice() };
    args.get(1)?.to_str().ok()
}

extern "C" fn set_config(cf: *mut ngx_conf_t, _cmd: *mut ngx_command_t, conf: *mut c_void) -> *mut c_char {
    // SAFETY: nginx passes this directive's main configuration.
    let conf = unsafe { &mut *(conf as *mut MainConf) };
    // SAFETY: `cf` is this directive's.
    let Some(path) = (unsafe { argument(cf) }) else {
        ngx_conf_log_error!(NGX_LOG_EMERG, cf, "robotgate_config: the path is not UTF-8");
        return ngx::core::NGX_CONF_ERROR;
    };
    // No helper threads in nginx's processes (see the function's notes).
    robotgate::load::file::read_on_this_thread();
    let snapshot = match robotgate::load::load(std::path::Path::new(path)) {
        Ok(snapshot) => snapshot,
        Err(problems) => {
            // What `robotgate config check` says: file, line, why.
            for problem in problems {
                ngx_conf_log_error!(NGX_LOG_EMERG, cf, "robotgate: {}", problem);
            }
            return ngx::core::NGX_CONF_ERROR;
        }
    };
    if let robotgate::config::LogTarget::File(file) = &snapshot.settings.boot.violations {
        // nginx's own open file: opened by the master, reopened on `nginx -s reopen`.
        let name = file.to_string_lossy();
        // SAFETY: `cf` is this directive's; the name is copied into the
        // cycle's pool, as nginx keeps it, with the NUL nginx opens it by.
        let open = unsafe {
            match ngx_str((*cf).pool, &format!("{name}\0")) {
                Some(mut name) => {
                    name.len -= 1;
                    ngx::ffi::ngx_conf_open_file((*cf).cycle, &mut name)
                }
                None => std::ptr::null_mut(),
            }
        };
        if open.is_null() {
            ngx_conf_log_error!(NGX_LOG_EMERG, cf, "robotgate: cannot open {}", name);
            return ngx::core::NGX_CONF_ERROR;
        }
        conf.violations = open;
    }
    if let Some(state) = &snapshot.settings.boot.shared_state {
        // The workers' store threads connect later; a URL they cannot use
        // fails `nginx -t` now.
        if let Err(e) = robotgate::state::wire::Endpoint::parse(&state.url) {
            ngx_conf_log_error!(NGX_LOG_EMERG, cf, "robotgate: {}: state.redis {}: {}", path, state.redacted_url(), e);
            return ngx::core::NGX_CONF_ERROR;
        }
    }
    // SAFETY: `cf` is this directive's.
    match unsafe { dns::resolver(cf, &snapshot.settings.boot.dns) } {
        Ok(r) => conf.resolver = r,
        Err(why) => {
            ngx_conf_log_error!(
                NGX_LOG_WARN,
                cf,
                "robotgate: {}: {}: robots that only reverse DNS can confirm are judged unverifiable",
                path,
                why
            );
        }
    }
    // The keys nginx's own directives do the job of (`robotgate config check --host nginx`).
    let ignored = robotgate::config::Host::Nginx.ignored(&snapshot.settings, snapshot.sites.iter().map(|s| &s.conf));
    if !ignored.is_empty() {
        ngx_conf_log_error!(NGX_LOG_NOTICE, cf, "robotgate: {}: ignored inside nginx ({})", path, ignored.join("; "));
    }
    conf.pending.max_clients = snapshot.settings.boot.max_clients;
    conf.pending.shared = &raw mut conf.shared;
    // SAFETY: `cf` is this directive's; `pending` lives in the main configuration, as long as the cycle.
    if let Err(why) =
        unsafe { zone::add(cf, &raw mut conf.pending, (&raw mut ngx_http_robotgate_module).cast::<c_void>()) }
    {
        ngx_conf_log_error!(NGX_LOG_EMERG, cf, "robotgate: {}", why);
        return ngx::core::NGX_CONF_ERROR;
    }
    conf.snapshot = Some(Arc::new(snapshot));
    conf.config = PathBuf::from(path);
    ngx::core::NGX_CONF_OK
}

extern "C" fn set_metrics(cf: *mut ngx_conf_t, _cmd: *mut ngx_command_t, _conf: *mut c_void) -> *mut c_char {
    // SAFETY: nginx passes the configuration being read.
    let Some(clcf) = NgxHttpCoreModule::location_conf_mut(unsafe { &*cf }) else {
        return ngx::core::NGX_CONF_ERROR;
    };
    clcf.handler = Some(metrics_handler);
    ngx::core::NGX_CONF_OK
}

http_request_handler!(metrics_handler, |request: &mut http::Request| {
    let Some(main) = Module::main_conf(request) else { return Status::NGX_DECLINED };
    let Some(shared) = main.shared.as_ref() else {
        return answer::send(
            request,
            404,
            "text/plain",
            b"robotgate_metrics: no robotgate_config in this http block\n",
        );
    };
    let mut text = String::new();
    shared.series.render(&mut text);
    answer::send(request, 200, "text/plain; version=0.0.4; charset=utf-8", text.as_bytes())
});

/// A worker's start: its name in the zone's locks, its folding of the
/// violation log, the timer that closes its windows, and its store threads
/// when the config names a store (`state.redis`).
extern "C" fn init_process(cycle: *mut ngx_cycle_t) -> ngx_int_t {
    // The zone's locks name this worker, not the master it was forked from.
    robotgate::state::memory::process_started();
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
    // Changes noticed and rebuilt off the request path.
    if let Err(why) = reload::start(log, main.config.clone(), snap.clone(), install) {
        ngx_log_error!(NGX_LOG_ERR, log, "robotgate: edits are in force only after `nginx -s reload`: {}", why);
    }
    Status::NGX_OK.into()
}

thread_local! {
    /// This worker's shared store (`state.redis`), if any.
    static STORE: RefCell<Option<store::Store>> = const { RefCell::new(None) };
}

extern "C" fn set_enable(cf: *mut ngx_conf_t, _cmd: *mut ngx_command_t, conf: *mut c_void) -> *mut c_char {
    // SAFETY: nginx passes this directive's location configuration.
    let conf = unsafe { &mut *(conf as *mut LocConf) };
    // SAFETY: `cf` is this directive's.
    match unsafe { argument(cf) } {
        Some(v) if v.eq_ignore_ascii_case("on") => conf.enable = Some(true),
        Some(v) if v.eq_ignore_ascii_case("off") => conf.enable = Some(false),
        _ => {
            ngx_conf_log_error!(NGX_LOG_EMERG, cf, "robotgate: `on` or `off`");
            return ngx::core::NGX_CONF_ERROR;
        }
    }
    ngx::core::NGX_CONF_OK
}

/// What a worker keeps between requests, on nginx's thread: one
/// thread-local, borrowed once per request (each thread-local costs a
/// lookup through the dynamic loader in a module).
struct Worker {
    /// The snapshot it decides with ([`current`]), replaced by a reload
    /// off the request path ([`reload`], [`install`]).
    live: Option<Arc<Snapshot>>,
    /// What it found for the last requests.
    hot: Hot,
    /// Its classifications, by User-Agent.
    memo: Memo,
    /// The record each refusal is written into ([`record`]).
    scratch: Scratch,
}

/// The record [`record`] writes each refusal into, and the time text of
/// the last millisecond it wrote (the refusals of one turn of nginx's loop
/// share nginx's cached time: formatted once).
#[derive(Default)]
struct Scratch {
    record: robotgate::record::Record,
    time: (u64, String),
}

/// Slots of a worker's [`Memo`]: the distinct User-Agents a busy site sees
/// at once (each costs a classification when it returns after being
/// pushed out), for about 150 KiB.
const MEMO_SLOTS: usize = 512;

thread_local! {
    static WORKER: RefCell<Worker> = RefCell::new(Worker {
        live: None,
        hot: Hot { snap: None, host: None, counters: Vec::new(), requests: Vec::new() },
        memo: Memo::new(MEMO_SLOTS),
        scratch: Scratch::default(),
    });
}

/// What this worker found for the last requests, kept for the next ones
/// while the snapshot is the same: the site of the last `Host`, and the
/// counters it counted into (finding a series hashes its name and labels;
/// each request would otherwise pay that).
struct Hot {
    /// The snapshot these were found in (held, so its address is not reused).
    snap: Option<Arc<Snapshot>>,
    /// The last `Host` looked up, and its site.
    host: Option<(Vec<u8>, Option<usize>)>,
    /// Counters by their family and label values, keyed by where those
    /// strings are (each is static, or the held snapshot's), in
    /// [`COUNTER_SLOTS`] direct-mapped slots: a collision only finds again.
    counters: Vec<Option<(CounterKey, Option<Counter>)>>,
    /// `robotgate_requests_total` by site and category (every decided
    /// request counts there): `site * CATEGORIES + category`.
    requests: Vec<Option<Counter>>,
}

/// Categories of [`Hot::requests`].
const CATEGORIES: usize = Category::ALL.len();

/// A family and up to six label values, as (address, length) words.
type CounterKey = [usize; 13];

/// Slots of [`Hot::counters`].
const COUNTER_SLOTS: usize = 64;

/// A `Host` longer than this is looked up every time.
const HOT_HOST_MAX: usize = 255;

impl Hot {
    /// Forget what was found in another snapshot.
    fn for_snapshot(&mut self, snap: &Arc<Snapshot>) {
        if !self.snap.as_ref().is_some_and(|s| Arc::ptr_eq(s, snap)) {
            *self = Hot { snap: Some(snap.clone()), host: None, counters: Vec::new(), requests: Vec::new() };
        }
    }
}

/// The site of `host` in `snap` ([`robotgate::config::Settings::site_for_host`]),
/// found once per host and snapshot by each worker.
fn site_of(hot: &mut Hot, snap: &Arc<Snapshot>, host: &str) -> Option<usize> {
    hot.for_snapshot(snap);
    match &hot.host {
        Some((last, site)) if last == host.as_bytes() => *site,
        _ => {
            let site = snap.settings.site_for_host(host);
            if host.len() <= HOT_HOST_MAX {
                hot.host = Some((host.as_bytes().to_vec(), site));
            }
            site
        }
    }
}

/// Count one in `name{labels=values}`, where every value is a static string
/// or the snapshot's (a site's name, a robot's, [`Decision::tally`]'s): where
/// they are names the series, and a repeat finds its counter without
/// hashing the text. `hot`: the worker's, for the snapshot the values are
/// of ([`Hot::for_snapshot`]).
fn count(hot: &mut Hot, series: &Series, name: &'static str, labels: &[&str], values: &[&str]) {
    let mut key: CounterKey = [0; 13];
    if values.len() > 6 {
        return series.add(name, labels, values, 1);
    }
    key[0] = name.as_ptr() as usize;
    for (i, v) in values.iter().enumerate() {
        key[1 + 2 * i] = v.as_ptr() as usize;
        key[2 + 2 * i] = v.len();
    }
    let slot = key.iter().fold(0usize, |h, &w| (h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 58;
    if hot.counters.is_empty() {
        hot.counters.resize(COUNTER_SLOTS, None);
    }
    let entry = &mut hot.counters[slot % COUNTER_SLOTS];
    let counter = match entry {
        Some((k, c)) if *k == key => *c,
        _ => {
            let c = series.counter(name, labels, values);
            *entry = Some((key, c));
            c
        }
    };
    match counter {
        Some(c) => c.add(1),
        None => series.add(name, labels, values, 1),
    }
}

/// Count one decided request of `category` at site `at` (its name `site`):
/// the one count every request makes, found by index.
fn count_request(hot: &mut Hot, series: &Series, (at, site): (usize, &str), category: Category) {
    let i = at * CATEGORIES + category as usize;
    if hot.requests.len() <= i {
        hot.requests.resize(i + 1, None);
    }
    let counter = match hot.requests[i] {
        Some(c) => Some(c),
        None => {
            let c = series.counter("robotgate_requests_total", &["site", "category"], &[site, category.as_str()]);
            hot.requests[i] = c;
            c
        }
    };
    match counter {
        Some(c) => c.add(1),
        None => series.add("robotgate_requests_total", &["site", "category"], &[site, category.as_str()], 1),
    }
}

/// The snapshot to decide with: the master's, or the newer one a reload
/// put in force ([`install`]). Nothing else: no file is looked at, read or
/// built on the request path ([`reload`]).
fn current<'w>(main: &MainConf, live: &'w mut Option<Arc<Snapshot>>) -> Option<&'w Arc<Snapshot>> {
    let master = main.snapshot.as_ref()?;
    Some(live.get_or_insert_with(|| master.clone()))
}

/// Put a reloaded snapshot in force in this worker (on nginx's thread,
/// between requests); what it replaced is given back, to be freed off
/// nginx's thread. `None`: the worker's state is in use (never between
/// requests).
fn install(new: Arc<Snapshot>) -> Option<Vec<Arc<Snapshot>>> {
    WORKER.with(|worker| {
        let mut worker = worker.try_borrow_mut().ok()?;
        let mut old: Vec<Arc<Snapshot>> = worker.live.replace(new).into_iter().collect();
        // What was found in the old snapshot goes with it.
        old.extend(worker.hot.snap.take());
        worker.hot = Hot { snap: None, host: None, counters: Vec::new(), requests: Vec::new() };
        Some(old)
    })
}

/// A request's headers, as the pipeline reads them: the ones it asks for
/// found in one pass over nginx's list.
struct Fields<'r> {
    request: &'r http::Request,
    /// The `User-Agent` fields (two are one too many: the pipeline refuses them).
    user_agents: [Option<&'r [u8]>; 2],
    /// `Signature-Input` is present.
    signed: bool,
}

impl<'r> Fields<'r> {
    fn of(request: &'r http::Request) -> Fields<'r> {
        let mut f = Fields { request, user_agents: [None, None], signed: false };
        for (k, v) in request.headers_in_iterator() {
            let k = k.as_bytes();
            if k.eq_ignore_ascii_case(b"user-agent") {
                let slot = if f.user_agents[0].is_none() { 0 } else { 1 };
                f.user_agents[slot] = Some(v.as_bytes());
            } else if k.eq_ignore_ascii_case(b"signature-input") {
                f.signed = true;
            }
        }
        f
    }
}

impl<'r> Headers<'r> for Fields<'r> {
    fn each(&self, header: Header, each: &mut dyn FnMut(&'r [u8])) {
        match header {
            Header::UserAgent => self.user_agents.iter().flatten().for_each(|v| each(v)),
            Header::SignatureInput if self.signed => {
                for (k, v) in self.request.headers_in_iterator() {
                    if k.as_bytes().eq_ignore_ascii_case(b"signature-input") {
                        each(v.as_bytes());
                    }
                }
            }
            // The client address is nginx's (realip): the pipeline reads no
            // forwarding header here.
            _ => {}
        }
    }

    fn has(&self, header: Header) -> bool {
        match header {
            Header::UserAgent => self.user_agents[0].is_some(),
            Header::SignatureInput => self.signed,
            _ => false,
        }
    }

    fn text(&self, each: &mut dyn FnMut(&'r str, &'r str)) {
        for (k, v) in self.request.headers_in_iterator() {
            if let (Ok(k), Ok(v)) = (k.to_str(), v.to_str()) {
                each(k, v);
            }
        }
    }
}

/// The client address as nginx has it (after its realip module).
fn client_of(request: &http::Request) -> Option<IpAddr> {
    use ngx::ffi::{sockaddr_in, sockaddr_in6, AF_INET, AF_INET6};
    // SAFETY: a request's connection outlives the request.
    let c = unsafe { &*request.connection() };
    if c.sockaddr.is_null() {
        return None;
    }
    // The address itself, not its text: nginx's (after realip), read as
    // the family says, `socklen` bytes.
    // SAFETY: `sockaddr` points at `socklen` bytes of nginx's peer address.
    let family = u32::from(unsafe { (*c.sockaddr).sa_family });
    let len = c.socklen as usize;
    match family {
        AF_INET if len >= std::mem::size_of::<sockaddr_in>() => {
            // SAFETY: an AF_INET address of a sockaddr_in's size.
            let sin = unsafe { &*(c.sockaddr as *const sockaddr_in) };
            Some(IpAddr::from(sin.sin_addr.s_addr.to_ne_bytes()))
        }
        AF_INET6 if len >= std::mem::size_of::<sockaddr_in6>() => {
            // SAFETY: an AF_INET6 address of a sockaddr_in6's size.
            let sin6 = unsafe { &*(c.sockaddr as *const sockaddr_in6) };
            // SAFETY: every view of the union is the same 16 bytes.
            Some(IpAddr::from(unsafe { sin6.sin6_addr.__in6_u.__u6_addr8 }))
        }
        // A Unix socket: no client address.
        _ => None,
    }
}

/// The `Host` the request names, as nginx accepted it (nginx lets through
/// bytes robotgate's host reading refuses, `x@y` or `a{b}`; the core sends
/// those to the default site, [`robotgate::config::Settings::site_for_host`]).
/// Bytes that are not UTF-8 read as a name no site has (`?`), never as
/// "no host", which would be another reading.
fn host_of(request: &http::Request) -> &str {
    let server = request.as_ref().headers_in.server;
    if server.data.is_null() {
        return "";
    }
    // SAFETY: nginx's text of the host, `len` bytes, alive with the request.
    let bytes = unsafe { std::slice::from_raw_parts(server.data, server.len) };
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8 (the usual host, checked a word at a time).
        return unsafe { std::str::from_utf8_unchecked(bytes) };
    }
    std::str::from_utf8(bytes).unwrap_or("?")
}

http_request_handler!(robotgate_handler, |request: &mut http::Request| {
    let on = Module::location_conf(request).and_then(|c| c.enable).unwrap_or(false);
    if !on || !request.is_main() {
        return Status::NGX_DECLINED;
    }
    // Parked, and its phases run by a write event before the answer came.
    let waited = park::waited(request);
    if waited.waiting {
        return Status::NGX_DONE;
    }
    // Where the request is, for parking it (its context slot and its main
    // request's count: nothing the borrows below read).
    let raw: *mut ngx::ffi::ngx_http_request_t = std::ptr::from_mut(request).cast();
    // Redirected inside nginx (index, try_files, error_page...) after a
    // first pass decided it: that decision stands, counted once ([`once`]).
    // SAFETY: this request, on nginx's thread.
    if unsafe { once::decided(raw) } {
        return Status::NGX_DECLINED;
    }
    let Some(main) = Module::main_conf(request) else { return Status::NGX_DECLINED };
    let Some(shared) = main.shared.as_ref() else { return Status::NGX_DECLINED };
    WORKER.with(|worker| {
        // Nothing this borrow reaches runs a request handler: it is never
        // taken twice. Were it, the request is refused, not let through.
        let Ok(mut worker) = worker.try_borrow_mut() else {
            return Status(ngx::ffi::NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t);
        };
        let Worker { live, hot, memo, scratch } = &mut *worker;
        let Some(snap) = current(main, live) else { return Status::NGX_DECLINED };
        let host = host_of(request);
        // No site has the host nginx accepted, and none is the default: the
        // proxy's 421, never a pass undecided.
        let Some(site) = site_of(hot, snap, host) else {
            // SAFETY: this request, on nginx's thread.
            unsafe { once::mark(raw) };
            return answer::write(request, &Plan::no_site());
        };
        let logging = !main.violations.is_null();
        let answer =
            decide((request, raw), host, (snap, site), (shared, main.resolver), (hot, memo, scratch), logging, waited);
        if !matches!(answer, Answer::Parked) {
            // SAFETY: this request, on nginx's thread.
            unsafe { once::mark(raw) };
        }
        match answer {
            Answer::Pass { headers } => {
                for (name, value) in headers {
                    request.add_header_out(name, &value);
                }
                Status::NGX_DECLINED
            }
            Answer::Plan(plan) => answer::write(request, &plan),
            Answer::Parked => Status::NGX_DONE,
        }
    })
});

/// Decide `request` through the pipeline, and say how to answer it.
/// `raw`: where it is, to park it. `waited`: what helpers answered it so
/// far (a resumed request). `hot`, `memo`, `scratch`: the worker's.
fn decide<'s>(
    (request, raw): (&http::Request, *mut ngx::ffi::ngx_http_request_t),
    host: &str,
    (snap, site): (&'s Arc<Snapshot>, usize),
    (shared, resolver): (&zone::Shared, dns::Resolver),
    (hot, memo, scratch): (&mut Hot, &mut Memo, &mut Scratch),
    logging: bool,
    waited: park::Wait,
) -> Answer<'s> {
    let live = &snap.sites[site];
    let method = request.method();
    let uri = request.unparsed_uri().as_bytes();
    let req = Request {
        method: method.as_str(),
        target: uri,
        host,
        https: false,
        peer: Peer::Logged(client_of(request)),
        headers: Fields::of(request),
    };
    let view = SiteView { rules: live.rules(), target: &live.conf.target };
    // A rate question goes to the shared store only while it answers (or
    // when this request was answered by it already).
    let store_up = waited.rate.is_some()
        || (snap.settings.boot.shared_state.is_some()
            && STORE.with_borrow(|s| s.as_ref().is_some_and(store::Store::is_up)));
    let rates = if store_up { Rates::Shared } else { Rates::Local };
    let mut p = Pipeline::new(Env::of(snap), view, &req, None, rates, Clock::System);
    let verdict = loop {
        match p.run(Some(&mut *memo), &shared.state, Clock::System) {
            Next::Done(v) => break v,
            Next::Need(need) => {
                if find_out(&mut p, need, raw, snap, (shared, resolver), waited) {
                    return Answer::Parked;
                }
            }
        }
    };
    let events = p.take_events();
    if !events.is_empty() {
        announce(events);
    }
    let decision = match verdict {
        Verdict::Refuse(status, why) => return Answer::Plan(Plan::refuse(status, &why)),
        Verdict::Decided(d) => d,
    };
    // The site's indexing rules, beside whatever X-Robots-Tag the content adds.
    let rules = &live.conf.indexing.rules;
    let indexing = match p.facts().target.as_deref() {
        Some(target) if !rules.is_empty() => rules.header_values(target),
        _ => Vec::new(),
    };
    let books =
        Books { request, snap, at: site, shared, logging, client: p.facts().client, user_agent: p.facts().user_agent };
    count_and_record(&books, &decision, hot, scratch);
    let signature = p.asks_for_signature(&decision);
    answer::answer(request, live, &decision, signature, p.facts().content_usage.as_deref(), indexing)
}

/// Answer what the pipeline asked (`need`), from what helpers answered
/// (`waited`) or by asking them; `true` when the request is parked for it.
/// Out of the usual path (few requests ask anything): kept out of line, so
/// the code every request runs stays compact.
#[cold]
#[inline(never)]
fn find_out<'s: 'r, 'r>(
    p: &mut Pipeline<'s, 'r>,
    need: Need,
    raw: *mut ngx::ffi::ngx_http_request_t,
    snap: &Snapshot,
    (shared, resolver): (&zone::Shared, dns::Resolver),
    waited: park::Wait,
) -> bool {
    match need {
        Need::Dns { bot, client } => match waited.dns {
            Some((b, identity)) if b == bot => p.answer_dns(bot, identity),
            _ => {
                let entry = snap.classifier.bot(bot);
                let claim = dns::Claim { bot, name: &entry.name, suffixes: &entry.rdns, ip: client };
                // SAFETY: the zone's counters live in the main
                // configuration, as long as the cycle and its lookups.
                let series = unsafe { &*std::ptr::from_ref(&shared.series) };
                match dns::look_up(raw, resolver, &claim, snap.settings.boot.dns.timeout, series) {
                    dns::Start::Known(identity) => p.answer_dns(bot, identity),
                    dns::Start::Parked => return true,
                }
            }
        },
        Need::Store(question) => match waited.rate {
            Some(answer) => p.answer_store(answer),
            None => {
                // Only robots whose group sets a pace get here: park the
                // request until the store answers (within
                // `state.timeout_ms`), or ask the zone.
                let parked = STORE.with_borrow(|s| {
                    let s = s.as_ref().filter(|s| s.takes_questions())?;
                    let ticket = park::park(raw)?;
                    if s.ask(question, ticket) {
                        return Some(());
                    }
                    park::unpark(ticket);
                    None
                });
                match parked {
                    Some(()) => return true,
                    None => p.answer_store(None),
                }
            }
        },
        Need::KeyDirectory(_) => p.answer_signature(None),
    }
    false
}

/// Tell the other instances (through the store) of the bans and robots.txt
/// reads a decision made.
#[cold]
#[inline(never)]
fn announce(events: Vec<robotgate::state::shared::Event>) {
    STORE.with_borrow(|s| {
        if let Some(s) = s {
            events.into_iter().for_each(|e| s.announce(e));
        }
    });
}

/// What counting a decision and recording it read.
struct Books<'a> {
    request: &'a http::Request,
    snap: &'a Arc<Snapshot>,
    /// The site's index.
    at: usize,
    shared: &'a zone::Shared,
    /// A violation log is configured.
    logging: bool,
    /// The client.
    client: Option<IpAddr>,
    /// Its User-Agent.
    user_agent: &'a [u8],
}

/// Count the decision in the shared series, as the proxy counts it, and
/// offer its violation record to the log.
fn count_and_record(b: &Books<'_>, d: &Decision<'_, '_>, hot: &mut Hot, scratch: &mut Scratch) {
    let (shared, at) = (b.shared, b.at);
    let live = &b.snap.sites[at];
    let site = live.conf.name.as_str();
    // The core's one list ([`Counts`]); a site file counts only when it was
    // loaded, and so answered.
    let served = match d.outcome {
        Outcome::File(which) => robotgate::pipeline::answer::site_file(live, which).is_some(),
        _ => false,
    };
    let counts = Counts::of(d, served);
    if let Some(result) = counts.preference {
        count(hot, &shared.series, "robotgate_preferences_total", &["site", "result"], &[site, result]);
    }
    if let Some(file) = counts.file {
        count(hot, &shared.series, "robotgate_files_served_total", &["site", "file"], &[site, file.as_str()]);
    }
    let Some(category) = counts.request else { return };
    count_request(hot, &shared.series, (at, site), category);
    if counts.record {
        record(b, d, hot, scratch);
    }
}

/// The record of a decision that has one, folded into the log, and its
/// tally counted. Out of line: a browser's pass never comes here, and the
/// code it runs stays compact.
#[inline(never)]
fn record(b: &Books<'_>, d: &Decision<'_, '_>, hot: &mut Hot, scratch: &mut Scratch) {
    let (request, shared) = (b.request, b.shared);
    let live = &b.snap.sites[b.at];
    let site = live.conf.name.as_str();
    let (client, ua) = (b.client, b.user_agent);
    let method = request.method();
    let requested = robotgate::policy::Requested {
        site,
        // Written into the record below, in its own buffer.
        client: "",
        method: method.as_str(),
        path: &text(request.unparsed_uri().as_bytes()),
        host: host_of(request),
        user_agent: &text(ua),
        robots_hash: live.robots.as_ref().map_or("", |r| r.hash.as_str()),
        lines: live.robots.as_ref().map_or(robotgate::robots::LineMap::nothing_added(), |r| &r.lines),
    };
    // One record per worker, written over for each refusal: a repeat is
    // folded into the one its window keeps, and neither allocates once
    // their strings are long enough.
    let r = &mut scratch.record;
    if !d.record_into(&requested, r) {
        return;
    }
    match client {
        Some(ip) => robotgate::net::write_ip_text(&mut r.client, ip),
        None => r.client.clear(),
    }
    if let Some(tally) = d.tally(site, r) {
        let (name, labels) = tally.family();
        count(hot, &shared.series, name, labels, tally.values());
    }
    if b.logging {
        let now = log::now_ms();
        let (at, text) = &mut scratch.time;
        if *at != now || text.is_empty() {
            robotgate::time::write_rfc3339_ms(text, now);
            *at = now;
        }
        r.time.clone_from(text);
        r.status = d.outcome.enforcement().status().unwrap_or(0);
        log::offer(r, now);
    }
}

/// `bytes` as text: borrowed when they are UTF-8 (the usual case, without
/// the replacement scan's cost), else with U+FFFD for each bad sequence.
fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8 (the usual path and User-Agent, checked a
        // word at a time).
        return std::borrow::Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// A worker's exit: what it folded is written, and its helper threads end.
extern "C" fn exit_process(_cycle: *mut ngx_cycle_t) {
    log::drain();
    reload::stop();
    if let Some(store) = STORE.with_borrow_mut(Option::take) {
        store.stop();
    }
    park::stop();
}
