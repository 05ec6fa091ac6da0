//! Intent (what a change is for) and motivation (why now), from the API, its parameters, tags and
//! the names of the sessions that made it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use driftback_events::{ApiEvent, ChangeSet};

use crate::actor::{ActorInfo, ActorKind};
use crate::inferred::Inferred;
use crate::words::{find_word, words};

/// What a change is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    Availability,
    Cost,
    Security,
    Compliance,
    Performance,
    Unknown,
}

impl Intent {
    pub fn as_str(&self) -> &'static str {
        match self {
            Intent::Availability => "availability",
            Intent::Cost => "cost",
            Intent::Security => "security",
            Intent::Compliance => "compliance",
            Intent::Performance => "performance",
            Intent::Unknown => "unknown",
        }
    }

    pub const ALL: [Intent; 6] = [
        Intent::Availability,
        Intent::Cost,
        Intent::Security,
        Intent::Compliance,
        Intent::Performance,
        Intent::Unknown,
    ];
}

/// Why a change was made now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Motivation {
    /// Responding to an incident: a hotfix, an on-call action.
    Incident,
    /// A scheduled job or routine run.
    Scheduled,
    /// Fixing a finding: security or compliance remediation, a runbook, a guardrail.
    Remediation,
    /// Trying something out.
    Experiment,
    Unknown,
}

impl Motivation {
    pub fn as_str(&self) -> &'static str {
        match self {
            Motivation::Incident => "incident",
            Motivation::Scheduled => "scheduled",
            Motivation::Remediation => "remediation",
            Motivation::Experiment => "experiment",
            Motivation::Unknown => "unknown",
        }
    }

    pub const ALL: [Motivation; 5] = [
        Motivation::Incident,
        Motivation::Scheduled,
        Motivation::Remediation,
        Motivation::Experiment,
        Motivation::Unknown,
    ];
}

const INCIDENT_WORDS: &[&str] = &[
    "incident*",
    "hotfix*",
    "hot-fix",
    "outage",
    "pagerduty",
    "pager",
    "oncall",
    "on-call",
    "emergency",
    "firefight*",
    "mitigat*",
    "sev",
    "postmortem",
];
const REMEDIATION_WORDS: &[&str] =
    &["remediat*", "autofix", "auto-fix", "runbook", "enforce*", "guardrail*", "securityhub", "finding*", "patch*"];
const SCHEDULED_WORDS: &[&str] = &[
    "cron*",
    "schedule*",
    "nightly",
    "daily",
    "weekly",
    "hourly",
    "monthly",
    "periodic*",
    "business-hours",
    "off-hours",
    "after-hours",
    "timer",
];
const EXPERIMENT_WORDS: &[&str] =
    &["experiment*", "trial", "poc", "sandbox", "spike", "benchmark*", "loadtest*", "load-test", "tryout", "ab-test"];

/// Services whose calls are scheduled, remediation or experiments by nature.
const SERVICE_MOTIVATIONS: &[(&str, Motivation)] = &[
    ("events.amazonaws.com", Motivation::Scheduled),
    ("scheduler.amazonaws.com", Motivation::Scheduled),
    ("config.amazonaws.com", Motivation::Remediation),
    ("securityhub.amazonaws.com", Motivation::Remediation),
    ("ssm.amazonaws.com", Motivation::Remediation),
    ("fis.amazonaws.com", Motivation::Experiment),
];

/// Infer the motivation of a change set.
pub fn infer_motivation(change_set: &ChangeSet, actor: &ActorInfo) -> Inferred<Motivation> {
    if let Some(service) = &change_set.actor.invoked_by {
        if let Some((_, m)) = SERVICE_MOTIVATIONS.iter().find(|(s, _)| s == service) {
            return Inferred::by_rules(*m, vec![format!("made by {service}")]);
        }
    }
    let texts = context_texts(change_set);
    for (motivation, vocabulary) in [
        (Motivation::Incident, INCIDENT_WORDS),
        (Motivation::Remediation, REMEDIATION_WORDS),
        (Motivation::Scheduled, SCHEDULED_WORDS),
        (Motivation::Experiment, EXPERIMENT_WORDS),
    ] {
        let evidence: Vec<String> = texts
            .iter()
            .filter_map(|(what, text)| {
                find_word(text, vocabulary).map(|w| format!("{what} {text:?} says {:?}", w.trim_end_matches('*')))
            })
            .collect();
        if !evidence.is_empty() {
            return Inferred::by_rules(motivation, evidence);
        }
        if motivation == Motivation::Incident {
            // `INC-4502`, `INC4502`: an incident ticket number.
            if let Some((what, text)) = texts.iter().find(|(_, t)| names_incident_ticket(t)) {
                return Inferred::by_rules(motivation, vec![format!("{what} {text:?} names an incident ticket")]);
            }
        }
    }
    // A change that closes a security hole is a remediation, whoever makes it.
    if let Some(why) = change_set.events.iter().find_map(strengthens_security) {
        return Inferred::by_rules(Motivation::Remediation, vec![why]);
    }
    let mut unknown = vec!["no session name, tag or parameter says why".to_string()];
    if actor.kind == ActorKind::AwsService {
        unknown = vec![format!("{} acting on its own", actor.id)];
    }
    Inferred::by_rules(Motivation::Unknown, unknown)
}

fn names_incident_ticket(text: &str) -> bool {
    let ws = words(text);
    ws.windows(2).any(|w| w[0] == "inc" && w[1].chars().all(|c| c.is_ascii_digit()))
}

/// Texts that say why: session and role names, source identity, tag keys and values, descriptions.
fn context_texts(change_set: &ChangeSet) -> Vec<(String, String)> {
    let actor = &change_set.actor;
    let mut out: Vec<(String, String)> = Vec::new();
    let mut push = |what: &str, text: &str| {
        let entry = (what.to_string(), text.to_string());
        if !text.is_empty() && !out.contains(&entry) {
            out.push(entry);
        }
    };
    if let Some(role) = actor.session_issuer.as_deref().and_then(|arn| arn.rsplit('/').next()) {
        push("role name", role);
    }
    if let Some(s) = &actor.session_name {
        push("session name", s);
    }
    if let Some(s) = &actor.source_identity {
        push("source identity", s);
    }
    for event in &change_set.events {
        for (key, value) in tags(&event.request) {
            push("tag", &format!("{key}={value}"));
        }
        for text in strings_at(&event.request, &["description", "reason", "comment", "Description", "Comment"]) {
            push("description", &text);
        }
    }
    out
}

/// Tag key/value pairs in a request, in the shapes AWS services log them.
pub(crate) fn tags(request: &Value) -> Vec<(String, String)> {
    fn visit(value: &Value, out: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                // {"key": "K", "value": "V"} (EC2 items, SNS, S3 TagSet.Tag)
                let k = map.get("key").or_else(|| map.get("Key")).and_then(Value::as_str);
                let v = map.get("value").or_else(|| map.get("Value")).and_then(Value::as_str);
                if let (Some(k), Some(v)) = (k, v) {
                    out.push((k.to_string(), v.to_string()));
                }
                for (key, child) in map {
                    // {"tags": {"K": "V"}} (SQS, Lambda)
                    if key.eq_ignore_ascii_case("tags") {
                        if let Value::Object(tags) = child {
                            for (k, v) in tags {
                                if let Value::String(v) = v {
                                    out.push((k.clone(), v.clone()));
                                }
                            }
                        }
                    }
                    visit(child, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| visit(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    visit(request, &mut out);
    out.dedup();
    out
}

fn strings_at(request: &Value, keys: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    walk(request, &mut |key, value| {
        if keys.contains(&key) {
            if let Value::String(s) = value {
                out.push(s.clone());
            }
        }
    });
    out
}

/// Every parameter name in a request, lower-cased (keys of objects, and `Key` fields of
/// attribute-name lists such as SQS's `attributes`).
fn parameter_names(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(request, &mut |key, _| out.push(key.to_ascii_lowercase()));
    out
}

fn walk(value: &Value, f: &mut dyn FnMut(&str, &Value)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                f(k, v);
                walk(v, f);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, f)),
        _ => {}
    }
}

const SECURITY_APIS: &[(&str, &str)] = &[
    ("ec2", "*SecurityGroup*"),
    ("ec2", "*NetworkAcl*"),
    ("iam", "*"),
    ("kms", "*"),
    ("s3", "*PublicAccessBlock"),
    ("s3", "*BucketPolicy"),
    ("s3", "PutBucketAcl"),
    ("s3", "*BucketEncryption"),
    ("wafv2", "*"),
    ("secretsmanager", "*"),
    ("acm", "*"),
    ("guardduty", "*"),
];
const COMPLIANCE_APIS: &[(&str, &str)] = &[
    ("s3", "*BucketLogging"),
    ("s3", "*BucketVersioning"),
    ("s3", "*ObjectLock*"),
    ("cloudtrail", "*"),
    ("config", "*"),
    ("logs", "*RetentionPolicy"),
    ("backup", "*"),
    ("ec2", "*FlowLogs"),
];
const COST_APIS: &[(&str, &str)] =
    &[("ec2", "StopInstances"), ("s3", "*BucketLifecycle*"), ("ec2", "ReleaseAddress"), ("rds", "StopDBInstance")];

const SECURITY_PARAMS: &[&str] =
    &["kmskeyid", "kmsmasterkeyid", "storageencrypted", "publiclyaccessible", "kmskeyarn", "sslpolicy"];
const COMPLIANCE_PARAMS: &[&str] = &["backupretentionperiod", "messageretentionperiod", "retentionindays"];
const AVAILABILITY_PARAMS: &[&str] = &[
    "desiredcapacity",
    "minsize",
    "maxsize",
    "desiredcount",
    "multiaz",
    "deletionprotection",
    "disableapitermination",
    "healthcheckgraceperiod",
    "healthchecktype",
    "evaluationperiods",
    "threshold",
    "visibilitytimeout",
    "redrivepolicy",
    "numcachenodes",
    "replicascount",
];
const PERFORMANCE_PARAMS: &[&str] = &[
    "instancetype",
    "dbinstanceclass",
    "memorysize",
    "timeout",
    "reservedconcurrentexecutions",
    "provisionedconcurrentexecutions",
    "provisionedthroughput",
    "readcapacityunits",
    "writecapacityunits",
    "iops",
    "throughput",
    "allocatedstorage",
    "nodetype",
    "cachenodetype",
];
const COMPLIANCE_TAGS: &[&str] = &[
    "compliance",
    "data-classification",
    "dataclassification",
    "data-class",
    "classification",
    "pii",
    "retention",
    "audit",
    "regulat*",
    "hipaa",
    "pci",
    "gdpr",
    "sox",
];
const COST_TAGS: &[&str] = &["cost*", "billing", "budget", "chargeback", "finops"];
const COST_WORDS: &[&str] =
    &["cost*", "saving*", "rightsiz*", "right-size", "downsiz*", "decommission*", "cleanup", "clean-up", "finops"];

/// Infer the intent of a change set; `motivation` breaks ties (capacity raised during an incident
/// is about availability).
pub fn infer_intent(change_set: &ChangeSet, motivation: Motivation) -> Inferred<Intent> {
    let mut found: Vec<(Intent, String)> = Vec::new();
    for event in &change_set.events {
        let service = event.service();
        let api = |list: &[(&str, &str)]| {
            list.iter().any(|(s, pattern)| *s == service && crate::pattern::glob_match(pattern, &event.name))
        };
        let call = format!("{}:{}", service, event.raw_name);
        if api(SECURITY_APIS) {
            found.push((Intent::Security, format!("{call} is a security control")));
        }
        if api(COMPLIANCE_APIS) {
            found.push((Intent::Compliance, format!("{call} changes audit or retention settings")));
        }
        if api(COST_APIS) {
            found.push((Intent::Cost, format!("{call} reduces what is paid for")));
        }
        if event.name.starts_with("Delete") || event.name.starts_with("Terminate") {
            found.push((Intent::Cost, format!("{call} removes a resource")));
        }
        let params = parameter_names(&event.request);
        let attribute_names = sqs_attribute_names(event);
        for (intent, list) in [
            (Intent::Security, SECURITY_PARAMS),
            (Intent::Compliance, COMPLIANCE_PARAMS),
            (Intent::Availability, AVAILABILITY_PARAMS),
            (Intent::Performance, PERFORMANCE_PARAMS),
        ] {
            if let Some(p) = params.iter().chain(&attribute_names).find(|p| list.contains(&p.as_str())) {
                found.push((intent, format!("{call} sets {p}")));
            }
        }
        for (key, value) in tags(&event.request) {
            if find_word(&key, COMPLIANCE_TAGS).is_some() {
                found.push((Intent::Compliance, format!("tag {key}={value} is a compliance tag")));
            } else if find_word(&key, COST_TAGS).is_some() {
                found.push((Intent::Cost, format!("tag {key}={value} is a cost allocation tag")));
            }
        }
    }
    if let Some(session) = &change_set.actor.session_name {
        if let Some(w) = find_word(session, COST_WORDS) {
            found.push((Intent::Cost, format!("session name {session:?} says {:?}", w.trim_end_matches('*'))));
        }
    }
    let priority = [Intent::Security, Intent::Compliance, Intent::Availability, Intent::Performance, Intent::Cost];
    let best = priority.iter().copied().find(|i| found.iter().any(|(f, _)| f == i));
    match best {
        Some(intent) => {
            let mut evidence: Vec<String> =
                found.iter().filter(|(f, _)| *f == intent).map(|(_, e)| e.clone()).collect();
            evidence.dedup();
            if motivation == Motivation::Incident && intent == Intent::Performance {
                evidence.push("made during an incident: capacity for availability".into());
                return Inferred::by_rules(Intent::Availability, evidence);
            }
            Inferred::by_rules(intent, evidence)
        }
        None if motivation == Motivation::Incident => {
            Inferred::by_rules(Intent::Availability, vec!["made during an incident".into()])
        }
        None => {
            Inferred::by_rules(Intent::Unknown, vec!["the API and its parameters say nothing about a purpose".into()])
        }
    }
}

/// SQS logs queue attributes as a map: `{"attributes": {"VisibilityTimeout": "60"}}`.
fn sqs_attribute_names(event: &ApiEvent) -> Vec<String> {
    match event.request.get("attributes") {
        Some(Value::Object(map)) => map.keys().map(|k| k.to_ascii_lowercase()).collect(),
        _ => Vec::new(),
    }
}

const OPEN_CIDRS: &[&str] = &["0.0.0.0/0", "::/0"];

/// Why an event closes a security hole, if it does.
fn strengthens_security(event: &ApiEvent) -> Option<String> {
    let call = format!("{}:{}", event.service(), event.raw_name);
    let text = event.request.to_string();
    match (event.service(), event.name.as_str()) {
        ("ec2", "RevokeSecurityGroupIngress") if OPEN_CIDRS.iter().any(|c| text.contains(c)) => {
            Some(format!("{call} closes ingress from the whole internet"))
        }
        ("s3", "PutBucketPublicAccessBlock") if !text.contains("false") => Some(format!("{call} blocks public access")),
        ("s3", "PutBucketEncryption") | ("kms", "EnableKeyRotation") => Some(format!("{call} turns encryption on")),
        _ => None,
    }
}
