//! Files a hosting operator's customers control, against the real binary
//! (issue 66): a customer's robots.txt that is a link out of their
//! document root is not served, a host a site file holds stays its own
//! across a restart, a site file whose aliases expand without bound is
//! refused alone, a site file of 100,000 hosts delays no other customer's
//! edit, and a host written as a U-label is the A-label clients send.
//! Real files and links on disk, loopback only; time bounds are generous.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// The config: no site of its own but the default, sites from
/// `{dir}/sites`, customers' robots.txt at `{dir}/www/{host}/robots.txt`,
/// and `extra` keys.
fn config(origin: &Origin, extra: &str) -> String {
    format!(
        "listen: [\"127.0.0.1:{{port}}\"]\nthreads: 2\ngrace_period: 1\nsites:\n  - name: own\n    hosts: [\"own.test\"]\n    upstream: \"{}\"\n    robots: {{dir}}/robots.txt\nsites_dir: {{dir}}/sites\nsite_template:\n  robots: \"{{dir}}/www/{{host}}/robots.txt\"\n{extra}log:\n  violations: {{dir}}/violations.jsonl\n  level: info\nmetrics:\n  listen: \"127.0.0.1:{{metrics}}\"\n{}",
        origin.addr,
        common::VERIFY_LOOPBACK
    )
}

fn start(origin: &Origin, extra: &str, files: &[(&str, &[u8])]) -> Gate {
    let mut all: Vec<(&str, &[u8])> = vec![("robots.txt", b"User-agent: *\nDisallow: /own/\n"), ("sites/.keep", b"")];
    all.extend_from_slice(files);
    Gate::start(&config(origin, extra), &all)
}

/// A site file of `hosts`, its robots.txt from the template.
fn site(origin: &Origin, hosts: &[&str]) -> String {
    let hosts: Vec<String> = hosts.iter().map(|h| format!("\"{h}\"")).collect();
    format!("hosts: [{}]\nupstream: \"{}\"\n", hosts.join(", "), origin.addr)
}

/// Put `body` in place at `name` (under the gate's directory) by a rename.
fn put(gate: &Gate, name: &str, body: &[u8]) {
    let path = gate.path(name);
    let tmp = path.with_file_name(format!(".{}.tmp", path.file_name().unwrap().to_string_lossy()));
    std::fs::write(&tmp, body).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Make `name` a link to `target` by a rename, as a customer's shell would
/// (`ln -sfn`).
fn link(gate: &Gate, name: &str, target: &str) {
    let path = gate.path(name);
    let tmp = path.with_file_name(".link.tmp");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn status(gate: &Gate, host: &str, path: &str) -> u16 {
    get(&gate.url(path), &[("Host", host), ("User-Agent", GOOGLEBOT)]).status
}

fn robots(gate: &Gate, host: &str) -> String {
    get(&gate.url("/robots.txt"), &[("Host", host)]).body
}

/// Wait (5 s at most) until the log has a line with every one of `parts`.
fn logged(gate: &Gate, parts: &[&str]) -> bool {
    within(Duration::from_secs(5), || gate.stderr().lines().any(|l| parts.iter().all(|p| l.contains(p)))).is_some()
}

const SECRET: &[u8] = b"b.test's database password: hunter2\n";
const KEY: &[u8] =
    b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIRobotgateOwnKeyNotForTheWorld\n-----END PRIVATE KEY-----\n";

#[test]
fn issue_66_a_customers_robots_txt_linked_out_of_their_directory_is_not_served() {
    let origin = Origin::start();
    let gate = start(
        &origin,
        "",
        &[
            ("www/a.test/robots.txt", b"User-agent: *\nDisallow: /a-private/\n"),
            ("www/a.test/rules/robots.txt", b"User-agent: *\nDisallow: /inside/\n"),
            ("www/b.test/robots.txt", b"User-agent: *\nDisallow: /b-private/\n"),
            ("www/b.test/private/secret.txt", SECRET),
            ("tls/key.pem", KEY),
        ],
    );
    std::fs::set_permissions(gate.path("tls/key.pem"), std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    put(&gate, "sites/a.test.yaml", site(&origin, &["a.test"]).as_bytes());
    put(&gate, "sites/b.test.yaml", site(&origin, &["b.test"]).as_bytes());
    let served = within(Duration::from_secs(5), || status(&gate, "b.test", "/b-private/x") == 403);
    assert!(served.is_some() && status(&gate, "a.test", "/a-private/x") == 403, "{}", gate.stderr());

    // a.test's robots.txt made a link to b.test's private file: refused,
    // saying why; the last good file stays served and enforced.
    link(&gate, "www/a.test/robots.txt", "../b.test/private/secret.txt");
    assert!(
        logged(&gate, &["www/a.test/robots.txt", "leads out of the customer's directory", "last good version stays"]),
        "{}",
        gate.stderr()
    );
    assert_eq!(robots(&gate, "a.test"), "User-agent: *\nDisallow: /a-private/\n");
    assert_eq!(status(&gate, "a.test", "/a-private/x"), 403);
    let metrics = get(&format!("http://127.0.0.1:{}/metrics", gate.metrics_port), &[]).body;
    assert!(metrics.contains("reason=\"customer-link\""), "counted as a refusal");

    // A link inside the same directory is followed.
    link(&gate, "www/a.test/robots.txt", "rules/robots.txt");
    let taken = within(Duration::from_secs(5), || status(&gate, "a.test", "/inside/x") == 403);
    assert!(taken.is_some(), "a link inside a.test's directory is served\n{}", gate.stderr());
    assert_eq!(robots(&gate, "a.test"), "User-agent: *\nDisallow: /inside/\n");

    // A link to robotgate's own key (absolute): refused, not served.
    let key = gate.path("tls/key.pem");
    link(&gate, "www/a.test/robots.txt", key.to_str().unwrap());
    assert!(logged(&gate, &["www/a.test/robots.txt", "key.pem", "leads out of"]), "{}", gate.stderr());
    assert_eq!(robots(&gate, "a.test"), "User-agent: *\nDisallow: /inside/\n", "the last good one");

    // At a restart with the link in place: a.test is served without its
    // robots.txt (it goes to the origin), the others as before, and
    // neither the key nor b.test's file is ever served.
    let mut gate = gate;
    gate.restart();
    assert!(logged(&gate, &["www/a.test/robots.txt", "served without it"]), "{}", gate.stderr());
    let body = robots(&gate, "a.test");
    assert_eq!(body, "origin /robots.txt", "a.test's /robots.txt goes to the origin");
    assert_eq!(status(&gate, "b.test", "/b-private/x"), 403, "b.test is served");
    assert_eq!(status(&gate, "own.test", "/own/x"), 403);
    link(&gate, "www/a.test/robots.txt", "../b.test/private/secret.txt");
    std::thread::sleep(Duration::from_millis(600));
    for host in ["a.test", "b.test", "own.test"] {
        let body = robots(&gate, host);
        assert!(!body.contains("hunter2") && !body.contains("PRIVATE KEY"), "{host}: {body}");
    }
}

#[test]
fn issue_66_customer_links_owner_follows_a_link_only_to_its_owners_files() {
    // Files of two owners: root can make them (chown), anyone else skips.
    let probe = tempfile::NamedTempFile::new().unwrap();
    if std::os::unix::fs::MetadataExt::uid(&probe.as_file().metadata().unwrap()) != 0 {
        eprintln!("skipped: making files of another owner needs root");
        return;
    }
    let origin = Origin::start();
    let gate = start(
        &origin,
        "customer_links: owner\n",
        &[
            ("www/a.test/robots.txt", b"User-agent: *\nDisallow: /a-private/\n"),
            ("elsewhere/a-rules.txt", b"User-agent: *\nDisallow: /own-file/\n"),
            ("www/b.test/private/secret.txt", SECRET),
        ],
    );
    // b.test's file belongs to someone else (uid 4242); the link and
    // a.test's rules elsewhere belong to the same owner (this process's).
    std::os::unix::fs::chown(gate.path("www/b.test/private/secret.txt"), Some(4242), Some(4242)).unwrap();
    put(&gate, "sites/a.test.yaml", site(&origin, &["a.test"]).as_bytes());
    assert!(within(Duration::from_secs(5), || status(&gate, "a.test", "/a-private/x") == 403).is_some());
    link(&gate, "www/a.test/robots.txt", "../b.test/private/secret.txt");
    assert!(
        logged(&gate, &["www/a.test/robots.txt", "a file of another owner (uid 4242)", "last good version stays"]),
        "{}",
        gate.stderr()
    );
    assert_eq!(robots(&gate, "a.test"), "User-agent: *\nDisallow: /a-private/\n");
    // Its owner's file outside the directory is followed.
    link(&gate, "www/a.test/robots.txt", gate.path("elsewhere/a-rules.txt").to_str().unwrap());
    let taken = within(Duration::from_secs(5), || status(&gate, "a.test", "/own-file/x") == 403);
    assert!(taken.is_some(), "a link to its owner's file is served\n{}", gate.stderr());
}

#[test]
fn issue_66_a_host_a_site_file_holds_stays_its_own_across_a_restart() {
    let origin = Origin::start();
    let gate = start(&origin, "", &[("www/shop.test/robots.txt", b"User-agent: *\nDisallow: /shop-private/\n")]);
    put(&gate, "sites/shop.test.yaml", site(&origin, &["shop.test"]).as_bytes());
    assert!(within(Duration::from_secs(5), || status(&gate, "shop.test", "/shop-private/x") == 403).is_some());
    // 000.yaml, before shop.test.yaml by name, names shop.test with a
    // robots.txt of its own: refused while running, naming both files.
    std::fs::create_dir_all(gate.path("other")).unwrap();
    std::fs::write(gate.path("other/robots.txt"), "User-agent: *\nDisallow: /taken/\n").unwrap();
    let taker = format!("{}robots: {}\n", site(&origin, &["shop.test"]), gate.path("other/robots.txt").display());
    put(&gate, "sites/000.yaml", taker.as_bytes());
    assert!(
        logged(&gate, &["sites/000.yaml", "host `shop.test` is also a host in", "shop.test.yaml"]),
        "{}",
        gate.stderr()
    );
    assert_eq!(status(&gate, "shop.test", "/shop-private/x"), 403);
    // The record of which file holds each host is written once the reload
    // is in force (main had none: its restart took the files by name).
    let record = gate.path("robotgate-site-hosts.json");
    let _ = within(Duration::from_secs(5), || std::fs::read_to_string(&record).is_ok_and(|r| r.contains("shop.test")));

    // A restart decides as the reload did.
    let mut gate = gate;
    gate.restart();
    assert!(
        logged(&gate, &["sites/000.yaml", "host `shop.test` is also a host in", "shop.test.yaml"]),
        "{}",
        gate.stderr()
    );
    assert_eq!(robots(&gate, "shop.test"), "User-agent: *\nDisallow: /shop-private/\n");
    assert_eq!(status(&gate, "shop.test", "/shop-private/x"), 403);
    assert_eq!(status(&gate, "shop.test", "/taken/x"), 200);

    // Once shop.test.yaml is gone, 000.yaml may have the host.
    std::fs::remove_file(gate.path("sites/shop.test.yaml")).unwrap();
    let moved = within(Duration::from_secs(5), || status(&gate, "shop.test", "/taken/x") == 403);
    assert!(moved.is_some(), "{}", gate.stderr());
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS in /proc/PID/status");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn issue_66_a_site_file_whose_aliases_expand_without_bound_is_refused_alone() {
    let origin = Origin::start();
    let gate = start(&origin, "", &[("www/a.test/robots.txt", b"User-agent: *\nDisallow: /a-private/\n")]);
    put(&gate, "sites/a.test.yaml", site(&origin, &["a.test"]).as_bytes());
    assert!(within(Duration::from_secs(5), || status(&gate, "a.test", "/a-private/x") == 403).is_some());
    // 312 KB: `a: &a [x, ...10,000]` then `b: [*a, ...100,000]`.
    let bomb = format!("a: &a [{}]\nb: [{}]\n", vec!["x"; 10_000].join(","), vec!["*a"; 100_000].join(","));
    assert!(bomb.len() > 300_000 && bomb.len() < 330_000, "{}", bomb.len());
    let before = rss_kib(gate.child.id());
    put(&gate, "sites/bomb.yaml", bomb.as_bytes());
    let start = Instant::now();
    assert!(logged(&gate, &["sites/bomb.yaml", "expands to more than", "fewer aliases"]), "{}", gate.stderr());
    println!("alias bomb refused after {:?}", start.elapsed());
    let after = rss_kib(gate.child.id());
    assert!(after < before + 100 * 1024, "RSS {before} KiB -> {after} KiB");
    // robotgate serves the others, and takes another customer's edit.
    assert_eq!(status(&gate, "a.test", "/a-private/x"), 403);
    assert_eq!(status(&gate, "own.test", "/own/x"), 403);
    put(&gate, "www/a.test/robots.txt", b"User-agent: *\nDisallow: /edited/\n");
    assert!(within(Duration::from_secs(5), || status(&gate, "a.test", "/edited/x") == 403).is_some());
}

#[test]
fn issue_66_a_site_file_of_100000_hosts_delays_no_other_customers_edit() {
    let origin = Origin::start();
    let gate = start(&origin, "", &[("www/a.test/robots.txt", b"User-agent: *\nDisallow: /a-private/\n")]);
    put(&gate, "sites/a.test.yaml", site(&origin, &["a.test"]).as_bytes());
    assert!(within(Duration::from_secs(5), || status(&gate, "a.test", "/a-private/x") == 403).is_some());
    let hosts: String = (0..100_000).map(|i| format!("  - h{i}.big.test\n")).collect();
    std::fs::create_dir_all(gate.path("www/h0.big.test")).unwrap();
    std::fs::write(gate.path("www/h0.big.test/robots.txt"), "User-agent: *\nDisallow: /big/\n").unwrap();
    let big = format!("name: big\nhosts:\n{hosts}upstream: \"{}\"\n", origin.addr);
    let start = Instant::now();
    put(&gate, "sites/big.yaml", big.as_bytes());
    let loaded = within(Duration::from_secs(10), || status(&gate, "h99999.big.test", "/big/x") == 403);
    assert!(loaded.is_some(), "100,000 hosts not served within 10 s\n{}", gate.stderr());
    println!("a site file of 100,000 hosts in force after {:?}", start.elapsed());
    assert_eq!(status(&gate, "h4242.big.test", "/big/x"), 403);
    // Another customer's edit, with the big file beside it.
    for k in 0..3 {
        put(&gate, "www/a.test/robots.txt", format!("User-agent: *\nDisallow: /edit-{k}/\n").as_bytes());
        let t = within(Duration::from_secs(2), || status(&gate, "a.test", &format!("/edit-{k}/x")) == 403);
        assert!(t.is_some(), "edit {k} not in force within 2 s\n{}", gate.stderr());
        println!("edit {k} in force after {:?}", t.unwrap());
    }
}

#[test]
fn issue_66_a_u_label_host_is_the_a_label_clients_send_and_clashes_with_it() {
    let origin = Origin::start();
    let gate = start(&origin, "", &[("www/xn--bcher-kva.test/robots.txt", b"User-agent: *\nDisallow: /buch/\n")]);
    put(&gate, "sites/buecher.yaml", site(&origin, &["bücher.test"]).as_bytes());
    // Clients send the A-label (curl, browsers: UTS #46).
    let served = within(Duration::from_secs(5), || status(&gate, "xn--bcher-kva.test", "/buch/x") == 403);
    assert!(served.is_some(), "the U-label's site answers its A-label\n{}", gate.stderr());
    assert_eq!(status(&gate, "XN--BCHER-KVA.test.", "/buch/x"), 403, "case and a trailing dot aside");
    // A second file naming the A-label clashes, naming both files.
    put(&gate, "sites/zz.yaml", site(&origin, &["xn--bcher-kva.test"]).as_bytes());
    assert!(
        logged(&gate, &["sites/zz.yaml", "host `xn--bcher-kva.test` is also a host in", "buecher.yaml"]),
        "{}",
        gate.stderr()
    );
    let record = || std::fs::read_to_string(gate.path("robotgate-site-hosts.json")).unwrap_or_default();
    assert!(within(Duration::from_secs(5), || record().contains("xn--bcher-kva.test")).is_some(), "{}", record());
    assert!(!record().contains("bücher"), "hosts are kept in their canonical form: {}", record());
}
