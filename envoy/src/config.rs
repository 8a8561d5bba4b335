//! The filter's `filter_config`: where robotgate.yaml is.
//!
//! Envoy hands the module the bytes of `filter_config`: a
//! `google.protobuf.StringValue` or `BytesValue` as its value, a
//! `google.protobuf.Struct` serialised as JSON (the DynamicModuleFilter
//! proto's comment on `filter_config`). A static Envoy or Istio's
//! EnvoyFilter can pass the path as a StringValue; Envoy Gateway's
//! EnvoyExtensionPolicy passes its `config` as JSON. So the path is taken
//! from any of the three: the bytes themselves, a JSON string, or a JSON
//! object's `config` member. A JSON object's `"serve": "metrics"` makes the
//! filter the module's scrape ([`FilterConfig::metrics`]).

use std::path::PathBuf;

/// What a `filter_config` says.
#[derive(Debug, PartialEq, Eq)]
pub struct FilterConfig {
    /// robotgate.yaml.
    pub path: PathBuf,
    /// The filter answers every request with the metrics Envoy's stats do
    /// not hold (`robotgate_decision_seconds`, the reloads, the gauges) at
    /// `/metrics`, rather than deciding it: a listener of its own, on
    /// loopback, as examples/edge/envoy-module.yaml has one.
    pub metrics: bool,
}

/// What `filter_config` names, or why it names nothing.
pub fn read(bytes: &[u8]) -> Result<FilterConfig, String> {
    let mut metrics = false;
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err("filter_config is not UTF-8: it names the path of robotgate.yaml".into());
    };
    let text = text.trim();
    let path = match text.as_bytes().first() {
        Some(b'{') | Some(b'"') => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::String(path)) => path,
            Ok(serde_json::Value::Object(members)) => match members.get("config") {
                Some(serde_json::Value::String(path)) => {
                    metrics = match members.get("serve") {
                        None => false,
                        Some(serde_json::Value::String(s)) if s == "metrics" => true,
                        Some(other) => {
                            return Err(format!(r#"filter_config's "serve" is {other}: only "metrics" is known"#))
                        }
                    };
                    path.clone()
                }
                _ => {
                    return Err(r#"filter_config is a JSON object without "config": "<path of robotgate.yaml>""#.into())
                }
            },
            Ok(_) => return Err("filter_config is JSON but neither a string nor an object".into()),
            Err(e) => return Err(format!("filter_config is not JSON: {e}")),
        },
        _ => text.to_owned(),
    };
    if path.trim().is_empty() {
        return Err("filter_config is empty: it names the path of robotgate.yaml".into());
    }
    Ok(FilterConfig { path: PathBuf::from(path.trim()), metrics })
}

#[cfg(test)]
mod tests {
    use super::read;
    use std::path::Path;

    fn path_of(bytes: &[u8]) -> Result<std::path::PathBuf, String> {
        read(bytes).map(|c| c.path)
    }

    #[test]
    fn a_path_is_taken_as_it_is_given_or_from_json() {
        for given in [
            "/etc/robotgate/robotgate.yaml",
            " /etc/robotgate/robotgate.yaml\n",
            r#""/etc/robotgate/robotgate.yaml""#,
            r#"{"config":"/etc/robotgate/robotgate.yaml"}"#,
            r#"{ "config": "/etc/robotgate/robotgate.yaml", "other": 1 }"#,
        ] {
            assert_eq!(path_of(given.as_bytes()).as_deref(), Ok(Path::new("/etc/robotgate/robotgate.yaml")), "{given}");
        }
    }

    #[test]
    fn no_path_is_a_clear_error() {
        for given in [
            &b""[..],
            b"  ",
            b"\xff/x",
            b"{}",
            br#"{"config": 3}"#,
            b"{not json",
            br#""""#,
            br#"{"config": "/x", "serve": "stats"}"#,
        ] {
            let problem = path_of(given).unwrap_err();
            assert!(problem.starts_with("filter_config"), "{problem}");
        }
    }

    #[test]
    fn the_scrape_is_asked_for_by_name() {
        let c = read(br#"{"config": "/etc/robotgate/robotgate.yaml", "serve": "metrics"}"#).unwrap();
        assert!(c.metrics && c.path == Path::new("/etc/robotgate/robotgate.yaml"));
        assert!(!read(b"/etc/robotgate/robotgate.yaml").unwrap().metrics);
    }
}
