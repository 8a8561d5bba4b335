//! Replays every input kept under `fuzz/regressions/<target>/` through the
//! same checks the fuzz targets run (`fuzz/checks.rs`), so a crash found by
//! fuzzing, once fixed, stays fixed in `cargo test`.
//!
//! Also replays a few hand-made hostile inputs per target, so the checks
//! themselves are exercised even while the directories hold no crash.

#[path = "../fuzz/checks.rs"]
mod checks;

use std::path::Path;

fn replay(target: &str, check: fn(&[u8]), extra: &[&[u8]]) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions").join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|f| f.to_string_lossy().starts_with('.')) {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        println!("{target}: {}", path.display());
        check(&data);
        n += 1;
    }
    for data in extra {
        check(data);
        n += 1;
    }
    n
}

#[test]
fn parse_robots_inputs() {
    let stars = "Disallow: /*".repeat(2000);
    let n = replay(
        "parse_robots",
        checks::parse_robots,
        &[b"", b"\xef\xbb\xbf\r\r\n\x00", b"User-agent: *\nDisallow: /$$$$*$\x00/x$", stars.as_bytes()],
    );
    assert!(n >= 4);
}

#[test]
fn robots_body_inputs() {
    let n = replay(
        "robots_body",
        checks::robots_body,
        &[
            b"",
            b"\xef\xbb\xbf \r\n<!DOCTYPE html>",
            b"\xff\xfe\x00\x00",
            b"\xfe\xff",
            b"<htm",
            b"User-agent: *\nDisallow: /\x00",
            b"\t\n<HTML",
        ],
    );
    assert!(n >= 7);
}

#[test]
fn match_path_inputs() {
    let n = replay(
        "match_path",
        checks::match_path,
        &[b"User-agent: a\nAllow: /%\nDisallow: /%zz\x00a\x00/%zz", b"\x00\x00", b"Disallow: *\x00\xff\x00\xff"],
    );
    assert!(n >= 3);
}

#[test]
fn classify_inputs() {
    let long = "bot/".repeat(20_000);
    let n = replay(
        "classify",
        checks::classify,
        &[b"", b"\xff\xfe\x00crawler\r\n{\"x\":1}", long.as_bytes(), b"Mozilla/5.0 (compatible; MJ12bot/v1.4.8)"],
    );
    assert!(n >= 4);
}

#[test]
fn ua_grammar_inputs() {
    let deep = "(".repeat(5_000) + "Android 1; bot" + &")".repeat(5_000);
    let many = "(Linux; Android 1; a)".repeat(100);
    let n = replay(
        "ua_grammar",
        checks::ua_grammar,
        &[
            b"",
            b"(",
            b"((;;))",
            b"a/(Android 1;;;(",
            b"HbbTV/( ; \xff;\xc3\xa9 ;)",
            b"Mozilla/5.0 (Linux; Android 10; CUBOT J9) AppleWebKit/537.36",
            b"Mozilla/5.0 (Linux; U; Android 4.0.3; ko-kr; LG-L160L Build/IML74K) Safari/534.30",
            b"x (Android 1; \xe6\x97\xa5\xe6\x9c\xac)",
            deep.as_bytes(),
            many.as_bytes(),
        ],
    );
    assert!(n >= 10);
}

#[test]
fn load_config_inputs() {
    let n = replay(
        "load_config",
        checks::load_config,
        &[
            b"",
            b"listen: [",
            b"&a [*a, *a]",
            b"sites:\n  - hosts: [\"\\r\\n\"]\n    upstream: x\n    robots: y\n",
            b"\xff: \xfe",
        ],
    );
    assert!(n >= 5);
}

#[test]
fn site_file_inputs() {
    let bomb = format!("a: &a [{}]\nb: [{}]\n", vec!["x"; 1000].join(","), vec!["*a"; 10_000].join(","));
    let n = replay(
        "site_file",
        checks::site_file,
        &[
            b"",
            b"hosts: [\"b\xc3\xbccher.example\", \"xn--bcher-kva.example\"]\n",
            b"- hosts: [a.example, A.EXAMPLE.]\n- hosts: [xn--a.example]\n",
            b"hosts: [\"\xef\xbc\xa1.example\"]\n",
            bomb.as_bytes(),
        ],
    );
    assert!(n >= 5);
}

#[test]
fn normalise_target_inputs() {
    let n = replay(
        "normalise_target",
        checks::normalise_target,
        &[
            b"",
            b"\x00/a%2f..%2f%2e%2E/private//x?%7e%%00#f",
            b"\x10/\xff\xfe%c3%a9/../..%5c",
            b"\x08http://h?%41%2F",
            b"\x01*",
            b"\x02h:443",
        ],
    );
    assert!(n >= 6);
}

#[test]
fn client_address_inputs() {
    let n = replay(
        "client_address",
        checks::client_address,
        &[
            b"",
            b"\x00198.51.100.7, 10.0.0.3",
            b"\x01for=\"[2001:db8::1]:4711\";proto=https\x00for=unknown",
            b"\x021.2.3.4\xff",
            b"\x00\"a,b\",,, ,\x00[::ffff:10.0.0.1]:80",
        ],
    );
    assert!(n >= 5);
}

#[test]
fn proxy_protocol_inputs() {
    let n = replay(
        "proxy_protocol",
        checks::proxy_protocol,
        &[
            b"",
            b"PROXY TCP4 66.249.66.1 127.0.0.1 51234 8080\r\nGET / HTTP/1.1\r\n",
            b"PROXY TCP6 ::ffff:1.2.3.4 ::1 1 2\r\n",
            b"PROXY UNKNOWN\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r",
            b"\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c\x42\xf9\x42\x01\x7f\x00\x00\x01\xc8\x22\x1f\x90",
            b"\r\n\r\n\x00\r\nQUIT\n\x20\xff\x00\x00",
            b"\r\n\r\n\x00\r\nQUIT\n\x21\x11\xff\xff",
        ],
    );
    assert!(n >= 8);
}

#[test]
fn content_usage_inputs() {
    let long = "train-ai=n, ".repeat(500);
    let n = replay(
        "content_usage",
        checks::content_usage,
        &[
            b"",
            b"train-ai=n, search=y;q=1, x=(a b)",
            b"/private/ train-ai=n",
            b"/lone-path",
            b"train-ai=n,",
            b"a=(((((((",
            b"\xff\xfe=?0, train-ai=\"y\"",
            long.as_bytes(),
        ],
    );
    assert!(n >= 8);
}

#[test]
fn edge_headers_inputs() {
    let n = replay(
        "edge_headers",
        checks::edge_headers,
        &[
            b"",
            b"x-forwarded-uri:/a\nx-forwarded-method:GET\nx-forwarded-host:strict.test.:80",
            b"!X-Original-URI\nx-original-uri:/a\nx-forwarded-uri:/b\nx-forwarded-method:GET\nx-forwarded-host:h",
            b"x-forwarded-uri:/a\nX-FORWARDED-URI:/a\nx-forwarded-method:G T\nx-forwarded-host:\xff",
            b"x-forwarded-uri:/a\nx-forwarded-method:GET\nx-forwarded-host:h\nx-forwarded-proto:gopher",
        ],
    );
    assert!(n >= 5);
}

/// An HAPROXY-HELLO then a NOTIFY, as HAProxy 2.6 frames them, cut and
/// bent in the ways a broken or hostile peer would.
fn spop_stream(hello_size: u32, path_len: u8) -> Vec<u8> {
    let mut hello = vec![1, 0, 0, 0, 1, 0, 0];
    for (name, value) in [(&b"supported-versions"[..], &b"2.0"[..]), (b"capabilities", b"pipelining")] {
        hello.push(name.len() as u8);
        hello.extend_from_slice(name);
        hello.extend_from_slice(&[8, value.len() as u8]);
        hello.extend_from_slice(value);
    }
    hello.extend_from_slice(&[14]);
    hello.extend_from_slice(b"max-frame-size");
    hello.push(3);
    let mut v = Vec::new();
    robotgate::net::spop::write_varint(&mut v, hello_size.into());
    hello.extend_from_slice(&v);
    let mut notify = vec![3, 0, 0, 0, 1, 5, 1, 15];
    notify.extend_from_slice(b"robotgate-check");
    notify.push(6);
    let arg = |n: &mut Vec<u8>, name: &[u8], value: &[u8]| {
        n.push(name.len() as u8);
        n.extend_from_slice(name);
        n.extend_from_slice(value);
    };
    arg(&mut notify, b"src", &[6, 127, 0, 0, 1]);
    arg(&mut notify, b"method", &[8, 3, b'G', b'E', b'T']);
    arg(&mut notify, b"path", &[8, path_len, b'/', b'a']);
    arg(&mut notify, b"host", &[0]);
    arg(&mut notify, b"ssl", &[0x11]);
    arg(&mut notify, b"headers", &[9, 2, 0, 0]);
    let mut out = Vec::new();
    for f in [hello, notify] {
        out.extend_from_slice(&(f.len() as u32).to_be_bytes());
        out.extend_from_slice(&f);
    }
    out
}

#[test]
fn spop_frame_inputs() {
    let whole = spop_stream(16_380, 2);
    let lying = spop_stream(16_380, 200);
    let tiny = spop_stream(1, 2);
    let huge = spop_stream(u32::MAX, 2);
    let cut = &whole[..whole.len() - 3];
    let n = replay(
        "spop_frame",
        checks::spop_frame,
        &[
            b"",
            b"\0\0\0",
            b"\xff\xff\xff\xff",
            b"\0\0\0\x05\x03\0\0\0\x01",
            b"\0\0\0\x0f\x03\0\0\0\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
            &whole,
            &lying,
            &tiny,
            &huge,
            cut,
        ],
    );
    assert!(n >= 10);
}

#[test]
fn site_host_inputs() {
    let n = replay(
        "site_host",
        checks::site_host,
        &[b"", b"strict.test.", b"STRICT.TEST.:80", b"[::1]:8080", b"[::1", b"a..", b"\xff", b" : ", b"[]:"],
    );
    assert!(n >= 9);
}

#[test]
fn meta_head_inputs() {
    let long = format!("<head>{}<meta name=robots content=noindex>", "<!--".repeat(5000));
    let n = replay(
        "meta_head",
        checks::meta_head,
        &[b"", b"<", b"<meta", b"<!--->", b"<meta name= content=>", b"<meta =\"\"=''=>", long.as_bytes()],
    );
    assert!(n >= 7);
}

#[test]
fn directives_inputs() {
    let n = replay(
        "directives",
        checks::directives,
        &[b"", b",", b"max-snippet:-1", b"unavailable_after: 2027-01-01, none", b"max-snippet:99999999999999999999"],
    );
    assert!(n >= 5);
}

#[test]
fn rdns_names_inputs() {
    let n = replay(
        "rdns_names",
        checks::rdns_names,
        &[
            b"",
            b"\x01crawl-1.googlebot.com.=",
            b"\x01crawl.googlebot.com\x00crawl.googlebot.com=\x00x",
            b"\x02evilgooglebot.com=\x00googlebot.com.evil=",
            b"\x03a\\.googlebot.com=\x00..googlebot.com=\x00\xff.google.com=",
            b"\x04nameserver 127.0.0.1\nnameserver ::1%lo\n",
        ],
    );
    assert!(n >= 6);
}

#[test]
fn head_scrub_inputs() {
    let padding: String = (0..260).map(|i| format!("X-{i}: v\r\n")).collect();
    let padded = format!("GET / HTTP/1.1\r\n{padding}User-Agent: a\x7f\r\r\r\nHost: h\r\n\r\n");
    let n = replay(
        "head_scrub",
        checks::head_scrub,
        &[b"", b"\r\n\r\n", b"GET / HTTP/1.1\r\nX: \x00\x01\x7f\r\n\r\nbody\x01", padded.as_bytes()],
    );
    assert!(n >= 4);
}

#[test]
fn site_for_host_inputs() {
    let n = replay(
        "site_for_host",
        checks::site_for_host,
        &[b"", b"x@y", b"a{b}", b"[zz]", b"sh\xc3\xa9p.example", b"\xff\xfe", b"SHOP.example.:80", b"[::1]:x", b":"],
    );
    assert!(n >= 9);
}

#[test]
fn store_reply_inputs() {
    let n = replay(
        "store_reply",
        checks::store_reply,
        &[
            b"",
            b"+OK\r\n",
            b"*2\r\n$1\r\n0\r\n*1\r\n$2\r\nab\r\n",
            b"*2\r\n$1\r\n0\r\n*1\r\n$2\r\nab\r",
            b"$99999999999\r\n",
            b"*-1\r\n",
            b"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
            b"-ERR\r\n",
            b"$2\r\nab\n\n",
        ],
    );
    assert!(n >= 9);
}

#[test]
fn disguise_headers_inputs() {
    let n = replay(
        "disguise_headers",
        checks::disguise_headers,
        &[
            b"",
            b"Mozilla/5.0 (X11) Chrome/156.0 Safari/537.36\nsec-ch-ua: \"a\\\";v=\"1\"\nSEC-FETCH-MODE: x",
            b"Mozilla/5.0 (iPhone) Version/99999999999.9999999 Safari/1\naccept-language: *",
            b"Mozilla/5.0 (\nsec-ch-ua: \"\xc3\xa9\";v=\"1\", ,",
            b"Mozilla/5.0 (X) Firefox/\nvia: 1.1 x\nsec-fetch-site: none\nsec-fetch-mode: navigate\nsec-fetch-dest: document",
        ],
    );
    assert!(n >= 5);
}

#[test]
fn client_hello_inputs() {
    // The captured hellos (tests/data/tls), and shapes that end early.
    let n = replay(
        "client_hello",
        checks::client_hello,
        &[
            b"",
            b"\x16\x03\x01\x00\x04\x01\x00\x00\x00",
            b"\x16\x03\x01\x40\x01",
            b"\x16\x03\x01\x00\x05\x01\xff\xff\xff\x03",
            b"GET / HTTP/1.1\r\n\r\n",
        ],
    );
    assert!(n >= 13);
}
