//! Terraform state (format version 4): which cloud object each resource instance address manages.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::address::{Address, InstanceKey, ModuleStep};

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("{origin}: not a Terraform state file: {message} (line {line}, column {column})")]
    Syntax { origin: String, line: usize, column: usize, message: String },
    #[error(
        "{origin}: state format version {found} is not supported; driftback reads version 4 (Terraform 0.12 and later)"
    )]
    Version { origin: String, found: u64 },
    #[error("{origin}: resource {index}: {message}")]
    Resource { origin: String, index: usize, message: String },
}

/// One managed (or data) resource instance and the attributes the provider recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct StateInstance {
    pub address: Address,
    pub attributes: Map<String, Value>,
}

impl StateInstance {
    /// A string attribute; a dotted name (`root_block_device.volume_id`) looks inside nested blocks,
    /// and matches the first of several.
    pub fn attr_str(&self, name: &str) -> Option<&str> {
        self.attr_strs(name).into_iter().next()
    }

    /// Every string value at a dotted name, through nested blocks (lists of objects).
    pub fn attr_strs(&self, name: &str) -> Vec<&str> {
        let mut current: Vec<&Value> = Vec::new();
        let mut parts = name.split('.');
        let Some(first) = parts.next() else { return Vec::new() };
        current.extend(self.attributes.get(first));
        for part in parts {
            current = current
                .into_iter()
                .flat_map(|v| match v {
                    Value::Array(items) => items.iter().collect::<Vec<_>>(),
                    other => vec![other],
                })
                .filter_map(|v| v.get(part))
                .collect();
        }
        current
            .into_iter()
            .flat_map(|v| match v {
                Value::Array(items) => items.iter().collect::<Vec<_>>(),
                other => vec![other],
            })
            .filter_map(Value::as_str)
            .collect()
    }
}

/// The resource instances of a state, with an index from identifiers to instances.
#[derive(Debug, Clone, Default)]
pub struct State {
    pub instances: Vec<StateInstance>,
    by_address: HashMap<String, usize>,
}

#[derive(Deserialize)]
struct RawState {
    version: u64,
    #[serde(default)]
    resources: Vec<RawResource>,
}

#[derive(Deserialize)]
struct RawResource {
    #[serde(default)]
    module: Option<String>,
    #[serde(default = "managed")]
    mode: String,
    #[serde(rename = "type")]
    rtype: String,
    name: String,
    #[serde(default)]
    instances: Vec<RawInstance>,
}

fn managed() -> String {
    "managed".into()
}

#[derive(Deserialize)]
struct RawInstance {
    #[serde(default)]
    index_key: Option<InstanceKey>,
    #[serde(default)]
    attributes: Map<String, Value>,
}

impl State {
    /// What references to resources and data sources of module instance `module` evaluate to, by
    /// the recorded attributes: `{TYPE: {NAME: attributes}}` and `{"data": {TYPE: {NAME: ...}}}`,
    /// with `count` instances as lists and `for_each` instances as maps.
    pub fn known_values(&self, module: &[ModuleStep]) -> Map<String, Value> {
        let mut out = Map::new();
        for i in self.instances.iter().filter(|i| i.address.module == module) {
            let a = &i.address;
            let types = if a.data {
                out.entry("data").or_insert_with(|| Value::Object(Map::new()))
            } else {
                out.entry(a.rtype.clone()).or_insert_with(|| Value::Object(Map::new()))
            };
            let Value::Object(types) = types else { continue };
            let slot = if a.data {
                let Value::Object(by_type) = types.entry(a.rtype.clone()).or_insert_with(|| Value::Object(Map::new()))
                else {
                    continue;
                };
                by_type.entry(a.name.clone())
            } else {
                types.entry(a.name.clone())
            };
            let attributes = Value::Object(i.attributes.clone());
            match &a.key {
                None => {
                    slot.or_insert(attributes);
                }
                Some(InstanceKey::Int(n)) => {
                    if let Value::Array(items) = slot.or_insert_with(|| Value::Array(Vec::new())) {
                        let n = usize::try_from(*n).unwrap_or(0);
                        if items.len() <= n {
                            items.resize(n + 1, Value::Null);
                        }
                        items[n] = attributes;
                    }
                }
                Some(InstanceKey::Str(k)) => {
                    if let Value::Object(items) = slot.or_insert_with(|| Value::Object(Map::new())) {
                        items.insert(k.clone(), attributes);
                    }
                }
            }
        }
        out
    }

    pub fn parse(text: &str, origin: &str) -> Result<State, StateError> {
        let raw: RawState = serde_json::from_str(text).map_err(|e| StateError::Syntax {
            origin: origin.to_string(),
            line: e.line(),
            column: e.column(),
            message: e.to_string().split(" at line").next().unwrap_or_default().to_string(),
        })?;
        if raw.version != 4 {
            return Err(StateError::Version { origin: origin.to_string(), found: raw.version });
        }
        let mut instances = Vec::new();
        for (index, resource) in raw.resources.into_iter().enumerate() {
            let module = match &resource.module {
                None => Vec::new(),
                Some(path) => parse_module_path(path).map_err(|e| StateError::Resource {
                    origin: origin.to_string(),
                    index,
                    message: e.to_string(),
                })?,
            };
            for instance in resource.instances {
                instances.push(StateInstance {
                    address: Address {
                        module: module.clone(),
                        data: resource.mode == "data",
                        rtype: resource.rtype.clone(),
                        name: resource.name.clone(),
                        key: instance.index_key,
                    },
                    attributes: instance.attributes,
                });
            }
        }
        Ok(State::from_instances(instances))
    }

    pub fn from_instances(instances: Vec<StateInstance>) -> State {
        let by_address = instances.iter().enumerate().map(|(i, inst)| (inst.address.to_string(), i)).collect();
        State { instances, by_address }
    }

    pub fn get(&self, address: &Address) -> Option<&StateInstance> {
        self.by_address.get(&address.to_string()).map(|&i| &self.instances[i])
    }

    /// The attributes of every managed instance of a resource type, as values.
    pub fn values_of_type(&self, rtype: &str) -> Vec<Value> {
        self.instances
            .iter()
            .filter(|i| !i.address.data && i.address.rtype == rtype)
            .map(|i| Value::Object(i.attributes.clone()))
            .collect()
    }

    /// Managed instances whose identifier is `id`: the attribute `id` or `arn`, or, when `attrs` is
    /// given, one of those attributes. An ARN also matches by its last segment on name attributes,
    /// and an identifier with an [`Identity`] (a queue URL in any of its host forms, a queue ARN)
    /// matches every value that names the same resource.
    pub fn find<'a>(&'a self, id: &str, types: &[&str], attrs: &[&str]) -> Vec<&'a StateInstance> {
        let default_attrs: &[&str] = &["id", "arn"];
        let attrs = if attrs.is_empty() { default_attrs } else { attrs };
        let short = id.starts_with("arn:").then(|| arn_resource_name(id)).flatten();
        let identity = Identity::parse(id);
        self.instances
            .iter()
            .filter(|i| !i.address.data)
            .filter(|i| types.is_empty() || types.contains(&"*") || types.contains(&i.address.rtype.as_str()))
            .filter(|i| {
                attrs.iter().any(|a| {
                    i.attr_strs(a).into_iter().any(|v| {
                        v == id
                                // A DNS name written fully qualified (`www.example.com.`).
                                || (id.ends_with('.') && v == id.trim_end_matches('.'))
                                || (short.is_some_and(|s| s == v) && *a != "arn" && *a != "id")
                                || identity.as_ref().is_some_and(|want| Identity::parse(v).as_ref() == Some(want))
                    })
                })
            })
            .collect()
    }

    /// Whether a managed instance of type `rtype` has `attr` naming the same resource as `id`
    /// (compared as [`State::find`] compares).
    pub fn has(&self, rtype: &str, attr: &str, id: &str) -> bool {
        !self.find(id, &[rtype], &[attr]).is_empty()
    }
}

/// What an identifier names, whichever of the forms AWS writes it in: the one place where a
/// record's identifier and the state's values are compared as resources rather than as strings.
/// Today it knows SQS queues; ARNs and names of other resources join here.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identity {
    /// An SQS queue by region, account and name: a queue URL in any of SQS's host forms
    /// (`https://sqs.<region>.amazonaws.com/<account>/<name>`, `https://<region>.queue.amazonaws.com/...`,
    /// the legacy `https://queue.amazonaws.com/...` of us-east-1, the `.amazonaws.com.cn` hosts of
    /// the China regions, FIPS and dual-stack hosts), or its ARN (`arn:<partition>:sqs:<region>:<account>:<name>`).
    Queue { region: String, account: String, name: String },
}

impl Identity {
    /// The identity `text` names, when it is a form this knows.
    pub fn parse(text: &str) -> Option<Identity> {
        if let Some(rest) = text.strip_prefix("arn:") {
            return Identity::from_arn(rest);
        }
        Identity::from_queue_url(text)
    }

    /// `<partition>:<service>:<region>:<account>:<resource>` (what follows `arn:`).
    fn from_arn(rest: &str) -> Option<Identity> {
        let mut parts = rest.splitn(5, ':');
        let (_partition, service, region, account, resource) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        match service {
            "sqs" => Identity::queue(region, account, resource),
            _ => None,
        }
    }

    fn from_queue_url(text: &str) -> Option<Identity> {
        let lower = text.get(..8).map(str::to_ascii_lowercase).unwrap_or_default();
        let rest = if lower.starts_with("https://") {
            &text[8..]
        } else if lower.starts_with("http://") {
            &text[7..]
        } else {
            return None;
        };
        let (host, path) = rest.split_once('/')?;
        let host = host.to_ascii_lowercase();
        let (account, name) = path.strip_suffix('/').unwrap_or(path).split_once('/')?;
        // The partition's domain; the SQS developer guide's older examples print `amazon.com`.
        let (domain, base) = [".amazonaws.com.cn", ".amazonaws.com", ".api.aws", ".amazon.com"]
            .iter()
            .find_map(|domain| host.strip_suffix(domain).map(|base| (*domain, base)))?;
        let labels: Vec<&str> = base.split('.').collect();
        let region = match labels.as_slice() {
            // https://queue.amazonaws.com/<account>/<name>: us-east-1's legacy host.
            ["queue"] if domain == ".amazonaws.com" => "us-east-1",
            ["sqs" | "sqs-fips", region] => region,
            [region, "queue"] => region,
            _ => return None,
        };
        Identity::queue(region, account, name)
    }

    /// The id the AWS provider records for this resource and imports it by: for a queue, its URL on
    /// the regional host (`https://sqs.<region>.amazonaws.com/<account>/<name>`, `.amazonaws.com.cn`
    /// in the China regions), whichever host form the record printed.
    pub fn import_id(&self) -> String {
        match self {
            Identity::Queue { region, account, name } => {
                let domain = if region.starts_with("cn-") { "amazonaws.com.cn" } else { "amazonaws.com" };
                format!("https://sqs.{region}.{domain}/{account}/{name}")
            }
        }
    }

    /// The resource's ARN (`arn:<partition>:sqs:<region>:<account>:<name>` for a queue; the
    /// partition by the region: `aws-cn`, `aws-us-gov` or `aws`).
    pub fn arn(&self) -> String {
        match self {
            Identity::Queue { region, account, name } => {
                format!("arn:{}:sqs:{region}:{account}:{name}", partition_of(region))
            }
        }
    }

    fn queue(region: &str, account: &str, name: &str) -> Option<Identity> {
        let region_ok = !region.is_empty()
            && region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && region.ends_with(|c: char| c.is_ascii_digit());
        let account_ok = account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit());
        let base = name.strip_suffix(".fifo").unwrap_or(name);
        let name_ok = !base.is_empty()
            && name.len() <= 80
            && base.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        (region_ok && account_ok && name_ok).then(|| Identity::Queue {
            region: region.to_string(),
            account: account.to_string(),
            name: name.to_string(),
        })
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Queue { region, account, name } => {
                write!(f, "the SQS queue {name} of account {account} in {region}")
            }
        }
    }
}

/// The partition a region belongs to.
pub fn partition_of(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else {
        "aws"
    }
}

/// The resource name at the end of an ARN: `arn:aws:lambda:r:a:function:NAME` -> NAME,
/// `arn:aws:iam::a:role/path/NAME` -> NAME, `arn:aws:sns:r:a:NAME` -> NAME.
pub fn arn_resource_name(arn: &str) -> Option<&str> {
    let resource = arn.splitn(6, ':').nth(5)?;
    let last = resource.rsplit(['/', ':']).next()?;
    (!last.is_empty()).then_some(last)
}

fn parse_module_path(path: &str) -> Result<Vec<ModuleStep>, crate::address::BadAddress> {
    // Reuse the address parser with a dummy resource appended.
    Address::parse(&format!("{path}.x.y")).map(|a| a.module)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATE: &str = r#"{
      "version": 4, "terraform_version": "1.7.5", "serial": 3, "lineage": "x", "outputs": {},
      "resources": [
        {"mode": "managed", "type": "aws_instance", "name": "web", "provider": "p",
         "instances": [{"schema_version": 1, "attributes": {"id": "i-0abc", "arn": "arn:aws:ec2:us-east-1:1:instance/i-0abc"}}]},
        {"module": "module.fn", "mode": "managed", "type": "aws_lambda_function", "name": "this", "provider": "p",
         "instances": [{"attributes": {"id": "api", "function_name": "api", "arn": "arn:aws:lambda:us-east-1:1:function:api"}}]},
        {"mode": "managed", "type": "aws_instance", "name": "fleet", "provider": "p",
         "instances": [{"index_key": 0, "attributes": {"id": "i-1"}}, {"index_key": "b", "attributes": {"id": "i-2"}}]},
        {"mode": "data", "type": "aws_ami", "name": "ubuntu", "instances": [{"attributes": {"id": "ami-1"}}]}
      ]}"#;

    #[test]
    fn instances_and_lookups() {
        let state = State::parse(STATE, "s").unwrap();
        let addrs: Vec<String> = state.instances.iter().map(|i| i.address.to_string()).collect();
        assert_eq!(
            addrs,
            [
                "aws_instance.web",
                "module.fn.aws_lambda_function.this",
                "aws_instance.fleet[0]",
                "aws_instance.fleet[\"b\"]",
                "data.aws_ami.ubuntu"
            ]
        );
        let found = |id: &str, types: &[&str], attrs: &[&str]| -> Vec<String> {
            state.find(id, types, attrs).iter().map(|i| i.address.to_string()).collect()
        };
        assert_eq!(found("i-0abc", &[], &[]), ["aws_instance.web"]);
        assert_eq!(found("i-2", &["aws_instance"], &[]), ["aws_instance.fleet[\"b\"]"]);
        assert_eq!(
            found("arn:aws:lambda:us-east-1:1:function:api", &["aws_lambda_function"], &["function_name"]),
            ["module.fn.aws_lambda_function.this"]
        );
        assert_eq!(
            found("api", &["aws_lambda_function"], &["function_name", "arn"]),
            ["module.fn.aws_lambda_function.this"]
        );
        assert!(found("ami-1", &[], &[]).is_empty(), "data sources manage nothing");
        assert!(found("i-0abc", &["aws_s3_bucket"], &[]).is_empty());
    }

    #[test]
    fn queues_are_found_by_region_account_and_name_whatever_the_url_host() {
        let state = State::parse(
            r#"{"version": 4, "resources": [
              {"mode": "managed", "type": "aws_sqs_queue", "name": "jobs", "instances": [{"attributes": {
                 "id": "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue",
                 "url": "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue",
                 "arn": "arn:aws:sqs:us-east-2:123456789012:MyQueue", "name": "MyQueue"}}]},
              {"mode": "managed", "type": "aws_sqs_queue", "name": "legacy", "instances": [{"attributes": {
                 "id": "https://queue.amazonaws.com/123456789012/legacy.fifo",
                 "url": "https://queue.amazonaws.com/123456789012/legacy.fifo", "name": "legacy.fifo"}}]},
              {"mode": "managed", "type": "aws_sqs_queue_policy", "name": "jobs", "instances": [{"attributes": {
                 "id": "https://us-east-2.queue.amazonaws.com/123456789012/MyQueue",
                 "queue_url": "https://us-east-2.queue.amazonaws.com/123456789012/MyQueue"}}]},
              {"mode": "managed", "type": "aws_sqs_queue", "name": "beijing", "instances": [{"attributes": {
                 "id": "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/MyQueue"}}]}
            ]}"#,
            "s",
        )
        .unwrap();
        let found = |id: &str, types: &[&str], attrs: &[&str]| -> Vec<String> {
            state.find(id, types, attrs).iter().map(|i| i.address.to_string()).collect()
        };
        for url in [
            "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue",
            "https://us-east-2.queue.amazonaws.com/123456789012/MyQueue",
            "https://SQS.us-east-2.amazonaws.com/123456789012/MyQueue",
            "http://sqs.us-east-2.amazonaws.com/123456789012/MyQueue",
            // As the SQS developer guide's examples print it.
            "https://sqs.us-east-2.amazon.com/123456789012/MyQueue",
            "arn:aws:sqs:us-east-2:123456789012:MyQueue",
        ] {
            assert_eq!(found(url, &["aws_sqs_queue"], &["id", "url"]), ["aws_sqs_queue.jobs"], "{url}");
            assert_eq!(found(url, &["aws_sqs_queue_policy"], &["queue_url"]), ["aws_sqs_queue_policy.jobs"], "{url}");
            assert!(state.has("aws_sqs_queue_policy", "queue_url", url), "{url}");
        }
        // us-east-1's legacy host is the same queue as its regional hosts.
        for url in [
            "https://sqs.us-east-1.amazonaws.com/123456789012/legacy.fifo",
            "https://us-east-1.queue.amazonaws.com/123456789012/legacy.fifo",
        ] {
            assert_eq!(found(url, &["aws_sqs_queue"], &["id", "url"]), ["aws_sqs_queue.legacy"], "{url}");
        }
        // The same name elsewhere is another queue: another region, account, partition or name.
        for url in [
            "https://sqs.us-west-2.amazonaws.com/123456789012/MyQueue",
            "https://sqs.us-east-2.amazonaws.com/210987654321/MyQueue",
            "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue2",
            "https://queue.amazonaws.com/123456789012/MyQueue",
            "https://sqs.us-east-2.example.com/123456789012/MyQueue",
        ] {
            assert!(found(url, &["aws_sqs_queue"], &["id", "url"]).is_empty(), "{url}");
        }
        assert_eq!(
            found("https://cn-north-1.queue.amazonaws.com.cn/123456789012/MyQueue", &["aws_sqs_queue"], &[]),
            ["aws_sqs_queue.beijing"]
        );
        assert_eq!(
            Identity::parse("https://queue.amazonaws.com/123456789012/jobs").unwrap().to_string(),
            "the SQS queue jobs of account 123456789012 in us-east-1"
        );
        // Whatever host the record printed, the provider's id is the regional URL.
        for (printed, id) in [
            (
                "https://sqs.us-east-2.amazon.com/123456789012/MyQueue",
                "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue",
            ),
            (
                "https://us-east-2.queue.amazonaws.com/123456789012/q.fifo",
                "https://sqs.us-east-2.amazonaws.com/123456789012/q.fifo",
            ),
            ("https://queue.amazonaws.com/123456789012/jobs", "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"),
            (
                "https://cn-north-1.queue.amazonaws.com.cn/123456789012/q",
                "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q",
            ),
        ] {
            assert_eq!(Identity::parse(printed).unwrap().import_id(), id, "{printed}");
        }
        assert_eq!(
            Identity::parse("https://cn-north-1.queue.amazonaws.com.cn/123456789012/q").unwrap().arn(),
            "arn:aws-cn:sqs:cn-north-1:123456789012:q"
        );
        for not_a_queue in [
            "MyQueue",
            "https://sqs.us-east-2.amazonaws.com/MyQueue",
            "arn:aws:sns:us-east-2:123456789012:t",
            "https://sqs.us-east-2.amazonaws.com/123456789012/a/b",
        ] {
            assert_eq!(Identity::parse(not_a_queue), None, "{not_a_queue}");
        }
    }

    #[test]
    fn bad_states() {
        assert!(matches!(State::parse("{", "s"), Err(StateError::Syntax { .. })));
        assert!(matches!(State::parse(r#"{"version": 3}"#, "s"), Err(StateError::Version { found: 3, .. })));
        assert_eq!(arn_resource_name("arn:aws:iam::1:role/service/app"), Some("app"));
        assert_eq!(arn_resource_name("arn:aws:sns:us-east-1:1:alerts"), Some("alerts"));
    }
}
