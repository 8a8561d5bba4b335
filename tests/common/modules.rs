//! The in-process modules of issue #69 as their tests use them: each built
//! once per test process by its own build script (`envoy/build.sh`,
//! `haproxy/build.sh`), the scripts operators run.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;

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

/// Sends a request with these headers to this path; its status.
pub type Status<'a> = &'a dyn Fn(&[(String, String)], &str) -> u16;

/// A robot that publishes ranges (none on loopback) and signs as the
/// loopback agent (robots.txt's group for it: `*`, its token Googlebot's).
pub const SIGNED_BOT: &str = "version: 1\nbots:\n  - name: SignedBot\n    operator: Test\n    category: search\n    robots_tokens: [Googlebot]\n    ua: [SignedBot]\n    ip_ranges: [google-common-crawlers]\n    signature_agents: [\"127.0.0.1\"]\n    obeys_robots: true\n    samples: [\"SignedBot/1.0\"]\n";

/// Web Bot Auth inside a module (issue #69): [`SIGNED_BOT`] from loopback,
/// through the edge on `port` whose robots.txt disallows `/private/` to
/// `*`. Unsigned it is a spoofed claim; signed, its key directory (served
/// here) is fetched on a helper thread while the request is parked, and
/// kept for the process (one fetch), and the robot is held to its group;
/// a tampered signature or another key is a spoofed claim; a directory
/// that never answers holds no request past the fetch's 2 s. `status`
/// sends the request (`SignedBot/1.0` and the signature's headers) and
/// answers its status; `log` is the violation log.
pub fn a_signed_agent_is_verified(port: u16, log: &std::path::Path, status: Status<'_>) {
    use super::signer::{new_key, sign, Directory};
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
