//! What the range tests share.

use std::net::IpAddr;

pub(super) fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

pub(super) fn feed(prefixes: &[&str]) -> String {
    let items: Vec<String> = prefixes
        .iter()
        .map(|p| {
            let key = if p.contains(':') { "ipv6Prefix" } else { "ipv4Prefix" };
            format!(r#"{{"{key}": "{p}"}}"#)
        })
        .collect();
    format!(r#"{{"creationTime": "2026-08-21T00:00:00.000000", "prefixes": [{}]}}"#, items.join(", "))
}
