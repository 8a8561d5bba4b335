//! Values of the non-standard fields sites use: Crawl-delay, Request-rate,
//! Visit-time, Clean-param and Content-Signal.
//!
//! None of these is in RFC 9309 (2.2.4 lets crawlers interpret other records);
//! they come from the 1996 extended-standard draft (Request-rate, Visit-time),
//! Bing and Yandex (Crawl-delay, Clean-param) and Cloudflare's Content Signals.
//! Each parser is lenient about spacing and returns `None` for values a
//! crawler could not use; the linter reports those.

use std::fmt;

/// `Request-rate: n/period [window]`: at most `requests` per `seconds`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestRate {
    /// Requests allowed per period (≥ 1).
    pub requests: u32,
    /// Period in seconds (≥ 1).
    pub seconds: u32,
    /// Optional UTC window in which the rate applies.
    pub window: Option<VisitTime>,
}

impl RequestRate {
    /// The minimum interval between two requests, in seconds.
    pub fn interval_secs(&self) -> f64 {
        f64::from(self.seconds) / f64::from(self.requests)
    }
}

/// `Visit-time: HHMM-HHMM` (UTC). A window may wrap midnight (`2200-0600`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VisitTime {
    /// Start, minutes after 00:00 UTC.
    pub start_min: u16,
    /// End (inclusive), minutes after 00:00 UTC.
    pub end_min: u16,
}

impl VisitTime {
    /// Whether `minute_of_day` (0..1440, UTC) lies in the window.
    pub fn contains(&self, minute_of_day: u16) -> bool {
        if self.start_min <= self.end_min {
            (self.start_min..=self.end_min).contains(&minute_of_day)
        } else {
            minute_of_day >= self.start_min || minute_of_day <= self.end_min
        }
    }

    /// Seconds from `second_of_day` (UTC) until the window next opens; 0 inside it.
    pub fn secs_until_open(&self, second_of_day: u32) -> u32 {
        let minute = (second_of_day / 60) as u16;
        if self.contains(minute) {
            return 0;
        }
        let start = u32::from(self.start_min) * 60;
        if start >= second_of_day {
            start - second_of_day
        } else {
            86_400 - second_of_day + start
        }
    }
}

impl fmt::Display for VisitTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:02}{:02}-{:02}{:02}",
            self.start_min / 60,
            self.start_min % 60,
            self.end_min / 60,
            self.end_min % 60
        )
    }
}

/// `Crawl-delay: seconds` (a non-negative number, fractions allowed, at most a day).
pub fn parse_crawl_delay(value: &str) -> Option<f64> {
    let v = value.trim();
    let v = v.strip_suffix('s').unwrap_or(v).trim_end();
    let secs: f64 = v.parse().ok()?;
    (secs.is_finite() && (0.0..=86_400.0).contains(&secs)).then_some(secs)
}

/// `Request-rate: n/period [HHMM-HHMM]`, period being a number with an optional
/// unit `s`, `m`, `h` or `d` (`1/5`, `1/10s`, `30/1m`, `100/1h 0600-0845`).
pub fn parse_request_rate(value: &str) -> Option<RequestRate> {
    let v = value.trim();
    let (rate, rest) = match v.find(char::is_whitespace) {
        Some(i) => (&v[..i], v[i..].trim()),
        None => (v, ""),
    };
    let (n, period) = rate.split_once('/')?;
    let requests: u32 = n.trim().parse().ok().filter(|&n| n > 0)?;
    let period = period.trim();
    let (num, unit) = match period.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&period[..i], &period[i..]),
        None => (period, "s"),
    };
    let num: u32 = num.parse().ok().filter(|&n| n > 0)?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "s" | "" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return None,
    };
    let seconds = num.checked_mul(scale)?;
    let window = if rest.is_empty() { None } else { Some(parse_visit_time(rest)?) };
    Some(RequestRate { requests, seconds, window })
}

/// `Visit-time: HHMM-HHMM` in UTC; also `HH:MM-HH:MM`, spaces around the dash,
/// and a trailing `UTC`/`GMT`.
pub fn parse_visit_time(value: &str) -> Option<VisitTime> {
    let v = value.trim();
    let v =
        v.strip_suffix("UTC").or_else(|| v.strip_suffix("utc")).or_else(|| v.strip_suffix("GMT")).unwrap_or(v).trim();
    let (a, b) = v.split_once('-')?;
    Some(VisitTime { start_min: hhmm(a)?, end_min: hhmm(b)? })
}

fn hhmm(s: &str) -> Option<u16> {
    let digits: String = s.trim().chars().filter(|&c| c != ':').collect();
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let h: u16 = digits[..2].parse().ok()?;
    let m: u16 = digits[2..].parse().ok()?;
    (h < 24 && m < 60).then_some(h * 60 + m)
}

/// `Clean-param: p1&p2 [/path-prefix]` (Yandex): parameters that do not change
/// the page under the prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanParam {
    /// Parameter names.
    pub params: Vec<String>,
    /// Path prefix the parameters apply to (all paths when absent).
    pub path: Option<String>,
}

/// Parse a `Clean-param` value.
pub fn parse_clean_param(value: &str) -> Option<CleanParam> {
    let mut parts = value.split_whitespace();
    let params: Vec<String> = parts.next()?.split('&').filter(|p| !p.is_empty()).map(str::to_owned).collect();
    if params.is_empty() {
        return None;
    }
    let path = parts.next().map(str::to_owned);
    if parts.next().is_some() {
        return None;
    }
    Some(CleanParam { params, path })
}

/// `Content-Signal: search=yes, ai-input=yes, ai-train=no`: the declared uses.
pub fn parse_content_signal(value: &str) -> Option<Vec<(String, bool)>> {
    let mut out = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=')?;
        let yes = match v.trim().to_ascii_lowercase().as_str() {
            "yes" | "y" | "true" => true,
            "no" | "n" | "false" => false,
            _ => return None,
        };
        out.push((k.trim().to_ascii_lowercase(), yes));
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawl_delay_values() {
        assert_eq!(parse_crawl_delay("10"), Some(10.0));
        assert_eq!(parse_crawl_delay(" 0.5 "), Some(0.5));
        assert_eq!(parse_crawl_delay("5s"), Some(5.0));
        assert_eq!(parse_crawl_delay("-1"), None);
        assert_eq!(parse_crawl_delay("NaN"), None);
        assert_eq!(parse_crawl_delay("soon"), None);
    }

    #[test]
    fn request_rate_values() {
        let r = parse_request_rate("1/5").unwrap();
        assert_eq!((r.requests, r.seconds), (1, 5));
        let r = parse_request_rate("30/1m").unwrap();
        assert_eq!((r.requests, r.seconds), (30, 60));
        assert_eq!(r.interval_secs(), 2.0);
        let r = parse_request_rate("100/1h 0600-0845").unwrap();
        assert_eq!(r.window.unwrap().to_string(), "0600-0845");
        assert_eq!(parse_request_rate("0/5"), None);
        assert_eq!(parse_request_rate("1/5x"), None);
        assert_eq!(parse_request_rate("fast"), None);
    }

    #[test]
    fn visit_time_values_and_wrapping() {
        let v = parse_visit_time("0600-0845").unwrap();
        assert_eq!((v.start_min, v.end_min), (360, 525));
        assert_eq!(parse_visit_time("06:00 - 08:45 UTC"), Some(v));
        assert!(v.contains(400) && !v.contains(600));
        let night = parse_visit_time("2200-0600").unwrap();
        assert!(night.contains(23 * 60) && night.contains(60) && !night.contains(12 * 60));
        assert_eq!(v.secs_until_open(5 * 3600), 3600);
        assert_eq!(v.secs_until_open(7 * 3600), 0);
        assert_eq!(v.secs_until_open(23 * 3600), 7 * 3600);
        assert_eq!(parse_visit_time("2500-0100"), None);
    }

    #[test]
    fn clean_param_and_content_signal() {
        let c = parse_clean_param("utm_source&utm_medium /news/").unwrap();
        assert_eq!(c.params, vec!["utm_source", "utm_medium"]);
        assert_eq!(c.path.as_deref(), Some("/news/"));
        let s = parse_content_signal("search=yes, ai-train=no").unwrap();
        assert_eq!(s, vec![("search".into(), true), ("ai-train".into(), false)]);
        assert_eq!(parse_content_signal("search=maybe"), None);
    }
}
