//! The AWS API calls as CloudTrail logs them: event sources, event names and the top-level
//! `requestParameters` members of each call, generated from the AWS API models
//! (`scripts/aws-calls.py`, `data/aws-calls.tsv`, docs/aws-calls.md).
//!
//! Recipe catalogs are checked against it when they load; other checks that name events (the
//! policy's security checks) can ask it the same way: [`Calls::check_event`], [`Call::check_path`].

use std::collections::HashMap;
use std::sync::OnceLock;

const DATA: &str = include_str!("../data/aws-calls.tsv");

/// Names CloudTrail logs that the API models lack, each with its reason. Checked like the table's
/// own names: (event source, event name, top-level request member or `None` for the event itself).
pub const EXCEPTIONS: &[(&str, &str, Option<&str>, &str)] = &[];

/// The table of calls.
#[derive(Debug)]
pub struct Calls {
    /// source -> event -> call.
    calls: HashMap<&'static str, HashMap<&'static str, Call>>,
    /// source -> API operation -> event name, where they differ (S3's bucket-level calls).
    renamed: HashMap<&'static str, HashMap<&'static str, &'static str>>,
    sources: Vec<&'static str>,
    /// The botocore release the table was generated from.
    pub models: &'static str,
}

/// One (eventSource, eventName).
#[derive(Debug, Clone)]
pub struct Call {
    pub source: &'static str,
    /// The event name CloudTrail logs, without an API version suffix (Lambda's
    /// `UpdateFunctionConfiguration20150331v2` is `UpdateFunctionConfiguration`).
    pub event: &'static str,
    /// The API operations logged under this name (more than one where services share a source:
    /// Elastic Load Balancing v1 and v2).
    pub operations: Vec<&'static str>,
    /// Describe/Get/List/... by name.
    pub read_only: bool,
    /// EC2 calls logged with every parameter inside `<Operation>Request` (by the model: no member
    /// has a lower-case wire name; see docs/aws-calls.md).
    pub wrapped: bool,
    /// Top-level request members: each is its name as CloudTrail logs it, then other names the
    /// same member may be logged under (EC2 lists: `instancesSet`, `instanceIdSet`, ...).
    pub members: Vec<Vec<&'static str>>,
    /// EC2: the members' wire names, found inside the `<Operation>Request` wrapper.
    pub wire_names: Vec<&'static str>,
}

impl Call {
    /// The wrapper member of an EC2 call logged in `<Operation>Request` form.
    pub fn wrapper(&self) -> Option<String> {
        self.wrapped.then(|| format!("{}Request", self.operations.first().copied().unwrap_or(self.event)))
    }

    /// Whether `name` is a top-level request member of this call.
    pub fn has_member(&self, name: &str) -> bool {
        match self.wrapper() {
            Some(w) => w == name,
            None => {
                self.members.iter().any(|m| m.contains(&name))
                    || extra_member(self.source, self.event, name)
                    || self.body_member().is_some_and(|b| b == name)
            }
        }
    }

    /// API Gateway's REST API calls: CloudTrail logs the request body (a v1 `Update*` call's
    /// `patchOperations`) inside a member named for the operation, `updateStageInput`, beside the
    /// path parameters (`restApiId`, `stageName`); the API models name the body's members at the top.
    pub fn body_member(&self) -> Option<String> {
        if self.source != "apigateway.amazonaws.com" {
            return None;
        }
        let mut chars = self.event.chars();
        let first = chars.next()?;
        Some(format!("{}{}Input", first.to_lowercase(), chars.as_str()))
    }

    /// Checks the first step of a request path (and, inside an EC2 `<Operation>Request` wrapper, the
    /// second). `response.` paths are not checked. The error says what the call has instead.
    pub fn check_path(&self, path: &str) -> Result<(), NotLogged> {
        if path.starts_with("response.") || path.is_empty() {
            return Ok(());
        }
        let (first, rest) = first_step(path);
        if let Some(wrapper) = self.wrapper() {
            if first != wrapper {
                return Err(NotLogged::OutsideWrapper {
                    event_source: self.source.to_string(),
                    event: self.event.to_string(),
                    member: first.to_string(),
                    wrapper,
                    closest: closest(first, self.wire_names.iter().copied())
                        .first()
                        .copied()
                        .unwrap_or("...")
                        .to_string(),
                });
            }
            let Some(rest) = rest else { return Ok(()) };
            let (second, _) = first_step(rest);
            if self.wire_names.contains(&second) || extra_member(self.source, self.event, second) {
                return Ok(());
            }
            return Err(unknown_member(self, second, self.wire_names.iter().copied(), Some(&wrapper)));
        }
        if self.has_member(first) {
            return Ok(());
        }
        let mut known: Vec<&str> = self.members.iter().filter_map(|m| m.first().copied()).collect();
        known.extend(EXCEPTIONS.iter().filter(|e| e.0 == self.source && e.1 == self.event).filter_map(|e| e.2));
        Err(unknown_member(self, first, known.into_iter(), None))
    }

    /// Each member by the name CloudTrail logs it under.
    pub fn member_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.members.iter().filter_map(|m| m.first().copied())
    }
}

fn unknown_member<'a>(
    call: &Call,
    name: &str,
    known: impl Iterator<Item = &'a str> + Clone,
    inside: Option<&str>,
) -> NotLogged {
    let near = closest(name, known.clone());
    let hint = if near.is_empty() {
        let all: Vec<&str> = known.collect();
        format!("its members are: {}", if all.is_empty() { "(none)".to_string() } else { all.join(", ") })
    } else {
        format!("closest: {}", near.join(", "))
    };
    NotLogged::UnknownMember {
        event_source: call.source.to_string(),
        event: call.event.to_string(),
        member: name.to_string(),
        place: inside.map(|w| format!(" inside `{w}`")).unwrap_or_default(),
        hint,
    }
}

fn extra_member(source: &str, event: &str, name: &str) -> bool {
    EXCEPTIONS.iter().any(|e| e.0 == source && e.1 == event && e.2 == Some(name))
}

fn first_step(path: &str) -> (&str, Option<&str>) {
    let end = path.find(['.', '[']).unwrap_or(path.len());
    let rest = path[end..].strip_prefix('.').or_else(|| {
        // `a[0].b`: what follows the index.
        path[end..].find("].").map(|i| &path[end + i + 2..])
    });
    (&path[..end], rest.filter(|r| !r.is_empty()))
}

impl Calls {
    /// The table built into the binary.
    pub fn builtin() -> &'static Calls {
        static CALLS: OnceLock<Calls> = OnceLock::new();
        CALLS.get_or_init(|| Calls::parse(DATA))
    }

    fn parse(text: &'static str) -> Calls {
        let mut calls: HashMap<&str, HashMap<&str, Call>> = HashMap::new();
        let mut renamed: HashMap<&str, HashMap<&str, &str>> = HashMap::new();
        let mut sources = Vec::new();
        let mut models = "";
        let mut source = "";
        for line in text.lines() {
            if let Some(m) = line.strip_prefix("# models: ") {
                models = m;
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            if let Some(s) = line.strip_prefix('@') {
                source = s;
                sources.push(s);
                continue;
            }
            let mut cols = line.split('\t');
            let (Some(event), Some(ops), Some(flags), Some(members)) =
                (cols.next(), cols.next(), cols.next(), cols.next())
            else {
                panic!("data/aws-calls.tsv: bad line {line:?}");
            };
            let wire_names = cols.next().map(|w| w.split(' ').collect()).unwrap_or_default();
            let operations: Vec<&str> = if ops == "=" { vec![event] } else { ops.split(',').collect() };
            for op in &operations {
                if *op != event {
                    renamed.entry(source).or_default().insert(*op, event);
                }
            }
            let members =
                if members == "-" { Vec::new() } else { members.split(' ').map(|m| m.split('|').collect()).collect() };
            calls.entry(source).or_default().insert(
                event,
                Call {
                    source,
                    event,
                    operations,
                    read_only: flags.starts_with('r'),
                    wrapped: flags.contains('W'),
                    members,
                    wire_names,
                },
            );
        }
        Calls { calls, renamed, sources, models }
    }

    /// The call logged as `event` (a version suffix is ignored) by `source`.
    pub fn get(&self, source: &str, event: &str) -> Option<&Call> {
        let event = driftback_events::normalize_api_name(event);
        self.calls.get(source).and_then(|c| c.get(event)).or_else(|| {
            let x = EXCEPTIONS.iter().find(|x| x.0 == source && x.1 == event && x.2.is_none())?;
            Some(self.exception_call(x.0, x.1))
        })
    }

    fn exception_call(&self, source: &'static str, event: &'static str) -> &Call {
        static EMPTY: OnceLock<Vec<Call>> = OnceLock::new();
        let all = EMPTY.get_or_init(|| {
            EXCEPTIONS
                .iter()
                .filter(|e| e.2.is_none())
                .map(|e| Call {
                    source: e.0,
                    event: e.1,
                    operations: vec![e.1],
                    read_only: false,
                    wrapped: false,
                    members: Vec::new(),
                    wire_names: Vec::new(),
                })
                .collect()
        });
        all.iter().find(|c| c.source == source && c.event == event).expect("listed")
    }

    /// Every event source in the table.
    pub fn sources(&self) -> &[&'static str] {
        &self.sources
    }

    /// Every call, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Call> {
        self.calls.values().flat_map(HashMap::values)
    }

    pub fn len(&self) -> usize {
        self.calls.values().map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The event name CloudTrail logs for API operation `operation` of `source`, where it differs
    /// (`PutPublicAccessBlock` -> `PutBucketPublicAccessBlock`).
    pub fn logged_as(&self, source: &str, operation: &str) -> Option<&'static str> {
        self.renamed.get(source).and_then(|r| r.get(operation)).copied()
    }

    /// The call, or why the name is not one CloudTrail logs: the operation's logged name, the
    /// closest known names, or the sources that do have it.
    pub fn check_event(&self, source: &str, event: &str) -> Result<&Call, NotLogged> {
        if let Some(call) = self.get(source, event) {
            return Ok(call);
        }
        if !self.sources.contains(&source) {
            let near = closest(source, self.sources.iter().copied());
            return Err(NotLogged::UnknownSource {
                event_source: source.to_string(),
                closest: near.iter().map(|n| n.to_string()).collect(),
            });
        }
        let event = driftback_events::normalize_api_name(event);
        if let Some(logged) = self.logged_as(source, event) {
            return Err(NotLogged::Renamed {
                event_source: source.to_string(),
                event: event.to_string(),
                logged: logged.to_string(),
            });
        }
        let names = self.calls.get(source).into_iter().flat_map(|c| c.keys().copied());
        let near = closest(event, names);
        let mut elsewhere: Vec<&str> =
            self.calls.iter().filter(|(_, c)| c.contains_key(event)).map(|(s, _)| *s).collect();
        elsewhere.sort_unstable();
        Err(NotLogged::UnknownEvent {
            event_source: source.to_string(),
            event: event.to_string(),
            closest: near.iter().map(|n| n.to_string()).collect(),
            logged_by: elsewhere.iter().map(|s| s.to_string()).collect(),
        })
    }
}

/// Why a name is not one CloudTrail logs, and what it logs instead: the text says the call, the
/// name, and the nearest names or the sources that do log it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotLogged {
    #[error("event source `{event_source}` is not in the table of calls{}", listed("; closest: ", closest))]
    UnknownSource { event_source: String, closest: Vec<String> },
    #[error("{event_source} has no event `{event}`: CloudTrail logs this as {logged}")]
    Renamed { event_source: String, event: String, logged: String },
    #[error(
        "{event_source} has no event `{event}`{}{}",
        listed("; closest: ", closest),
        listed("; logged by ", logged_by)
    )]
    UnknownEvent { event_source: String, event: String, closest: Vec<String>, logged_by: Vec<String> },
    /// An EC2 call whose parameters CloudTrail logs inside a `<Operation>Request` wrapper.
    #[error(
        "{event_source} {event} has no request member `{member}`: EC2 logs this call's parameters inside \
         `{wrapper}` (`{wrapper}.{closest}`)"
    )]
    OutsideWrapper { event_source: String, event: String, member: String, wrapper: String, closest: String },
    /// `place` says the wrapper it was looked for inside, if any; `hint` the nearest members or all.
    #[error("{event_source} {event} has no request member `{member}`{place}; {hint}")]
    UnknownMember { event_source: String, event: String, member: String, place: String, hint: String },
}

/// `prefix` and the names joined by commas; nothing when there are none.
fn listed(prefix: &str, names: &[String]) -> String {
    if names.is_empty() { String::new() } else { format!("{prefix}{}", names.join(", ")) }
}

/// Up to three known names nearest `name` (edit distance, case ignored), nearest first.
pub fn closest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let lower = name.to_ascii_lowercase();
    let limit = (name.len() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = known
        .filter_map(|k| {
            let kl = k.to_ascii_lowercase();
            let d = distance(&lower, &kl);
            let contains = kl.len() >= 4 && lower.len() >= 4 && (kl.contains(&lower) || lower.contains(&kl));
            (d <= limit || contains).then_some((if contains { d.min(limit) } else { d }, k))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, k)| k).collect()
}

fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push((prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_loads_with_its_services() {
        let calls = Calls::builtin();
        assert!(calls.len() > 5000, "{}", calls.len());
        assert!(calls.models.starts_with("botocore-"), "{}", calls.models);
        for source in [
            "ec2.amazonaws.com",
            "s3.amazonaws.com",
            "sqs.amazonaws.com",
            "iam.amazonaws.com",
            "elasticloadbalancing.amazonaws.com",
            "rds.amazonaws.com",
            "lambda.amazonaws.com",
            "route53.amazonaws.com",
            "monitoring.amazonaws.com",
            "logs.amazonaws.com",
            "dynamodb.amazonaws.com",
            "kms.amazonaws.com",
            "sns.amazonaws.com",
            "autoscaling.amazonaws.com",
        ] {
            assert!(calls.sources().contains(&source), "{source}");
        }
    }

    #[test]
    fn s3_public_access_block_is_logged_under_the_bucket_name() {
        let calls = Calls::builtin();
        let call = calls.get("s3.amazonaws.com", "PutBucketPublicAccessBlock").unwrap();
        assert_eq!(call.operations, ["PutPublicAccessBlock"]);
        assert!(call.has_member("bucketName") && call.has_member("PublicAccessBlockConfiguration"));
        assert!(calls.get("s3.amazonaws.com", "DeleteBucketPublicAccessBlock").is_some());
        let err = calls.check_event("s3.amazonaws.com", "PutPublicAccessBlock").unwrap_err().to_string();
        assert!(err.contains("CloudTrail logs this as PutBucketPublicAccessBlock"), "{err}");
        let err = calls.check_event("s3.amazonaws.com", "DeletePublicAccessBlock").unwrap_err().to_string();
        assert!(err.contains("CloudTrail logs this as DeleteBucketPublicAccessBlock"), "{err}");
        let err = calls.check_event("s3.amazonaws.com", "PutBucketLifecycleConfiguration").unwrap_err().to_string();
        assert!(err.contains("CloudTrail logs this as PutBucketLifecycle"), "{err}");
        assert!(calls.get("s3.amazonaws.com", "PutAccountPublicAccessBlock").is_some());
    }

    #[test]
    fn api_gateway_rest_api_bodies_are_logged_inside_the_operations_input() {
        let calls = Calls::builtin();
        let call = calls.get("apigateway.amazonaws.com", "UpdateStage").unwrap();
        assert!(call.check_path("updateStageInput.patchOperations").is_ok());
        assert!(call.check_path("patchOperations").is_ok());
        assert!(call.check_path("updateRestApiInput.patchOperations").is_err());
        let other = calls.get("sqs.amazonaws.com", "SetQueueAttributes").unwrap();
        assert!(other.body_member().is_none() && !other.has_member("setQueueAttributesInput"));
    }

    #[test]
    fn ec2_and_sqs_members_as_cloudtrail_logs_them() {
        let calls = Calls::builtin();
        let call = calls.get("ec2.amazonaws.com", "AuthorizeSecurityGroupIngress").unwrap();
        assert!(!call.wrapped);
        assert!(call.has_member("groupId") && call.has_member("ipPermissions"), "{call:?}");
        call.check_path("ipPermissions.items").unwrap();
        let tags = calls.get("ec2.amazonaws.com", "CreateTags").unwrap();
        assert!(tags.has_member("tagSet") && tags.has_member("resourcesSet"));
        let call = calls.get("sqs.amazonaws.com", "SetQueueAttributes").unwrap();
        assert!(call.has_member("queueUrl") && call.has_member("attributes"));
        assert!(!call.read_only);
        assert!(calls.get("sqs.amazonaws.com", "GetQueueAttributes").unwrap().read_only);
    }

    #[test]
    fn ec2_members_cloudtrail_renames_are_named_as_logged() {
        let calls = Calls::builtin();
        for event in ["CreateNetworkAclEntry", "ReplaceNetworkAclEntry"] {
            let call = calls.get("ec2.amazonaws.com", event).unwrap();
            call.check_path("aclProtocol").unwrap();
            let err = call.check_path("protocol").unwrap_err().to_string();
            assert!(err.contains("aclProtocol"), "{err}");
        }
        let volume = calls.get("ec2.amazonaws.com", "CreateVolume").unwrap();
        assert_eq!(volume.member_names().next(), Some("zone"));
        assert!(volume.has_member("zone") && volume.has_member("availabilityZone"));
    }

    #[test]
    fn newer_ec2_calls_are_wrapped_and_checked_inside() {
        let calls = Calls::builtin();
        let call = calls.get("ec2.amazonaws.com", "ModifyVolume").unwrap();
        assert_eq!(call.wrapper().as_deref(), Some("ModifyVolumeRequest"));
        call.check_path("ModifyVolumeRequest.Size").unwrap();
        let err = call.check_path("ModifyVolumeRequest.Sise").unwrap_err().to_string();
        assert!(err.contains("`Sise`") && err.contains("Size"), "{err}");
        let err = call.check_path("volumeId").unwrap_err().to_string();
        assert!(err.contains("inside `ModifyVolumeRequest`"), "{err}");
    }

    #[test]
    fn lambda_versions_and_other_services_names() {
        let calls = Calls::builtin();
        let call = calls.get("lambda.amazonaws.com", "UpdateFunctionConfiguration20150331v2").unwrap();
        assert_eq!(call.event, "UpdateFunctionConfiguration");
        assert!(call.has_member("functionName") && call.has_member("memorySize"));
        assert!(calls.get("lambda.amazonaws.com", "UpdateEventSourceMapping").unwrap().has_member("uUID"));
        assert!(calls.get("monitoring.amazonaws.com", "PutMetricAlarm").unwrap().has_member("oKActions"));
        assert!(calls.get("elasticloadbalancing.amazonaws.com", "ModifyListener").is_some());
        assert!(calls.get("route53.amazonaws.com", "ChangeResourceRecordSets").unwrap().has_member("changeBatch"));
        let err = calls.check_event("ec2.amazonaws.com", "ModifyInstanceAtribute").unwrap_err().to_string();
        assert!(err.contains("closest: ModifyInstanceAttribute"), "{err}");
        let err = calls.check_event("ec2.amazonaws.com", "CreateQueue").unwrap_err().to_string();
        assert!(err.contains("logged by") && err.contains("sqs.amazonaws.com"), "{err}");
        let err = calls.check_event("cloudwatch.amazonaws.com", "PutMetricAlarm").unwrap_err().to_string();
        assert!(err.contains("logged by monitoring.amazonaws.com"), "{err}");
        let err = calls.check_event("cloudwatchh.amazonaws.com", "PutMetricAlarm").unwrap_err().to_string();
        assert!(err.contains("not in the table") && err.contains("cloudwatch.amazonaws.com"), "{err}");
    }
}
