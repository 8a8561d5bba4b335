//! `robotgate replay`: existing access logs through the policy.

use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::common::{load_snapshot, open_log};

/// `robotgate replay`'s options, as given.
pub struct ReplayArgs {
    pub site: Option<String>,
    pub format: String,
    pub fields: Vec<String>,
    pub since: Option<String>,
    pub threads: Option<usize>,
    pub dns: bool,
    pub emit: Option<String>,
    pub output: String,
    pub out: Option<PathBuf>,
}

/// `--since`: the Unix second that far back from now.
fn since(text: Option<&str>) -> anyhow::Result<Option<i64>> {
    let Some(text) = text else { return Ok(None) };
    let back = robotgate::config::parse_duration(text).map_err(|e| anyhow::anyhow!("--since: {e}"))?;
    Ok(Some(robotgate::policy::Clock::System.unix_secs().saturating_sub(back.as_secs()) as i64))
}

/// `robotgate replay`: the logs through the config's policy, then the report.
pub fn run(config: &std::path::Path, logs: &[PathBuf], args: ReplayArgs) -> anyhow::Result<ExitCode> {
    use robotgate::record::aggregate::{Aggregator, Line, Offer};
    use robotgate::replay::{self, Input, ReplayReport, Setup};
    use robotgate::report::render::{self, Format as Output};
    use robotgate::report::{Filter, RecordView, Report, Summary};
    let output = Output::from_name(&args.output)
        .with_context(|| format!("--output {}: not one of text, json, html", args.output))?;
    let emit = match args.emit.as_deref() {
        None => false,
        Some("violations") => true,
        Some(other) => anyhow::bail!("--emit {other}: only `violations` can be emitted"),
    };
    let snap = load_snapshot(config)?;
    let only_site = site_index(&snap, args.site.as_deref())?;
    if snap.sites.iter().any(|s| s.conf.indexing.observe || !s.conf.indexing.rules.is_empty()) {
        eprintln!(
            "robotgate: indexing rules and `observe` are not replayed: access logs hold no bodies and no response \
             headers, so no page's own noindex can be seen (the status page lists them, live)"
        );
    }
    let mut inputs: Vec<Input> = Vec::with_capacity(logs.len());
    for path in logs {
        inputs.push(Input { name: path.display().to_string(), reader: open_log(path)? });
    }
    let format = log_format(&mut inputs, &args)?;
    let since_unix = since(args.since.as_deref())?;
    let lookups = match args.dns {
        false => None,
        true => {
            use robotgate::server::verify::dns::{DnsConfig, DnsVerifier};
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
            let resolver = DnsVerifier::new(&DnsConfig::from(&snap.settings.boot.dns))
                .map_err(|e| anyhow::anyhow!("--dns: cannot set up the resolver: {e}"))?;
            Some((runtime, resolver))
        }
    };
    // With `--dns`, what only reverse DNS can tell is looked up on the spot,
    // blocking the worker (bounded by the resolver's timeout), and cached.
    let look_up = lookups.as_ref().map(|(runtime, dns)| {
        let snap = &snap;
        move |bot: usize, ip: std::net::IpAddr| {
            let verdict = runtime.block_on(dns.verify(ip, &snap.classifier.bot(bot).rdns));
            robotgate::server::verify::identity::identity_of(&verdict)
        }
    });
    let lookup: Option<&(dyn Fn(usize, std::net::IpAddr) -> robotgate::identity::Identity + Sync)> = match &look_up {
        Some(f) => Some(f),
        None => None,
    };
    let sites = sites_of(&snap);
    let setup = Setup {
        sites,
        settings: &snap.settings,
        classifier: &snap.classifier,
        ranges: snap.by_ranges(),
        lookup,
        bot_feeds: &snap.bot_feeds,
        only_site,
        since_unix,
        format: format.clone(),
    };
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    // Every record is of the chosen site and period already; the filter
    // only names them in the report.
    let since_text = since_unix.map(|s| robotgate::time::rfc3339_ms(s.max(0) as u64 * 1000));
    let mut summary = Summary::new(Filter { since: since_text, site: args.site.clone() });
    // Emitted records are folded like the proxy's log (`log.aggregate_window`),
    // on the log's clock.
    let log = &snap.settings.boot.violation_log;
    let mut folding = Aggregator::new(log.aggregate_window.as_millis() as u64, log.aggregate_max_keys, 64 << 20);
    let mut stdout = io::BufWriter::new(io::stdout());
    let mut write_error: Option<io::Error> = None;
    let mut latest = 0u64;
    let write_line = |line: &Line, out: &mut io::BufWriter<io::Stdout>, err: &mut Option<io::Error>| {
        if err.is_none() {
            let written =
                serde_json::to_writer(&mut *out, line).map_err(io::Error::from).and_then(|()| out.write_all(b"\n"));
            if let Err(e) = written {
                *err = Some(e);
            }
        }
    };
    let mut sink = |record: robotgate::record::Record| {
        summary.add(&RecordView::from_record(&record));
        if emit {
            let at = robotgate::time::parse_rfc3339_ms(&record.time).unwrap_or(latest);
            latest = latest.max(at);
            for line in folding.close_due(latest) {
                write_line(&line, &mut stdout, &mut write_error);
            }
            if let Offer::Write(r) = folding.offer(record, at) {
                write_line(&Line::Record(r), &mut stdout, &mut write_error);
            }
        }
    };
    let outcome = replay::run(&setup, inputs, &replay::Options { threads }, &mut sink);
    if emit {
        for line in folding.drain() {
            write_line(&line, &mut stdout, &mut write_error);
        }
        if let Some(e) = write_error {
            return Err(e).context("writing the records");
        }
    }
    stdout.flush()?;
    for (source, m) in &outcome.malformed {
        summary.add_malformed(source, m);
    }
    let names: Vec<&str> = snap.sites.iter().map(|s| s.conf.name.as_str()).collect();
    let mut report = Report::from_summary(&summary);
    report.replay = Some(ReplayReport::new(&outcome, &names, format.name()));
    for (source, after, error) in &outcome.unreadable {
        eprintln!("robotgate: {source}: read error after line {after} (the lines before it were judged): {error}");
    }
    match (&args.out, emit) {
        (Some(path), _) => {
            let file = std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
            let mut w = io::BufWriter::new(file);
            render::write_report(&report, output, &mut w)?;
            w.flush()?;
        }
        (None, true) => {} // stdout has the records.
        (None, false) => {
            let mut w = io::BufWriter::new(io::stdout().lock());
            render::write_report(&report, output, &mut w)?;
            w.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The log format: `--format`, sniffed from the first lines of the first log
/// for `auto` (they stay in its buffer), with `--field`s for JSON.
fn log_format(
    inputs: &mut [robotgate::replay::Input],
    args: &ReplayArgs,
) -> anyhow::Result<robotgate::accesslog::Format> {
    use robotgate::accesslog::{Format, JsonFields};
    let format = match args.format.as_str() {
        "combined" => Format::Combined,
        "common" => Format::Common,
        "json" => Format::Json(JsonFields::default()),
        "auto" => {
            // Sniff the first lines of the first log; they stay in its buffer.
            let first = inputs.first_mut().context("no log given")?;
            let buf = first.reader.fill_buf()?;
            let text = String::from_utf8_lossy(buf);
            let mut lines: Vec<&str> = text.lines().take(20).collect();
            if lines.len() > 1 && !buf.ends_with(b"\n") {
                lines.pop(); // Cut by the buffer.
            }
            Format::sniff(&lines)
                .context("--format auto: cannot tell the format from the first lines; give --format")?
        }
        other => anyhow::bail!("--format {other}: not one of combined, common, json, auto"),
    };
    let format = match (format, args.fields.is_empty()) {
        (f, true) => f,
        (Format::Json(mut fields), false) => {
            for f in &args.fields {
                let (name, key) = f.split_once('=').with_context(|| format!("--field {f}: not NAME=KEY"))?;
                fields.set(name, key).map_err(|e| anyhow::anyhow!("--field {f}: {e}"))?;
            }
            Format::Json(fields)
        }
        (f, false) => anyhow::bail!("--field applies to JSON logs, not {}", f.name()),
    };
    Ok(format)
}

/// The sites of `snap` as replay judges them.
/// The index of `--site NAME` in the snapshot, if one was named.
fn site_index(snap: &robotgate::load::Snapshot, name: Option<&str>) -> anyhow::Result<Option<usize>> {
    let Some(name) = name else { return Ok(None) };
    let found = snap.sites.iter().position(|s| s.conf.name == name);
    found.map(Some).with_context(|| format!("--site {name}: no such site"))
}

fn sites_of(snap: &robotgate::load::Snapshot) -> Vec<robotgate::replay::Site<'_>> {
    use robotgate::replay;
    snap.sites
        .iter()
        .map(|s| {
            let robots = s.robots.as_ref();
            replay::Site {
                // Traps as the proxy judges them, armed when the traps' state
                // says they were (see `robotgate::replay`).
                rules: s.rules(),
                target: &s.conf.target,
                robots_hash: robots.map_or("", |r| r.hash.as_str()),
                lines: robots.map_or(robotgate::robots::LineMap::nothing_added(), |r| &r.lines),
                sitemaps: robots.map_or_else(Vec::new, |r| replay::sitemap_paths(&r.compiled)),
                anchored: robots.map_or_else(Vec::new, |r| replay::anchored_lines(&r.compiled)),
                // Linted as served; findings on the file's lines, by their file line.
                lint: robots.map_or_else(Vec::new, |r| {
                    let found = robotgate::robots::lint::lint(&r.file.body).into_iter();
                    found
                        .filter_map(|d| {
                            Some(robotgate::robots::lint::Diagnostic { line: r.lines.file_line(d.line)?, ..d })
                        })
                        .collect()
                }),
            }
        })
        .collect()
}

/// `robotgate replay --compare OLD NEW`: every line decided under both, in
/// one pass; the verdicts that change, per robot.
pub fn compare(
    old: &std::path::Path,
    new: &std::path::Path,
    logs: &[PathBuf],
    args: ReplayArgs,
) -> anyhow::Result<ExitCode> {
    use robotgate::replay::{compare::compare, Input, Setup};
    let json = match args.output.as_str() {
        "text" => false,
        "json" => true,
        other => anyhow::bail!("--output {other}: --compare writes text or json"),
    };
    let snaps = [
        load_snapshot(old).with_context(|| format!("{}", old.display()))?,
        load_snapshot(new).with_context(|| format!("{}", new.display()))?,
    ];
    let mut inputs: Vec<Input> = Vec::with_capacity(logs.len());
    for path in logs {
        inputs.push(Input { name: path.display().to_string(), reader: open_log(path)? });
    }
    let format = log_format(&mut inputs, &args)?;
    let since_unix = since(args.since.as_deref())?;
    let mut setups = Vec::with_capacity(2);
    for snap in &snaps {
        let only_site = site_index(snap, args.site.as_deref())?;
        setups.push(Setup {
            sites: sites_of(snap),
            settings: &snap.settings,
            classifier: &snap.classifier,
            ranges: snap.by_ranges(),
            lookup: None,
            bot_feeds: &snap.bot_feeds,
            only_site,
            since_unix,
            format: format.clone(),
        });
    }
    let names = (old.display().to_string(), new.display().to_string());
    let found = compare(&setups[0], &setups[1], inputs, (&names.0, &names.1));
    let text = if json { serde_json::to_string_pretty(&found)? + "\n" } else { found.to_text() };
    match &args.out {
        Some(path) => std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?,
        None => io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}
