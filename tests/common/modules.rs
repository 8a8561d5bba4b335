//! The in-process modules of issue #69 as their tests use them: each built
//! once per test process by its own build script (`envoy/build.sh`,
//! `haproxy/build.sh`), the scripts operators run.

use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use super::edge::{get_from, shipped, wait_port, Running};
use super::{free_port, Origin};

/// The Envoy module (`librobotgate_envoy.so`), or `None` when it cannot be
/// built here: the test skips, loudly (under `CI` it fails instead).
pub fn envoy() -> Option<PathBuf> {
    built("envoy")
}

/// The HAProxy module (`robotgate.so`), as [`envoy`].
pub fn haproxy() -> Option<PathBuf> {
    built("haproxy")
}

/// What `<dir>/build.sh` printed last: the module's path.
fn built(dir: &'static str) -> Option<PathBuf> {
    static BUILT: Mutex<Option<HashMap<&'static str, Option<PathBuf>>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    built.get_or_insert_with(HashMap::new).entry(dir).or_insert_with(|| build(dir)).clone()
}

fn build(dir: &str) -> Option<PathBuf> {
    let script = format!("{}/{dir}/build.sh", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash").arg(&script).stderr(Stdio::piped()).output().expect("bash runs");
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(std::env::var_os("CI").is_none(), "{dir}/build.sh failed:\n{why}");
        eprintln!("\n*** SKIPPED: {dir}/build.sh cannot build the module here (.ci/run does):\n{why}\n***\n");
        return None;
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    Some(PathBuf::from(stdout.lines().last().expect("build.sh prints the module's path").trim()))
}

/// A robot that publishes ranges (none on loopback) and signs as the
/// loopback agent (robots.txt's group for it: `*`, its token Googlebot's).
pub const SIGNED_BOT: &str = "version: 1\nbots:\n  - name: SignedBot\n    operator: Test\n    category: search\n    robots_tokens: [Googlebot]\n    ua: [SignedBot]\n    ip_ranges: [google-common-crawlers]\n    signature_agents: [\"127.0.0.1\"]\n    obeys_robots: true\n    samples: [\"SignedBot/1.0\"]\n";

/// Web Bot Auth inside a module (issue #69): [`SIGNED_BOT`] from loopback,
/// through the edge on `port` whose robots.txt disallows `/private/` to
/// `*`. Unsigned it is a spoofed claim; signed, its key directory (served
/// here) is fetched on a helper thread while the request is parked, and
/// kept for the process (one fetch), and the robot is held to its group;
/// a tampered signature or another key is a spoofed claim; a directory
/// that never answers holds no request past the fetch's 2 s. Each request
/// is `SignedBot/1.0` with the signature's headers, from 127.0.0.2; `log`
/// is the violation log.
pub fn a_signed_agent_is_verified(port: u16, log: &std::path::Path) {
    use super::signer::{new_key, sign, Directory};
    let status = |signed: &[(String, String)], path: &str| {
        let mut headers = vec![("User-Agent", "SignedBot/1.0")];
        headers.extend(signed.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        get_from(port, "127.0.0.2", path, &headers).status
    };
    let key = new_key("module");
    let (good, silent) = (Directory::serving(&key), Directory::silent());
    let authority = format!("127.0.0.1:{port}");
    assert_eq!(status(&[], "/page"), 403, "unsigned: spoofed");
    let signed = sign(&key, &good.url, &authority);
    assert_eq!(status(&signed, "/page"), 200, "signed: held to its group");
    assert_eq!(status(&signed, "/private/a"), 403, "signed: held to its group");
    for _ in 0..8 {
        assert_eq!(status(&signed, "/page"), 200);
    }
    assert_eq!(good.hits(), 1, "the keys were not kept for the process");
    let mut tampered = signed.clone();
    tampered[0].1 = tampered[0].1.replace("127.0.0.1", "127.0.0.2");
    assert_eq!(status(&tampered, "/page"), 403, "tampered: spoofed");
    assert_eq!(status(&sign(&new_key("stranger"), &good.url, &authority), "/page"), 403, "another key: spoofed");
    let started = std::time::Instant::now();
    let unanswered = sign(&key, &silent.url, &authority);
    assert_eq!(status(&unanswered, "/page"), 403);
    assert_eq!(status(&unanswered, "/page"), 403);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "parked for {:?}", started.elapsed());
    assert!(silent.hits() >= 1, "the silent directory was never asked");
    let recs = super::wait_lines(log, 6);
    assert_eq!(recs.iter().filter(|l| l.contains("\"spoofed-identity\"")).count(), 5, "{recs:#?}");
    assert!(recs.iter().any(|l| l.contains("/private/a") && l.contains("\"identity\":\"verified\"")), "{recs:#?}");
}

/// GPTBot may read nothing; everyone else anything but /private/.
pub const ROBOTS: &str = "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\n";

/// The second site's (`slow.example`): GPTBot may read everything, slowly.
pub const SLOW_ROBOTS: &str = "User-agent: GPTBot\nCrawl-delay: 30\n";

/// GPTBot's (test) published range: 127.0.0.0/30. ChatGPT-User's: loopback.
pub const FEEDS: &[(&str, &str)] = &[
    (
        "feeds/openai-gptbot.json",
        r#"{"creationTime": "2026-11-25T00:00:00", "prefixes": [{"ipv4Prefix": "127.0.0.0/30"}]}"#,
    ),
    (
        "feeds/openai-chatgpt-user.json",
        r#"{"creationTime": "2026-11-25T00:00:00", "prefixes": [{"ipv4Prefix": "127.0.0.0/8"}]}"#,
    ),
];

/// The module tests' robotgate.yaml (tests/envoy_module.rs, tests/haproxy_lua.rs)
/// and the sites' files in `dir`, both sites in front of
/// `origin`: `s` (the default) with [`ROBOTS`] and the trap `/trap/`
/// (banning at once, for a minute), `slow` (`slow.example`) with
/// [`SLOW_ROBOTS`].
/// `extra`: more top-level YAML.
pub fn site(dir: &Path, origin: &Origin, extra: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("robots.txt"), ROBOTS).unwrap();
    std::fs::write(dir.join("slow-robots.txt"), SLOW_ROBOTS).unwrap();
    for (name, body) in FEEDS {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    let d = dir.display();
    let yaml = format!(
        r#"listen: ["127.0.0.1:1"]
sites:
  - name: s
    hosts: ["127.0.0.1", "localhost"]
    default: true
    upstream: "{origin}"
    robots: "{d}/robots.txt"
    traps: {{ paths: ["/trap/"], ban: 60, arm_after: 0 }}
    policy:
      enforce_ai_user: true
      bots:
        ChatGPT-User: {{ action: noindex }}
    indexing:
      rules:
        - {{ path: "/docs/", set: "noarchive" }}
  - name: slow
    hosts: ["slow.example"]
    upstream: "{origin}"
    robots: "{d}/slow-robots.txt"
verify:
  refresh: "off"
  feeds: "{d}/feeds"
log:
  violations: "{d}/violations.jsonl"
  aggregate_window: 0
{extra}"#,
        origin = origin.addr,
    );
    let path = dir.join("robotgate.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// [`site`] with [`SIGNED_BOT`] in its bots and key directories on loopback
/// allowed; no DNS server answers.
pub fn signed_site(dir: &Path, origin: &Origin) -> std::path::PathBuf {
    std::fs::write(dir.join("bots.yaml"), SIGNED_BOT).unwrap();
    let yaml = site(dir, origin, &format!("bots: {}/bots.yaml\n", dir.display()));
    let text = std::fs::read_to_string(&yaml).unwrap();
    let verify = "verify:\n  allow_private_directories: true\n  dns: { nameservers: [\"127.0.0.1:9\"] }\n";
    std::fs::write(&yaml, text.replacen("verify:\n", verify, 1)).unwrap();
    yaml
}

/// robotgate.yaml's `state:` for a shared store at `url`, its keys under `prefix`.
pub fn shared_state(url: &str, prefix: &str) -> String {
    format!("state:\n  redis: \"{url}\"\n  prefix: \"{prefix}\"\n")
}

/// `state.redis` inside a module (issue #69): two edges (on ports `a` and
/// `b`, their logs `logs`), each with its own robotgate.yaml ([`site`])
/// naming one store ([`shared_state`]). Each starts its store on its first
/// request and says so; then a robot's Crawl-delay holds across both (its
/// first request through `a`, its next through `b`: 429), and a trap's ban
/// made through `a` holds through `b` within 2 s (announced through the
/// store), for that client only.
pub fn a_shared_store_is_shared(a: u16, b: u16, logs: (&Path, &Path)) {
    let read = |log: &Path| std::fs::read_to_string(log).unwrap_or_default();
    let browser = [("User-Agent", super::FIREFOX)];
    let mut headers = browser.to_vec();
    headers.extend(super::as_browser("http://127.0.0.1/", &browser));
    for port in [a, b] {
        let r = get_from(port, "127.0.0.2", "/page", &headers);
        assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);
    }
    for log in [logs.0, logs.1] {
        let up = super::within(Duration::from_secs(10), || read(log).contains("keys loaded)"));
        assert!(up.is_some(), "the store was never said connected:\n{}", read(log));
    }
    // Crawl-delay: 30 for GPTBot on `slow`, across both edges.
    let slow = [("User-Agent", super::GPTBOT), ("Host", "slow.example")];
    let r = get_from(a, "127.0.0.3", "/a", &slow);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /a"), "{}", r.head);
    let r = get_from(b, "127.0.0.3", "/b", &slow);
    assert_eq!(r.status, 429, "the other edge did not know the pace: {}\n{}\n{}", r.head, read(logs.1), r.body);
    assert!(r.header("retry-after").is_some(), "{}", r.head);
    // A trap followed through `a`: banned through `b` too.
    assert_eq!(get_from(a, "127.0.0.9", "/trap/x", &headers).status, 403);
    let banned = super::within(Duration::from_secs(2), || get_from(b, "127.0.0.9", "/page", &headers).status == 403);
    assert!(banned.is_some(), "the ban did not reach the other edge within 2 s:\n{}", read(logs.1));
    let r = get_from(b, "127.0.0.10", "/page", &headers);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);
}

// --- Envoy with the module (tests/envoy_module.rs, tests/one_answer.rs).

/// The shipped envoy-module.yaml (`text`) with the test's listeners, origin and robotgate.yaml.
/// Panics if the example no longer names them (the test would otherwise run
/// something else).
/// `admin`: Envoy's admin listener's port.
pub fn envoy_config(text: &str, (port, admin): (u16, u16), origin: &Origin, yaml: &Path) -> String {
    let listener = "socket_address: { address: 0.0.0.0, port_value: 80 }";
    let upstream = "socket_address: { address: 127.0.0.1, port_value: 8000 }";
    let config = "value: /etc/robotgate/robotgate.yaml";
    let admin_at = "socket_address: { address: 127.0.0.1, port_value: 9901 }";
    for default in [listener, upstream, config, admin_at] {
        assert_eq!(text.matches(default).count(), 1, "the example no longer names {default}");
    }
    let (scrape, scrape_config) = (
        "socket_address: { address: 127.0.0.1, port_value: 9103 }",
        "value: { config: /etc/robotgate/robotgate.yaml, serve: metrics }",
    );
    for default in [scrape, scrape_config] {
        assert_eq!(text.matches(default).count(), 1, "the example no longer names {default}");
    }
    text.replace(listener, &format!("socket_address: {{ address: 127.0.0.1, port_value: {port} }}"))
        .replace(admin_at, &format!("socket_address: {{ address: 127.0.0.1, port_value: {admin} }}"))
        .replace(upstream, &format!("socket_address: {{ address: 127.0.0.1, port_value: {} }}", origin.addr.port()))
        .replace(config, &format!("value: {}", yaml.display()))
        .replace(scrape, &format!("socket_address: {{ address: 127.0.0.1, port_value: {} }}", free_port()))
        .replace(scrape_config, &format!("value: {{ config: \"{}\", serve: metrics }}", yaml.display()))
}

/// The port of the metrics listener of an [`envoy_config`]ed configuration.
pub fn envoy_metrics_port(config: &str) -> u16 {
    let listener = config.split("- name: robotgate-metrics\n").nth(1).expect("no metrics listener");
    let at = listener.split("port_value: ").nth(1).expect("no port");
    at[..at.find(' ').expect("no port's end")].parse().unwrap()
}

/// The real Envoy running `config` with the module in its search path, its
/// log in `dir`, on one worker thread; not waited for.
pub fn spawn_envoy(bin: &Path, module: &Path, dir: &Path, port: u16, config: &str) -> Running {
    spawn_envoy_on(bin, module, dir, port, config, 1)
}

/// [`spawn_envoy`] on `workers` worker threads.
pub fn spawn_envoy_on(bin: &Path, module: &Path, dir: &Path, port: u16, config: &str, workers: usize) -> Running {
    let file = dir.join("envoy.yaml");
    std::fs::write(&file, config).unwrap();
    let child = Command::new(bin)
        .env("ENVOY_DYNAMIC_MODULES_SEARCH_PATH", module.parent().unwrap())
        .arg("-c")
        .arg(&file)
        // A base id of its own (shared memory names), no hot restart, one worker.
        .args(["--base-id", &port.to_string(), "--disable-hot-restart", "--concurrency", &workers.to_string()])
        .args(["-l", "info"])
        // Its log written at once, for the test to read.
        .args(["--file-flush-interval-msec", "50"])
        .arg("--log-path")
        .arg(dir.join("envoy.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("envoy starts");
    Running(child)
}

// --- HAProxy with the module (tests/haproxy_lua.rs, tests/one_answer.rs).

/// The shipped haproxy-lua.cfg with the test's listener, origin, module,
/// Lua file and robotgate.yaml; `nbthread` threads; `frontend` more lines
/// at the top of the frontend (after its bind). Panics if the example no
/// longer names what is replaced (the test would otherwise run something else).
pub fn haproxy_config(
    port: u16,
    origin: &Origin,
    (module, yaml): (&Path, &Path),
    nbthread: usize,
    frontend: &str,
) -> String {
    let cfg = shipped("haproxy-lua.cfg");
    let bind = "    bind 127.0.0.1:80\n";
    let upstream = "server origin 127.0.0.1:8000";
    let config = "setenv ROBOTGATE_CONFIG /etc/robotgate/robotgate.yaml";
    let cpath = "lua-prepend-path /usr/lib/robotgate/haproxy/?.so cpath";
    let lua = "lua-load-per-thread /etc/haproxy/robotgate.lua";
    let metrics = "    bind 127.0.0.1:9103\n";
    for default in [bind, upstream, config, cpath, lua, metrics] {
        assert_eq!(cfg.matches(default).count(), 1, "haproxy-lua.cfg no longer names {default}");
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/edge/robotgate.lua");
    cfg.replace(bind, &format!("    bind 127.0.0.1:{port}\n{frontend}"))
        .replace(upstream, &format!("server origin {}", origin.addr))
        .replace(config, &format!("setenv ROBOTGATE_CONFIG {}", yaml.display()))
        .replace(cpath, &format!("lua-prepend-path {}/?.so cpath", module.parent().unwrap().display()))
        .replace(lua, &format!("lua-load-per-thread {}", script.display()))
        .replace(metrics, &format!("    bind 127.0.0.1:{}\n", free_port()))
        .replacen("\nglobal\n", &format!("\nglobal\n    nbthread {nbthread}\n"), 1)
}

/// The port of the metrics frontend of a [`haproxy_config`]ed configuration.
pub fn metrics_port(cfg: &str) -> u16 {
    let frontend = cfg.split("frontend robotgate-metrics\n").nth(1).expect("no metrics frontend");
    let bind = frontend.lines().find_map(|l| l.trim().strip_prefix("bind 127.0.0.1:")).expect("no bind");
    bind.parse().unwrap()
}

/// The value of the series `series` (its name and labels, as written) in a
/// scrape's `text`.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The real HAProxy running `cfg` in the foreground, its stderr (the
/// module's log) in `dir`/haproxy.err; not waited for.
pub fn spawn_haproxy(dir: &Path, cfg: &str) -> Running {
    let file = dir.join("haproxy.cfg");
    std::fs::write(&file, cfg).unwrap();
    let child = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("haproxy.err")).unwrap())
        .spawn()
        .expect("haproxy starts");
    Running(child)
}

/// HAProxy started and listening on `port`.
pub fn start_haproxy(dir: &Path, port: u16, cfg: &str) -> Running {
    let running = spawn_haproxy(dir, cfg);
    wait_port(port, "haproxy", &dir.join("haproxy.err"));
    running
}

pub fn have_haproxy() -> bool {
    let ok = Command::new("haproxy").arg("-v").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !ok {
        let msg = "`haproxy` is not installed (apt-get install -y haproxy); .ci/run installs it";
        assert!(std::env::var_os("CI").is_none(), "{msg}");
        eprintln!("\n*** SKIPPED: {msg} ***\n");
    }
    ok
}
