//! What a record is counted under: its category and identity slots, its
//! day and hour, names clipped to their caps; and counts that saturate.

use crate::agent::Category;
use crate::report::read::RecordView;

/// Bytes kept of a time string (an RFC 3339 time is at most ~35).
const MAX_TIME: usize = 40;

/// Number of category slots: the categories of [`Category::ALL`], then one
/// for any other string.
pub const CATEGORIES: usize = Category::ALL.len() + 1;

/// The category name of slot `i` (`"other"` for the last).
pub fn category_name(i: usize) -> &'static str {
    Category::ALL.get(i).map_or("other", |c| c.as_str())
}

/// The slot of a category name.
pub fn category_index(name: &str) -> usize {
    Category::ALL.iter().position(|c| c.as_str() == name).unwrap_or(Category::ALL.len())
}

/// Whether robots of slot `i` are not in the bot database: `other-bot`
/// (an unknown robot), `disguised` (a browser's User-Agent on a robot's
/// request), `browser`, or a category this build does not know.
pub(super) fn is_unrecognised(i: usize) -> bool {
    matches!(
        Category::ALL.get(i),
        None | Some(Category::OtherBot) | Some(Category::Disguised) | Some(Category::Browser)
    )
}

/// The identity outcomes counted, in [`BotStats::identity`](super::BotStats::identity) order; any other
/// value counts in a fourth slot.
pub const IDENTITIES: [&str; 3] = ["verified", "spoofed", "unverifiable"];

/// `s` cut to at most `max` bytes at a character boundary.
pub(crate) fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `*total += n`, saturating: counts come from the log, which may lie.
pub(super) fn add(total: &mut u64, n: u64) {
    *total = total.saturating_add(n);
}

pub(super) fn set(dst: &mut String, src: &str) {
    dst.clear();
    dst.push_str(clip(src, MAX_TIME));
}

/// Widens `first..last` to cover the record's violations.
pub(super) fn widen(first: &mut String, last: &mut String, r: &RecordView<'_>) {
    let (f, l) = (r.first_time(), r.last_time());
    if !f.is_empty() && (first.is_empty() || f < first.as_str()) {
        set(first, f);
    }
    if l > last.as_str() {
        set(last, l);
    }
}

fn digits(b: &[u8]) -> bool {
    b.iter().all(u8::is_ascii_digit)
}

/// `YYYY-MM-DD` of an RFC 3339 time.
pub(super) fn day_key(t: &str) -> Option<[u8; 10]> {
    let b = t.as_bytes().get(..10)?;
    if !(digits(&b[..4]) && b[4] == b'-' && digits(&b[5..7]) && b[7] == b'-' && digits(&b[8..10])) {
        return None;
    }
    b.try_into().ok()
}

/// `YYYY-MM-DDTHH` of an RFC 3339 time (`t`, `T` or a space before the hour).
pub(super) fn hour_key(t: &str) -> Option<[u8; 13]> {
    day_key(t)?;
    let b = t.as_bytes().get(..13)?;
    if !(matches!(b[10], b'T' | b't' | b' ') && digits(&b[11..13])) {
        return None;
    }
    let mut k: [u8; 13] = b.try_into().ok()?;
    k[10] = b'T';
    Some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_keys() {
        assert_eq!(hour_key("2025-01-02t03:04:05Z"), Some(*b"2025-01-02T03"));
        assert_eq!(hour_key("2025-01-02"), None);
        assert_eq!(day_key("2025-01-02"), Some(*b"2025-01-02"));
        assert_eq!(day_key("2025-1-02T"), None);
        assert_eq!(day_key("é"), None);
    }
}
