//! JSON-lines access logs (Caddy, Traefik, Envoy, nginx `escape=json`).
//!
//! Each of our fields is read from the first of a list of paths into the
//! object that is present and not `null`. A path is dotted keys with
//! optional array indexes (`request.headers.User-Agent[0]`); a key that
//! itself contains dots (`"http.request.method"`) is found too, since the
//! whole path is first tried as one key. The defaults ([`JsonFields::default`])
//! cover the usual servers at once:
//!
//! | field  | paths tried, in order |
//! |--------|-----------------------|
//! | time   | `ts` (Caddy), `StartUTC` (Traefik), `start_time` (Envoy), `time`, `@timestamp`, `timestamp`, `time_iso8601`, `time_local`, `msec` (nginx) |
//! | client | `request.client_ip`, `request.remote_ip` (Caddy), `ClientHost` (Traefik), `remote_addr` (nginx), `downstream_remote_address` (Envoy), `client_ip`, `remote_ip`, `client` |
//! | method | `request.method` (Caddy), `RequestMethod` (Traefik), `request_method` (nginx), `method` |
//! | target | `request.uri` (Caddy), `RequestPath` (Traefik), `request_uri` (nginx), `path` (Envoy), `uri`, `url` |
//! | status | `status` (Caddy, nginx), `DownstreamStatus` (Traefik), `response_code` (Envoy) |
//! | ua     | `request.headers.User-Agent[0]` (Caddy), `request_User-Agent` (Traefik), `http_user_agent` (nginx), `user_agent` (Envoy), `ua` |
//! | host   | `request.host` (Caddy), `RequestHost` (Traefik), `host` (nginx), `authority` (Envoy), `http_host` |
//!
//! Values: a time is a number of seconds since 1970 (fractions allowed;
//! values above 1e11, 1e14 and 1e17 are read as milliseconds, microseconds
//! and nanoseconds), or a string in RFC 3339, `%t` form or digits. A client
//! `ip:port` or `[ip]:port` loses its port. A status may be a number or a
//! string. A header logged as an array of values yields its first value.
//!
//! The line is parsed into a small tree whose strings borrow from the line
//! unless they have JSON escapes; objects and arrays still cost an
//! allocation each, so combined format is the fast path. Nesting is bounded
//! by `serde_json`'s recursion limit (128).

use std::borrow::Cow;
use std::net::SocketAddr;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{combined::clf_time, Entry, ParseError};

/// A path into a JSON object: dotted keys, each optionally followed by
/// `[n]` indexes (`request.headers.User-Agent[0]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

impl FieldPath {
    /// Parses `path`. Brackets that are not a closing `[digits]` suffix stay
    /// part of the key. Never fails: any string names some key.
    pub fn parse(path: &str) -> FieldPath {
        let mut steps = Vec::new();
        for part in path.split('.') {
            let mut key = part;
            let mut indexes = Vec::new();
            while let Some(open) = key.strip_suffix(']').and_then(|k| k.rfind('[')) {
                match key[open + 1..key.len() - 1].parse::<usize>() {
                    Ok(i) if open > 0 => {
                        indexes.push(i);
                        key = &key[..open];
                    }
                    _ => break,
                }
            }
            if !key.is_empty() {
                steps.push(Step::Key(key.to_string()));
            }
            steps.extend(indexes.into_iter().rev().map(Step::Index));
        }
        FieldPath { text: path.to_string(), steps }
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Moves the value at this path out of `v` (leaving `null`); `None` when
    /// it is absent or `null`. Of repeated keys, the first counts.
    fn take<'a>(&self, v: &mut Node<'a>) -> Option<Node<'a>> {
        if self.steps.len() > 1 {
            if let Some(x) = v.get_mut(&self.text) {
                if !matches!(x, Node::Null) {
                    return Some(std::mem::take(x));
                }
            }
        }
        let mut cur = v;
        for step in &self.steps {
            cur = match (step, cur) {
                (Step::Key(k), n) => n.get_mut(k)?,
                (Step::Index(i), Node::Array(a)) => a.get_mut(*i)?,
                _ => return None,
            };
        }
        (!matches!(cur, Node::Null)).then(|| std::mem::take(cur))
    }
}

/// A JSON value whose strings borrow from the line where they can.
#[derive(Debug, Default)]
enum Node<'a> {
    #[default]
    Null,
    Bool,
    Number(f64),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl<'a> Node<'a> {
    /// The value of `key` when this is an object that has it.
    fn get_mut(&mut self, key: &str) -> Option<&mut Node<'a>> {
        match self {
            Node::Object(fields) => fields.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Node<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node<'de>, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool)
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node<'de>, E> {
        Ok(Node::Number(v as f64))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node<'de>, E> {
        Ok(Node::Number(v as f64))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node<'de>, E> {
        Ok(Node::Number(v))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(v)))
    }

    fn visit_unit<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let mut fields = Vec::new();
        while let Some((key, value)) = map.next_entry::<Node<'de>, Node<'de>>()? {
            // serde_json keys are always strings.
            if let Node::String(key) = key {
                fields.push((key, value));
            }
        }
        Ok(Node::Object(fields))
    }
}

/// Where each of our fields is in a JSON log line: a list of paths per
/// field, the first present one wins. See the [module](self) for the
/// defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonFields {
    /// Request time.
    pub time: Vec<FieldPath>,
    /// Client address (required).
    pub client: Vec<FieldPath>,
    /// Request method (required).
    pub method: Vec<FieldPath>,
    /// Request target: path and query (required).
    pub target: Vec<FieldPath>,
    /// Response status.
    pub status: Vec<FieldPath>,
    /// User-Agent header.
    pub user_agent: Vec<FieldPath>,
    /// Host header.
    pub host: Vec<FieldPath>,
}

fn paths(list: &[&str]) -> Vec<FieldPath> {
    list.iter().map(|p| FieldPath::parse(p)).collect()
}

impl Default for JsonFields {
    fn default() -> JsonFields {
        JsonFields {
            time: paths(&[
                "ts",
                "StartUTC",
                "start_time",
                "time",
                "@timestamp",
                "timestamp",
                "time_iso8601",
                "time_local",
                "msec",
            ]),
            client: paths(&[
                "request.client_ip",
                "request.remote_ip",
                "ClientHost",
                "remote_addr",
                "downstream_remote_address",
                "client_ip",
                "remote_ip",
                "client",
            ]),
            method: paths(&["request.method", "RequestMethod", "request_method", "method"]),
            target: paths(&["request.uri", "RequestPath", "request_uri", "path", "uri", "url"]),
            status: paths(&["status", "DownstreamStatus", "response_code"]),
            user_agent: paths(&[
                "request.headers.User-Agent[0]",
                "request_User-Agent",
                "http_user_agent",
                "user_agent",
                "ua",
            ]),
            host: paths(&["request.host", "RequestHost", "host", "authority", "http_host"]),
        }
    }
}

/// The field names [`JsonFields::set`] knows.
pub const FIELD_NAMES: &[&str] = &["time", "client", "method", "target", "path", "status", "ua", "user_agent", "host"];

impl JsonFields {
    /// Reads field `name` from `path` only (`--field ua=http_user_agent`),
    /// replacing its defaults. `path` is an alias of `target`, `user_agent`
    /// of `ua`.
    ///
    /// # Errors
    ///
    /// An unknown `name`; the message lists the known ones.
    ///
    /// ```
    /// use robotgate::accesslog::JsonFields;
    ///
    /// let mut f = JsonFields::default();
    /// f.set("ua", "headers.ua[0]").unwrap();
    /// assert_eq!(f.user_agent.len(), 1);
    /// assert!(f.set("agent", "x").is_err());
    /// ```
    pub fn set(&mut self, name: &str, path: &str) -> Result<(), String> {
        let slot = match name {
            "time" => &mut self.time,
            "client" => &mut self.client,
            "method" => &mut self.method,
            "target" | "path" => &mut self.target,
            "status" => &mut self.status,
            "ua" | "user_agent" => &mut self.user_agent,
            "host" => &mut self.host,
            _ => return Err(format!("unknown field `{name}` (known: {})", FIELD_NAMES.join(", "))),
        };
        *slot = vec![FieldPath::parse(path)];
        Ok(())
    }
}

/// Parses one JSON line with `fields`.
///
/// # Errors
///
/// [`ParseError::Json`] when the line is not a JSON object,
/// [`ParseError::MissingField`] when client, method or target is absent or
/// not a string.
pub fn parse<'a>(line: &'a [u8], fields: &JsonFields) -> Result<Entry<'a>, ParseError> {
    let mut v: Node<'a> = serde_json::from_slice(line).map_err(|e| ParseError::Json(e.to_string()))?;
    if !matches!(v, Node::Object(_)) {
        return Err(ParseError::Json("not an object".into()));
    }
    let mut first = |list: &[FieldPath]| list.iter().find_map(|p| p.take(&mut v));
    let client = first(&fields.client).and_then(string).ok_or(ParseError::MissingField("client"))?;
    let method = first(&fields.method).and_then(string).ok_or(ParseError::MissingField("method"))?;
    let target = first(&fields.target).and_then(string).ok_or(ParseError::MissingField("target"))?;
    let time_unix = first(&fields.time).and_then(time);
    let status = first(&fields.status).and_then(status);
    let user_agent = first(&fields.user_agent).and_then(string);
    let host = first(&fields.host).and_then(string);
    let client = match client.parse::<SocketAddr>() {
        Ok(addr) => Cow::Owned(addr.ip().to_string()),
        Err(_) => client,
    };
    Ok(Entry { time_unix, client, method, target, status, user_agent, host })
}

/// A string value, or the first element of an array of strings.
fn string(v: Node<'_>) -> Option<Cow<'_, str>> {
    match v {
        Node::String(s) => Some(s),
        Node::Array(mut a) if !a.is_empty() => string(a.swap_remove(0)),
        _ => None,
    }
}

fn status(v: Node<'_>) -> Option<u16> {
    let n = match v {
        Node::Number(n) if n.fract() == 0.0 && (100.0..1000.0).contains(&n) => n as u16,
        Node::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    (100..1000).contains(&n).then_some(n)
}

fn time(v: Node<'_>) -> Option<i64> {
    match v {
        Node::Number(n) => epoch(n),
        Node::String(s) => {
            let s = s.trim();
            if let Ok(x) = s.parse::<f64>() {
                return epoch(x);
            }
            rfc3339(s.as_bytes()).or_else(|| clf_time(s.as_bytes()))
        }
        _ => None,
    }
}

/// Seconds, or milli-, micro- or nanoseconds by magnitude, since 1970.
fn epoch(x: f64) -> Option<i64> {
    if !x.is_finite() {
        return None;
    }
    let a = x.abs();
    let secs = if a >= 1e17 {
        x / 1e9
    } else if a >= 1e14 {
        x / 1e6
    } else if a >= 1e11 {
        x / 1e3
    } else {
        x
    };
    Some(secs.floor() as i64)
}

/// An RFC 3339 time ([`crate::time::parse_rfc3339`]) as Unix seconds.
fn rfc3339(t: &[u8]) -> Option<i64> {
    crate::time::parse_rfc3339(t).map(|ms| ms.div_euclid(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-23T21:09:50Z.
    const T: i64 = 1_795_468_190;

    fn ok(line: &str) -> Entry<'_> {
        parse(line.as_bytes(), &JsonFields::default()).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    #[test]
    fn caddy() {
        let e = ok(
            r#"{"level":"info","ts":1795468190.123456,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"2001:db8::5","remote_port":"51234","client_ip":"2001:db8::5","proto":"HTTP/2.0","method":"GET","host":"example.com","uri":"/docs/?q=a%20b","headers":{"User-Agent":["Mozilla/5.0 (compatible; ClaudeBot/1.0)"],"Accept":["*/*"]},"tls":{"resumed":false}},"bytes_read":0,"user_id":"","duration":0.0012,"size":1024,"status":200,"resp_headers":{"Server":["Caddy"]}}"#,
        );
        assert_eq!((e.client.as_ref(), e.method.as_ref(), e.target.as_ref()), ("2001:db8::5", "GET", "/docs/?q=a%20b"));
        assert_eq!((e.time_unix, e.status), (Some(T), Some(200)));
        assert_eq!(e.user_agent.as_deref(), Some("Mozilla/5.0 (compatible; ClaudeBot/1.0)"));
        assert_eq!(e.host.as_deref(), Some("example.com"));
        assert!(matches!(e.target, Cow::Borrowed(_)) && matches!(e.user_agent, Some(Cow::Borrowed(_))));
    }

    #[test]
    fn traefik() {
        let e = ok(
            r#"{"ClientAddr":"192.0.2.10:50412","ClientHost":"192.0.2.10","ClientPort":"50412","DownstreamContentSize":612,"DownstreamStatus":404,"Duration":1234567,"OriginStatus":404,"RequestAddr":"example.com","RequestHost":"example.com","RequestMethod":"GET","RequestPath":"/private/x?y=1","RequestProtocol":"HTTP/1.1","RouterName":"web@docker","StartLocal":"2026-11-23T22:09:50.5+01:00","StartUTC":"2026-11-23T21:09:50.504203Z","entryPointName":"web","level":"info","msg":"","request_User-Agent":"GPTBot/1.2","time":"2026-11-23T22:09:50+01:00"}"#,
        );
        assert_eq!(
            (e.client.as_ref(), e.target.as_ref(), e.status, e.time_unix),
            ("192.0.2.10", "/private/x?y=1", Some(404), Some(T))
        );
        assert_eq!((e.user_agent.as_deref(), e.host.as_deref()), (Some("GPTBot/1.2"), Some("example.com")));
    }

    #[test]
    fn nginx_json_and_envoy() {
        let e = ok(
            r#"{"time_local":"23/Nov/2026:22:09:50 +0100","remote_addr":"198.51.100.2","request_method":"POST","request_uri":"/api","status":"201","http_user_agent":"curl/8 \"x\"","host":"a.example"}"#,
        );
        assert_eq!((e.time_unix, e.status, e.user_agent.as_deref()), (Some(T), Some(201), Some("curl/8 \"x\"")));
        let e = ok(
            r#"{"start_time":"2026-11-23T21:09:50.000Z","method":"GET","path":"/","protocol":"HTTP/1.1","response_code":503,"downstream_remote_address":"[2001:db8::9]:443","user_agent":null,"authority":"b.example"}"#,
        );
        assert_eq!((e.client.as_ref(), e.time_unix, e.status, e.user_agent), ("2001:db8::9", Some(T), Some(503), None));
        assert_eq!(ok(r#"{"client":"::1","method":"GET","path":"/","msec":"1795468190.999"}"#).time_unix, Some(T));
        assert_eq!(ok(r#"{"client":"::1","method":"GET","path":"/","ts":1795468190123}"#).time_unix, Some(T));
        assert_eq!(ok(r#"{"client":"::1","method":"GET","path":"/","ts":"yesterday"}"#).time_unix, None);
    }

    #[test]
    fn custom_fields_and_dotted_keys() {
        let mut f = JsonFields::default();
        f.set("ua", "http.request.headers.user-agent").unwrap();
        f.set("path", "req.lines[1][0]").unwrap();
        let line = br#"{"http.request.headers.user-agent":"flat","client":"c","method":"GET","req":{"lines":[["/a"],["/b"]]}}"#;
        let e = parse(line, &f).unwrap();
        assert_eq!((e.user_agent.as_deref(), e.target.as_ref()), (Some("flat"), "/b"));
        assert_eq!(FieldPath::parse("a[0][x]").steps, [Step::Key("a[0][x]".into())]);
        assert_eq!(FieldPath::parse("[2]").steps, [Step::Key("[2]".into())]);
    }

    #[test]
    fn malformed_json_lines() {
        let f = JsonFields::default();
        for (line, want) in [
            ("not json", "bad JSON"),
            ("[1,2]", "not an object"),
            ("{\"method\":\"GET\",\"path\":\"/\"}", "no `client`"),
            ("{\"client\":\"c\",\"path\":\"/\"}", "no `method`"),
            ("{\"client\":\"c\",\"method\":3,\"path\":\"/\"}", "no `method`"),
            ("{\"client\":\"c\",\"method\":\"GET\"}", "no `target`"),
            ("{\"client\":\"c\",\"method\":\"GET\",\"path\":\"/\"", "bad JSON"),
        ] {
            let err = parse(line.as_bytes(), &f).unwrap_err().to_string();
            assert!(err.contains(want), "{line}: {err}");
        }
        assert_eq!(status(Node::Number(70_000.0)), None);
        assert_eq!(status(Node::Number(200.5)), None);
        assert_eq!(status(Node::String("404".into())), Some(404));
    }

    #[test]
    fn rfc3339_forms() {
        assert_eq!(rfc3339(b"2026-11-23T21:09:50Z"), Some(T));
        assert_eq!(rfc3339(b"2026-11-23 15:39:50.1-05:30"), Some(T));
        assert_eq!(rfc3339(b"2026-11-23T21:09:50"), None);
        assert_eq!(rfc3339(b"2026-13-23T21:09:50Z"), None);
        assert_eq!(rfc3339(b"2026-11-23T21:09"), None);
    }

    #[test]
    fn truncations_never_panic() {
        let good = r#"{"ts":1.5,"request":{"remote_ip":"::1","method":"GET","uri":"/","headers":{"User-Agent":["a"]}},"status":200}"#;
        for end in 0..=good.len() {
            let _ = parse(&good.as_bytes()[..end], &JsonFields::default());
        }
        assert!(parse(good.as_bytes(), &JsonFields::default()).is_ok());
    }
}
