//! The metrics both hosts serve, defined once: each family's name and help
//! text, the decision histogram's bucket bounds, and the Prometheus text
//! format's lines as the nginx module writes them (the proxy registers the
//! same definitions in the `prometheus` crate, whose encoder writes the
//! same lines).
//!
//! Families only one host serves stay in that host (`server::telemetry`).

use std::fmt::Write as _;

/// A metric family: its name and help text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// Its name.
    pub name: &'static str,
    /// Its `# HELP` text.
    pub help: &'static str,
}

/// `robotgate_decision_seconds`: time to classify and decide a robot's
/// request, or one with an outcome (not a browser's pass).
pub const DECISION_SECONDS: Family =
    Family { name: "robotgate_decision_seconds", help: "Time to classify the User-Agent and decide the request" };

/// The upper bounds of [`DECISION_SECONDS`]'s buckets, in nanoseconds
/// (0.5 µs to 1 ms): a decision takes a microsecond or two.
pub const DECISION_BOUNDS_NS: [u64; 9] = [500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 1_000_000];

/// [`DECISION_BOUNDS_NS`] in seconds, as the histogram's `le` labels read.
/// Each is the nearest `f64` to its decimal (an integer divided by 10^9,
/// both exact): the proxy's and the module's labels are the same text.
pub fn decision_buckets() -> Vec<f64> {
    DECISION_BOUNDS_NS.iter().map(|ns| *ns as f64 / 1e9).collect()
}

/// `robotgate_robots_info{site,hash}`: 1 for the robots.txt in force.
pub const ROBOTS_INFO: Family =
    Family { name: "robotgate_robots_info", help: "The robots.txt version in force per site (value 1)" };

/// Labels of [`ROBOTS_INFO`].
pub const ROBOTS_INFO_LABELS: [&str; 2] = ["site", "hash"];

/// `robotgate_one_client_warning`: the crowd check's warning is on.
pub const ONE_CLIENT_WARNING: Family = Family {
    name: "robotgate_one_client_warning",
    help: "1 while over 90% of a minute's requests come from loopback or private addresses with forwarding headers and trusted_proxies is empty",
};

/// `robotgate_state_up`: the shared store answers.
pub const STATE_UP: Family =
    Family { name: "robotgate_state_up", help: "1 while the shared state store answers, else 0" };

/// `robotgate_feed_age_seconds{feed}`: how old each feed in force is.
pub const FEED_AGE: Family = Family {
    name: "robotgate_feed_age_seconds",
    help: "Seconds since the IP range feed was last known current (its own date, or its last successful refresh)",
};

/// `robotgate_reloads_total`.
pub const RELOADS: Family =
    Family { name: "robotgate_reloads_total", help: "Configuration and file reloads put in force" };

/// `robotgate_reload_failures_total`.
pub const RELOAD_FAILURES: Family =
    Family { name: "robotgate_reload_failures_total", help: "Reloads refused (the last good snapshot stayed)" };

/// `robotgate_reload_refused_total{file,reason}`: files a reload refused
/// ([`crate::load::Problem::refused_series`]).
pub const RELOAD_REFUSED: Family = Family {
    name: "robotgate_reload_refused_total",
    help: "Files refused by a reload, by file and reason (their last good version stayed)",
};

/// Labels of [`RELOAD_REFUSED`].
pub const RELOAD_REFUSED_LABELS: [&str; 2] = ["file", "reason"];

/// The `# HELP` and `# TYPE` lines of `family` (`kind`: `counter`,
/// `gauge`, `histogram`).
pub fn write_head(out: &mut String, family: &Family, kind: &str) {
    let _ = writeln!(out, "# HELP {} {}", family.name, family.help);
    let _ = writeln!(out, "# TYPE {} {kind}", family.name);
}

/// One sample: `name{labels=values} value`, values escaped as the text
/// format asks.
pub fn write_sample(out: &mut String, name: &str, labels: &[&str], values: &[&str], value: impl std::fmt::Display) {
    let mut text = Vec::with_capacity(64);
    write_series(&mut text, name, labels, values);
    out.push_str(&String::from_utf8_lossy(&text));
    let _ = writeln!(out, " {value}");
}

/// `name{label="value",...}`, values escaped as the text format asks.
pub fn write_series(out: &mut Vec<u8>, name: &str, labels: &[&str], values: &[&str]) {
    out.extend_from_slice(name.as_bytes());
    if labels.is_empty() {
        return;
    }
    out.push(b'{');
    for (i, (label, value)) in labels.iter().zip(values).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(label.as_bytes());
        out.extend_from_slice(b"=\"");
        for b in value.bytes() {
            match b {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'"' => out.extend_from_slice(b"\\\""),
                b'\n' => out.extend_from_slice(b"\\n"),
                _ => out.push(b),
            }
        }
        out.push(b'"');
    }
    out.push(b'}');
}

/// A histogram's lines after its head: cumulative `_bucket`s by `bounds`
/// (seconds), then `+Inf`, `_sum` (seconds) and `_count`. `counts`: each
/// bucket's own observations, one more than `bounds` (the last: above
/// them all).
pub fn write_histogram(out: &mut String, name: &str, bounds: &[f64], counts: &[u64], sum_secs: f64) {
    let mut total = 0u64;
    for (i, n) in counts.iter().enumerate() {
        total += n;
        let le = bounds.get(i).map_or_else(|| "+Inf".to_owned(), f64::to_string);
        let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {total}");
    }
    let _ = writeln!(out, "{name}_sum {sum_secs}");
    let _ = writeln!(out, "{name}_count {total}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_read_as_their_decimals() {
        let text: Vec<String> = decision_buckets().iter().map(f64::to_string).collect();
        assert_eq!(
            text,
            ["0.0000005", "0.000001", "0.000002", "0.000005", "0.00001", "0.00002", "0.00005", "0.0001", "0.001"]
        );
        assert_eq!(decision_buckets()[0], 0.000_000_5);
    }

    #[test]
    fn a_histogram_is_cumulative() {
        let mut out = String::new();
        write_histogram(&mut out, "h", &[0.5, 1.0], &[2, 0, 3], 4.25);
        assert_eq!(
            out,
            "h_bucket{le=\"0.5\"} 2\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 5\nh_sum 4.25\nh_count 5\n"
        );
    }

    #[test]
    fn label_values_are_escaped() {
        let mut out = String::new();
        write_sample(&mut out, "g", &["site"], &["a\"b\\c\nd"], 1);
        assert_eq!(out, "g{site=\"a\\\"b\\\\c\\nd\"} 1\n");
    }
}
