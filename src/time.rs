//! Time as text, in one place: calendar arithmetic without a date crate
//! (the proleptic Gregorian calendar in eras of 400 years, after Howard
//! Hinnant's algorithms), RFC 3339 written and read, for records, access
//! logs and certificates alike; and "now", [`Clock`], the one clock every
//! caller reads (fixed for tests and replay).

use std::fmt::Write as _;
use std::time::Instant;

/// Days since 1970-01-01 of a date.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date (year, month, day) of a day number (inverse of [`days_from_civil`]).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A time in Unix milliseconds as RFC 3339 UTC with milliseconds
/// (`2026-11-23T21:09:50.123Z`), the form records use.
///
/// The digits are written into a fixed template, the date and time once a
/// second per thread: `format!` cost about 3,000 instructions, a tenth of a
/// refused request's own work.
pub fn rfc3339_ms(unix_ms: u64) -> String {
    let mut out = String::with_capacity(24);
    write_rfc3339_ms(&mut out, unix_ms);
    out
}

/// [`rfc3339_ms`] written over `out` (cleared first), in its buffer.
pub fn write_rfc3339_ms(out: &mut String, unix_ms: u64) {
    thread_local! {
        /// The last second written, and its text: records come in runs.
        static LAST: std::cell::Cell<(u64, [u8; 24])> = const { std::cell::Cell::new((u64::MAX, [0; 24])) };
    }
    out.clear();
    let secs = unix_ms / 1000;
    let (last, mut text) = LAST.get();
    if last != secs {
        let Some(t) = second_text(secs) else {
            // After the year 9999: as many digits as it takes.
            let (days, rem) = (secs / 86_400, secs % 86_400);
            let (y, m, d) = civil_from_days(days as i64);
            let _ = write!(
                out,
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60,
                unix_ms % 1000
            );
            return;
        };
        text = t;
        LAST.set((secs, text));
    }
    write_digits(&mut text[20..23], unix_ms % 1000);
    // The template and its digits are ASCII.
    out.push_str(std::str::from_utf8(&text).unwrap_or_default());
}

/// `YYYY-MM-DDTHH:MM:SS.000Z` of a Unix second; `None` after the year 9999.
fn second_text(secs: u64) -> Option<[u8; 24]> {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let year = u64::try_from(y).ok().filter(|&y| y <= 9999)?;
    let mut text = *b"0000-00-00T00:00:00.000Z";
    // (offset, width, value) of each field.
    let fields = [
        (0, 4, year),
        (5, 2, m as u64),
        (8, 2, d as u64),
        (11, 2, rem / 3600),
        (14, 2, rem % 3600 / 60),
        (17, 2, rem % 60),
    ];
    for (at, width, value) in fields {
        write_digits(&mut text[at..at + width], value);
    }
    Some(text)
}

/// `value`'s last `digits.len()` decimal digits, zero-padded, into `digits`.
fn write_digits(digits: &mut [u8], mut value: u64) {
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// The Unix milliseconds of an RFC 3339 time (`2026-11-23T21:09:50Z`,
/// `2026-11-23T21:09:50.123456+01:00`, RFC 3339 5.6; a space for `T` and a
/// lower-case `z` are accepted; fractions below the millisecond are cut);
/// `None` for any other text, or a time before 1970.
pub fn parse_rfc3339_ms(text: &str) -> Option<u64> {
    u64::try_from(parse_rfc3339(text.as_bytes())?).ok()
}

/// [`parse_rfc3339_ms`] as signed milliseconds, for times before 1970 too.
pub fn parse_rfc3339(t: &[u8]) -> Option<i64> {
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        t.get(r)?.iter().try_fold(0i64, |n, &d| d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0')))
    };
    let sep = |i: usize, c: &[u8]| t.get(i).is_some_and(|b| c.contains(b));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (y, mo, d, h, mi, s) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let (mut i, mut ms, mut scale) = (19, 0, 100);
    if t.get(i) == Some(&b'.') {
        i += 1;
        if !t.get(i).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        while let Some(digit) = t.get(i).filter(|b| b.is_ascii_digit()) {
            ms += i64::from(digit - b'0') * scale;
            scale /= 10;
            i += 1;
        }
    }
    let offset = match t.get(i..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let two = |a: u8, b: u8| {
                (a.is_ascii_digit() && b.is_ascii_digit()).then(|| i64::from((a - b'0') * 10 + b - b'0'))
            };
            let secs = two(*h1, *h2)? * 3600 + two(*m1, *m2)? * 60;
            if *sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    Some((days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset) * 1000 + ms)
}

/// The clock a decision reads: monotonic for rates, wall time for Visit-time.
/// Read only when a bot's group has a pace or hours, so most requests never
/// ask the system for the time.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    /// The system's clocks.
    System,
    /// A fixed time (tests, replays of logs).
    Fixed {
        /// Now, monotonic.
        instant: Instant,
        /// Now, seconds since the Unix epoch (UTC).
        unix_secs: u64,
    },
}

impl Clock {
    /// Now, monotonic.
    pub fn instant(self) -> Instant {
        match self {
            Clock::System => Instant::now(),
            Clock::Fixed { instant, .. } => instant,
        }
    }

    /// Now, milliseconds since the Unix epoch (UTC).
    pub fn unix_ms(self) -> u64 {
        match self {
            Clock::System => {
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
            }
            Clock::Fixed { unix_secs, .. } => unix_secs.saturating_mul(1000),
        }
    }

    /// Now, seconds since the Unix epoch (UTC).
    pub fn unix_secs(self) -> u64 {
        match self {
            Clock::System => {
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
            }
            Clock::Fixed { unix_secs, .. } => unix_secs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_is_the_inverse_of_rfc3339_ms() {
        for ms in [0, 951_782_400_007, 1_795_468_190_123] {
            assert_eq!(parse_rfc3339_ms(&rfc3339_ms(ms)), Some(ms));
        }
        assert_eq!(parse_rfc3339_ms("2026-11-23T21:09:50Z"), Some(1_795_468_190_000));
        // One parser for every RFC 3339 time read (records, access logs): offsets too.
        assert_eq!(parse_rfc3339_ms("2026-11-23T22:09:50.5+01:00"), Some(1_795_468_190_500));
        assert_eq!(parse_rfc3339_ms("2026-11-23 21:09:50.123456z"), Some(1_795_468_190_123));
        for bad in [
            "",
            "2026-11-23",
            "2026-13-01T00:00:00Z",
            "2026-11-23T21:09:50",
            "2026-11-23T21:09:5xZ",
            "2026-11-23T21:09:50.Z",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_template_writes_what_format_writes() {
        let format = |unix_ms: u64| {
            let secs = unix_ms / 1000;
            let (days, rem) = (secs / 86_400, secs % 86_400);
            let (y, m, d) = civil_from_days(days as i64);
            format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60,
                unix_ms % 1000
            )
        };
        let mut ms = 0u64;
        while ms < 400_000_000_000_000 {
            assert_eq!(rfc3339_ms(ms), format(ms), "{ms}");
            ms = ms * 3 + 7_919;
        }
        for ms in
            [0, 999, 1_000, 86_399_999, 951_782_400_007, 1_795_468_190_123, 253_402_300_799_999, 253_402_300_800_000]
        {
            assert_eq!(rfc3339_ms(ms), format(ms), "{ms}");
        }
    }

    #[test]
    fn civil_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for z in [-800_000, -1, 0, 59, 11_016, 20_000, 2_000_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn rfc3339_of_known_times() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_782_400_007), "2000-02-29T00:00:00.007Z");
        assert_eq!(rfc3339_ms(1_795_468_190_123), "2026-11-23T21:09:50.123Z");
    }
}
