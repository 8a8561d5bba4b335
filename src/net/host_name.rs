//! The one canonical form of a site's host name (issue 66): what the
//! config, `sites_dir` and the request side compare.
//!
//! A name is compared as IDNA A-labels (UTS #46, the `idna` crate's
//! `domain_to_ascii`: the mapping browsers and `curl` apply before they
//! send a name), in lower case, without its one trailing dot. So
//! `hosts: ["bücher.example"]` is the `xn--bcher-kva.example` clients send
//! in `Host`, and a second file naming either spelling clashes with the
//! first. Before, the U-label was kept as written: it passed `config
//! check`, no request ever matched it, and a file naming the A-label
//! loaded beside it with no clash.
//!
//! The request side reads `Host` as ASCII only ([`super::site_host`]: a
//! raw UTF-8 name is no host name); for ASCII, the canonical form is the
//! name in lower case, which is how [`crate::config::Settings::site_for_host`]
//! compares (without allocating).

/// The canonical form of a host name as an operator writes it in
/// `sites[].hosts` or a site file: blanks around it and one trailing dot
/// removed, lower case, and each non-ASCII label as its A-label (UTS #46,
/// nontransitional). `Err` says why it is no host name.
///
/// Cost: one pass, one allocation; the UTS #46 mapping only for a name
/// that is not ASCII or has an A-label (`xn--`) to check.
///
/// # Errors
/// Empty, a byte no host name has (`/`, a blank, a line end, `{`, `}`),
/// or a name UTS #46 refuses (with its reason).
///
/// # Example
/// ```
/// use robotgate::net::canonical_host;
/// assert_eq!(canonical_host("Bücher.Example.").unwrap(), "xn--bcher-kva.example");
/// assert_eq!(canonical_host("XN--BCHER-KVA.example").unwrap(), "xn--bcher-kva.example");
/// assert_eq!(canonical_host("shop.example").unwrap(), "shop.example");
/// assert!(canonical_host("a b.example").is_err());
/// ```
pub fn canonical_host(written: &str) -> Result<String, String> {
    let h = plain(written)?;
    if h.is_ascii() {
        let lower = h.to_ascii_lowercase();
        // ASCII without an A-label to check: UTS #46 maps it to its lower
        // case (and an IPv6 literal, `::1`, is no domain name to map).
        if !lower.contains("xn--") {
            return Ok(lower);
        }
    }
    match idna::domain_to_ascii(h) {
        // The mapping can make what `plain` refuses (UTS #46 maps U+2000 to
        // a blank, U+3002 to a dot; found by fuzzing `site_file`), so its
        // result is read as a written name is: the canonical form is its own.
        Ok(ascii) => plain(&ascii).map(str::to_owned),
        Err(e) => Err(format!("is not a host name UTS #46 (IDNA) accepts ({e:?})")),
    }
}

/// A written name without the blanks around it and its one trailing dot, or
/// `Err` if it is empty, has a byte no host name has, or ends in an empty
/// label (`a..`, which would lose a second dot the next time it is read).
fn plain(written: &str) -> Result<&str, String> {
    let h = written.trim();
    let h = h.strip_suffix('.').unwrap_or(h);
    if h.is_empty() || h.ends_with('.') || h.contains(['/', ' ', '\t', '\r', '\n', '{', '}']) {
        return Err("is not a host name".to_owned());
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u_labels_and_a_labels_are_one_name() {
        let a = canonical_host("xn--bcher-kva.example").unwrap();
        assert_eq!(canonical_host("bücher.example").unwrap(), a);
        assert_eq!(canonical_host("BÜCHER.example.").unwrap(), a);
        assert_eq!(canonical_host("Xn--Bcher-Kva.Example").unwrap(), a);
        // UTS #46 maps full-width letters and the ideographic full stop.
        assert_eq!(canonical_host("ｂücher。example").unwrap(), a);
        assert_eq!(canonical_host("bücher.example。").unwrap(), a);
    }

    #[test]
    fn plain_names_and_addresses_keep_their_form() {
        assert_eq!(canonical_host(" Shop.Example. ").unwrap(), "shop.example");
        assert_eq!(canonical_host("127.0.0.1").unwrap(), "127.0.0.1");
        assert_eq!(canonical_host("::1").unwrap(), "::1");
        assert_eq!(canonical_host("localhost").unwrap(), "localhost");
        assert_eq!(canonical_host("under_score.example").unwrap(), "under_score.example");
    }

    #[test]
    fn what_is_no_host_name_says_so() {
        // U+2000 and U+3002 are a blank and a dot to UTS #46.
        for bad in ["", ".", "..", "a..", "a b", "a/b", "{host}", "a\nb", "a\u{2000}b.example", "a\u{3002}\u{3002}"] {
            assert!(canonical_host(bad).is_err(), "{bad:?}");
        }
        // An A-label that is not Punycode.
        let bad = canonical_host("xn--a.example").unwrap_err();
        assert!(bad.contains("UTS #46"), "{bad}");
    }
}
