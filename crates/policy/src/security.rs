//! Calls that weaken security: public ingress, public buckets, encryption or logging turned off,
//! IAM wildcards. Checked on the calls themselves, so they hold whether or not a recipe knows them.

use serde_json::Value;

use driftback_events::ApiEvent;

const OPEN_CIDRS: &[&str] = &["0.0.0.0/0", "::/0"];

/// Why an event weakens security, if it does.
pub fn security_weakening(event: &ApiEvent) -> Option<String> {
    let r = &event.request;
    let name = event.name.as_str();
    let says = |what: &str| Some(format!("{} {what}", event.raw_name));
    match (event.service(), name) {
        ("ec2", "AuthorizeSecurityGroupIngress") | ("ec2", "ModifySecurityGroupRules") => {
            let cidrs = strings_under(r, &["cidrIp", "cidrIpv6", "CidrIpv4", "CidrIpv6", "cidrIpv4"]);
            cidrs
                .iter()
                .find(|c| OPEN_CIDRS.contains(&c.as_str()))
                .and_then(|c| says(&format!("opens ingress from {c} (the whole internet)")))
        }
        // CloudTrail's names for PutPublicAccessBlock and its account-level twin.
        ("s3", "PutBucketPublicAccessBlock") | ("s3", "PutAccountPublicAccessBlock") => {
            let flags =
                bools_under(r, &["BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"]);
            flags.contains(&false).then(|| format!("{} turns public access protection off", event.raw_name))
        }
        ("s3", "DeleteBucketPublicAccessBlock") | ("s3", "DeleteAccountPublicAccessBlock") => {
            says("removes public access protection")
        }
        ("s3", "DeleteBucketEncryption") => says("turns default encryption off"),
        ("s3", "PutBucketAcl") => {
            let text = r.to_string();
            (text.contains("AllUsers") || text.contains("public-read"))
                .then(|| format!("{} makes the bucket public", event.raw_name))
        }
        ("s3", "PutBucketPolicy") => {
            let text = r.to_string().replace(' ', "");
            (text.contains("\\\"Principal\\\":\\\"*\\\"")
                || text.contains("\"Principal\":\"*\"")
                || text.contains("\\\"AWS\\\":\\\"*\\\""))
            .then(|| format!("{} grants access to everyone", event.raw_name))
        }
        ("s3", "PutBucketLogging") => {
            let text = r.to_string();
            (!text.contains("LoggingEnabled")).then(|| format!("{} turns access logging off", event.raw_name))
        }
        ("cloudtrail", "StopLogging") | ("cloudtrail", "DeleteTrail") => says("turns audit logging off"),
        ("ec2", "DeleteFlowLogs") => says("turns VPC flow logs off"),
        ("kms", "DisableKeyRotation") | ("kms", "ScheduleKeyDeletion") | ("kms", "DisableKey") => {
            says("weakens encryption keys")
        }
        ("iam", "PutRolePolicy")
        | ("iam", "PutUserPolicy")
        | ("iam", "PutGroupPolicy")
        | ("iam", "CreatePolicy")
        | ("iam", "CreatePolicyVersion") => {
            let doc = strings_under(r, &["policyDocument"]).join(" ");
            has_wildcard_action(&doc).then(|| format!("{} grants wildcard IAM permissions", event.raw_name))
        }
        ("iam", "AttachRolePolicy") | ("iam", "AttachUserPolicy") | ("iam", "AttachGroupPolicy") => {
            let arn = strings_under(r, &["policyArn"]).join(" ");
            (arn.ends_with("/AdministratorAccess") || arn.ends_with("/IAMFullAccess"))
                .then(|| format!("{} grants administrator access", event.raw_name))
        }
        // A queue's attributes: encryption turned off, or a policy open to everyone.
        ("sqs", "SetQueueAttributes") => {
            let off = strings_under(r, &["SqsManagedSseEnabled"]).iter().any(|v| v.eq_ignore_ascii_case("false"))
                && strings_under(r, &["KmsMasterKeyId"]).iter().all(|k| k.is_empty());
            let key_removed = strings_under(r, &["KmsMasterKeyId"]).iter().any(|k| k.is_empty());
            let public = strings_under(r, &["Policy"]).iter().any(|doc| public_principal(doc));
            if public {
                says("grants access to the queue to everyone")
            } else if off || key_removed {
                says("turns the queue's server-side encryption off")
            } else {
                None
            }
        }
        // A topic's attribute, one at a time: its key removed, or a policy open to everyone.
        ("sns", "SetTopicAttributes") => {
            let name = strings_under(r, &["attributeName"]).join("");
            let value = strings_under(r, &["attributeValue"]).join("");
            match name.as_str() {
                "KmsMasterKeyId" if value.is_empty() => says("turns the topic's server-side encryption off"),
                "Policy" if public_principal(&value) => says("grants access to the topic to everyone"),
                _ => None,
            }
        }
        // Anyone may invoke the function.
        ("lambda", "AddPermission") => {
            let principal = strings_under(r, &["principal"]).join("");
            let unscoped = strings_under(r, &["sourceArn", "sourceAccount", "principalOrgID"]).is_empty();
            (principal == "*" && unscoped).then(|| format!("{} lets anyone invoke the function", event.raw_name))
        }
        // A network ACL rule that allows every protocol from anywhere.
        ("ec2", "CreateNetworkAclEntry") | ("ec2", "ReplaceNetworkAclEntry") => {
            let allow = strings_under(r, &["ruleAction"]).iter().any(|a| a == "allow");
            let ingress = !bools_under(r, &["egress"]).contains(&true);
            let all = strings_under(r, &["protocol"]).iter().any(|p| p == "-1" || p.eq_ignore_ascii_case("all"));
            let open =
                strings_under(r, &["cidrBlock", "ipv6CidrBlock"]).iter().any(|c| OPEN_CIDRS.contains(&c.as_str()));
            (allow && ingress && all && open)
                .then(|| format!("{} allows all traffic from the whole internet", event.raw_name))
        }
        // A snapshot or an image shared with everyone.
        ("ec2", "ModifySnapshotAttribute") | ("ec2", "ModifyImageAttribute") => {
            let text = r.to_string();
            (text.contains("\"add\"") && text.contains("\"group\":\"all\""))
                .then(|| format!("{} shares it with every AWS account", event.raw_name))
        }
        // Resource policies, logged as JSON text (or an object), open to everyone.
        ("ecr", "SetRepositoryPolicy") => public_policy_under(r, &["policyText"])
            .then(|| format!("{} opens the repository to everyone", event.raw_name)),
        ("kms", "PutKeyPolicy") => {
            public_policy_under(r, &["policy"]).then(|| format!("{} lets everyone use the key", event.raw_name))
        }
        ("secretsmanager", "PutResourcePolicy") => public_policy_under(r, &["resourcePolicy"])
            .then(|| format!("{} grants access to the secret to everyone", event.raw_name)),
        ("dynamodb", "PutResourcePolicy") | ("kinesis", "PutResourcePolicy") | ("redshift", "PutResourcePolicy") => {
            public_policy_under(r, &["policy"]).then(|| format!("{} grants access to everyone", event.raw_name))
        }
        ("es", "UpdateDomainConfig") | ("es", "UpdateElasticsearchDomainConfig") => {
            public_policy_under(r, &["accessPolicies"])
                .then(|| format!("{} makes the search domain publicly accessible", event.raw_name))
        }
        // Encryption turned off or its key removed.
        ("ec2", "DisableEbsEncryptionByDefault") => says("turns EBS encryption by default off"),
        ("kinesis", "StopStreamEncryption") => says("turns the stream's server-side encryption off"),
        ("dynamodb", "UpdateTable") => {
            let sse: Vec<bool> =
                r.get("sSESpecification").map(|spec| bools_under(spec, &["enabled"])).unwrap_or_default();
            sse.contains(&false)
                .then(|| format!("{} removes the table's customer-managed encryption key", event.raw_name))
        }
        // Public accessibility.
        ("redshift", "ModifyCluster") => bools_under(r, &["publiclyAccessible"])
            .contains(&true)
            .then(|| format!("{} makes the cluster publicly accessible", event.raw_name)),
        // Audit turned off.
        ("config", "StopConfigurationRecorder") | ("config", "DeleteConfigurationRecorder") => {
            says("turns AWS Config recording off")
        }
        ("guardduty", "DeleteDetector") => says("turns GuardDuty off"),
        ("guardduty", "UpdateDetector") => {
            bools_under(r, &["enable"]).contains(&false).then(|| format!("{} turns GuardDuty off", event.raw_name))
        }
        ("rds", "ModifyDBInstance") | ("rds", "ModifyDBCluster") => {
            // Storage encryption cannot be changed by these calls (they have no such member).
            let public = bools_under(r, &["publiclyAccessible"]).contains(&true);
            public.then(|| format!("{} makes the database publicly accessible", event.raw_name))
        }
        _ => None,
    }
}

/// A permission granted to an IAM role, user or group that the change set did not create: who may do
/// what changed for an identity that already exists, which a person decides (a new role with its
/// policies is written into the code like any new resource).
pub fn iam_grant_to_existing_identity(events: &[ApiEvent]) -> Option<String> {
    let name_in = |e: &ApiEvent, key: &str| e.request.get(key).and_then(Value::as_str).map(str::to_string);
    let created = |kind: &str, key: &str, name: &str| {
        events.iter().any(|e| {
            e.service() == "iam"
                && e.name.strip_prefix("Create") == Some(kind)
                && name_in(e, key).as_deref() == Some(name)
        })
    };
    events.iter().filter(|e| e.service() == "iam").find_map(|e| {
        let (kind, key) = match e.name.as_str() {
            "AttachRolePolicy" | "PutRolePolicy" => ("Role", "roleName"),
            "AttachUserPolicy" | "PutUserPolicy" | "AddUserToGroup" => ("User", "userName"),
            "AttachGroupPolicy" | "PutGroupPolicy" => ("Group", "groupName"),
            _ => return None,
        };
        let name = name_in(e, key).unwrap_or_else(|| "(unnamed)".into());
        (!created(kind, key, &name))
            .then(|| format!("{} grants permissions to the existing IAM {} {name}", e.raw_name, kind.to_lowercase()))
    })
}

/// A policy under one of `keys`, as JSON text or an object, that lets everyone in.
fn public_policy_under(value: &Value, keys: &[&str]) -> bool {
    let mut public = false;
    walk(value, &mut |k, v| {
        if keys.contains(&k) {
            public |= match v {
                Value::String(doc) => public_principal(doc),
                Value::Object(_) => public_principal(&v.to_string()),
                _ => false,
            };
        }
    });
    public
}

/// A resource policy (JSON text) with a statement allowing `"Principal": "*"` or `{"AWS": "*"}`
/// without a condition that narrows who.
fn public_principal(doc: &str) -> bool {
    let Ok(policy) = serde_json::from_str::<Value>(doc) else { return false };
    let statements = match &policy["Statement"] {
        Value::Array(items) => items.clone(),
        one @ Value::Object(_) => vec![one.clone()],
        _ => return false,
    };
    statements.iter().any(|st| {
        let everyone = match &st["Principal"] {
            Value::String(p) => p == "*",
            Value::Object(p) => ["AWS", "Service"].iter().any(|k| match &p[*k] {
                Value::String(v) => v == "*",
                Value::Array(vs) => vs.iter().any(|v| v == "*"),
                _ => false,
            }),
            _ => false,
        };
        everyone && st["Effect"] == "Allow" && st.get("Condition").is_none()
    })
}

fn has_wildcard_action(doc: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(doc) else {
        let compact = doc.replace([' ', '\n'], "");
        return compact.contains("\"Action\":\"*\"") || compact.contains("\"Action\":[\"*\"");
    };
    let statements = match value.get("Statement") {
        Some(Value::Array(s)) => s.clone(),
        Some(s) => vec![s.clone()],
        None => vec![],
    };
    statements.iter().any(|s| {
        let allow = s.get("Effect").and_then(Value::as_str) != Some("Deny");
        let actions = match s.get("Action") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
            _ => vec![],
        };
        allow && actions.iter().any(|a| a == "*" || a.ends_with(":*") && a.len() <= 2 || a == "*:*")
    })
}

fn strings_under(value: &Value, keys: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    walk(value, &mut |k, v| {
        if keys.contains(&k) {
            if let Some(s) = v.as_str() {
                out.push(s.to_string());
            }
        }
    });
    out
}

fn bools_under(value: &Value, keys: &[&str]) -> Vec<bool> {
    let mut out = Vec::new();
    walk(value, &mut |k, v| {
        if keys.contains(&k) {
            match v {
                Value::Bool(b) => out.push(*b),
                Value::String(s) if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false") => {
                    out.push(s.eq_ignore_ascii_case("true"))
                }
                _ => {}
            }
        }
    });
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
