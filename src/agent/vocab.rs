//! The vocabulary: the needle and word lists every rule draws on, and their
//! lookups.
//!
//! The lists are the only vocabulary of the classifier. They are written from
//! the UA conventions (see `unknown`), not copied from any crawler list. The
//! needle lists are also compiled into the forward automaton (as "signals"),
//! so a browser UA without any suspect needle is decided by one automaton
//! pass, without running the word rules at all.
//!
//! Cost: a word is compared ASCII case-insensitively with the few entries of
//! a set that share its first byte and its length, or searched once for a
//! fixed number of short needles.

use std::sync::OnceLock;

/// Lowercase substrings that make a UA worth the word-level robot rules:
/// robot words, library and runtime names, contact-address markers. Every rule
/// of `unknown::findings` needs one of them to fire (a test checks this), so a
/// UA without any is not examined word by word.
#[rustfmt::skip]
pub(super) const SUSPECT_NEEDLES: &[&str] = &[
    // Robot words (STRONG_BOT_WORDS, WEAK_BOT_WORDS).
    "bot", "crawl", "spider", "slurp", "scrap", "fetch", "harvest", "archiver", "indexer",
    "check", "monitor", "validator", "probe", "proxy", "headless", "scanner", "collector",
    "grabber", "downloader", "parser", "analyzer", "extractor", "subscriber",
    // Monitoring, testing and SEO tooling.
    "synthetic", "lighthouse", "pagespeed", "uptime", "sitemap", "favicon", "verif",
    "screenshot", "thumbnail", "capture", "snapshot", "inspect", "optimizer", "audit",
    "analytics", "index", "sniff", "extract", "mirror", "rss", "podcast",
    // `-agent`, `…Scan`, `SEO` (see `word_evidence`).
    "agent", "scan", "seo",
    // Libraries and CLIs (LIB_PARTS, `http` inside a word).
    "http", "curl", "wget", "urllib", "requests", "axios", "undici", "faraday", "mechanize",
    "lwp", "powershell", "ureq", "phantomjs", "selenium", "puppeteer", "playwright", "jsdom",
    "aria2", "restsharp", "feign", "retrofit", "postman", "golang",
    // Runtimes (LANG_PARTS), as whole parts of compound words.
    "java", "python", "perl", "php", "ruby", "node", "dart", "rust", "deno", "lua", "erlang",
    "elixir", "scala", "kotlin", "dotnet", "cpp", "go-", "-go", "_go", "go_", ".go", "go.",
    "go/",
    // Contact addresses: `www.`, e-mail, `+example.org`, `name (at) example`.
    "www.", "@", "+", "(at)", "[at]",
];

/// Lowercase substrings that mark a browser's platform, engine or browser
/// name. Presence means "looks like a browser" unless there is robot evidence.
#[rustfmt::skip]
pub(super) const MARKER_NEEDLES: &[&str] = &[
    "windows", "win98", "win95", "winnt", "win32", "win64", "wow64", "macintosh", "mac os",
    "mac_powerpc", "x11", "linux", "android", "iphone", "ipad", "ipod", "cpu os", "darwin",
    "cfnetwork", "blackberry", "bb10", "symbian", "series60", "series 60", "series40", "s60;",
    "midp", "cldc", "j2me", "palmos", "palmsource", "webos", "tizen", "kaios", "crkey", "cros",
    "freebsd", "openbsd", "netbsd", "sunos", "amigaos", "risc os", "playstation", "nintendo",
    "xbox", "smarttv", "smart-tv", "hbbtv", "meego", "maemo", "sailfish", "ubuntu", "fedora",
    "wap2.0", "profile/", "configuration/", "applewebkit", "webkit", "gecko", "khtml", "presto",
    "trident", "msie", "chrome", "chromium", "safari", "firefox", "opera", "netscape",
    "konqueror", "netfront", "obigo", "openwave", "polaris", "teleca", "jasmine", "dolfin",
    "blazer", "iemobile", "ucweb", "browser", "lynx", "links", "w3m", "dillo", "mosaic", "icab",
    "omniweb", "galeon", "epiphany", "fban", "fbav", "dalvik", "dreamcast", "psp", "wii",
    "roku", "appletv", "googletv", "netcast", "bravia", "viera",
];

/// First words (lowercase prefixes) of browsers that may carry no marker:
/// handset vendors of the WAP era and browser names. Matched only at the start
/// of the UA and only when the next character is not a lowercase letter
/// (`Nokia3360`, `LG-S365`, `SonyEricssonK610i`, not `Lgtm`).
///
/// `Mozilla` alone is not here: a browser always names its platform or engine
/// (a [`MARKER_NEEDLES`] word), while `Mozilla/5.0 (compatible; Foo/1.0)` is
/// the classic shape of a robot.
#[rustfmt::skip]
pub(super) const FIRST_WORDS: &[&str] = &[
    "opera", "nokia", "samsung", "sonyericsson", "sony", "ericsson", "lg", "lge", "mot",
    "motorola", "alcatel", "htc", "huawei", "zte", "lenovo", "pantech", "sharp", "sanyo",
    "panasonic", "sie", "siemens", "kwc", "kyocera", "amoi", "bird", "philips", "sagem",
    "sendo", "vodafone", "docomo", "kddi", "softbank", "j-phone", "portalmmm", "benq", "asus",
    "acer", "dell", "hp", "hpipaq", "palm", "nec", "toshiba", "tcl", "vivo", "oppo", "xiaomi",
    "meizu", "micromax", "celkon", "tecno", "itel", "infinix", "gionee", "coolpad", "haier",
    "hisense", "spice", "karbonn", "lava", "mitsubishi", "audiovox", "utstarcom", "dopod",
    "qtek", "imate", "i-mate", "apple", "iphone", "ipad", "netscape", "juc", "ucweb",
    "mqqbrowser", "lynx", "links", "elinks", "dillo", "mosaic", "ncsa", "icab", "instagram",
    "pinterest", "twitter", "facebook", "vlc",
];

/// Library/CLI word parts: evidence wherever they appear as a whole part of a
/// word (parts split on `-`, `_`, `.`).
#[rustfmt::skip]
pub(super) const LIB_PARTS: &[&str] = &[
    "curl", "libcurl", "pycurl", "wget", "urllib", "urllib2", "urllib3", "requests", "axios",
    "undici", "faraday", "mechanize", "lwp", "powershell", "postmanruntime", "ureq",
    "phantomjs", "selenium", "puppeteer", "playwright", "jsdom", "aria2", "restsharp", "feign",
    "retrofit", "golang",
];

/// Language runtime names: evidence as part of a compound word
/// (`python-requests`, `aws-sdk-java`) or as a product with a numeric version
/// (`Java/1.8.0`), not as a bare word (`(Java; U; MIDP-2.0)` is a phone).
#[rustfmt::skip]
pub(super) const LANG_PARTS: &[&str] = &[
    "java", "python", "cpython", "perl", "php", "ruby", "node", "nodejs", "go", "dart", "rust",
    "deno", "lua", "erlang", "elixir", "scala", "kotlin", "dotnet", "cpp",
];

/// Robot words that count anywhere inside a word (`bot` has its own rule,
/// `unknown::has_bot`). These name the robot itself (`FooCrawler`)...
#[rustfmt::skip]
pub(super) const STRONG_BOT_WORDS: &[&str] = &[
    "crawl", "spider", "slurp", "scrap", "fetch", "harvest", "archiver", "indexer",
];

/// ...these are evidence too, but a worse name than a strong one in the same
/// UA (`HeadlessChrome/87 YextBot/1.0` is YextBot).
#[rustfmt::skip]
pub(super) const WEAK_BOT_WORDS: &[&str] = &[
    "check", "monitor", "validator", "probe", "proxy", "headless", "scanner", "collector",
    "grabber", "downloader", "parser", "analyzer", "extractor", "subscriber",
    // Monitoring, testing and SEO tooling.
    "synthetic", "lighthouse", "pagespeed", "uptime", "sitemap", "favicon", "verif",
    "screenshot", "thumbnail", "capture", "snapshot", "inspect", "optimizer", "audit",
    "analytics", "index", "sniff", "extract", "mirror", "rss", "podcast",
];

/// Words that are never a robot's own name: browser and platform vocabulary,
/// UA filler, language tags.
#[rustfmt::skip]
const NOT_A_NAME: &[&str] = &[
    "abuse", "admin", "alpha", "amd64", "and", "android", "applewebkit", "arm", "at", "beta",
    "bot", "build", "chrome", "chromium", "compatible", "configuration", "contact", "cpu",
    "crawler", "de", "dev", "dot", "e-mail", "edg", "edge", "edition", "email", "en", "en-gb",
    "en-us", "es", "firefox", "for", "fr", "free", "gecko", "gfe", "gzip", "http", "https", "i",
    "i686", "info", "intel", "ipad", "iphone", "it", "ja", "js", "khtml", "like", "linux",
    "mac", "macintosh", "macos", "mailto", "mobile", "mozilla", "msie", "n", "nl", "none", "nt",
    "null", "of", "opera", "opr", "os", "pl", "please", "ppc", "presto", "profile", "pt",
    "quit", "release", "robot", "ru", "rv", "safari", "see", "spider", "ssl", "subscriber",
    "subscribers", "support", "sv1", "test", "the", "trident", "u", "ua", "unknown",
    "user-agent", "useragent", "version", "via", "visit", "web", "webcrawler", "webkit",
    "win64", "windows", "wow64", "www", "x", "x11", "x64", "x86", "x86_64", "zh-cn",
];

/// Generic robot words: a word all of whose parts (split on `-`, `_`, `.`) are
/// here is not a name by itself; it is widened to the words before it
/// (`Screaming Frog SEO Spider`, `GeekTools Crawler`).
#[rustfmt::skip]
const GENERIC: &[&str] = &[
    "bot", "bots", "robot", "robots", "crawler", "crawlers", "crawl", "crawling", "crawled",
    "spider", "spiders", "webcrawler", "web", "scraper", "scrape", "fetcher", "fetch", "agent",
    "client", "checker", "check", "monitor", "monitoring", "indexer", "harvester", "harvest",
    "archiver", "validator", "scanner", "proxy", "preview", "search", "engine", "websearch",
    "parser", "analyzer", "extractor", "collector", "grabber", "downloader", "probe", "mobile",
    "image", "images", "news", "page", "site", "link", "url", "http", "the", "a", "my", "test",
    "simple", "subscriber", "subscribers", "api", "service", "uptime", "sitemap", "sitemaps",
    "favicon", "screenshot", "thumbnail", "capture", "snapshot", "seo", "rss", "feed", "podcast",
    "audit", "analytics", "inspector", "optimizer", "verification", "synthetic", "tool",
    "tools", "generator",
];

/// Top-level domains of the host names robots give as contact addresses
/// (`Firefox/103.0 abuse.example.fr`); see `unknown::impossible_shape`.
#[rustfmt::skip]
const TLDS: &[&str] = &[
    "com", "net", "org", "io", "co", "fr", "de", "ru", "uk", "nl", "it", "es", "pl", "cz", "jp",
    "cn", "info", "biz", "dev", "app", "ai", "me", "eu", "us", "ca", "au", "be", "ch", "se", "no",
    "dk", "fi", "at", "br", "in", "xyz", "tech", "online", "site",
];

/// Whether `word` is a host name: two or more non-empty dot-separated labels,
/// the last a lowercase [`TLDS`] entry and the one before it holding a
/// letter (`abuse.example.fr`, `Frob.io`; not `537.36`, `ASP.NET`, `.NET` or
/// an app id such as `com.example.app`).
pub(super) fn is_host_name(word: &[u8]) -> bool {
    let word = word.strip_suffix(b".").unwrap_or(word);
    let Some(dot) = word.iter().rposition(|&b| b == b'.') else { return false };
    let (rest, tld) = (&word[..dot], &word[dot + 1..]);
    let labels_ok = rest.split(|&b| b == b'.').all(|l| !l.is_empty());
    let second = rest.rsplit(|&b| b == b'.').next().unwrap_or_default();
    let app_id = ["com.", "org.", "net."]
        .iter()
        .any(|p| word.len() > p.len() && word[..p.len()].eq_ignore_ascii_case(p.as_bytes()));
    labels_ok
        && second.iter().any(u8::is_ascii_alphabetic)
        && !app_id
        && tld.iter().all(u8::is_ascii_lowercase)
        && TLDS.iter().any(|t| t.as_bytes() == tld)
}

/// Browser UAs no database pattern may match (checked by
/// [`Classifier::new`](super::Classifier::new)).
/// Shapes of current desktop and mobile browsers, written for this check.
pub(super) const REFERENCE_BROWSERS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko",
    "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0; SLCC2; .NET CLR 2.0.50727; Media Center PC 6.0)",
    "Opera/9.80 (Windows NT 6.1; U; en) Presto/2.10.289 Version/12.02",
];

/// A word list, lowercase, bucketed by first byte.
///
/// Robot UAs are examined word by word against several lists, so this lookup
/// runs dozens of times per robot request. A binary search over the sorted
/// list cost a string comparison per step (a fifth of the classifier's time on
/// the benchmark mix); here a word is compared only with the few entries that
/// share its first byte and its length.
pub(super) struct WordSet(Vec<Vec<&'static [u8]>>);

impl WordSet {
    fn new(words: &[&'static str]) -> WordSet {
        let mut buckets = vec![Vec::new(); 256];
        for w in words {
            let w = w.trim_end_matches(['/', ';']).as_bytes();
            if let Some(&first) = w.first() {
                let bucket: &mut Vec<&'static [u8]> = &mut buckets[usize::from(first)];
                if !bucket.contains(&w) {
                    bucket.push(w);
                }
            }
        }
        WordSet(buckets)
    }

    /// Whether `word` (any case) is in the set. No allocation.
    pub(super) fn contains(&self, word: &[u8]) -> bool {
        let Some(&first) = word.first() else { return false };
        self.0[usize::from(first.to_ascii_lowercase())]
            .iter()
            .any(|s| s.len() == word.len() && s.eq_ignore_ascii_case(word))
    }

    /// The words that begin with the (lowercase) byte `first`.
    fn starting_with(&self, first: u8) -> &[&'static [u8]] {
        &self.0[usize::from(first)]
    }
}

/// Short lowercase needles, searched for inside a word all at once.
///
/// A robot word is any of some forty needles inside a word. Searching for
/// each in turn cost about 2,500 instructions per suspect word (a feature
/// phone's `Java` and `UNTRUSTED` made a browser string cost 12,000). Here a
/// word is read once: each pair of adjacent bytes is looked up in a bitmap
/// of the needles' first two bytes, and only where a pair begins a needle are
/// the needles of that first byte compared.
pub(super) struct Needles {
    /// Bit `a * 256 + b` is set when some needle begins with `a b`.
    pairs: Vec<u64>,
    /// The needles by first byte, each with whether it is strong.
    by_first: Vec<Vec<(&'static [u8], bool)>>,
}

impl Needles {
    /// `strong` and `weak` needles, lowercase, of two bytes or more.
    fn new(strong: &[&'static str], weak: &[&'static str]) -> Needles {
        let mut pairs = vec![0u64; 65536 / 64];
        let mut by_first = vec![Vec::new(); 256];
        let tagged = strong.iter().map(|n| (n, true)).chain(weak.iter().map(|n| (n, false)));
        for (n, is_strong) in tagged {
            let n = n.as_bytes();
            assert!(n.len() >= 2 && !n.iter().any(u8::is_ascii_uppercase), "needle {n:?}");
            let key = usize::from(n[0]) << 8 | usize::from(n[1]);
            pairs[key / 64] |= 1 << (key % 64);
            by_first[usize::from(n[0])].push((n, is_strong));
        }
        Needles { pairs, by_first }
    }

    /// The strongest needle in `hay` (lowercase): `Some(true)` if a strong
    /// one occurs, `Some(false)` if only weak ones do, `None` if none does.
    pub(super) fn find(&self, hay: &[u8]) -> Option<bool> {
        let mut weak = false;
        for (i, pair) in hay.windows(2).enumerate() {
            let key = usize::from(pair[0]) << 8 | usize::from(pair[1]);
            if self.pairs[key / 64] & (1 << (key % 64)) == 0 {
                continue;
            }
            for &(n, is_strong) in &self.by_first[usize::from(pair[0])] {
                if hay[i..].starts_with(n) {
                    if is_strong {
                        return Some(true);
                    }
                    weak = true;
                }
            }
        }
        weak.then_some(false)
    }
}

/// The word lists as sets, built on first use.
pub(super) struct Sets {
    markers: WordSet,
    first_words: WordSet,
    pub(super) lib: WordSet,
    pub(super) lang: WordSet,
    pub(super) not_a_name: WordSet,
    pub(super) generic: WordSet,
    /// [`STRONG_BOT_WORDS`] (strong) and [`WEAK_BOT_WORDS`].
    pub(super) robot_words: Needles,
}

pub(super) fn sets() -> &'static Sets {
    static SETS: OnceLock<Sets> = OnceLock::new();
    SETS.get_or_init(|| Sets {
        markers: WordSet::new(MARKER_NEEDLES),
        first_words: WordSet::new(FIRST_WORDS),
        lib: WordSet::new(LIB_PARTS),
        lang: WordSet::new(LANG_PARTS),
        not_a_name: WordSet::new(NOT_A_NAME),
        generic: WordSet::new(GENERIC),
        robot_words: Needles::new(STRONG_BOT_WORDS, WEAK_BOT_WORDS),
    })
}

/// Whether the first word is a handset vendor or browser name (see
/// [`FIRST_WORDS`]).
pub(super) fn first_word_is_browser(ua: &[u8]) -> bool {
    let start = ua.iter().position(|b| !b.is_ascii_whitespace() && *b != b'[').unwrap_or(ua.len());
    let ua = &ua[start..];
    let Some(first) = ua.first() else { return false };
    sets().first_words.starting_with(first.to_ascii_lowercase()).iter().any(|w| {
        (2..=16).contains(&w.len())
            && ua.len() >= w.len()
            && ua[..w.len()].eq_ignore_ascii_case(w)
            && ua.get(w.len()).is_none_or(|c| !c.is_ascii_lowercase())
    })
}

/// Whether `word` is a browser platform/engine marker or starts like a
/// handset vendor or browser name.
pub(super) fn is_browser_vocabulary(word: &[u8]) -> bool {
    sets().markers.contains(word) || first_word_is_browser(word)
}

/// Whether `word` is a browser platform/engine marker (`Opera`, `Safari`,
/// `Android`), as opposed to a handset vendor's or an app's first word.
pub(super) fn is_marker(word: &[u8]) -> bool {
    sets().markers.contains(word)
}

/// Whether any [`MARKER_NEEDLES`] occurs (the slow twin of the automaton's
/// marker signal, for tests).
#[cfg(test)]
pub(super) fn has_marker(ua: &[u8]) -> bool {
    MARKER_NEEDLES.iter().any(|n| super::words::contains_ci(ua, n))
}

/// Whether any [`SUSPECT_NEEDLES`] occurs (slow twin of the suspect signal).
#[cfg(test)]
pub(super) fn has_suspect(ua: &[u8]) -> bool {
    SUSPECT_NEEDLES.iter().any(|n| super::words::contains_ci(ua, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A set's entries are lowercase: a lookup compares them with a word of
    /// any case, and a list's words match in any case.
    #[test]
    fn set_entries_are_lowercase() {
        for list in [MARKER_NEEDLES, FIRST_WORDS, LIB_PARTS, LANG_PARTS, NOT_A_NAME, GENERIC] {
            let set = WordSet::new(list);
            for w in list {
                assert!(!w.bytes().any(|b| b.is_ascii_uppercase()), "{w}");
                let upper = w.to_ascii_uppercase();
                assert_eq!(
                    set.contains(upper.trim_end_matches(['/', ';']).as_bytes()),
                    !w.trim_end_matches(['/', ';']).is_empty(),
                    "{w}"
                );
            }
        }
    }
}
