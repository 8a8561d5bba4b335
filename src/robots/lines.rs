//! The lines of a robots.txt, numbered as the parser numbers them, and the
//! map between the lines robotgate serves and the lines of the site's file.

/// One line of a body: its text and its line end (empty for a last line
/// that has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// The text, without the line end.
    pub text: &'a [u8],
    /// `\n`, `\r`, `\r\n`, or empty.
    pub end: &'a [u8],
}

/// The lines of `body` as [`super::parse::parse`] numbers them: LF, CR and
/// CRLF each end one line; a last line without an end counts; an empty body
/// (or a last line end) adds no empty line. Cost: one pass, no allocation.
pub fn lines(body: &[u8]) -> impl Iterator<Item = Line<'_>> {
    let mut rest = body;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (text, end, next) = match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            None => (rest, &rest[rest.len()..], &rest[rest.len()..]),
            Some(i) => {
                let len = if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                (&rest[..i], &rest[i..i + len], &rest[i + len..])
            }
        };
        rest = next;
        Some(Line { text, end })
    })
}

/// The line end a body uses (its first), for lines added to it; `\n` when it has none.
pub fn line_end(body: &[u8]) -> &'static [u8] {
    match lines(body).map(|l| l.end).find(|e| !e.is_empty()) {
        Some(b"\r\n") => b"\r\n",
        Some(b"\r") => b"\r",
        _ => b"\n",
    }
}

/// Which lines of a served robots.txt robotgate added, so that a line of it
/// can be named by its line in the site's own file.
///
/// Kept as the sorted list of added lines: the site's file is most of the
/// body, and a look-up is one binary search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineMap {
    added: Vec<u32>,
}

impl LineMap {
    /// The map of a body whose lines `added` (1-based, ascending) were added.
    pub fn new(added: Vec<u32>) -> LineMap {
        debug_assert!(added.windows(2).all(|w| w[0] < w[1]), "added lines ascend");
        LineMap { added }
    }

    /// The line of the site's file that served line `served` is; `None` for an added line.
    ///
    /// ```
    /// let map = robotgate::robots::LineMap::new(vec![2, 3]);
    /// assert_eq!(map.file_line(1), Some(1));
    /// assert_eq!(map.file_line(2), None);
    /// assert_eq!(map.file_line(4), Some(2));
    /// ```
    pub fn file_line(&self, served: u32) -> Option<u32> {
        match self.added.binary_search(&served) {
            Ok(_) => None,
            Err(before) => Some(served - before as u32),
        }
    }

    /// The map of a body to which nothing was added (or of no body).
    pub fn nothing_added() -> &'static LineMap {
        static NOTHING: LineMap = LineMap { added: Vec::new() };
        &NOTHING
    }

    /// Whether served line `served` is one robotgate added.
    pub fn is_added(&self, served: u32) -> bool {
        self.added.binary_search(&served).is_ok()
    }

    /// The added lines, ascending.
    pub fn added(&self) -> &[u32] {
        &self.added
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(body: &[u8]) -> Vec<(&[u8], &[u8])> {
        lines(body).map(|l| (l.text, l.end)).collect()
    }

    #[test]
    fn lines_are_counted_as_the_parser_counts_them() {
        assert!(texts(b"").is_empty());
        assert_eq!(texts(b"a"), vec![(&b"a"[..], &b""[..])]);
        assert_eq!(texts(b"a\n"), vec![(&b"a"[..], &b"\n"[..])]);
        let got = texts(b"a\r\nb\rc\n\nd");
        let want: Vec<(&[u8], &[u8])> = vec![(b"a", b"\r\n"), (b"b", b"\r"), (b"c", b"\n"), (b"", b"\n"), (b"d", b"")];
        assert_eq!(got, want);
        assert_eq!(texts(b"a\r\r\nb").len(), 3);
        // The parser gives every rule the same number.
        let body = b"user-agent: *\r\rdisallow: /x\r\n\r\ndisallow: /y\n";
        let robots = super::super::RobotsTxt::compile(body);
        let numbered: Vec<u32> = robots.rules().iter().map(|r| r.line).collect();
        let found: Vec<u32> = lines(body)
            .enumerate()
            .filter(|(_, l)| l.text.starts_with(b"disallow"))
            .map(|(i, _)| i as u32 + 1)
            .collect();
        assert_eq!(numbered, found);
    }

    #[test]
    fn the_line_end_is_the_files_own() {
        assert_eq!(line_end(b"a\r\nb\n"), b"\r\n");
        assert_eq!(line_end(b"a\rb"), b"\r");
        assert_eq!(line_end(b"a"), b"\n");
        assert_eq!(line_end(b""), b"\n");
    }

    #[test]
    fn served_lines_map_to_file_lines() {
        let map = LineMap::new(vec![1, 4, 5, 9]);
        let got: Vec<Option<u32>> = (1..=10).map(|l| map.file_line(l)).collect();
        assert_eq!(got, vec![None, Some(1), Some(2), None, None, Some(3), Some(4), Some(5), None, Some(6)]);
        assert!(map.is_added(4) && !map.is_added(3));
        assert_eq!(LineMap::default().file_line(7), Some(7));
    }
}
