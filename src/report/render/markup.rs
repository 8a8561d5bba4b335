//! What the two HTML pages (the report and the status page) share: the
//! document around their bodies, the style sheet, the Content-Security-Policy
//! hashes, and how a hostile string becomes text.
//!
//! Both pages are `maud` templates: every value spliced into one is escaped
//! (`&`, `<`, `>`, `"`) unless it is wrapped in `PreEscaped`, which only the
//! constant style sheet and script are. Strings from the log or a request go
//! through [`Text`] on top of that, which also escapes `'` and replaces
//! control and invisible bidirectional characters (see [`escape`]).

use std::borrow::Cow;

use base64::Engine as _;
use maud::{html, Markup, PreEscaped, Render, DOCTYPE};
use sha2::{Digest, Sha256};

use super::is_invisible_control;

/// `s` escaped for HTML text and quoted attribute values.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| matches!(c, '&' | '<' | '>' | '"' | '\'') || c.is_control() || is_invisible_control(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() || is_invisible_control(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A string from the log or a request (User-Agent, path, bot name, ...),
/// spliced into a page as text through [`escape`].
#[derive(Debug, Clone, Copy)]
pub struct Text<'a>(pub &'a str);

impl Render for Text<'_> {
    fn render_to(&self, buffer: &mut String) {
        buffer.push_str(&escape(self.0));
    }
}

/// The style sheet of both pages.
pub(crate) const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:1rem 1.5rem;color:#1b1b1b;background:#fff}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd}h3{font-size:1.05rem;margin-top:1.5rem}
svg.chart{width:100%;height:auto;display:block;background:#fcfcfc;border:1px solid #eee}
svg text{font-family:inherit}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{padding:.25rem .5rem;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}td.w{word-break:break-all}
table.sortable th{cursor:pointer;user-select:none}table.sortable th[aria-sort=descending]::after{content:' \\25BE'}table.sortable th[aria-sort=ascending]::after{content:' \\25B4'}
ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.25rem 1rem}ul.legend svg{vertical-align:middle;margin-right:.25rem}
.note{color:#555}code{background:#f4f4f4;padding:0 .2rem}
";

/// `'sha256-…'` of an inline element's text, for the CSP.
pub(crate) fn csp_hash(text: &str) -> String {
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes())))
}

/// A whole page: `title`, [`STYLE`], a Content-Security-Policy allowing
/// that style and, when given, `script` (both by hash) and nothing else, a
/// meta refresh every `refresh` seconds when given, and `body`, followed by
/// the script.
pub(crate) fn document(title: &str, refresh: Option<u32>, script: Option<&str>, body: Markup) -> Markup {
    let csp = match script {
        Some(s) => {
            format!("default-src 'none'; style-src {}; script-src {}; img-src data:", csp_hash(STYLE), csp_hash(s))
        }
        None => format!("default-src 'none'; style-src {}; img-src data:", csp_hash(STYLE)),
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                @if let Some(secs) = refresh {
                    meta http-equiv="refresh" content=(secs);
                }
                meta http-equiv="Content-Security-Policy" content=(csp);
                link rel="icon" href="data:,";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                (body)
                @if let Some(s) = script {
                    script { (PreEscaped(s)) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_all_five() {
        assert_eq!(escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&#39;f");
        assert_eq!(escape("x\x1by\u{202e}"), "x\u{FFFD}y\u{FFFD}");
    }

    #[test]
    fn text_is_escaped_and_plain_splices_are_too() {
        let evil = "<script>alert('x')</script>\"&\u{202e}";
        let page = html! { p title=(evil) { (Text(evil)) } span { (evil) } }.into_string();
        assert_eq!(
            page,
            "<p title=\"&lt;script&gt;alert('x')&lt;/script&gt;&quot;&amp;\u{202e}\">\
             &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;\u{FFFD}</p>\
             <span>&lt;script&gt;alert('x')&lt;/script&gt;&quot;&amp;\u{202e}</span>"
        );
    }
}
