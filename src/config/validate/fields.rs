//! Value syntaxes shared by every part of the file: header values, seconds,
//! `host:port`, durations and sizes.

use std::time::Duration;

use super::super::{ConfigError, RawDuration, RawSize};
use crate::net::is_host_port;

pub(super) fn no_crlf(field: &str, value: &str, errors: &mut Vec<ConfigError>) {
    // Header values and bodies must not smuggle in headers.
    if value.contains(['\r', '\n', '\0']) {
        errors.push(ConfigError::new(field, "must not contain CR, LF or NUL"));
    }
}

pub(super) fn header_value(field: &str, value: &str, errors: &mut Vec<ConfigError>) {
    no_crlf(field, value, errors);
    if value.bytes().any(|b| b < 0x20 && b != b'\t' || b == 0x7f) {
        errors.push(ConfigError::new(field, "must be a valid HTTP header value (no control characters)"));
    }
}

pub(super) fn seconds(field: &str, v: Option<f64>, default: f64, errors: &mut Vec<ConfigError>) -> Duration {
    let v = v.unwrap_or(default);
    if !(v.is_finite() && v > 0.0 && v <= 86_400.0) {
        errors.push(ConfigError::new(field, format!("must be a number of seconds between 0 and 86400, not {v}")));
        return Duration::from_secs_f64(default);
    }
    Duration::from_secs_f64(v)
}

/// A `host:port` address, checked for syntax only (the loader resolves names).
pub(super) fn host_port(field: &str, s: &str, errors: &mut Vec<ConfigError>) -> Option<String> {
    let s = s.trim();
    if is_host_port(s) {
        // A literal address is written in one canonical form, so that two
        // spellings of one listener compare equal.
        Some(s.parse::<std::net::SocketAddr>().map_or_else(|_| s.to_owned(), |a| a.to_string()))
    } else {
        errors.push(ConfigError::new(field, format!("`{s}` is not an address of the form host:port")));
        None
    }
}

/// Seconds in a [`RawDuration`]: a number, or text for [`parse_duration`].
pub(super) fn duration(raw: &RawDuration) -> Result<Duration, String> {
    let secs = match raw {
        RawDuration::Secs(n) => *n,
        RawDuration::Text(t) => return parse_duration(t),
    };
    Ok(Duration::from_secs(secs))
}

/// A duration written as a number of seconds or a number and a unit:
/// `3600`, `3600s`, `90m`, `24h`, `7d`.
///
/// # Errors
/// Anything else, or a duration too long to count in seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let bad = || format!("`{t}` is not a duration such as 24h, 90m or 3600s");
    let n: u64 = n.parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    Ok(Duration::from_secs(n.checked_mul(scale).ok_or_else(|| format!("`{t}` is too long"))?))
}

/// Bytes in a [`RawSize`]: a number, or a number and a unit (`KB` = 1000, `KiB` = 1024).
pub(super) fn size(raw: &RawSize) -> Result<u64, String> {
    let text = match raw {
        RawSize::Bytes(n) => return Ok(*n),
        RawSize::Text(t) => t.trim(),
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let bad = || format!("`{text}` is not a size such as 1048576, \"100MB\" or \"512KiB\"");
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        _ => return Err(bad()),
    };
    n.checked_mul(mult).ok_or_else(bad)
}
