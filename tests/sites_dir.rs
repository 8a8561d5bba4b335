//! `sites_dir` and `site_template` against the real binary (issue #55
//! item 1): a new site file is a served site, a removed one is gone, a
//! broken one is refused alone, and a site without its own robots.txt
//! takes the template's.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

/// The config: one site of its own (`own.test`, not the default), sites
/// from `{dir}/sites`, and `extra` keys.
fn config(origin: &Origin, extra: &str) -> String {
    format!(
        "listen: [\"127.0.0.1:{{port}}\"]\nthreads: 2\ngrace_period: 1\nsites:\n  - name: own\n    hosts: [\"own.test\"]\n    upstream: \"{}\"\n    robots: {{dir}}/robots.txt\nsites_dir: {{dir}}/sites\n{extra}log:\n  violations: {{dir}}/violations.jsonl\n  level: info\n{}",
        origin.addr,
        common::VERIFY_LOOPBACK
    )
}

/// A site file for `host`, its robots.txt disallowing `/{tag}/`.
fn site_file(gate: &Gate, origin: &Origin, host: &str, tag: &str) -> String {
    let robots = gate.path(&format!("{host}.robots.txt"));
    std::fs::write(&robots, format!("User-agent: *\nDisallow: /{tag}/\n")).unwrap();
    format!("hosts: [\"{host}\"]\nupstream: \"{}\"\nrobots: {}\n", origin.addr, robots.display())
}

/// Put `body` in place at `sites/name` as editors and deploy tools do: a
/// hidden file renamed over it.
fn put(gate: &Gate, name: &str, body: &str) {
    let tmp = gate.path(&format!("sites/.{name}.tmp"));
    std::fs::write(&tmp, body).unwrap();
    std::fs::rename(&tmp, gate.path(&format!("sites/{name}"))).unwrap();
}

/// Whether the gate's log has a line naming `sites/{file}` at `line`.
fn logged(gate: &Gate, file: &str, line: usize) -> bool {
    let (file, line) = (format!("sites/{file}\""), format!("\"line\":{line},"));
    gate.stderr().lines().any(|l| l.contains(&file) && l.contains(&line))
}

fn status(gate: &Gate, host: &str, path: &str) -> u16 {
    get(&gate.url(path), &[("Host", host), ("User-Agent", GOOGLEBOT)]).status
}

fn start(origin: &Origin, extra: &str, files: &[(&str, &[u8])]) -> Gate {
    let mut all: Vec<(&str, &[u8])> = vec![("robots.txt", b"User-agent: *\nDisallow: /own/\n"), ("sites/.keep", b"")];
    all.extend_from_slice(files);
    Gate::start(&config(origin, extra), &all)
}

#[test]
fn a_new_site_file_is_served_a_removed_one_stops_and_a_broken_one_is_refused_alone() {
    let origin = Origin::start();
    let gate = start(&origin, "", &[("sites/README", b"not a site file\n")]);
    assert_eq!(status(&gate, "own.test", "/own/x"), 403, "the config's own site");
    assert_eq!(status(&gate, "a.test", "/x"), 421, "no site yet");

    // A new file: a new site, its robots.txt served and enforced.
    let a = site_file(&gate, &origin, "a.test", "a-private");
    put(&gate, "a.yaml", &a);
    let t = within(Duration::from_secs(2), || status(&gate, "a.test", "/a-private/x") == 403);
    assert!(t.is_some(), "a.yaml not served within 2 s\n{}", gate.stderr());
    let robots = get(&gate.url("/robots.txt"), &[("Host", "a.test")]);
    assert_eq!((robots.status, robots.body.as_str()), (200, "User-agent: *\nDisallow: /a-private/\n"));
    assert_eq!(status(&gate, "a.test", "/public"), 200);

    // A second file, as a list of two sites.
    let b = site_file(&gate, &origin, "b.test", "b-private");
    let c = site_file(&gate, &origin, "c.test", "c-private");
    let list = |s: &str| {
        s.lines().enumerate().map(|(i, l)| format!("{}{l}\n", if i == 0 { "- " } else { "  " })).collect::<String>()
    };
    put(&gate, "bc.yml", &format!("{}{}", list(&b), list(&c)));
    let t = within(Duration::from_secs(2), || status(&gate, "c.test", "/c-private/x") == 403);
    assert!(t.is_some(), "bc.yml not served within 2 s\n{}", gate.stderr());
    assert_eq!(status(&gate, "b.test", "/b-private/x"), 403);

    // Broken: a key misspelt in a.yaml. Refused alone, naming its file and
    // line; a.yaml's last good site stays, the others too.
    put(&gate, "a.yaml", &format!("{a}polcy: {{action: log}}\n"));
    let log = within(Duration::from_secs(2), || logged(&gate, "a.yaml", 4));
    assert!(log.is_some(), "the refusal names a.yaml and its line\n{}", gate.stderr());
    assert!(gate.stderr().contains("polcy"), "{}", gate.stderr());
    assert_eq!(status(&gate, "a.test", "/a-private/x"), 403, "a.yaml's last good site stays");
    assert_eq!(status(&gate, "b.test", "/b-private/x"), 403);
    assert_eq!(status(&gate, "own.test", "/own/x"), 403);

    // A new file that was never good is refused: the others are served.
    put(&gate, "d.yaml", "hosts: [\"d.test\"]\nupstream: \"nowhere\"\n");
    let log = within(Duration::from_secs(2), || logged(&gate, "d.yaml", 2));
    assert!(log.is_some(), "the refusal names d.yaml and its line\n{}", gate.stderr());
    assert_eq!(status(&gate, "d.test", "/x"), 421);
    assert_eq!(status(&gate, "c.test", "/c-private/x"), 403);

    // A host another file (or the config) already has: refused, naming both.
    put(&gate, "e.yaml", &format!("hosts: [\"e.test\", \"b.test\"]\nupstream: \"{}\"\n", origin.addr));
    let log = within(Duration::from_secs(2), || gate.stderr().contains("host `b.test` is also a host in"));
    assert!(log.is_some(), "{}", gate.stderr());
    assert!(gate.stderr().contains("bc.yml"), "the clash names the other file\n{}", gate.stderr());
    assert_eq!(status(&gate, "e.test", "/x"), 421);
    assert_eq!(status(&gate, "b.test", "/b-private/x"), 403, "the site served first stays");

    // Removed: its sites are gone, and e.yaml, refused for a host of
    // bc.yml's, is taken now.
    std::fs::remove_file(gate.path("sites/bc.yml")).unwrap();
    let t = within(Duration::from_secs(2), || status(&gate, "c.test", "/x") == 421);
    assert!(t.is_some(), "bc.yml's sites still served 2 s after its removal\n{}", gate.stderr());
    assert_eq!(status(&gate, "b.test", "/b-private/x"), 200, "b.test is e.yaml's now, without a robots.txt");
    assert_eq!(status(&gate, "e.test", "/b-private/x"), 200);
    assert_eq!(status(&gate, "a.test", "/a-private/x"), 403);
}

#[test]
fn a_site_without_its_own_robots_txt_takes_the_templates_and_writing_it_is_enough() {
    let origin = Origin::start();
    let extra =
        "site_template:\n  robots: \"{dir}/www/{host}/robots.txt\"\n  humans: \"{dir}/www/{host}/humans.txt\"\n";
    let gate = start(
        &origin,
        extra,
        &[
            ("www/t1.test/robots.txt", b"User-agent: *\nDisallow: /t1/\n"),
            ("www/t1.test/humans.txt", b"people of t1\n"),
            ("www/t2.test/.keep", b""),
        ],
    );
    let one = |host: &str| format!("hosts: [\"{host}\"]\nupstream: \"{}\"\n", origin.addr);
    put(&gate, "t1.yaml", &one("t1.test"));
    put(&gate, "t2.yaml", &one("t2.test"));
    let t = within(Duration::from_secs(2), || status(&gate, "t1.test", "/t1/x") == 403);
    assert!(t.is_some(), "t1's robots.txt from the template\n{}", gate.stderr());
    assert_eq!(get(&gate.url("/humans.txt"), &[("Host", "t1.test")]).body, "people of t1\n");
    // t2 has no robots.txt yet: served, nothing enforced, /robots.txt passed to the origin.
    let t = within(Duration::from_secs(2), || status(&gate, "t2.test", "/t2/x") == 200);
    assert!(t.is_some(), "t2 served without a robots.txt\n{}", gate.stderr());
    let hits = origin.hits();
    get(&gate.url("/robots.txt"), &[("Host", "t2.test")]);
    assert_eq!(origin.hits(), hits + 1, "t2's /robots.txt goes to the origin");
    // Writing it is all it takes.
    std::fs::write(gate.path("www/t2.test/.robots.tmp"), "User-agent: *\nDisallow: /t2/\n").unwrap();
    std::fs::rename(gate.path("www/t2.test/.robots.tmp"), gate.path("www/t2.test/robots.txt")).unwrap();
    let t = within(Duration::from_secs(2), || status(&gate, "t2.test", "/t2/x") == 403);
    assert!(t.is_some(), "t2's robots.txt, once written, in force within 2 s\n{}", gate.stderr());
}

#[test]
fn config_check_names_a_broken_site_file_and_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sites")).unwrap();
    std::fs::write(dir.path().join("robots.txt"), "User-agent: *\nDisallow: /x/\n").unwrap();
    let config = dir.path().join("robotgate.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: [\"127.0.0.1:8080\"]\nsites_dir: {0}/sites\nsite_template:\n  robots: {0}/{{host}}.txt\nsites:\n  - hosts: [\"own.test\"]\n    upstream: \"127.0.0.1:8000\"\n    robots: {0}/robots.txt\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let check = || {
        let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
            .args(["config", "check", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        (out.status.code().unwrap(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    std::fs::write(dir.path().join("sites/good.yaml"), "- hosts: [good.test]\n  upstream: \"127.0.0.1:8000\"\n")
        .unwrap();
    assert_eq!(check(), (0, "ok\n".to_owned()));
    std::fs::write(
        dir.path().join("sites/bad.yaml"),
        "- hosts: [bad.test]\n  upstream: \"127.0.0.1:8000\"\n- hosts: [worse.test]\n  upstream: \"127.0.0.1:8000\"\n  target:\n    max_len: 1\n",
    )
    .unwrap();
    let (code, out) = check();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("sites/bad.yaml:6: sites[1].target.max_len"), "{out}");
    std::fs::write(dir.path().join("sites/bad.yaml"), "hosts: [own.test]\nupstream: \"127.0.0.1:8000\"\n").unwrap();
    let (code, out) = check();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("bad.yaml") && out.contains("own.test") && out.contains("robotgate.yaml"), "{out}");
    std::fs::write(dir.path().join("sites/bad.yaml"), "hosts: [b.test\n").unwrap();
    let (code, out) = check();
    assert!(code == 1 && out.contains("bad.yaml:"), "{out}");
}

/// 2,000 sites from one file: `/metrics` stays bounded (series of their
/// own for the first `metrics.per_site_limit` sites, `site="_other"` for
/// the rest) and `/status` shows a page of them (issue #55 item 4).
#[test]
fn at_two_thousand_sites_metrics_stay_bounded_and_status_pages() {
    let origin = Origin::start();
    let extra = "metrics:\n  listen: \"127.0.0.1:{metrics}\"\n  status_page: true\n";
    let gate = start(&origin, extra, &[]);
    // Each with a robots.txt (a site without one classifies nothing, so counts nothing).
    let robots = gate.path("robots.txt");
    let many: String = (0..2000)
        .map(|i| {
            format!(
                "- name: s{i}\n  hosts: [\"s{i}.test\"]\n  upstream: \"{}\"\n  robots: {}\n",
                origin.addr,
                robots.display()
            )
        })
        .collect();
    put(&gate, "many.yaml", &many);
    let t = within(Duration::from_secs(10), || status(&gate, "s1999.test", "/own/x") == 403);
    assert!(t.is_some(), "2,000 sites from one file\n{}", gate.stderr());
    for host in ["own.test", "s0.test", "s98.test", "s500.test", "s1999.test"] {
        assert_eq!(get(&gate.url("/x"), &[("Host", host), ("User-Agent", FIREFOX)]).status, 200, "{host}");
    }
    let metrics = get(&format!("http://127.0.0.1:{}/metrics", gate.metrics_port), &[]).body;
    let requests = |site: &str| {
        metrics
            .lines()
            .filter(|l| {
                l.starts_with("robotgate_requests_total{category=\"browser\",")
                    && l.contains(&format!("site=\"{site}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    let shown: Vec<&str> =
        metrics.lines().filter(|l| l.starts_with("robotgate_requests_total{") && !l.ends_with(" 0")).collect();
    assert_eq!(
        (requests("own"), requests("s0"), requests("s98")),
        (1.0, 1.0, 1.0),
        "the first 100 sites by name: {shown:?}"
    );
    assert_eq!(requests("_other"), 2.0, "s500 and s1999 together");
    assert!(!metrics.contains("site=\"s99\"") && !metrics.contains("site=\"s1999\""));
    println!("/metrics at 2,001 sites: {} bytes", metrics.len());
    assert!(metrics.len() < 256 * 1024, "/metrics is {} bytes", metrics.len());

    let status = |q: &str| {
        let r = get(&format!("http://127.0.0.1:{}/status.json{q}", gate.metrics_port), &[]);
        assert_eq!(r.status, 200);
        serde_json::from_str::<serde_json::Value>(&r.body).unwrap()
    };
    let first = status("");
    assert_eq!(first["paging"]["total"], 2001);
    assert_eq!(first["sites"].as_array().unwrap().len(), 50, "a bounded default page");
    assert_eq!(first["sites"][0]["name"], "own");
    let last = status("?page=41&limit=50");
    let names: Vec<&str> = last["sites"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["s1999"]);
    assert_eq!(last["paging"]["pages"], 41);
    let one = status("?site=s1234");
    assert_eq!((one["sites"].as_array().unwrap().len(), &one["sites"][0]["name"]), (1, &serde_json::json!("s1234")));
    let html = get(&format!("http://127.0.0.1:{}/status?limit=10", gate.metrics_port), &[]).body;
    assert!(html.contains("of 2001") && html.contains("page=2&amp;limit=10"), "{}", &html[..html.len().min(2000)]);
}

#[test]
fn a_removed_site_takes_its_series_off_metrics() {
    let origin = Origin::start();
    let gate = start(&origin, "metrics:\n  listen: \"127.0.0.1:{metrics}\"\n", &[]);
    let file = format!("name: gonesite\n{}", site_file(&gate, &origin, "gone.test", "g"));
    put(&gate, "gone.yaml", &file);
    let t = within(Duration::from_secs(2), || status(&gate, "gone.test", "/g/x") == 403);
    assert!(t.is_some(), "gone.yaml not served within 2 s\n{}", gate.stderr());
    assert_eq!(status(&gate, "gone.test", "/page"), 200);
    let scrape = || get(&format!("http://127.0.0.1:{}/metrics", gate.metrics_port), &[]).body;
    let series = |m: &str| -> Vec<String> {
        m.lines().filter(|l| !l.starts_with('#') && l.contains("site=\"gonesite\"")).map(str::to_owned).collect()
    };
    let before = series(&scrape());
    assert!(before.iter().any(|l| l.starts_with("robotgate_requests_total{")), "{before:?}");

    // Removed: no series of its stays in the scrape (issue 55).
    std::fs::remove_file(gate.path("sites/gone.yaml")).unwrap();
    let t = within(Duration::from_secs(2), || status(&gate, "gone.test", "/x") == 421);
    assert!(t.is_some(), "gone.yaml's site still served 2 s after its removal\n{}", gate.stderr());
    let after = scrape();
    assert_eq!(series(&after), Vec::<String>::new(), "a removed site's series stay");
    assert!(after.contains("site=\"own\""), "the other sites' series stay\n{after}");
}
