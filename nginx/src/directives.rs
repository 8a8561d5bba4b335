//! The module's directives: `robotgate_config`, `robotgate`, `robotgate_metrics`.

use std::ffi::{c_char, c_void};
use std::path::PathBuf;
use std::sync::Arc;

use ngx::core::Status;
use ngx::ffi::{ngx_command_t, ngx_conf_t, ngx_str_t, NGX_LOG_EMERG, NGX_LOG_ERR, NGX_LOG_NOTICE, NGX_LOG_WARN};
use ngx::http::{self, HttpModuleLocationConf, HttpModuleMainConf, NgxHttpCoreModule};
use ngx::{http_request_handler, ngx_conf_log_error};

use robotgate::load::file::Reader;

use crate::answer::{self, ngx_str};
use crate::{dns, ngx_http_robotgate_module, zone, LocConf, MainConf, Module};

/// The directive's one argument, as text.
///
/// # Safety
/// `cf` is the configuration nginx passes a directive handler.
pub(crate) unsafe fn argument<'a>(cf: *mut ngx_conf_t) -> Option<&'a str> {
    // SAFETY: a directive taking one argument has two words.
    let args: &[ngx_str_t] = unsafe { (*(*cf).args).as_slice() };
    args.get(1)?.to_str().ok()
}

pub(crate) extern "C" fn set_config(cf: *mut ngx_conf_t, _cmd: *mut ngx_command_t, conf: *mut c_void) -> *mut c_char {
    // SAFETY: nginx passes this directive's main configuration.
    let conf = unsafe { &mut *(conf as *mut MainConf) };
    // SAFETY: `cf` is this directive's.
    let Some(path) = (unsafe { argument(cf) }) else {
        ngx_conf_log_error!(NGX_LOG_EMERG, cf, "robotgate_config: the path is not UTF-8");
        return ngx::core::NGX_CONF_ERROR;
    };
    // Loaded on this thread alone: no thread in nginx's master, nor so in
    // the workers it forks ([`Reader::Alone`]).
    let (config, whole) = (std::path::Path::new(path), std::collections::HashSet::new());
    let snapshot = match robotgate::load::reload_whole(config, None, &whole, Reader::Alone) {
        Ok(snapshot) => snapshot,
        Err(problems) => {
            // What `robotgate config check` says: file, line, why.
            for problem in problems {
                ngx_conf_log_error!(NGX_LOG_EMERG, cf, "robotgate: {}", problem);
            }
            return ngx::core::NGX_CONF_ERROR;
        }
    };
    // A file of `sites_dir` is refused alone: the other sites are served,
    // and the operator learns which file and why, as `robotgate serve` says.
    for problem in &snapshot.refused {
        ngx_conf_log_error!(NGX_LOG_ERR, cf, "robotgate: site file refused, the other sites are served: {}", problem);
    }
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
    let ignored = robotgate::config::Host::Nginx.ignored(&snapshot.settings, snapshot.sites.iter().map(|s| &*s.conf));
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

pub(crate) extern "C" fn set_metrics(cf: *mut ngx_conf_t, _cmd: *mut ngx_command_t, _conf: *mut c_void) -> *mut c_char {
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
    let text = crate::scrape::render(main, shared);
    answer::send(request, 200, "text/plain; version=0.0.4; charset=utf-8", text.as_bytes())
});

pub(crate) extern "C" fn set_enable(cf: *mut ngx_conf_t, _cmd: *mut ngx_command_t, conf: *mut c_void) -> *mut c_char {
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
