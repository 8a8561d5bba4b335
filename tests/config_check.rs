//! `robotgate config check`: ok for a valid config, every problem with its
//! file and line otherwise.

mod common;

use std::process::Command;

fn check(config: &str, files: &[(&str, &str)]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let path = dir.path().join("robotgate.yaml");
    std::fs::write(&path, config.replace("{dir}", dir.path().to_str().unwrap())).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["config", "check", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    (out.status.code().unwrap(), String::from_utf8_lossy(&out.stdout).into_owned())
}

const VALID: &str = r#"listen: ["127.0.0.1:8080"]
threads: 1
sites:
  - hosts: ["localhost", "127.0.0.1"]
    default: true
    upstream: "127.0.0.1:8000"
    robots: {dir}/robots.txt
    humans: {dir}/humans.txt
    policy:
      action: block
log:
  violations: {dir}/violations.jsonl
"#;

const FILES: &[(&str, &str)] = &[("robots.txt", "User-agent: *\nDisallow: /private/\n"), ("humans.txt", "hi\n")];

#[test]
fn a_valid_config_is_ok() {
    assert_eq!(check(VALID, FILES), (0, "ok\n".to_owned()));
}

#[test]
fn the_shipped_config_is_valid() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .current_dir(root)
        .args(["config", "check", "--config", "conf/robotgate.yaml"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn an_unknown_key_is_named_with_its_line() {
    let (code, out) = check(&VALID.replace("threads: 1", "threads: 1\nthreds: 2"), FILES);
    assert_eq!(code, 1);
    assert!(out.contains("robotgate.yaml:3:") && out.contains("threds"), "{out}");
}

#[test]
fn a_missing_file_is_named() {
    let (code, out) = check(VALID, &FILES[..1]);
    assert_eq!(code, 1);
    assert!(out.contains("humans.txt") && out.contains("cannot read humans.txt"), "{out}");
}

#[test]
fn a_bad_address_is_named() {
    let (code, out) = check(&VALID.replace("\"127.0.0.1:8000\"", "\"origin-without-port\""), FILES);
    assert_eq!(code, 1);
    assert!(out.contains("sites[0].upstream") && out.contains("host:port"), "{out}");
    let (code, out) = check(&VALID.replace("[\"127.0.0.1:8080\"]", "[\"127.0.0.1:99999\"]"), FILES);
    assert_eq!(code, 1);
    assert!(out.contains("listen[0]"), "{out}");
}

#[test]
fn a_bad_cidr_is_named() {
    let (code, out) = check(&format!("{VALID}trusted_proxies: [\"10.0.0.0/8\", \"10.0.0.0/40\"]\n"), FILES);
    assert_eq!(code, 1);
    assert!(out.contains("trusted_proxies[1]") && out.contains("10.0.0.0/40"), "{out}");
}

#[test]
fn every_problem_is_listed_not_just_the_first() {
    let bad = VALID.replace("threads: 1", "threads: 0").replace("action: block", "action: shout");
    let (code, out) = check(&bad, FILES);
    assert_eq!(code, 1);
    assert!(out.contains("threads") && out.contains("policy.action"), "{out}");
}

#[test]
fn the_example_configs_are_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configs");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        if let Err(e) = robotgate::config::parse(&text) {
            panic!("{}: {e:?}", path.display());
        }
        n += 1;
    }
    assert!(n >= 2);
    // The one-site example names only files that ship with robotgate, so it passes the full check.
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .current_dir(root)
        .args(["config", "check", "--config", "examples/configs/block-ai.yaml"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
}

/// The minimal file operators are promised (`examples/configs/minimal.yaml`,
/// word for word as the proxy issue gives it) passes the full check from the
/// repository root, where `conf/robots.txt` and `conf/humans.txt` are.
#[test]
fn the_minimal_config_from_the_docs_is_valid_as_written() {
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["config", "check", "--config", "examples/configs/minimal.yaml"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_shared_store_is_tried_and_an_unreachable_one_is_an_error() {
    let redis = common::redis_server::RedisServer::start();
    let with = |url: &str| format!("{VALID}state:\n  redis: \"{url}\"\n  timeout_ms: 200\n");
    assert_eq!(check(&with(&redis.url()), FILES), (0, "ok\n".to_owned()));
    // A closed port, and a password that must not be printed.
    let closed = format!("redis://user:s3cret@127.0.0.1:{}/0", common::free_port());
    let (code, out) = check(&with(&closed), FILES);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("state.redis: cannot reach the shared state store"), "{out}");
    assert!(out.contains("user:***@127.0.0.1") && !out.contains("s3cret"), "{out}");
    // Not a Redis URL at all.
    let (code, out) = check(&with("http://127.0.0.1:6379"), FILES);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("state.redis") && out.contains("redis://host:port/db"), "{out}");
}

/// The example site files (examples/sites.d) check alone against the
/// hosting example's settings, as `sites_dir` reads them.
#[test]
fn the_example_site_files_are_valid() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = std::fs::read_to_string(root.join("examples/configs/hosting.yaml")).unwrap();
    let settings = robotgate::config::parse(&config).unwrap().settings;
    let mut n = 0;
    for entry in std::fs::read_dir(root.join("examples/sites.d")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let stem = path.file_stem().unwrap().to_string_lossy();
        let sites = robotgate::config::parse_site_file(&text, &settings, &stem, robotgate::config::Host::Serve)
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        n += sites.len();
    }
    assert!(n >= 3, "{n} sites");
}

/// Issue #56: `ext_authz.listen` is checked as `auth.listen` is: each
/// address `host:port`, none another listener.
#[test]
fn the_ext_authz_listener_is_checked() {
    let with = |ext: &str| VALID.replace("threads: 1", &format!("threads: 1\n{ext}"));
    assert_eq!(check(&with("ext_authz: { listen: [\"127.0.0.1:9191\"] }"), FILES), (0, "ok\n".to_owned()));
    let (code, out) = check(&with("ext_authz: { listen: [\"127.0.0.1:8080\"] }"), FILES);
    assert_eq!(code, 1);
    assert!(out.contains("ext_authz.listen[0]") && out.contains("another listener"), "{out}");
    let both = "auth: { listen: [\"127.0.0.1:9191\"] }\next_authz: { listen: [\"127.0.0.1:9191\"] }";
    let (code, out) = check(&with(both), FILES);
    assert!(code == 1 && out.contains("ext_authz.listen[0]"), "{out}");
    let (code, out) = check(&with("ext_authz: { listen: [\"no-port\"] }"), FILES);
    assert!(code == 1 && out.contains("ext_authz.listen[0]") && out.contains("host:port"), "{out}");
    let (code, out) = check(&with("ext_authz: { listen: [] }"), FILES);
    assert!(code == 1 && out.contains("ext_authz.listen"), "{out}");
    let (code, out) = check(&with("ext_authz: { lisen: [] }"), FILES);
    assert!(code == 1 && out.contains("lisen"), "{out}");
}

/// Issue 66: a lookup bound longer than an edge gives robotgate to answer
/// is a warning, naming both keys; the defaults give none.
#[test]
fn a_lookup_longer_than_an_edge_allows_is_a_warning() {
    let spoe = "spoe: { listen: [\"127.0.0.1:12399\"] }\n";
    assert_eq!(check(&format!("{VALID}{spoe}"), FILES), (0, "ok\n".to_owned()), "the shipped timeouts leave room");
    let slow = format!("{VALID}{spoe}verify: {{ dns: {{ timeout_ms: 900 }} }}\n");
    let (code, out) = check(&slow, FILES);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("verify.dns.timeout_ms (900 ms)") && out.contains("spoe.edge_timeout_ms (1000 ms)"), "{out}");
    assert!(out.contains("(warning)"), "{out}");
}
