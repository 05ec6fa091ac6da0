//! Which events are noise. Every drop carries a reason that is counted and can be queried.

use serde::{Deserialize, Serialize};

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
        }
    }
}

/// Decide whether an event is a drift candidate.
pub fn classify(event: &ApiEvent, config: &FilterConfig) -> Disposition {
    let actor = &event.actor;
    let reason =
        call_drop(event.error_code.is_some(), event.read_only, event.management, &event.event_type).or_else(|| {
            actor_drop(
                [actor.principal_arn.as_deref(), actor.session_issuer.as_deref(), actor.source_identity.as_deref()],
                actor.via,
                config,
            )
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
    use crate::normalize::normalize;
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
