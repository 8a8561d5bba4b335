//! The `robotgate` command line: `serve`, `check`, `lint`, `classify`, `config check`, `robots show`, `demo`.

use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// mimalloc: measured faster than glibc malloc for Pingora's per-request
/// allocations (see BENCHMARKS.md); the passthrough baseline uses it too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "robotgate", version, about = "A reverse proxy that enforces a site's own robots.txt")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy (the main job).
    Serve {
        /// The configuration file.
        #[arg(long, short, default_value = "conf/robotgate.yaml")]
        config: PathBuf,
        /// Run in the background (Pingora daemon mode).
        #[arg(long, short)]
        daemon: bool,
        /// Take over the listening sockets of a running robotgate (Pingora graceful upgrade).
        #[arg(long, short)]
        upgrade: bool,
        /// PID file (daemon mode and upgrades).
        #[arg(long)]
        pid_file: Option<String>,
        /// Unix socket for handing listeners over on upgrade.
        #[arg(long)]
        upgrade_sock: Option<String>,
    },
    /// Run robotgate on 127.0.0.1 in front of a built-in demo site, and print what to try.
    Demo {
        /// Port of the proxy.
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Directory for the demo's robots.txt, humans.txt, config and violation log
        /// (default: a directory under the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Exit 0 if robotgate answers on ADDR (for container health checks).
    Health {
        /// host:port of a robotgate listener.
        #[arg(default_value = "127.0.0.1:8080")]
        addr: String,
    },
    /// Configuration commands.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// robots.txt commands.
    #[command(subcommand)]
    Robots(RobotsCommand),
    /// IP range feeds of crawler operators.
    #[command(subcommand)]
    Feeds(FeedsCommand),
    /// Is URL allowed for USER_AGENT by ROBOTS_FILE? Exit 0 allowed, 1 disallowed, 2 error.
    ///
    /// Google's `robots_main` interface: USER_AGENT is the crawler's product
    /// token, taken literally (`Foo Bar` is not `Foo`).
    Check {
        /// Print the verdict as one JSON object.
        #[arg(long)]
        json: bool,
        /// The robots.txt file.
        robots_file: PathBuf,
        /// The crawler's product token.
        user_agent: String,
        /// A URL or path.
        url: String,
    },
    /// Lint robots.txt files: `FILE:LINE: error|warning: message`. Exit 1 on any error.
    Lint {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// robots.txt files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Is the client at IP the robot USER_AGENT names? Checks the published
    /// IP ranges, then forward-confirmed reverse DNS. Exit 0 verified,
    /// 1 spoofed, 3 unverifiable (or not a database robot), 2 error.
    Verify {
        /// The client address.
        ip: std::net::IpAddr,
        /// The User-Agent it sent.
        user_agent: String,
        /// DNS server for the reverse-DNS check, as IP:port (default: the system's).
        #[arg(long)]
        dns: Option<std::net::SocketAddr>,
        /// A directory of feeds replacing the embedded ones (as `verify.feeds`).
        #[arg(long)]
        feeds: Option<PathBuf>,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Sum up violation logs: which bots break robots.txt, how often, which
    /// rules, from where. Exit 0, or 2 on an unreadable file.
    Report {
        /// Violation logs: plain or gzip-compressed (rotated `.1`, `.gz` alike); `-` is stdin.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Only violations of the last DURATION (`90m`, `24h`, `7d`).
        #[arg(long)]
        since: Option<String>,
        /// Only this site.
        #[arg(long)]
        site: Option<String>,
        /// `text` (for a terminal), `json` (the same aggregates, for scripts) or
        /// `html` (one self-contained page with charts).
        #[arg(long, default_value = "text")]
        format: String,
        /// Write the report to FILE instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Decide the lines of existing access logs as the proxy would: which robots
    /// break robots.txt, and which allowed traffic the policy would refuse.
    /// Exit 0, or 2 on an unreadable file or config.
    Replay {
        /// The configuration robotgate would run with.
        #[arg(long, short, default_value = "conf/robotgate.yaml")]
        config: PathBuf,
        /// Access logs: plain or gzip-compressed (rotated `.1`, `.gz` alike); `-` is stdin.
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// Only this site.
        #[arg(long)]
        site: Option<String>,
        /// `combined` (nginx and Apache default), `common` (no User-Agent: paths
        /// only), `json` (one object per line; see --field) or `auto`.
        #[arg(long, default_value = "auto")]
        format: String,
        /// A JSON log's field for NAME, as NAME=KEY (dotted for nesting), e.g.
        /// `ua=http_user_agent`, `path=request_uri`; NAME is one of time, client,
        /// method, target (or path), status, ua (or user_agent), host.
        #[arg(long = "field", value_name = "NAME=KEY")]
        fields: Vec<String>,
        /// Only lines logged in the last DURATION (`90m`, `24h`, `7d`).
        #[arg(long)]
        since: Option<String>,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Confirm robots that publish no ranges by forward-confirmed reverse DNS
        /// (the config's `verify.dns`); without it, replay makes no lookups.
        #[arg(long)]
        dns: bool,
        /// `violations`: write the would-be violation records to stdout, in the
        /// proxy's own JSON-lines format (the report then goes only to --out).
        #[arg(long)]
        emit: Option<String>,
        /// The report: `text`, `json` or `html`.
        #[arg(long, default_value = "text")]
        output: String,
        /// Write the report to FILE instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Classify User-Agents: one JSON object per line (arguments, or one UA per line on stdin).
    Classify {
        /// Also say whether a client at this address is the robot it names
        /// (published ranges only; `robotgate verify` also asks DNS).
        #[arg(long)]
        ip: Option<std::net::IpAddr>,
        /// Also choose the robots.txt group each agent obeys in this file.
        #[arg(long)]
        robots: Option<PathBuf>,
        /// User-Agent strings; none means read stdin.
        user_agents: Vec<String>,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Load and validate the config and every file it names (like `nginx -t`).
    Check {
        /// The configuration file.
        #[arg(long, short, default_value = "conf/robotgate.yaml")]
        config: PathBuf,
    },
}

#[derive(Subcommand)]
enum FeedsCommand {
    /// Download the operators' IP range feeds into DIR (`NAME.json`, what
    /// `verify.feeds` reads). A feed replaces its file only when it parses and
    /// lists prefixes: an empty, truncated, oversized or unreachable answer
    /// keeps the old file. Exit 0 when every feed was updated, 1 otherwise.
    Update {
        /// Where the feeds go.
        #[arg(long, default_value = "conf/feeds")]
        dir: PathBuf,
        /// Fetch NAME from URL instead (repeatable); when given, only these feeds are fetched.
        #[arg(long = "url", value_name = "NAME=URL")]
        urls: Vec<String>,
    },
}

#[derive(Subcommand)]
enum RobotsCommand {
    /// Print the robots.txt each site serves: its file plus the lines robotgate
    /// adds (traps, managed groups), each added line with a comment saying why.
    Show {
        /// The configuration file.
        #[arg(long, short, default_value = "conf/robotgate.yaml")]
        config: PathBuf,
        /// Only this site (by name).
        #[arg(long)]
        site: Option<String>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("robotgate: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve { config, daemon, upgrade, pid_file, upgrade_sock } => {
            let options = robotgate::server::ServeOptions { daemon, upgrade, pid_file, upgrade_sock };
            robotgate::server::serve(&config, options)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Config(ConfigCommand::Check { config }) => config_check(&config),
        Command::Robots(RobotsCommand::Show { config, site }) => robots_show(&config, site.as_deref()),
        Command::Feeds(FeedsCommand::Update { dir, urls }) => feeds_update(&dir, &urls),
        Command::Demo { port, dir } => {
            robotgate::server::ops::demo::run(port, dir)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Health { addr } => health(&addr),
        Command::Check { json, robots_file, user_agent, url } => check(&robots_file, &user_agent, &url, json),
        Command::Lint { format, files } => lint(&files, format),
        Command::Classify { robots, ip, user_agents } => classify(robots, ip, user_agents),
        Command::Verify { ip, user_agent, dns, feeds, json } => verify(ip, &user_agent, dns, feeds, json),
        Command::Report { files, since, site, format, out } => {
            report(&files, since.as_deref(), site, &format, out.as_deref())
        }
        Command::Replay { config, logs, site, format, fields, since, threads, dns, emit, output, out } => {
            let args = ReplayArgs { site, format, fields, since, threads, dns, emit, output, out };
            replay(&config, &logs, args)
        }
    }
}

/// `robotgate report`: stream each log through one bounded summary, then render it.
fn report(
    files: &[PathBuf],
    since: Option<&str>,
    site: Option<String>,
    format: &str,
    out: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    use robotgate::report::render::{self, Format};
    use robotgate::report::{self as core, Filter, Summary};
    use std::io::{BufRead, BufReader, BufWriter};
    let format =
        Format::from_name(format).with_context(|| format!("--format {format}: not one of text, json, html"))?;
    let since = match since {
        None => None,
        Some(text) => {
            let back = robotgate::config::parse_duration(text).map_err(|e| anyhow::anyhow!("--since: {e}"))?;
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let cutoff = now.saturating_sub(back).as_millis() as u64;
            Some(robotgate::record::time::rfc3339_ms(cutoff))
        }
    };
    let mut summary = Summary::new(Filter { since, site });
    for path in files {
        let name = path.display().to_string();
        let input: Box<dyn BufRead + Send> = if name == "-" {
            Box::new(BufReader::with_capacity(1 << 16, io::stdin()))
        } else {
            let file = std::fs::File::open(path).with_context(|| format!("cannot open {name}"))?;
            Box::new(BufReader::with_capacity(1 << 16, file))
        };
        let input = core::decoder(input).with_context(|| format!("cannot read {name}"))?;
        core::feed(input, &name, &mut summary).with_context(|| format!("reading {name}"))?;
    }
    match out {
        Some(path) => {
            let file = std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
            let mut w = BufWriter::new(file);
            render::render(&summary, format, &mut w)?;
            w.flush()?;
        }
        None => {
            let mut w = BufWriter::new(io::stdout().lock());
            render::render(&summary, format, &mut w)?;
            w.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `robotgate replay`'s options, as given.
struct ReplayArgs {
    site: Option<String>,
    format: String,
    fields: Vec<String>,
    since: Option<String>,
    threads: Option<usize>,
    dns: bool,
    emit: Option<String>,
    output: String,
    out: Option<PathBuf>,
}

/// Opens a log (or stdin for `-`), decompressing gzip.
fn open_log(path: &std::path::Path) -> anyhow::Result<Box<dyn BufRead + Send>> {
    let name = path.display().to_string();
    let input: Box<dyn BufRead + Send> = if name == "-" {
        Box::new(io::BufReader::with_capacity(1 << 16, io::stdin()))
    } else {
        let file = std::fs::File::open(path).with_context(|| format!("cannot open {name}"))?;
        Box::new(io::BufReader::with_capacity(1 << 16, file))
    };
    robotgate::report::decoder(input).with_context(|| format!("cannot read {name}"))
}

/// `robotgate replay`: the logs through the config's policy, then the report.
fn replay(config: &std::path::Path, logs: &[PathBuf], args: ReplayArgs) -> anyhow::Result<ExitCode> {
    use robotgate::accesslog::{Format, JsonFields};
    use robotgate::identity::{ByRanges, RangesOnly};
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
    let snap = robotgate::load::load(config).map_err(|problems| {
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("{}", lines.join("\n"))
    })?;
    let only_site = match &args.site {
        None => None,
        Some(name) => Some(
            snap.sites
                .iter()
                .position(|s| &s.conf.name == name)
                .with_context(|| format!("--site {name}: no such site"))?,
        ),
    };
    let mut inputs: Vec<Input> = Vec::with_capacity(logs.len());
    for path in logs {
        inputs.push(Input { name: path.display().to_string(), reader: open_log(path)? });
    }
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
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let since_unix = match &args.since {
        None => None,
        Some(text) => {
            let back = robotgate::config::parse_duration(text).map_err(|e| anyhow::anyhow!("--since: {e}"))?;
            Some(now.saturating_sub(back).as_secs() as i64)
        }
    };
    let ranges_only = RangesOnly(ByRanges { table: &snap.ranges, feeds: &snap.bot_feeds, has_rdns: &snap.bot_rdns });
    let lookups = match args.dns {
        false => None,
        true => {
            use robotgate::server::verify::dns::{DnsConfig, DnsVerifier};
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
            let resolver = DnsVerifier::new(&DnsConfig::from(&snap.settings.dns))
                .map_err(|e| anyhow::anyhow!("--dns: cannot set up the resolver: {e}"))?;
            Some((runtime, resolver))
        }
    };
    let looking_up = lookups.as_ref().map(|(runtime, dns)| robotgate::server::verify::identity::LookingUp {
        snap: &snap,
        dns,
        runtime: runtime.handle(),
    });
    let identify: &(dyn robotgate::identity::Identify + Sync) = match &looking_up {
        Some(l) => l,
        None => &ranges_only,
    };
    let sites = snap
        .sites
        .iter()
        .map(|s| {
            let robots = s.robots.as_ref();
            replay::Site {
                // Traps are not judged from the past (see `robotgate::replay`).
                rules: robotgate::policy::SiteRules { traps: None, ..s.rules() },
                target: &s.conf.target,
                robots_hash: robots.map_or("", |r| r.hash.as_str()),
                file_lines: robots.map_or(0, |r| r.file_lines),
                sitemaps: robots.map_or_else(Vec::new, |r| replay::sitemap_paths(&r.compiled)),
                lint: robots.map_or_else(Vec::new, |r| robotgate::robots::lint::lint(&r.file.body)),
            }
        })
        .collect();
    let setup = Setup {
        sites,
        settings: &snap.settings,
        classifier: &snap.classifier,
        identify,
        bot_feeds: &snap.bot_feeds,
        only_site,
        since_unix,
        format: format.clone(),
    };
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    // Every record is of the chosen site and period already; the filter
    // only names them in the report.
    let since_text = since_unix.map(|s| robotgate::record::time::rfc3339_ms(s.max(0) as u64 * 1000));
    let mut summary = Summary::new(Filter { since: since_text, site: args.site.clone() });
    // Emitted records are folded like the proxy's log (`log.aggregate_window`),
    // on the log's clock.
    let log = &snap.settings.violation_log;
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
            let at = robotgate::record::time::parse_rfc3339_ms(&record.time).unwrap_or(latest);
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

fn feeds_update(dir: &std::path::Path, urls: &[String]) -> anyhow::Result<ExitCode> {
    use robotgate::server::verify::feeds;
    let wanted: Vec<(String, String)> = if urls.is_empty() {
        feeds::sources(&[])
    } else {
        urls.iter()
            .map(|s| s.split_once('=').map(|(n, u)| (n.to_owned(), u.to_owned())))
            .collect::<Option<_>>()
            .context("--url takes NAME=URL")?
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let connector = pingora::connectors::http::v1::Connector::new(None);
    let mut failed = 0;
    for (name, url) in &wanted {
        match runtime.block_on(feeds::update(&connector, dir, name, url)) {
            Ok(feed) => {
                let created = feed.creation_time.as_deref().unwrap_or("no creationTime");
                println!("{name}: updated, {} prefixes ({created})", feed.prefixes.len());
            }
            Err(e) => {
                failed += 1;
                let kept =
                    if dir.join(format!("{name}.json")).exists() { "kept the old file" } else { "no file written" };
                eprintln!("{name}: {kept}: {url}: {e}");
            }
        }
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn load_ranges(feeds: Option<PathBuf>) -> anyhow::Result<robotgate::identity::RangeTable> {
    let Some(dir) = feeds else { return Ok(robotgate::identity::RangeTable::builtin()) };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "json") {
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            files.push((name, std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?));
        }
    }
    let overrides: Vec<(&str, &str)> = files.iter().map(|(n, b)| (n.as_str(), b.as_str())).collect();
    Ok(robotgate::identity::RangeTable::with_overrides(&overrides)?)
}

fn verify(
    ip: std::net::IpAddr,
    user_agent: &str,
    dns: Option<std::net::SocketAddr>,
    feeds: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use robotgate::server::verify::dns::{DnsConfig, DnsVerifier};
    let ranges = load_ranges(feeds)?;
    let classifier = robotgate::agent::Classifier::builtin();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let report = runtime.block_on(async {
        let cfg = DnsConfig {
            nameservers: dns.into_iter().collect(),
            timeout: std::time::Duration::from_millis(2000),
            max_in_flight: 4,
            cache_entries: 16,
        };
        let resolver = DnsVerifier::new(&cfg).ok();
        robotgate::server::verify::identity::report(&classifier, &ranges, resolver.as_ref(), ip, user_agent.as_bytes())
            .await
    });
    if json {
        let v = serde_json::json!({"ip": ip.to_string(), "user_agent": user_agent, "bot": report.bot, "identity": report.outcome, "evidence": report.evidence});
        println!("{v}");
    } else {
        println!("{}: {} ({})", report.outcome, report.bot.as_deref().unwrap_or("-"), report.evidence);
    }
    Ok(ExitCode::from(match report.outcome {
        "verified" => 0,
        "spoofed" => 1,
        _ => 3,
    }))
}

fn classify(
    robots: Option<PathBuf>,
    ip: Option<std::net::IpAddr>,
    user_agents: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let classifier_for_ids = robotgate::agent::Classifier::builtin();
    let ids = ip.map(|_| IdentityByRanges::new(&classifier_for_ids));
    let robots = match robots {
        Some(path) => Some(robotgate::robots::RobotsTxt::compile(
            &std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
        )),
        None => None,
    };
    let classifier = robotgate::agent::Classifier::builtin();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut emit = |ua: &[u8]| -> anyhow::Result<()> {
        let agent = classifier.classify(ua);
        // Browsers obey no group: robots.txt does not bind people.
        let group = match (&robots, agent.is_bot()) {
            (Some(robots), true) => robots.selection_name(&robots.select(&agent.tokens)),
            _ => None,
        };
        let mut line = robotgate::agent::to_json_line(ua, &agent, group);
        if let (Some(ip), Some(ids)) = (ip, &ids) {
            let identity = ids.identity(&agent, ip);
            line.pop(); // the closing brace: one more key
            line.push_str(&format!(",\"ip\":\"{ip}\",\"identity\":\"{identity}\"}}"));
        }
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(())
    };
    if user_agents.is_empty() {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if input.read_until(b'\n', &mut buf).context("reading stdin")? == 0 {
                break;
            }
            let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            emit(line)?;
        }
    } else {
        for ua in &user_agents {
            emit(ua.as_bytes())?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn check(robots_file: &std::path::Path, user_agent: &str, url: &str, json: bool) -> anyhow::Result<ExitCode> {
    use robotgate::robots::{GroupMatch, RobotsTxt};
    let body = std::fs::read(robots_file).with_context(|| format!("reading {}", robots_file.display()))?;
    let robots = RobotsTxt::compile(&body);
    let verdict = robots.allows(user_agent, url);
    let group = match verdict.group {
        GroupMatch::Specific => Some(user_agent),
        GroupMatch::Global => Some("*"),
        GroupMatch::None => None,
    };
    let mut out = io::stdout().lock();
    if json {
        let rule = verdict.rule.map(|r| {
            serde_json::json!({"directive": r.kind.as_str(), "pattern": r.pattern, "line": r.line, "index_html": r.index_html})
        });
        let v = serde_json::json!({
            "allowed": verdict.allowed, "user_agent": user_agent, "url": url,
            "group": group, "rule": rule, "robots_hash": robots.short_hash(),
        });
        writeln!(out, "{v}")?;
    } else {
        let word = if verdict.allowed { "allowed" } else { "disallowed" };
        let group = group.map_or_else(|| "no group applies".to_owned(), |g| format!("group {g}"));
        match verdict.rule {
            Some(r) => writeln!(out, "{word}: line {}: {}: {} ({group})", r.line, r.kind.as_str(), r.pattern)?,
            None => writeln!(out, "{word}: no rule matched ({group})")?,
        }
    }
    Ok(if verdict.allowed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn lint(files: &[PathBuf], format: Format) -> anyhow::Result<ExitCode> {
    use robotgate::robots::lint::{lint, Severity};
    let mut out = io::stdout().lock();
    let mut errors = 0usize;
    let mut json = Vec::new();
    for file in files {
        let body = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        for d in lint(&body) {
            errors += usize::from(d.severity == Severity::Error);
            match format {
                Format::Text => {
                    writeln!(out, "{}:{}: {}: {} [{}]", file.display(), d.line, d.severity.as_str(), d.message, d.code)?
                }
                Format::Json => json.push(serde_json::json!({
                    "file": file.display().to_string(), "line": d.line, "severity": d.severity.as_str(),
                    "code": d.code, "message": d.message,
                })),
            }
        }
    }
    if format == Format::Json {
        writeln!(out, "{}", serde_json::Value::Array(json))?;
    }
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `classify --ip`: the identity the published ranges give (reverse DNS is
/// `robotgate verify`'s).
struct IdentityByRanges {
    ranges: robotgate::identity::RangeTable,
    feeds: Vec<Vec<robotgate::identity::FeedId>>,
    rdns: Vec<bool>,
}

impl IdentityByRanges {
    fn new(classifier: &robotgate::agent::Classifier) -> Self {
        let ranges = robotgate::identity::RangeTable::builtin();
        let bots = classifier.db().bots();
        let feeds =
            bots.iter().map(|b| robotgate::identity::resolve(&ranges, &b.ip_ranges).unwrap_or_default()).collect();
        let rdns = bots.iter().map(|b| !b.rdns.is_empty()).collect();
        IdentityByRanges { ranges, feeds, rdns }
    }

    fn identity(&self, agent: &robotgate::agent::Agent<'_>, ip: std::net::IpAddr) -> &'static str {
        use robotgate::identity::{ByRanges, Identify, RangesOnly};
        let robotgate::agent::AgentKind::Known(i) = agent.kind else { return "not-claimed" };
        let by = ByRanges { table: &self.ranges, feeds: &self.feeds, has_rdns: &self.rdns };
        RangesOnly(by).identify(i, Some(ip)).as_str()
    }
}

fn robots_show(config: &std::path::Path, only: Option<&str>) -> anyhow::Result<ExitCode> {
    let snap = robotgate::load::load(config).map_err(|problems| {
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("{}", lines.join("\n"))
    })?;
    let mut out = io::stdout().lock();
    let mut shown = 0;
    for site in snap.sites.iter().filter(|s| only.is_none_or(|n| s.conf.name == n)) {
        shown += 1;
        writeln!(out, "# ---- site {} ----", site.conf.name)?;
        let Some(robots) = &site.robots else {
            writeln!(out, "# no robots.txt: /robots.txt goes to the origin\n")?;
            continue;
        };
        let body = String::from_utf8_lossy(&robots.file.body);
        for (i, line) in body.lines().enumerate() {
            let n = i as u32 + 1;
            match robots.notes.iter().find(|(l, _)| *l == n) {
                Some((_, why)) => writeln!(out, "{line}  # robotgate: {why}")?,
                None => writeln!(out, "{line}")?,
            }
        }
        writeln!(out)?;
    }
    if shown == 0 {
        anyhow::bail!("no site named `{}`", only.unwrap_or_default());
    }
    Ok(ExitCode::SUCCESS)
}

fn config_check(config: &std::path::Path) -> anyhow::Result<ExitCode> {
    let (problems, warnings) = robotgate::server::ops::check::check(config);
    let mut out = io::stdout().lock();
    for w in &warnings {
        writeln!(out, "{w} (warning)")?;
    }
    if problems.is_empty() {
        writeln!(out, "ok")?;
        return Ok(ExitCode::SUCCESS);
    }
    for p in &problems {
        writeln!(out, "{p}")?;
    }
    Ok(ExitCode::from(1))
}

/// GET /robots.txt over plain TCP; any HTTP answer means the proxy is up.
fn health(addr: &str) -> anyhow::Result<ExitCode> {
    use std::io::Read;
    use std::net::ToSocketAddrs;
    use std::time::Duration;
    let sock = addr.to_socket_addrs()?.next().with_context(|| format!("cannot resolve {addr}"))?;
    let mut stream = std::net::TcpStream::connect_timeout(&sock, Duration::from_secs(3))?;
    stream.set_read_timeout(Some(Duration::from_secs(3)))?;
    stream.write_all(
        b"GET /robots.txt HTTP/1.1\r\nHost: localhost\r\nUser-Agent: robotgate-health\r\nConnection: close\r\n\r\n",
    )?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    if head.starts_with(b"HTTP/1.") {
        Ok(ExitCode::SUCCESS)
    } else {
        anyhow::bail!("{addr} did not answer HTTP")
    }
}
