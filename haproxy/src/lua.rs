//! The module's Lua side: `luaopen_robotgate` (mlua's module mode), its
//! `load` function and the methods of what it returns. Lua's symbols are
//! HAProxy's (it links liblua5.3); a Lua error raised here never unwinds
//! through Rust frames (mlua runs the callbacks protected), and a panic in
//! a decision is a 500, never a request passed undecided.
//!
//! ```lua
//! local robotgate = require("robotgate")
//! local gate = robotgate.load("/etc/robotgate/robotgate.yaml")
//! -- nothing (pass), or "pass", {x-robots-tag…} or nil, content-usage or nil,
//! -- or status, {name, value, …}, body, or "wait", ticket
//! local a, b, c = gate:decide(src, method, pathq, hdrs_bin, ssl_fc[, ticket])
//! local text = gate:metrics() -- Prometheus text
//! ```

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mlua::{AnyUserData, IntoLuaMulti, Lua, LuaString, MultiValue, Result, Table, UserData, UserDataMethods};

use robotgate::identity::Identity;
use robotgate::pipeline::answer::Plan;
use robotgate_embed::park::{start_keys, start_rate, Lookup, Polled, Waited};
use robotgate_embed::{Level, Module};

use robotgate_embed::decide::Answer;

use crate::{body_of, request, Facts, CROWD_WARNING};

/// Forks since the module was loaded into the process (a child handler of
/// `pthread_atfork` counts them): HAProxy's master-worker mode reads
/// `lua-load` files in the master, then forks the worker, where the
/// module's reload thread must be started again.
static FORKS: AtomicUsize = AtomicUsize::new(0);

extern "C" {
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> std::ffi::c_int;
}

extern "C" fn forked() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// One robotgate.yaml loaded: shared by every Lua state of the process
/// (`lua-load-per-thread` loads the file once per thread).
struct Loaded {
    module: Module,
    /// [`FORKS`] when its reload thread was started.
    watching: AtomicUsize,
}

impl Loaded {
    /// The module, its reload thread started again if the process forked
    /// since (once, by whichever thread sees it first).
    fn module(&self) -> &Module {
        let now = FORKS.load(Ordering::Relaxed);
        let was = self.watching.load(Ordering::Relaxed);
        if now != was && self.watching.compare_exchange(was, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            self.module.watch_again();
        }
        &self.module
    }
}

/// Every robotgate.yaml loaded in the process, by path.
static LOADED: Mutex<Vec<(PathBuf, Arc<Loaded>)>> = Mutex::new(Vec::new());

/// What the reload thread says: on HAProxy's stderr (its log when it runs
/// in the foreground, the journal under systemd). HAProxy's own log
/// functions are its Lua states', which only their threads may call.
fn log(level: Level, message: &str) {
    let level = match level {
        Level::Info => "info",
        Level::Warn => "warning",
        Level::Error => "error",
    };
    eprintln!("[{level}] {message}");
}

/// robotgate.yaml at `path`: the one already loaded in the process, or
/// loaded now.
fn load(path: &Path) -> std::result::Result<Arc<Loaded>, Vec<String>> {
    let mut loaded = LOADED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, l)) = loaded.iter().find(|(p, _)| p == path) {
        return Ok(l.clone());
    }
    let module = Module::load(path, log, CROWD_WARNING)?;
    for problem in &module.current().refused {
        log(Level::Warn, &format!("robotgate: site file refused, the other sites are served: {problem}"));
    }
    log(Level::Info, &format!("robotgate: {} loaded", path.display()));
    if loaded.is_empty() {
        // SAFETY: registers a handler that only counts; the module is
        // never unloaded (HAProxy's Lua closes no C library).
        unsafe { pthread_atfork(None, None, Some(forked)) };
    }
    let l = Arc::new(Loaded { module, watching: AtomicUsize::new(FORKS.load(Ordering::Relaxed)) });
    loaded.push((path.to_owned(), l.clone()));
    Ok(l)
}

/// `robotgate.load(path)`'s value.
struct Gate(Arc<Loaded>);

/// A parked request's lookup (`"wait", ticket`): `ticket:ready()`.
struct Ticket(Arc<Lookup<Polled>>);

impl UserData for Ticket {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("ready", |_, t, ()| Ok(t.0.ready()));
    }
}

impl UserData for Gate {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("decide", decide);
        // The proxy's metrics, as Prometheus text (robotgate.lua's
        // `robotgate-metrics` service).
        methods.add_method("metrics", |lua, gate, ()| {
            let module = gate.0.module();
            lua.create_string(module.metrics.render(&module.current(), &module.crowd))
        });
    }
}

type Args = (Option<LuaString>, LuaString, LuaString, Option<LuaString>, bool, Option<AnyUserData>);

/// `gate:decide(src, method, pathq, hdrs_bin, ssl_fc[, ticket])`.
fn decide(lua: &Lua, gate: &Gate, (src, method, pathq, headers, https, ticket): Args) -> Result<MultiValue> {
    let mut waited = match &ticket {
        Some(t) => Some(t.borrow::<Ticket>()?.0.waited()),
        None => None,
    };
    let (src, method, pathq) = (src.as_ref().map(LuaString::as_bytes), method.as_bytes(), pathq.as_bytes());
    let headers = headers.as_ref().map(LuaString::as_bytes);
    let facts = Facts {
        src: src.as_deref(),
        method: &method,
        pathq: &pathq,
        headers: headers.as_deref().unwrap_or(b""),
        https,
    };
    let module = gate.0.module();
    let snap = module.current();
    // A lookup with no helper to run it is judged at once, as failed: the
    // request is decided again (three times at most: one claim, one
    // signature, one pace).
    for _ in 0..4 {
        let step = match catch_unwind(AssertUnwindSafe(|| request(module, &snap, &facts, waited))) {
            Ok(step) => step,
            Err(_) => return panicked(lua, &method),
        };
        match step {
            Answer::Pass { robots_tags, content_usage } if robots_tags.is_empty() && content_usage.is_none() => {
                return Ok(MultiValue::new())
            }
            Answer::Pass { robots_tags, content_usage } => {
                let tags = lua.create_sequence_from(robots_tags)?;
                return ("pass", tags, content_usage).into_lua_multi(lua);
            }
            Answer::Plan(plan) => return answer(lua, &plan, &method),
            Answer::Lookup { bot, client, suffixes } => match module.dns.start(Polled, bot, client, suffixes) {
                Some(lookup) => return ("wait", Ticket(lookup)).into_lua_multi(lua),
                None => waited = Some(Waited::Dns(bot, Identity::Unverifiable)),
            },
            Answer::Fetch { agents, limits } => match start_keys(&module.directories, Polled, agents, limits, note) {
                Some(lookup) => return ("wait", Ticket(lookup)).into_lua_multi(lua),
                None => waited = Some(Waited::Keys),
            },
            Answer::Ask { question } => match module.store().and_then(|s| start_rate(&s, Polled, question)) {
                Some(lookup) => return ("wait", Ticket(lookup)).into_lua_multi(lua),
                None => waited = Some(Waited::Rate(None)),
            },
        }
    }
    panicked(lua, &method)
}

/// What a key directory fetch could not have (from its helper thread).
fn note(why: String) {
    log(Level::Info, &format!("robotgate: {why}"));
}

/// A decision that panicked (or never came to an end): refused.
fn panicked(lua: &Lua, method: &[u8]) -> Result<MultiValue> {
    log(Level::Error, "robotgate: deciding a request panicked; it is refused");
    answer(lua, &Plan::refuse(500, "Internal Server Error"), method)
}

/// `status, {name, value, …}, body` of `plan` (`Content-Type` first).
fn answer(lua: &Lua, plan: &Plan<'_>, method: &[u8]) -> Result<MultiValue> {
    let headers: Table = lua.create_table_with_capacity(2 + 2 * plan.headers.len(), 0)?;
    headers.raw_push("content-type")?;
    headers.raw_push(plan.content_type)?;
    for (name, value) in &plan.headers {
        headers.raw_push(*name)?;
        headers.raw_push(value.as_ref())?;
    }
    let body = lua.create_string(body_of(plan, method))?;
    (plan.status, headers, body).into_lua_multi(lua)
}

/// `require "robotgate"`: the module's table, `{ load = function(path) }`.
#[mlua::lua_module]
fn robotgate(lua: &Lua) -> Result<Table> {
    let exports = lua.create_table()?;
    exports.set(
        "load",
        lua.create_function(|_, path: String| match load(Path::new(path.trim())) {
            Ok(loaded) => Ok(Gate(loaded)),
            Err(problems) => Err(mlua::Error::runtime(format!("robotgate: {path}: {}", problems.join("; ")))),
        })?,
    )?;
    exports.set("version", env!("CARGO_PKG_VERSION"))?;
    Ok(exports)
}
