//! Parsing a state file (format version 4) or a `terraform show -json` export into a
//! [`StateRead`].

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use driftback_terraform::{Address, State, StateError, StateInstance};

use super::reader::{ReadError, StateRead, StateVersion};

#[derive(Deserialize)]
struct Header {
    #[serde(default)]
    serial: Option<u64>,
    #[serde(default)]
    lineage: Option<String>,
    #[serde(default)]
    resources: Vec<HeaderResource>,
}

#[derive(Deserialize)]
struct HeaderResource {
    #[serde(default)]
    module: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(rename = "type")]
    rtype: String,
    name: String,
    #[serde(default)]
    provider: Option<String>,
}

/// Parse a state file (format version 4) or a `terraform show -json` export. Its version is the
/// serial and lineage it records, else a digest of the bytes; readers that know better (an ETag,
/// a state version id) replace it.
pub fn parse_state(bytes: &[u8], origin: &str) -> Result<StateRead, ReadError> {
    let text = std::str::from_utf8(bytes).map_err(|e| StateError::Syntax {
        origin: origin.to_string(),
        line: 1,
        column: e.valid_up_to() + 1,
        message: "not UTF-8".into(),
    })?;
    if looks_like_show_json(text) {
        return Ok(StateRead {
            state: Arc::new(parse_show_json(text, origin)?),
            version: StateVersion::Digest(digest(bytes)),
            serial: None,
            lineage: None,
            provider_aliases: HashMap::new(),
            bytes: bytes.len(),
        });
    }
    let state = State::parse(text, origin)?;
    let header: Header = serde_json::from_str(text).map_err(|e| StateError::Syntax {
        origin: origin.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let mut aliases = HashMap::new();
    for r in &header.resources {
        let Some(alias) = r.provider.as_deref().and_then(provider_alias) else { continue };
        let data = if r.mode.as_deref() == Some("data") { "data." } else { "" };
        let key = match &r.module {
            Some(m) => format!("{m}.{data}{}.{}", r.rtype, r.name),
            None => format!("{data}{}.{}", r.rtype, r.name),
        };
        aliases.insert(key, alias.to_string());
    }
    let version = match (header.serial, &header.lineage) {
        (Some(serial), Some(lineage)) => StateVersion::Serial { serial, lineage: lineage.clone() },
        _ => StateVersion::Digest(digest(bytes)),
    };
    Ok(StateRead {
        state: Arc::new(state),
        version,
        serial: header.serial,
        lineage: header.lineage,
        provider_aliases: aliases,
        bytes: bytes.len(),
    })
}

/// `provider["registry.terraform.io/hashicorp/aws"].west` -> `west`.
fn provider_alias(provider: &str) -> Option<&str> {
    let after = &provider[provider.rfind(']')? + 1..];
    after.strip_prefix('.').filter(|a| !a.is_empty())
}

fn looks_like_show_json(text: &str) -> bool {
    // The first key of a state is "version"; of an export, "format_version". Both are small
    // objects at the top, so a look at the first kilobyte decides.
    let head = &text[..text.len().min(1024)];
    head.contains("\"format_version\"") && !head.contains("\"lineage\"")
}

#[derive(Deserialize)]
struct ShowJson {
    #[serde(default)]
    values: Option<ShowValues>,
}

#[derive(Deserialize)]
struct ShowValues {
    #[serde(default)]
    root_module: Option<ShowModule>,
}

#[derive(Deserialize)]
struct ShowModule {
    #[serde(default)]
    resources: Vec<ShowResource>,
    #[serde(default)]
    child_modules: Vec<ShowModule>,
}

#[derive(Deserialize)]
struct ShowResource {
    address: String,
    #[serde(default)]
    values: Map<String, Value>,
}

/// A `terraform show -json` export: `values.root_module` with its resources and child modules.
fn parse_show_json(text: &str, origin: &str) -> Result<State, ReadError> {
    let show: ShowJson = serde_json::from_str(text).map_err(|e| StateError::Syntax {
        origin: origin.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let mut instances = Vec::new();
    let mut pending: Vec<ShowModule> = show.values.and_then(|v| v.root_module).into_iter().collect();
    let mut index = 0;
    while let Some(module) = pending.pop() {
        for r in module.resources {
            let address = Address::parse(&r.address).map_err(|message| StateError::Resource {
                origin: origin.to_string(),
                index,
                message: format!("{}: {message}", r.address),
            })?;
            instances.push(StateInstance { address, attributes: r.values });
            index += 1;
        }
        pending.extend(module.child_modules);
    }
    instances.sort_by(|a, b| a.address.cmp(&b.address));
    Ok(State::from_instances(instances))
}

/// A short digest of some bytes.
pub(crate) fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(bytes)[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_exports_parse_with_their_provider_aliases() {
        let state = r#"{"version": 4, "serial": 7, "lineage": "l-1", "resources": [
          {"mode": "managed", "type": "aws_s3_bucket", "name": "logs",
           "provider": "provider[\"registry.terraform.io/hashicorp/aws\"].west",
           "instances": [{"attributes": {"id": "logs", "arn": "arn:aws:s3:::logs"}}]},
          {"module": "module.q[\"a\"]", "mode": "managed", "type": "aws_sqs_queue", "name": "this",
           "provider": "module.q.provider[\"registry.terraform.io/hashicorp/aws\"]",
           "instances": [{"attributes": {"id": "u"}}]}]}"#;
        let read = parse_state(state.as_bytes(), "s").unwrap();
        assert_eq!(read.version, StateVersion::Serial { serial: 7, lineage: "l-1".into() });
        assert_eq!(read.state.instances.len(), 2);
        assert_eq!(read.provider_aliases.len(), 1);
        assert_eq!(read.provider_aliases["aws_s3_bucket.logs"], "west");

        let export = r#"{"format_version": "1.0", "terraform_version": "1.9.0", "values": {"root_module": {
          "resources": [{"address": "aws_sqs_queue.q[0]", "mode": "managed", "type": "aws_sqs_queue", "name": "q", "index": 0,
                         "values": {"id": "https://sqs/q", "arn": "arn:aws:sqs:eu-west-1:1:q"}}],
          "child_modules": [{"address": "module.m", "resources": [{"address": "module.m.aws_iam_role.r", "mode": "managed",
                         "type": "aws_iam_role", "name": "r", "values": {"id": "r"}}]}]}}}"#;
        let read = parse_state(export.as_bytes(), "e").unwrap();
        assert!(matches!(read.version, StateVersion::Digest(_)), "an export has no serial");
        let s = read.state;
        let addresses: Vec<String> = s.instances.iter().map(|i| i.address.to_string()).collect();
        assert_eq!(addresses, ["aws_sqs_queue.q[0]", "module.m.aws_iam_role.r"]);
        assert_eq!(s.instances[0].attr_str("arn"), Some("arn:aws:sqs:eu-west-1:1:q"));
        assert!(matches!(parse_state(b"{\"version\": 3}", "old"), Err(ReadError::State(StateError::Version { .. }))));
    }
}
