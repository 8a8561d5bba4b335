//! The report as one JSON document (pretty-printed [`Report`]).
//!
//! serde_json escapes control characters in strings, so hostile strings
//! stay inside their JSON string.

use std::io::{self, Write};

use crate::report::Report;

/// Writes `report` as one JSON document and a newline.
///
/// # Errors
///
/// Errors of `out`.
pub fn write(report: &Report, out: &mut impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{sample, Record};
    use crate::report::{Filter, RecordView, Report, Summary};

    #[test]
    fn parses_back_with_hostile_strings() {
        let evil = "<script>alert(1)</script>\x1b[2J\r\n\"'\u{202e}";
        let mut s = Summary::new(Filter::default());
        let r = Record {
            bot: Some(evil.into()),
            claims: Vec::new(),
            category: "other-bot",
            client: evil.into(),
            identity: Some("spoofed"),
            count: 7,
            ..sample("c", evil, evil, 4, "2025-01-01T00:00:00Z".into())
        };
        s.add(&RecordView::from_record(&r));
        let mut out = Vec::new();
        write(&Report::from_summary(&s), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('\x1b') && !text.contains('\r'));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["violations"], 7);
        let site = &v["sites"][0];
        assert_eq!(site["site"], "s");
        assert_eq!(site["bots"][0]["bot"], evil);
        assert_eq!(site["bots"][0]["identity"]["spoofed"], 7);
        assert_eq!(site["bots"][0]["rules"][0]["line"], 4);
        assert_eq!(site["unknown_clients"][0]["client"], evil);
        assert_eq!(site["days"][0]["day"], "2025-01-01");
        assert_eq!(v["over_time"]["unit"], "hour");
        assert_eq!(v["over_time"]["categories"][0], "other-bot");
        assert_eq!(v["malformed"]["count"], 0);
    }
}
