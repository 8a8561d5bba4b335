//! The operator's files, read by the real binary (issue #32, part 4): a
//! robots.txt that is a link to `/dev/zero`, a FIFO, an HTML page, UTF-16,
//! binary data, or a file still being written in place is refused, the last
//! good version stays served and enforced, the other files still reload,
//! and an honest request next to it is served. Time bounds are generous:
//! they catch a hang, not a slow machine.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\n";

fn start(origin: &Origin) -> Gate {
    let upstream = format!("{{ address: \"{}\", read_timeout: 2 }}", origin.addr);
    let config =
        TestConfig { upstream: &upstream, metrics: true, site: "humans: {dir}/humans.txt", ..TestConfig::default() }
            .render();
    Gate::start(&config, &[("robots.txt", ROBOTS.as_bytes()), ("humans.txt", b"old humans\n")])
}

/// `robotgate_reload_refused_total` for the gate's robots.txt and `reason`.
fn refused(gate: &Gate, reason: &str) -> f64 {
    let file = gate.path("robots.txt");
    metric(gate, &format!("robotgate_reload_refused_total{{file=\"{}\",reason=\"{reason}\"}}", file.display()))
}

/// Wait (5 s at most) until the gate has refused its robots.txt for `reason`.
fn wait_refused(gate: &Gate, reason: &str) {
    let seen = within(Duration::from_secs(5), || refused(gate, reason) >= 1.0);
    assert!(seen.is_some(), "robots.txt not refused as {reason}\n{}", gate.stderr());
}

/// The last good robots.txt is served and enforced, and an honest request
/// next to it is served.
fn last_good_in_force(gate: &Gate) {
    assert_eq!(get(&gate.url("/robots.txt"), &[]).body, ROBOTS, "the last good robots.txt is served");
    assert_eq!(get(&gate.url("/private/x"), &[("User-Agent", GOOGLEBOT)]).status, 403, "and enforced");
    let honest = get(&gate.url("/page"), &[("User-Agent", FIREFOX)]);
    assert_eq!((honest.status, honest.body.as_str()), (200, "origin /page"), "an honest request is served");
    assert_eq!(get(&gate.url("/public"), &[("User-Agent", GOOGLEBOT)]).status, 200, "an allowed crawl is served");
}

/// Put `make`'s file in place of robots.txt by a rename, as an operator's
/// tool would (the watcher sees one change).
fn replace_robots(gate: &Gate, make: impl FnOnce(&Path)) {
    let tmp = gate.path(".robots.txt.new");
    make(&tmp);
    std::fs::rename(&tmp, gate.path("robots.txt")).unwrap();
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS in /proc/PID/status");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn issue_32_a_link_to_dev_zero_is_refused_and_memory_stays_bounded() {
    let origin = Origin::start();
    let gate = start(&origin);
    last_good_in_force(&gate);
    replace_robots(&gate, |tmp| std::os::unix::fs::symlink("/dev/zero", tmp).unwrap());
    wait_refused(&gate, "not-regular");
    // Measured before: 1.3 GB in 3 s, then the OOM killer. Watch for 3 s.
    let mut peak = 0;
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        peak = peak.max(rss_kib(gate.child.id()));
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("RSS peak with robots.txt -> /dev/zero: {peak} KiB");
    assert!(peak < 200 * 1024, "RSS reached {peak} KiB");
    last_good_in_force(&gate);
    let log = gate.stderr();
    assert!(log.contains("a character device, not a regular file"), "{log}");
    assert!(log.contains("the last good version stays in force"), "{log}");
}

#[test]
fn issue_32_a_fifo_at_robots_txt_holds_up_no_other_file() {
    let origin = Origin::start();
    let gate = start(&origin);
    replace_robots(&gate, |tmp| assert!(Command::new("mkfifo").arg(tmp).status().unwrap().success()));
    wait_refused(&gate, "not-regular");
    last_good_in_force(&gate);
    // The reloader is not stuck: an edit of humans.txt is in force within 2 s.
    std::fs::write(gate.path("humans.txt"), "new humans\n").unwrap();
    let took = within(Duration::from_secs(2), || get(&gate.url("/humans.txt"), &[]).body == "new humans\n");
    assert!(took.is_some(), "humans.txt edit not loaded within 2 s\n{}", gate.stderr());
    println!("humans.txt in force after {:?} with a FIFO at robots.txt", took.unwrap());
    // That reload met the FIFO again, refused it again, and kept robots.txt.
    last_good_in_force(&gate);
    assert!(refused(&gate, "not-regular") >= 2.0, "{}", gate.stderr());
    assert!(gate.stderr().contains("a FIFO (named pipe), not a regular file"));
}

/// Save `body` over robots.txt; it is refused as not a robots.txt, saying
/// `why`; the last good one stays; a good file is taken again afterwards.
fn refused_content(body: &[u8], why: &str) {
    let origin = Origin::start();
    let gate = start(&origin);
    last_good_in_force(&gate);
    let failures = metric(&gate, "robotgate_reload_failures_total");
    std::fs::write(gate.path("robots.txt"), body).unwrap();
    wait_refused(&gate, "not-robots-txt");
    last_good_in_force(&gate);
    assert!(metric(&gate, "robotgate_reload_failures_total") > failures, "a refused file is a failed reload");
    let log = gate.stderr();
    assert!(log.contains(why), "{log}");
    assert!(log.contains("file refused; its last good version stays in force"), "{log}");
    // Once fixed, the file is taken again.
    std::fs::write(gate.path("robots.txt"), "User-agent: *\nDisallow: /fixed/\n").unwrap();
    let taken =
        within(Duration::from_secs(5), || get(&gate.url("/fixed/x"), &[("User-Agent", GOOGLEBOT)]).status == 403);
    assert!(taken.is_some(), "{}", gate.stderr());
    assert_eq!(get(&gate.url("/private/x"), &[("User-Agent", GOOGLEBOT)]).status, 200);
}

#[test]
fn issue_32_an_html_page_saved_over_robots_txt_is_refused() {
    refused_content(
        b"\n<!DOCTYPE html>\n<html><head><title>500 Internal Server Error</title></head><body>Error</body></html>\n",
        "it is an HTML document (it starts with `<!DOCTYPE`)",
    );
}

#[test]
fn issue_32_utf16_with_a_bom_is_refused() {
    let utf16: Vec<u8> =
        "\u{feff}User-agent: *\nDisallow: /other/\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
    refused_content(&utf16, "it is UTF-16 (little-endian) text");
}

#[test]
fn issue_32_binary_data_is_refused() {
    let mut binary = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR".to_vec();
    binary.extend((0..=255u8).cycle().take(4096));
    refused_content(&binary, "it holds a NUL byte (at byte 8)");
}

#[test]
fn issue_66_bytes_with_no_line_a_parser_reads_are_refused() {
    // 4 KB of bytes 0x80 to 0xFF: no NUL, no line end, no field.
    let high: Vec<u8> = (0x80..=0xFFu8).cycle().take(4096).collect();
    refused_content(&high, "none of its 1 line(s) of text is a robots.txt field");
}

#[test]
fn issue_66_a_legacy_single_byte_file_with_lines_is_read() {
    let origin = Origin::start();
    let gate = start(&origin);
    last_good_in_force(&gate);
    // Latin-1, as a legacy editor saves it: `é` is the byte 0xE9.
    replace_robots(&gate, |tmp| std::fs::write(tmp, b"# \xe9t\xe9\nUser-agent: *\nDisallow: /caf\xe9/\n").unwrap());
    let taken = within(Duration::from_secs(5), || {
        get(&gate.url("/caf%E9/x"), &[("User-Agent", GOOGLEBOT)]).status == 403
            && get(&gate.url("/private/x"), &[("User-Agent", GOOGLEBOT)]).status == 200
    });
    assert!(taken.is_some(), "the Latin-1 robots.txt is in force\n{}", gate.stderr());
    assert_eq!(refused(&gate, "not-robots-txt"), 0.0);
}

#[test]
fn issue_32_a_slow_in_place_write_is_never_served_half_written() {
    let origin = Origin::start();
    let gate = start(&origin);
    last_good_in_force(&gate);
    let new: String =
        (0..64).map(|i| format!("Disallow: /section-{i:02}/\n")).fold("User-agent: *\n".to_owned(), |a, l| a + &l);
    // In place, as `cp` over the file or an editor writing in place: truncate,
    // then eight chunks, one every 140 ms (longer than the reloader's 100 ms
    // debounce, so a reload starts in the middle of the write).
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (path, new, done) = (gate.path("robots.txt"), new.clone(), done.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::File::create(&path).unwrap();
            for (i, chunk) in new.as_bytes().chunks(new.len().div_ceil(8)).enumerate() {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(140));
                }
                f.write_all(chunk).unwrap();
                f.flush().unwrap();
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let (mut polls, mut old_seen, mut new_seen) = (0, 0, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut written_at = None;
    loop {
        let body = get(&gate.url("/robots.txt"), &[]).body;
        polls += 1;
        if body == ROBOTS {
            old_seen += 1;
        } else if body == new {
            new_seen += 1;
        } else {
            panic!("robots.txt served half-written ({} of {} bytes):\n{body}", body.len(), new.len());
        }
        if done.load(Ordering::SeqCst) {
            let at = *written_at.get_or_insert_with(Instant::now);
            // Keep polling a while after the new file is in force.
            if new_seen > 0 && at.elapsed() > Duration::from_millis(500) {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the new robots.txt was never served\n{}", gate.stderr());
        std::thread::sleep(Duration::from_millis(5));
    }
    writer.join().unwrap();
    let in_force = written_at.unwrap().elapsed();
    println!("{polls} polls: {old_seen} old, {new_seen} new, none partial");
    assert!(old_seen > 0 && new_seen > 0);
    // Enforced as well as served, and the honest client is served throughout.
    assert_eq!(get(&gate.url("/section-63/x"), &[("User-Agent", GOOGLEBOT)]).status, 403);
    assert_eq!(get(&gate.url("/page"), &[("User-Agent", FIREFOX)]).status, 200);
    assert!(in_force < Duration::from_secs(5), "{in_force:?}");
}

fn write_config(dir: &Path, robots: &[u8]) -> std::path::PathBuf {
    std::fs::write(dir.join("robots.txt"), robots).unwrap();
    let config = dir.join("robotgate.yaml");
    let text = format!(
        "listen: [\"127.0.0.1:{}\"]\nthreads: 1\nsites:\n  - hosts: [\"localhost\"]\n    default: true\n    upstream: \"127.0.0.1:8000\"\n    robots: {}/robots.txt\nlog:\n  violations: {}/violations.jsonl\n",
        free_port(),
        dir.display(),
        dir.display()
    );
    std::fs::write(&config, text).unwrap();
    config
}

#[test]
fn issue_32_config_check_and_serve_name_a_robots_txt_that_is_not_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), b"<html><body>Not Found</body></html>");
    let robots = dir.path().join("robots.txt");
    let check = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["config", "check", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{out}");
    let want = format!("{}: refused robots.txt: it is an HTML document", robots.display());
    assert!(out.contains(&want), "{out}");

    // `serve` does not start on it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve started on an HTML robots.txt");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains(&want), "{err}");

    // An empty robots.txt is legal: it allows everything, as lint says.
    std::fs::write(&robots, b"").unwrap();
    let check = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["config", "check", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&check.stdout), "ok\n");
    let lint = Command::new(env!("CARGO_BIN_EXE_robotgate")).arg("lint").arg(&robots).output().unwrap();
    let out = String::from_utf8_lossy(&lint.stdout);
    assert_eq!(lint.status.code(), Some(0), "{out}");
    assert!(out.contains("it allows every crawler everything") && out.contains("[allows-everything]"), "{out}");
    // And lint names what serve would refuse.
    std::fs::write(&robots, b"User-agent: *\nDisallow: /\x00\n").unwrap();
    let lint = Command::new(env!("CARGO_BIN_EXE_robotgate")).arg("lint").arg(&robots).output().unwrap();
    let out = String::from_utf8_lossy(&lint.stdout);
    assert_eq!(lint.status.code(), Some(1), "{out}");
    assert!(out.contains("robotgate refuses to load this file: it holds a NUL byte"), "{out}");
}
