//! The command line: the clap definitions here, one module per command.
//! Each command's `run` returns the exit code; `main` maps errors to 2.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub mod check;
pub mod classify;
pub mod common;
pub mod config;
pub mod demo;
pub mod feeds;
pub mod health;
pub mod lint;
pub mod replay;
pub mod report;
pub mod robots;
pub mod serve;
pub mod verify;

#[derive(Parser)]
#[command(name = "robotgate", version, about = "A reverse proxy that enforces a site's own robots.txt")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
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
        /// Choose the group as the proxy does for a robot with this token:
        /// a group naming the token as written counts too (`AI2Bot`, which
        /// Google's parser reads as `AI`).
        #[arg(long)]
        proxy: bool,
        /// robotgate.yaml: also print the `X-Robots-Tag` its indexing rules
        /// give each URL (the site by the URL's host, else the default).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The robots.txt file.
        robots_file: PathBuf,
        /// The crawler's product token.
        user_agent: String,
        /// A URL or path; several are checked in turn, one verdict a line.
        #[arg(required = true)]
        urls: Vec<String>,
    },
    /// Lint robots.txt files: `FILE:LINE: error|warning: message`. Exit 1 on any error.
    Lint {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// robotgate.yaml: lint each site's robots.txt too, and warn where an
        /// indexing rule's noindex sits behind a Disallow (`hidden-noindex`).
        #[arg(long)]
        config: Option<PathBuf>,
        /// robots.txt files.
        #[arg(required_unless_present = "config")]
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
        /// Decide every line under two configurations, OLD and NEW (instead of
        /// --config), and report per robot the requests whose verdict changes;
        /// verified search engines newly refused first. `--output text|json`.
        #[arg(long, num_args = 2, value_names = ["OLD", "NEW"], conflicts_with_all = ["emit", "dns"])]
        compare: Option<Vec<PathBuf>>,
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
        /// Judge a whole request instead: its raw head (request line
        /// optional, then `Name: value` lines) from this file, `-` for
        /// stdin; prints the claim and each sign against it (issue #67).
        #[arg(long, value_name = "FILE")]
        headers: Option<PathBuf>,
        /// With `--headers`: the scheme the client's own connection used.
        #[arg(long, default_value = "https", value_parser = ["https", "http", "unknown"])]
        scheme: String,
        /// With `--headers`: the JA4 fingerprint of the client's
        /// ClientHello (as an edge computes it), judged with the headers.
        #[arg(long, value_name = "FINGERPRINT", requires = "headers")]
        ja4: Option<String>,
        /// User-Agent strings; none means read stdin.
        user_agents: Vec<String>,
    },
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Load and validate the config and every file it names (like `nginx -t`).
    Check {
        /// The configuration file.
        #[arg(long, short, default_value = "conf/robotgate.yaml")]
        config: PathBuf,
        /// The program that reads it: `serve` (needs `listen` and each
        /// site's `upstream`) or `nginx` (the module: needs neither, and the
        /// check lists the keys it ignores).
        #[arg(long, default_value = "serve", value_parser = ["serve", "nginx"])]
        host: String,
    },
}

#[derive(Subcommand)]
pub enum FeedsCommand {
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
pub enum RobotsCommand {
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
pub enum Format {
    Text,
    Json,
}
