//! The event hooks Envoy calls (`envoy_dynamic_module_on_*`), as Envoy
//! 1.40's HTTP filter resolves them when it loads a filter configuration:
//! every hook it requires is exported, those the module has no use for
//! doing nothing. A panic never crosses into Envoy: a request whose
//! decision panicked is refused (500), never passed undecided.

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use robotgate::identity::Identity;
use robotgate::metric;
use robotgate::pipeline::answer::{Body, Plan};
use robotgate::state::State;

use crate::abi::{self, EnvoyBuffer, EnvoyHeader, FilterEnvoyPtr, ModuleBuffer, ModuleHeader, ModulePtr, Status};
use robotgate_embed::decide::decide;
use robotgate_embed::park::{start_keys, start_rate, Waited};

use crate::decide::{address_of, families, line, Answer, Count, Fields, OWN_ENTRIES};
use crate::park::{Lookup, Scheduler};
use crate::{Level, Module, CROWD_WARNING};

/// A message in Envoy's log, under its `dynamic_modules` logger.
fn log(level: abi::LogLevel, message: &str) {
    // SAFETY: Envoy's callback; the message is copied before it returns.
    unsafe { abi::envoy_dynamic_module_callback_log(level, ModuleBuffer::of(message.as_bytes())) }
}

/// What a key directory fetch could not have (from its helper thread).
fn note(why: String) {
    log(abi::LOG_INFO, &format!("robotgate: {why}"));
}

/// [`log`] at a [`Level`] of the module's.
fn log_at(level: Level, message: &str) {
    let level = match level {
        Level::Info => abi::LOG_INFO,
        Level::Warn => abi::LOG_WARN,
        Level::Error => abi::LOG_ERROR,
    };
    log(level, message);
}

/// One filter configuration of Envoy's: the module it shares with every
/// other configuration naming the same robotgate.yaml ([`shared`]), and the
/// ids of its counters in Envoy's stats (defined for each configuration).
struct Config {
    module: Arc<Module>,
    counters: Vec<(&'static str, usize)>,
    /// The filter is the module's scrape ([`scrape`]), not a decision.
    metrics: bool,
}

/// Every robotgate.yaml loaded in the process, by path: what a filter
/// configuration naming one that is loaded shares.
static LOADED: Mutex<Vec<(PathBuf, Weak<Module>)>> = Mutex::new(Vec::new());

/// The module of robotgate.yaml at `path`: the one loaded in the process,
/// if a filter configuration still holds it, else loaded now. Two
/// listeners (plain and TLS, say) naming one file decide with one state
/// (a robot's pace, a trap's ban, robots.txt reads), and a listener Envoy
/// updates (LDS) keeps it: Envoy makes the new configuration before it
/// drops the old. A file whose settings a running module cannot change
/// (`state:`, the violation log, `limits.max_clients`, DNS) has changed
/// since it was loaded: loaded afresh, its state new.
fn shared(path: &Path) -> Result<Arc<Module>, Vec<String>> {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let mut loaded = LOADED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    loaded.retain(|(_, m)| m.strong_count() > 0);
    if let Some(module) = loaded.iter().find(|(p, _)| *p == key).and_then(|(_, m)| m.upgrade()) {
        let changed = module.restart_only();
        if changed.is_empty() {
            return Ok(module);
        }
        log(
            abi::LOG_INFO,
            &format!(
                "robotgate: {} loaded afresh ({} changed since it was loaded)",
                path.display(),
                changed.join(", ")
            ),
        );
    }
    let module = Arc::new(Module::load(path, log_at, CROWD_WARNING)?);
    for problem in &module.current().refused {
        log(abi::LOG_WARN, &format!("robotgate: site file refused, the other sites are served: {problem}"));
    }
    log(abi::LOG_INFO, &format!("robotgate: {} loaded", path.display()));
    loaded.retain(|(p, _)| *p != key);
    loaded.push((key, Arc::downgrade(&module)));
    Ok(module)
}

/// One stream's filter: what a pass adds to the origin's answer, and the
/// lookup it is parked for.
struct Filter {
    config: *const Config,
    pass: Option<(Vec<String>, Option<String>)>,
    parked: Option<Arc<Lookup>>,
}

/// Where a request stands after a pass of the decision.
enum Step {
    /// Answered (a local reply sent).
    Answered,
    /// On to the origin.
    Pass,
    /// Parked for a lookup ([`crate::park`]).
    Parked,
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_program_init() -> *const c_char {
    crate::ABI_VERSION.as_ptr().cast()
}

/// A filter configuration: robotgate.yaml at the path `config` names.
/// Null (Envoy refuses its configuration) when it does not load.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_new(
    config_envoy: abi::ConfigEnvoyPtr,
    _name: EnvoyBuffer,
    config: EnvoyBuffer,
) -> ModulePtr {
    let loaded = catch_unwind(|| {
        // SAFETY: Envoy's buffer, valid during this hook.
        let bytes = unsafe { config.bytes() };
        let given = match crate::config::read(bytes) {
            Ok(given) => given,
            Err(problem) => {
                log(abi::LOG_ERROR, &format!("robotgate: {problem}"));
                return std::ptr::null();
            }
        };
        match shared(&given.path) {
            Ok(module) => {
                // A scrape counts nothing.
                let counters = if given.metrics { Vec::new() } else { define_counters(config_envoy) };
                Box::into_raw(Box::new(Config { module, counters, metrics: given.metrics })) as ModulePtr
            }
            Err(problems) => {
                for problem in problems {
                    log(abi::LOG_ERROR, &format!("robotgate: {problem}"));
                }
                std::ptr::null()
            }
        }
    });
    loaded.unwrap_or(std::ptr::null())
}

/// The proxy's counters ([`families`]) in Envoy's stats: what Envoy's
/// admin `/stats/prometheus` serves. A family Envoy does not define is not
/// counted, said once.
fn define_counters(config: abi::ConfigEnvoyPtr) -> Vec<(&'static str, usize)> {
    let mut out = Vec::new();
    for (name, labels) in families() {
        let labels: Vec<ModuleBuffer> = labels.iter().map(|l| ModuleBuffer::of(l.as_bytes())).collect();
        let mut id = 0;
        // SAFETY: Envoy's callback, in `config_new`; it copies the names.
        let result = unsafe {
            abi::envoy_dynamic_module_callback_http_filter_config_define_counter(
                config,
                ModuleBuffer::of(name.as_bytes()),
                labels.as_ptr(),
                labels.len(),
                &mut id,
            )
        };
        if result == abi::METRICS_SUCCESS {
            out.push((name, id));
        } else {
            log(abi::LOG_WARN, &format!("robotgate: {name} is not counted (Envoy's answer {result})"));
        }
    }
    out
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_destroy(config: ModulePtr) {
    if !config.is_null() {
        // SAFETY: made by `config_new`, destroyed once, after its filters.
        drop(unsafe { Box::from_raw(config as *mut Config) });
    }
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_new(config: ModulePtr, _filter: FilterEnvoyPtr) -> ModulePtr {
    Box::into_raw(Box::new(Filter { config: config.cast(), pass: None, parked: None })) as ModulePtr
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_destroy(filter: ModulePtr) {
    // SAFETY: made by `filter_new`, destroyed once.
    drop(unsafe { Box::from_raw(filter as *mut Filter) });
}

/// The request's headers: decided here.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_request_headers(
    envoy: FilterEnvoyPtr,
    filter: ModulePtr,
    _end_of_stream: bool,
) -> Status {
    // SAFETY: made by `filter_new`, used by this stream's thread only.
    let filter = unsafe { &mut *(filter as *mut Filter) };
    match run(envoy, filter, None) {
        Step::Pass => abi::CONTINUE,
        Step::Answered | Step::Parked => abi::STOP,
    }
}

/// A parked request's lookup answered: decided again with the answer, on
/// the stream's worker thread.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_scheduled(envoy: FilterEnvoyPtr, filter: ModulePtr, _event: u64) {
    // SAFETY: made by `filter_new`, used by this stream's thread only.
    let filter = unsafe { &mut *(filter as *mut Filter) };
    let Some(lookup) = filter.parked.take() else { return };
    let waited = lookup.waited();
    drop(lookup);
    match run(envoy, filter, Some(waited)) {
        // SAFETY: Envoy's callback, on this stream's thread, its request
        // headers stopped by the module.
        Step::Pass => unsafe { abi::envoy_dynamic_module_callback_http_filter_continue_decoding(envoy) },
        Step::Answered | Step::Parked => {}
    }
}

/// Decide the stream's request (again, with `waited`: the answer of the
/// lookup it was parked for), never letting a panic through: a decision
/// that panics is refused.
fn run(envoy: FilterEnvoyPtr, filter: &mut Filter, waited: Option<Waited>) -> Step {
    match catch_unwind(AssertUnwindSafe(|| request_headers(envoy, filter, waited))) {
        Ok(step) => step,
        Err(_) => {
            log(abi::LOG_ERROR, "robotgate: deciding a request panicked; it is refused");
            send(envoy, &Plan::refuse(500, "Internal Server Error"));
            Step::Answered
        }
    }
}

fn request_headers(envoy: FilterEnvoyPtr, filter: &mut Filter, waited: Option<Waited>) -> Step {
    // SAFETY: the configuration outlives its filters (Envoy holds it for them).
    let config = unsafe { &*filter.config };
    let module = &*config.module;
    // Every header in one crossing (Envoy bounds their count:
    // `max_request_headers_count`).
    // SAFETY: Envoy's callbacks on this stream, during its hook.
    let n = unsafe { abi::envoy_dynamic_module_callback_http_get_headers_size(envoy, abi::REQUEST_HEADER) };
    let empty = EnvoyHeader { key_ptr: std::ptr::null(), key_length: 0, value_ptr: std::ptr::null(), value_length: 0 };
    let mut raw = vec![empty; n];
    // SAFETY: room for `n` headers, as Envoy asks.
    if n > 0
        && !unsafe { abi::envoy_dynamic_module_callback_http_get_headers(envoy, abi::REQUEST_HEADER, raw.as_mut_ptr()) }
    {
        send(envoy, &Plan::refuse(400, "Bad Request: the request's headers could not be read"));
        return Step::Answered;
    }
    let all: Vec<(&[u8], &[u8])> = raw
        .iter()
        .map(|h| {
            // SAFETY: Envoy's buffers, valid until this hook returns (nothing
            // below sets a request header).
            unsafe {
                (
                    EnvoyBuffer { ptr: h.key_ptr, length: h.key_length }.bytes(),
                    EnvoyBuffer { ptr: h.value_ptr, length: h.value_length }.bytes(),
                )
            }
        })
        .collect();
    if config.metrics {
        send(envoy, &scrape(module, &all));
        return Step::Answered;
    }
    let started = Instant::now();
    let mut source = EnvoyBuffer::NULL;
    // SAFETY: as above.
    let client = if unsafe {
        abi::envoy_dynamic_module_callback_http_filter_get_attribute_string(envoy, abi::SOURCE_ADDRESS, &mut source)
    } {
        // SAFETY: Envoy's buffer, valid during this hook.
        address_of(unsafe { source.bytes() })
    } else {
        None
    };
    let snap = module.current();
    let count = |family: &'static str, values: &[&str]| {
        if family == metric::DECISION_SECONDS.name {
            // Not Envoy's: its histograms are not the proxy's buckets.
            module.metrics.observe(started);
            return;
        }
        let Some(&(_, id)) = config.counters.iter().find(|(name, _)| *name == family) else { return };
        let values: Vec<ModuleBuffer> = values.iter().map(|v| ModuleBuffer::of(v.as_bytes())).collect();
        // SAFETY: Envoy's callback on this stream; it copies the values.
        unsafe {
            abi::envoy_dynamic_module_callback_http_filter_increment_counter(
                envoy,
                id,
                values.as_ptr(),
                values.len(),
                1,
            )
        };
    };
    let books = (&*module.state as &dyn State, &*module.crowd, module.violations.as_deref(), &count as Count<'_>);
    let fields = Fields { all: &all };
    let store = module.store();
    let helpers = (&*module.dns, &*module.directories, store.as_deref(), waited);
    match decide(&snap, books, helpers, (line(&fields), &fields, OWN_ENTRIES), client) {
        Answer::Plan(plan) => {
            send(envoy, &plan);
            Step::Answered
        }
        Answer::Pass { robots_tags, content_usage } => {
            if !robots_tags.is_empty() || content_usage.is_some() {
                filter.pass = Some((robots_tags, content_usage));
            }
            Step::Pass
        }
        // SAFETY: this stream's filter, on its thread, in its hook.
        Answer::Lookup { bot, client, suffixes } => {
            match unsafe { Scheduler::of(envoy) }.and_then(|wake| module.dns.start(wake, bot, client, suffixes)) {
                Some(lookup) => {
                    filter.parked = Some(lookup);
                    Step::Parked
                }
                // No helper: judged now, unverifiable (as when the lookup fails).
                None => request_headers(envoy, filter, Some(Waited::Dns(bot, Identity::Unverifiable))),
            }
        }
        // SAFETY: as above.
        Answer::Ask { question } => {
            let started = unsafe { Scheduler::of(envoy) }
                .and_then(|wake| store.as_deref().and_then(|s| start_rate(s, wake, question)));
            match started {
                Some(lookup) => {
                    filter.parked = Some(lookup);
                    Step::Parked
                }
                // The store takes no question now: the process's tables answer.
                None => request_headers(envoy, filter, Some(Waited::Rate(None))),
            }
        }
        // SAFETY: as above.
        Answer::Fetch { agents, limits } => match unsafe { Scheduler::of(envoy) } {
            Some(wake) => match start_keys(&module.directories, wake, agents, limits, note) {
                Some(lookup) => {
                    filter.parked = Some(lookup);
                    Step::Parked
                }
                // No helper: judged now, the directories unavailable.
                None => request_headers(envoy, filter, Some(Waited::Keys)),
            },
            None => {
                module.directories.give_back();
                request_headers(envoy, filter, Some(Waited::Keys))
            }
        },
    }
}

/// Answer the stream with `plan`: Envoy's local reply (which adds
/// `Content-Length`, and sends no body to a HEAD).
fn send(envoy: FilterEnvoyPtr, plan: &Plan<'_>) {
    let mut headers = Vec::with_capacity(plan.headers.len() + 1);
    headers.push(ModuleHeader::of(b"content-type", plan.content_type.as_bytes()));
    headers.extend(plan.headers.iter().map(|(k, v)| ModuleHeader::of(k.as_bytes(), v.as_bytes())));
    // SAFETY: Envoy's callback; it copies the headers and body before it returns.
    unsafe {
        abi::envoy_dynamic_module_callback_http_send_response(
            envoy,
            u32::from(plan.status),
            headers.as_ptr(),
            headers.len(),
            ModuleBuffer::of(plan.body.bytes()),
            ModuleBuffer::of(b"robotgate"),
        );
    }
}

/// The module's scrape, for a request to a filter of `"serve": "metrics"`:
/// at `/metrics`, what Envoy's own stats do not hold, as Prometheus text
/// (`robotgate_decision_seconds`, the reloads and their failures,
/// `robotgate_state_errors_total`, `robotgate_one_client_warning`,
/// `robotgate_robots_info`, `robotgate_feed_age_seconds`); the decisions'
/// counters are in Envoy's stats (its admin's `/stats/prometheus`).
fn scrape(module: &Module, all: &[(&[u8], &[u8])]) -> Plan<'static> {
    let path = all.iter().find(|(k, _)| *k == b":path").map_or(&b""[..], |(_, v)| v);
    let path = path.split(|&b| b == b'?').next().unwrap_or(b"");
    if path != b"/metrics" {
        return Plan::refuse(404, "Not Found: the metrics are at /metrics");
    }
    let mut plan = Plan::refuse(200, "");
    plan.content_type = "text/plain; version=0.0.4; charset=utf-8";
    plan.body = Body::Text(module.metrics.render(&module.current(), &module.crowd).into());
    plan
}

/// The origin's answer: a pass adds the site's `X-Robots-Tag`s, and its
/// `Content-Usage` unless the origin set one.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_response_headers(
    envoy: FilterEnvoyPtr,
    filter: ModulePtr,
    _end_of_stream: bool,
) -> Status {
    // SAFETY: made by `filter_new`, used by this stream's thread only.
    let filter = unsafe { &mut *(filter as *mut Filter) };
    let Some((robots_tags, content_usage)) = filter.pass.take() else { return abi::CONTINUE };
    let add = |name: &[u8], value: &str| {
        // SAFETY: Envoy's callback; it copies name and value.
        unsafe {
            abi::envoy_dynamic_module_callback_http_add_header(
                envoy,
                abi::RESPONSE_HEADER,
                ModuleBuffer::of(name),
                ModuleBuffer::of(value.as_bytes()),
            )
        };
    };
    for tag in &robots_tags {
        add(b"x-robots-tag", tag);
    }
    if let Some(usage) = content_usage {
        let mut found = EnvoyBuffer::NULL;
        // SAFETY: Envoy's callback, during this hook.
        let set = unsafe {
            abi::envoy_dynamic_module_callback_http_get_header(
                envoy,
                abi::RESPONSE_HEADER,
                ModuleBuffer::of(b"content-usage"),
                &mut found,
                0,
                std::ptr::null_mut(),
            )
        };
        if !set {
            add(b"content-usage", &usage);
        }
    }
    abi::CONTINUE
}

/// A request's body while it is parked waits (buffered, within Envoy's
/// buffer limit): a `Continue` would let the stopped headers go on
/// undecided. Otherwise it goes on.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_request_body(
    _: FilterEnvoyPtr,
    filter: ModulePtr,
    _: bool,
) -> Status {
    // SAFETY: made by `filter_new`, used by this stream's thread only.
    if unsafe { &*(filter as *const Filter) }.parked.is_some() {
        abi::STOP
    } else {
        abi::CONTINUE
    }
}

/// As for the body: trailers wait while the request is parked.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_request_trailers(_: FilterEnvoyPtr, filter: ModulePtr) -> Status {
    // SAFETY: as above.
    if unsafe { &*(filter as *const Filter) }.parked.is_some() {
        abi::STOP
    } else {
        abi::CONTINUE
    }
}

// The hooks Envoy requires of an HTTP filter that the module has no use
// for: the response's body and trailers go on, and it starts no callout
// or stream.

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_response_body(
    _: FilterEnvoyPtr,
    _: ModulePtr,
    _: bool,
) -> Status {
    abi::CONTINUE
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_response_trailers(_: FilterEnvoyPtr, _: ModulePtr) -> Status {
    abi::CONTINUE
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_stream_complete(_: FilterEnvoyPtr, _: ModulePtr) {}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_callout_done(
    _: FilterEnvoyPtr,
    _: ModulePtr,
    _callout: u64,
    _result: u32,
    _headers: *const EnvoyHeader,
    _headers_len: usize,
    _body: *const EnvoyBuffer,
    _body_len: usize,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_headers(
    _: FilterEnvoyPtr,
    _: ModulePtr,
    _stream: u64,
    _headers: *const EnvoyHeader,
    _headers_len: usize,
    _end_stream: bool,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_data(
    _: FilterEnvoyPtr,
    _: ModulePtr,
    _stream: u64,
    _data: *const EnvoyBuffer,
    _data_len: usize,
    _end_stream: bool,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_trailers(
    _: FilterEnvoyPtr,
    _: ModulePtr,
    _stream: u64,
    _trailers: *const EnvoyHeader,
    _trailers_len: usize,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_complete(
    _: FilterEnvoyPtr,
    _: ModulePtr,
    _stream: u64,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_reset(
    _: FilterEnvoyPtr,
    _: ModulePtr,
    _stream: u64,
    _reason: u32,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark(
    _: FilterEnvoyPtr,
    _: ModulePtr,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark(
    _: FilterEnvoyPtr,
    _: ModulePtr,
) {
}
