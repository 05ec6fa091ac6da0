//! Which events are noise. Every drop carries a reason that is counted and can be queried.

use serde::{Deserialize, Serialize};

use serde_json::Value;

use crate::event::{ApiEvent, CallVia};

/// What the filter knows beyond the event itself.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    /// Principals whose calls are the IaC tool's own: role or user ARNs, session issuer ARNs, or role
    /// names, with `*` as a wildcard (`arn:aws:iam::*:role/terraform-*`, `terraform-ci`).
    #[serde(default)]
    pub iac_principals: Vec<String>,
}

/// What happens to an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Keep,
    Drop(DropReason),
}

/// Why an event is not a drift candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DropReason {
    /// The call failed (`errorCode`): nothing changed.
    Failed,
    /// A Describe/Get/List call: nothing changed.
    ReadOnly,
    /// A data event (S3 objects, DynamoDB items, ...): data, not configuration.
    DataEvent,
    /// Not an API call (console sign-in, service event, ...).
    NotApiCall,
    /// Made by a configured IaC principal.
    IacPrincipal,
    /// Made by Terraform or OpenTofu, by its user agent.
    IacUserAgent,
    /// A call that changes nothing Terraform configures ([`NO_CONFIGURATION`]): a reboot, a
    /// snapshot, a log download, a rotation.
    ChangesNoConfiguration,
}

impl DropReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            DropReason::Failed => "failed",
            DropReason::ReadOnly => "read-only",
            DropReason::DataEvent => "data-event",
            DropReason::NotApiCall => "not-api-call",
            DropReason::IacPrincipal => "iac-principal",
            DropReason::IacUserAgent => "iac-user-agent",
            DropReason::ChangesNoConfiguration => "changes-no-configuration",
        }
    }
}

/// A kind of call that changes nothing Terraform configures, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoConfiguration {
    /// `eventSource`.
    pub source: &'static str,
    /// `eventName`, without a version suffix.
    pub name: &'static str,
    pub when: When,
    /// Why it changes no configuration, for people reading the table.
    pub why: &'static str,
}

/// When a [`NoConfiguration`] call changes no configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// The request sets none of these members (given, they configure something).
    RequestSetsNone(&'static [&'static str]),
    /// The request has each of these members with this text (a list of that one text counts; `*`:
    /// any value): the step of a protocol that changes values, not configuration.
    RequestHas(&'static [(&'static str, &'static str)]),
    /// The service itself made the call (`invokedBy`, the source address, or its service-linked
    /// role's path names it) and the request sets only these members: what the service does
    /// within bounds the configuration gave it.
    ServiceSetsOnly {
        service: &'static str,
        members: &'static [&'static str],
    },
}

/// The calls that change nothing Terraform configures: run-time operations, snapshots and backups,
/// log downloads, key and secret rotation, failovers, and storage grown by RDS storage autoscaling
/// (within `max_allocated_storage`, which the provider does not report as a difference). Each is
/// dropped with [`DropReason::ChangesNoConfiguration`], counted like every drop.
pub const NO_CONFIGURATION: &[NoConfiguration] = &[
    no_config(
        "ec2.amazonaws.com",
        "StartInstances",
        When::Always,
        "starts instances; their configuration is unchanged",
    ),
    no_config("ec2.amazonaws.com", "StopInstances", When::Always, "stops instances; their configuration is unchanged"),
    no_config("ec2.amazonaws.com", "RebootInstances", When::Always, "reboots instances"),
    no_config("ec2.amazonaws.com", "CreateSnapshot", When::Always, "a manual snapshot of a volume is a backup"),
    no_config(
        "ec2.amazonaws.com",
        "CreateSnapshots",
        When::Always,
        "manual snapshots of an instance's volumes are backups",
    ),
    no_config("rds.amazonaws.com", "RebootDBInstance", When::Always, "reboots a database (a failover if asked)"),
    no_config("rds.amazonaws.com", "RebootDBCluster", When::Always, "reboots a database cluster"),
    no_config("rds.amazonaws.com", "StartDBInstance", When::Always, "starts a stopped database"),
    no_config("rds.amazonaws.com", "StopDBInstance", When::Always, "stops a database for a while"),
    no_config("rds.amazonaws.com", "StartDBCluster", When::Always, "starts a stopped database cluster"),
    no_config("rds.amazonaws.com", "StopDBCluster", When::Always, "stops a database cluster for a while"),
    no_config(
        "rds.amazonaws.com",
        "FailoverDBCluster",
        When::Always,
        "promotes a replica; the cluster is configured as before",
    ),
    no_config("rds.amazonaws.com", "CreateDBSnapshot", When::Always, "a manual snapshot is a backup"),
    no_config("rds.amazonaws.com", "CreateDBClusterSnapshot", When::Always, "a manual cluster snapshot is a backup"),
    no_config("rds.amazonaws.com", "DownloadDBLogFilePortion", When::Always, "reads a log file"),
    no_config(
        "rds.amazonaws.com",
        "ModifyDBInstance",
        When::ServiceSetsOnly {
            service: "rds.amazonaws.com",
            members: &["dBInstanceIdentifier", "allocatedStorage", "applyImmediately"],
        },
        "RDS storage autoscaling grew the storage within max_allocated_storage",
    ),
    no_config("dynamodb.amazonaws.com", "CreateBackup", When::Always, "an on-demand backup of a table"),
    no_config("elasticache.amazonaws.com", "CreateSnapshot", When::Always, "a manual snapshot is a backup"),
    no_config("elasticache.amazonaws.com", "TestFailover", When::Always, "a failover test"),
    no_config(
        "kms.amazonaws.com",
        "RotateKeyOnDemand",
        When::Always,
        "new key material; the key is configured as before",
    ),
    no_config(
        "cloudfront.amazonaws.com",
        "CreateInvalidation",
        When::Always,
        "removes objects from the edge caches; the distribution is configured as before",
    ),
    no_config(
        "ecr.amazonaws.com",
        "PutImage",
        When::Always,
        "pushes an image (its manifest and tag): data, not configuration",
    ),
    no_config("ecr.amazonaws.com", "InitiateLayerUpload", When::Always, "a step of an image push"),
    no_config("ecr.amazonaws.com", "UploadLayerPart", When::Always, "a step of an image push"),
    no_config("ecr.amazonaws.com", "CompleteLayerUpload", When::Always, "a step of an image push"),
    no_config("ecr.amazonaws.com", "BatchDeleteImage", When::Always, "deletes images: data, not configuration"),
    no_config(
        "states.amazonaws.com",
        "StartExecution",
        When::Always,
        "runs a state machine; its definition is unchanged",
    ),
    no_config("states.amazonaws.com", "StartSyncExecution", When::Always, "runs an express state machine"),
    no_config("states.amazonaws.com", "StopExecution", When::Always, "stops a run of a state machine"),
    no_config("logs.amazonaws.com", "CreateExportTask", When::Always, "exports a log group's events to S3 once"),
    no_config(
        "iam.amazonaws.com",
        "EnableMFADevice",
        When::Always,
        "a user's MFA device is a sign-in credential, which no Terraform resource configures",
    ),
    no_config(
        "iam.amazonaws.com",
        "DeleteInstanceProfile",
        When::ServiceSetsOnly { service: "eks-nodegroup.amazonaws.com", members: &["instanceProfileName"] },
        "EKS removes the instance profile it made for a managed node group (its service-linked role, \
         as the EKS guide prints it): AWS's own resource, not the code's",
    ),
    no_config(
        "iam.amazonaws.com",
        "RemoveRoleFromInstanceProfile",
        When::ServiceSetsOnly { service: "eks-nodegroup.amazonaws.com", members: &["instanceProfileName", "roleName"] },
        "EKS empties the instance profile it made for a managed node group before removing it",
    ),
    no_config(
        "secretsmanager.amazonaws.com",
        "PutSecretValue",
        When::RequestHas(&[("versionStages", "AWSPENDING")]),
        "a rotation function's new value, staged AWSPENDING (the rotation's createSecret step): no value is current yet",
    ),
    no_config(
        "secretsmanager.amazonaws.com",
        "UpdateSecretVersionStage",
        When::RequestHas(&[("versionStage", "AWSCURRENT"), ("moveToVersionId", "*"), ("removeFromVersionId", "*")]),
        "a rotation's last step (finishSecret) makes the new value current: a value, never configuration",
    ),
    no_config(
        "secretsmanager.amazonaws.com",
        "RotateSecret",
        When::RequestSetsNone(&["rotationRules", "rotationLambdaARN"]),
        "a rotation with the stored settings (as the service's schedule starts it) changes the value only",
    ),
];

const fn no_config(source: &'static str, name: &'static str, when: When, why: &'static str) -> NoConfiguration {
    NoConfiguration { source, name, when, why }
}

/// Who made a call, as [`no_configuration`] needs it: `invokedBy` (or the service the source
/// address names) and the session issuer's ARN.
pub(crate) struct Caller<'a> {
    pub(crate) invoked_by: Option<&'a str>,
    pub(crate) session_issuer: Option<&'a str>,
}

/// The [`NO_CONFIGURATION`] entry a call matches, if any. `name` is without its version suffix;
/// `request` is read only for an entry with a condition on it.
pub(crate) fn no_configuration(
    source: &str,
    name: &str,
    caller: Caller<'_>,
    request: impl FnOnce() -> Option<Value>,
) -> Option<&'static NoConfiguration> {
    let entries: Vec<&NoConfiguration> =
        NO_CONFIGURATION.iter().filter(|e| e.source == source && e.name == name).collect();
    let request = if entries.iter().any(|e| e.when != When::Always) { request() } else { None };
    entries.into_iter().find(|entry| match entry.when {
        When::Always => true,
        When::RequestSetsNone(members) => {
            members.iter().all(|m| request.as_ref().and_then(|r| r.get(m)).is_none_or(Value::is_null))
        }
        When::RequestHas(members) => {
            members.iter().all(|(member, want)| match request.as_ref().and_then(|r| r.get(member)) {
                None | Some(Value::Null) => false,
                Some(_) if *want == "*" => true,
                Some(Value::String(s)) => s == want,
                Some(Value::Array(items)) => matches!(items.as_slice(), [Value::String(s)] if s == want),
                Some(_) => false,
            })
        }
        When::ServiceSetsOnly { service, members } => {
            let by_service = caller.invoked_by == Some(service)
                || caller.session_issuer.is_some_and(|arn| arn.contains(&format!("/aws-service-role/{service}/")));
            by_service
                && matches!(&request, Some(Value::Object(map)) if map.keys().all(|k| members.contains(&k.as_str())))
        }
    })
}

/// Decide whether an event is a drift candidate.
pub fn classify(event: &ApiEvent, config: &FilterConfig) -> Disposition {
    let actor = &event.actor;
    let reason = call_drop(event.error_code.is_some(), event.read_only, event.management, &event.event_type)
        .or_else(|| {
            actor_drop(
                [actor.principal_arn.as_deref(), actor.session_issuer.as_deref(), actor.source_identity.as_deref()],
                actor.via,
                config,
            )
        })
        .or_else(|| {
            let caller =
                Caller { invoked_by: actor.invoked_by.as_deref(), session_issuer: actor.session_issuer.as_deref() };
            no_configuration(&event.source, &event.name, caller, || Some(event.request.clone()))
                .map(|_| DropReason::ChangesNoConfiguration)
        });
    reason.map_or(Disposition::Keep, Disposition::Drop)
}

/// The drop reasons the call itself gives, before who made it matters.
pub(crate) fn call_drop(failed: bool, read_only: bool, management: bool, event_type: &str) -> Option<DropReason> {
    if failed {
        Some(DropReason::Failed)
    } else if read_only {
        Some(DropReason::ReadOnly)
    } else if !management {
        Some(DropReason::DataEvent)
    } else if event_type != "AwsApiCall" {
        Some(DropReason::NotApiCall)
    } else {
        None
    }
}

/// The drop reasons of who made the call: `[principal ARN, session issuer ARN, source identity]`
/// and how it was made.
pub(crate) fn actor_drop(principal: [Option<&str>; 3], via: CallVia, config: &FilterConfig) -> Option<DropReason> {
    if is_iac_principal(principal, config) {
        // The principal is checked before the user agent: a user agent can be spoofed, a role cannot.
        Some(DropReason::IacPrincipal)
    } else if matches!(via, CallVia::Iac(_)) {
        Some(DropReason::IacUserAgent)
    } else {
        None
    }
}

fn is_iac_principal(
    [principal_arn, session_issuer, source_identity]: [Option<&str>; 3],
    config: &FilterConfig,
) -> bool {
    if config.iac_principals.is_empty() {
        return false;
    }
    let role_name = session_issuer.and_then(|arn| arn.rsplit('/').next());
    let assumed_role = principal_arn.filter(|arn| arn.contains(":assumed-role/")).and_then(|arn| arn.split('/').nth(1));
    let candidates = [principal_arn, session_issuer, role_name, assumed_role, source_identity];
    config.iac_principals.iter().any(|pattern| candidates.iter().flatten().any(|c| glob_match(pattern, c)))
}

/// `*` matches any run of characters; everything else matches itself.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text[first.len()..].ends_with(last) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::normalize;
    use serde_json::{Value, json};

    fn event(patch: Value) -> ApiEvent {
        let mut r = json!({
            "eventID": "e", "eventTime": "2024-03-01T10:00:00Z", "eventSource": "ec2.amazonaws.com",
            "eventName": "CreateTags", "readOnly": false, "eventType": "AwsApiCall", "managementEvent": true,
            "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"},
            "userAgent": "aws-cli/2.15.30"
        });
        for (k, v) in patch.as_object().unwrap() {
            r[k] = v.clone();
        }
        normalize(&r).unwrap()
    }

    #[test]
    fn drop_reasons() {
        let config = FilterConfig { iac_principals: vec!["terraform-*".into()] };
        let tf_role = json!({"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/terraform-ci/s",
                             "sessionContext": {"sessionIssuer": {"arn": "arn:aws:iam::1:role/terraform-ci"}}});
        let cases = [
            (json!({}), Disposition::Keep),
            (json!({"errorCode": "AccessDenied"}), Disposition::Drop(DropReason::Failed)),
            (json!({"readOnly": true}), Disposition::Drop(DropReason::ReadOnly)),
            (json!({"managementEvent": false}), Disposition::Drop(DropReason::DataEvent)),
            (json!({"eventType": "AwsConsoleSignIn"}), Disposition::Drop(DropReason::NotApiCall)),
            (
                json!({"userIdentity": tf_role.clone(), "userAgent": "Boto3/1.34"}),
                Disposition::Drop(DropReason::IacPrincipal),
            ),
            (
                json!({"userAgent": "APN/1.0 HashiCorp/1.0 Terraform/1.7.5"}),
                Disposition::Drop(DropReason::IacUserAgent),
            ),
        ];
        for (patch, want) in cases {
            assert_eq!(classify(&event(patch.clone()), &config), want, "{patch}");
        }
    }

    #[test]
    fn calls_that_change_no_configuration_are_dropped_by_the_table() {
        let config = FilterConfig::default();
        let call = |source: &str, name: &str, request: Value| {
            event(json!({"eventSource": source, "eventName": name, "requestParameters": request}))
        };
        let drop = Disposition::Drop(DropReason::ChangesNoConfiguration);
        for (source, name) in [
            ("rds.amazonaws.com", "RebootDBInstance"),
            ("rds.amazonaws.com", "CreateDBSnapshot"),
            ("rds.amazonaws.com", "FailoverDBCluster"),
            ("ec2.amazonaws.com", "CreateSnapshot"),
            ("kms.amazonaws.com", "RotateKeyOnDemand"),
            ("logs.amazonaws.com", "CreateExportTask"),
            ("iam.amazonaws.com", "EnableMFADevice"),
            ("cloudfront.amazonaws.com", "CreateInvalidation2014_01_31"),
            ("cloudfront.amazonaws.com", "CreateInvalidation"),
            ("ecr.amazonaws.com", "PutImage"),
            ("states.amazonaws.com", "StartExecution"),
            ("states.amazonaws.com", "StopExecution"),
        ] {
            assert_eq!(classify(&call(source, name, json!({"x": 1})), &config), drop, "{source} {name}");
        }
        // The same name in another service is another call.
        assert_eq!(
            classify(&call("ecr.amazonaws.com", "PutImageTagMutability", json!({})), &config),
            Disposition::Keep
        );
        assert_eq!(
            classify(&call("redshift.amazonaws.com", "RebootDBInstance", json!({})), &config),
            Disposition::Keep
        );
        // A rotation with the stored settings changes the value only; one that sets them changes them.
        let rotate = |request| call("secretsmanager.amazonaws.com", "RotateSecret", request);
        assert_eq!(classify(&rotate(json!({"secretId": "db", "clientRequestToken": "t"})), &config), drop);
        assert_eq!(classify(&rotate(Value::Null), &config), drop);
        let with_rules = rotate(json!({"secretId": "db", "rotationRules": {"automaticallyAfterDays": 7}}));
        assert_eq!(classify(&with_rules, &config), Disposition::Keep);
        // The rotation function's steps: a pending value, then the new value made current.
        let secrets = |name, request| call("secretsmanager.amazonaws.com", name, request);
        let pending = json!({"secretId": "db", "clientRequestToken": "t", "versionStages": ["AWSPENDING"]});
        assert_eq!(classify(&secrets("PutSecretValue", pending), &config), drop);
        let current = json!({"secretId": "db", "clientRequestToken": "t", "versionStages": ["AWSCURRENT"]});
        assert_eq!(classify(&secrets("PutSecretValue", current), &config), Disposition::Keep);
        let plain = json!({"secretId": "db", "secretString": "HIDDEN_DUE_TO_SECURITY_REASONS"});
        assert_eq!(classify(&secrets("PutSecretValue", plain), &config), Disposition::Keep);
        let finish =
            json!({"secretId": "db", "versionStage": "AWSCURRENT", "moveToVersionId": "t", "removeFromVersionId": "o"});
        assert_eq!(classify(&secrets("UpdateSecretVersionStage", finish), &config), drop);
        let label = json!({"secretId": "db", "versionStage": "blue", "moveToVersionId": "t"});
        assert_eq!(classify(&secrets("UpdateSecretVersionStage", label), &config), Disposition::Keep);

        // Storage grown by RDS storage autoscaling, and nothing else, by RDS itself.
        let grown = |identity: Value, request: Value| {
            event(json!({"eventSource": "rds.amazonaws.com", "eventName": "ModifyDBInstance", "userIdentity": identity,
                         "sourceIPAddress": "rds.amazonaws.com", "userAgent": "rds.amazonaws.com",
                         "requestParameters": request}))
        };
        let rds = json!({"type": "AWSService", "invokedBy": "rds.amazonaws.com"});
        let storage = json!({"dBInstanceIdentifier": "orders", "allocatedStorage": 120, "applyImmediately": true});
        assert_eq!(classify(&grown(rds.clone(), storage.clone()), &config), drop);
        let linked = json!({"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/AWSServiceRoleForRDS/RDS",
            "sessionContext": {"sessionIssuer": {"arn": "arn:aws:iam::1:role/aws-service-role/rds.amazonaws.com/AWSServiceRoleForRDS"}}});
        let linked = event(json!({"eventSource": "rds.amazonaws.com", "eventName": "ModifyDBInstance",
                                  "userIdentity": linked, "requestParameters": storage.clone()}));
        assert_eq!(classify(&linked, &config), drop);
        // Anything else it sets, or a person growing it, is a change to reconcile.
        let mut class = storage.clone();
        class["dBInstanceClass"] = json!("db.r6g.large");
        assert_eq!(classify(&grown(rds, class), &config), Disposition::Keep);
        let person = call("rds.amazonaws.com", "ModifyDBInstance", storage);
        assert_eq!(classify(&person, &config), Disposition::Keep);
        // EKS's node group role removing the instance profile it made; a person doing it is a change.
        let eks = json!({"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/AWSServiceRoleForAmazonEKSNodegroup/EKS",
            "invokedBy": "eks-nodegroup.amazonaws.com",
            "sessionContext": {"sessionIssuer": {"arn": "arn:aws:iam::1:role/aws-service-role/eks-nodegroup.amazonaws.com/AWSServiceRoleForAmazonEKSNodegroup"}}});
        let profile = json!({"instanceProfileName": "eks-11111111-2222-3333-4444-abcdef123456"});
        let by_eks = event(json!({"eventSource": "iam.amazonaws.com", "eventName": "DeleteInstanceProfile",
                                  "userIdentity": eks, "requestParameters": profile.clone()}));
        assert_eq!(classify(&by_eks, &config), drop);
        assert_eq!(classify(&call("iam.amazonaws.com", "DeleteInstanceProfile", profile), &config), Disposition::Keep);
    }

    #[test]
    fn the_table_names_each_call_once() {
        let mut seen = std::collections::BTreeSet::new();
        for entry in NO_CONFIGURATION {
            assert!(entry.source.ends_with(".amazonaws.com") && !entry.why.is_empty(), "{entry:?}");
            assert!(seen.insert((entry.source, entry.name)), "{entry:?} is listed twice");
        }
    }

    #[test]
    fn globs() {
        assert!(glob_match("terraform-*", "terraform-ci"));
        assert!(glob_match("arn:aws:iam::*:role/tf*", "arn:aws:iam::123:role/tf-apply"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
        assert!(!glob_match("a*b*c", "acb"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("ab*ba", "aba"));
    }
}
