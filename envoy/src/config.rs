//! The filter's `filter_config`: where robotgate.yaml is.
//!
//! Envoy hands the module the bytes of `filter_config`: a
//! `google.protobuf.StringValue` or `BytesValue` as its value, a
//! `google.protobuf.Struct` serialised as JSON (the DynamicModuleFilter
//! proto's comment on `filter_config`). A static Envoy or Istio's
//! EnvoyFilter can pass the path as a StringValue; Envoy Gateway's
//! EnvoyExtensionPolicy passes its `config` as JSON. So the path is taken
//! from any of the three: the bytes themselves, a JSON string, or a JSON
//! object's `config` member.

use std::path::PathBuf;

/// The path of robotgate.yaml that `filter_config` names, or why it names none.
pub fn path_of(bytes: &[u8]) -> Result<PathBuf, String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err("filter_config is not UTF-8: it names the path of robotgate.yaml".into());
    };
    let text = text.trim();
    let path = match text.as_bytes().first() {
        Some(b'{') | Some(b'"') => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::String(path)) => path,
            Ok(serde_json::Value::Object(members)) => match members.get("config") {
                Some(serde_json::Value::String(path)) => path.clone(),
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
    Ok(PathBuf::from(path.trim()))
}

#[cfg(test)]
mod tests {
    use super::path_of;
    use std::path::Path;

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
        for given in [&b""[..], b"  ", b"\xff/x", b"{}", br#"{"config": 3}"#, b"{not json", br#""""#] {
            let problem = path_of(given).unwrap_err();
            assert!(problem.starts_with("filter_config"), "{problem}");
        }
    }
}
