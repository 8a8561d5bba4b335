//! What the module answers, as the core plans it ([`robotgate::pipeline::answer`]):
//! a pass adds its headers to what nginx serves; an answer robotgate gives
//! itself is the [`Plan`], written here. Nothing here words a body or picks
//! a header.

use ngx::core::{Buffer, Status};
use ngx::ffi::{ngx_chain_t, ngx_str_t};
use ngx::http;

use robotgate::load::LiveSite;
use robotgate::pipeline::answer::{pass_headers, Conditional, Plan};
use robotgate::policy::{Decision, Enforcement};

/// What to answer, detached from the decision's borrows.
pub(crate) enum Answer<'s> {
    /// Let nginx go on, adding these headers to its response.
    Pass { headers: Vec<(&'static str, String)> },
    /// Answer with this plan.
    Plan(Plan<'s>),
    /// Parked until a helper answers ([`crate::park`]): the phases run again then.
    Parked,
}

/// The answer `d` gets. `pass`: what a pass adds to nginx's response (the
/// site's `Content-Usage` and indexing rules' `X-Robots-Tag`s), used only
/// when it passes; `signature`: a refusal asks for one.
#[inline(never)]
pub(crate) fn answer<'s>(
    request: &http::Request,
    live: &'s LiveSite,
    d: &Decision<'s, '_>,
    signature: bool,
    content_usage: Option<&str>,
    indexing: Vec<String>,
) -> Answer<'s> {
    let enforcement = d.outcome.enforcement();
    let has = match enforcement {
        Enforcement::File(_) => conditional(request),
        _ => Conditional::default(),
    };
    if let Some(plan) = Plan::of(enforcement, live, signature, has) {
        return Answer::Plan(plan);
    }
    let noindex = match enforcement {
        Enforcement::Pass { noindex } => noindex,
        _ => None,
    };
    let mut headers = Vec::new();
    if let Some(usage) = content_usage {
        headers.push(("Content-Usage", usage.to_owned()));
    }
    headers.extend(pass_headers(noindex, indexing).map(|v| ("X-Robots-Tag", v.into_owned())));
    Answer::Pass { headers }
}

/// What a conditional request says it has (only a site file asks).
#[cold]
fn conditional(request: &http::Request) -> Conditional<'_> {
    let mut has = Conditional::default();
    for (k, v) in request.headers_in_iterator() {
        let k = k.as_bytes();
        if k.eq_ignore_ascii_case(b"if-none-match") {
            has.if_none_match = Some(v.as_bytes());
        } else if k.eq_ignore_ascii_case(b"if-modified-since") {
            has.if_modified_since = Some(v.as_bytes());
        }
    }
    has
}

/// Write `plan`: its status, headers and body (none for HEAD or a 304).
#[inline(never)]
pub(crate) fn write(request: &mut http::Request, plan: &Plan<'_>) -> Status {
    for (name, value) in &plan.headers {
        if request.add_header_out(name, value).is_none() {
            return Status::NGX_ERROR;
        }
    }
    send(request, plan.status, plan.content_type, plan.body.bytes())
}

/// Send a whole response of `body`.
#[inline(never)]
pub(crate) fn send(request: &mut http::Request, status: u16, content_type: &str, body: &[u8]) -> Status {
    let Ok(code) = http::HTTPStatus::from_u16(status) else { return Status::NGX_ERROR };
    request.set_status(code);
    request.set_content_length_n(body.len());
    let r = request.as_mut();
    if let Some(ct) = ngx_str(r.pool, content_type) {
        r.headers_out.content_type = ct;
        r.headers_out.content_type_len = content_type.len();
    }
    let rc = request.send_header();
    if rc == Status::NGX_ERROR || rc.0 > Status::NGX_OK.0 || request.header_only() || body.is_empty() {
        return rc;
    }
    let pool = request.pool();
    let Some(mut buf) = pool.create_buffer(body.len()) else { return Status::NGX_ERROR };
    // SAFETY: a fresh buffer of `body.len()` bytes.
    unsafe {
        let b = buf.as_ngx_buf_mut();
        std::ptr::copy_nonoverlapping(body.as_ptr(), (*b).pos, body.len());
        (*b).last = (*b).pos.add(body.len());
    }
    buf.set_last_buf(true);
    buf.set_last_in_chain(true);
    let mut out = ngx_chain_t { buf: buf.as_ngx_buf_mut(), next: std::ptr::null_mut() };
    request.output_filter(&mut out)
}

/// `text` copied into nginx's pool.
pub(crate) fn ngx_str(pool: *mut ngx::ffi::ngx_pool_t, text: &str) -> Option<ngx_str_t> {
    // SAFETY: nginx's pool allocator; the copy lives as long as the request.
    let data = unsafe { ngx::ffi::ngx_pnalloc(pool, text.len()) } as *mut u8;
    if data.is_null() {
        return None;
    }
    // SAFETY: `data` holds `text.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), data, text.len()) };
    Some(ngx_str_t { len: text.len(), data })
}
