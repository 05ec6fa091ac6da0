//! One CloudTrail record (a JSON object) into an [`ApiEvent`].

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::event::{Actor, ApiEvent, CallVia, IacTool, IdentityType};

/// Why a JSON value is not a CloudTrail record we can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NormalizeError {
    #[error("not a JSON object")]
    NotAnObject,
    #[error("missing or empty field `{0}`: not a CloudTrail record")]
    MissingField(&'static str),
    #[error("field `eventTime` is not an ISO-8601 time: {0:?}")]
    BadTime(String),
}

/// Normalise one CloudTrail record.
pub fn normalize(record: &Value) -> Result<ApiEvent, NormalizeError> {
    let obj = record.as_object().ok_or(NormalizeError::NotAnObject)?;
    let text = |key: &'static str| -> Option<&str> { obj.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()) };
    let required = |key: &'static str| text(key).ok_or(NormalizeError::MissingField(key));

    let id = required("eventID")?.to_string();
    let raw_time = required("eventTime")?;
    let time = DateTime::parse_from_rfc3339(raw_time)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| NormalizeError::BadTime(raw_time.to_string()))?;
    let source = required("eventSource")?.to_string();
    let raw_name = required("eventName")?.to_string();
    let identity =
        obj.get("userIdentity").filter(|v| v.is_object()).ok_or(NormalizeError::MissingField("userIdentity"))?;
    let user_agent = text("userAgent").unwrap_or_default().to_string();
    let from_console = matches!(obj.get("sessionCredentialFromConsole"), Some(v) if v == "true" || v == true);
    let actor = actor(identity, &user_agent, text("sourceIPAddress"), from_console);
    let account = text("recipientAccountId")
        .or_else(|| identity.get("accountId").and_then(Value::as_str))
        .unwrap_or_default()
        .to_string();
    let name = normalize_api_name(&raw_name).to_string();
    let read_only = match obj.get("readOnly") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => looks_read_only(&name),
    };
    let management = match obj.get("managementEvent") {
        Some(Value::Bool(b)) => *b,
        _ => text("eventCategory").is_none_or(|c| c == "Management"),
    };
    Ok(ApiEvent {
        id,
        time,
        source,
        name,
        raw_name,
        region: text("awsRegion").unwrap_or_default().to_string(),
        account,
        actor,
        user_agent,
        source_ip: text("sourceIPAddress").unwrap_or_default().to_string(),
        request: obj.get("requestParameters").cloned().unwrap_or(Value::Null),
        response: obj.get("responseElements").cloned().unwrap_or(Value::Null),
        read_only,
        error_code: text("errorCode").map(str::to_string),
        management,
        event_type: text("eventType").unwrap_or("AwsApiCall").to_string(),
    })
}

/// Strip the API version suffix some services put on event names
/// (`UpdateFunctionConfiguration20150331v2`, `DeleteFunction20150331`).
pub fn normalize_api_name(name: &str) -> &str {
    let bytes = name.as_bytes();
    // Optional `v<digits>` at the end, then exactly eight digits.
    let mut end = bytes.len();
    let digits_from = |end: usize| {
        let mut i = end;
        while i > 0 && bytes[i - 1].is_ascii_digit() {
            i -= 1;
        }
        i
    };
    let start = digits_from(end);
    if start < end && start > 0 && bytes[start - 1] == b'v' {
        end = start - 1;
    }
    let start = digits_from(end);
    if end - start == 8 && start > 0 && bytes[start - 1].is_ascii_alphabetic() { &name[..start] } else { name }
}

fn looks_read_only(name: &str) -> bool {
    ["Describe", "Get", "List", "Head", "Lookup", "Search", "Check"].iter().any(|p| name.starts_with(p))
}

fn actor(identity: &Value, user_agent: &str, source_ip: Option<&str>, console_flag: bool) -> Actor {
    let s = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let identity_type = identity
        .get("type")
        .and_then(Value::as_str)
        .map(IdentityType::from_cloudtrail)
        .unwrap_or(IdentityType::Unknown);
    let principal_arn = s(identity, "arn");
    let context = identity.get("sessionContext").unwrap_or(&Value::Null);
    let issuer = context.get("sessionIssuer").unwrap_or(&Value::Null);
    let session_issuer = s(issuer, "arn");
    let session_name = match identity_type {
        IdentityType::AssumedRole => {
            principal_arn.as_deref().and_then(|arn| arn.rsplit('/').next()).map(str::to_string)
        }
        _ => None,
    };
    let source_identity = s(context, "sourceIdentity").or_else(|| s(identity, "sourceIdentity"));
    let invoked_by = s(identity, "invokedBy").or_else(|| {
        // AWS services calling on their own behalf show up with the service as source IP.
        source_ip.filter(|ip| ip.ends_with(".amazonaws.com")).map(str::to_string)
    });
    let from_console = console_flag
        || context
            .get("attributes")
            .and_then(|a| a.get("sessionCredentialFromConsole"))
            .is_some_and(|v| v == "true" || v == true);
    let via = call_via(identity_type, user_agent, invoked_by.as_deref(), from_console);
    let display_name = s(identity, "userName")
        .filter(|_| identity_type == IdentityType::IamUser)
        .or_else(|| source_identity.clone())
        .or_else(|| session_name.clone())
        .or_else(|| s(identity, "userName"))
        .or_else(|| match identity_type {
            IdentityType::Root => Some("root".to_string()),
            _ => None,
        })
        .or_else(|| invoked_by.clone())
        .or_else(|| principal_arn.clone())
        .unwrap_or_else(|| "unknown".to_string());
    Actor { identity_type, principal_arn, session_issuer, session_name, source_identity, invoked_by, via, display_name }
}

fn call_via(identity_type: IdentityType, user_agent: &str, invoked_by: Option<&str>, from_console: bool) -> CallVia {
    if let Some(tool) = iac_tool(user_agent) {
        return CallVia::Iac(tool);
    }
    if identity_type == IdentityType::AwsService || invoked_by.is_some_and(|s| s.ends_with(".amazonaws.com")) {
        return CallVia::AwsService;
    }
    let ua = user_agent.to_ascii_lowercase();
    if from_console
        || ua == "aws internal"
        || ua.contains("console.amazonaws.com")
        || ua.starts_with("mozilla/")
        || ua.contains("console.aws.amazon.com")
        || ua.contains("console/")
    {
        return CallVia::Console;
    }
    if ua.starts_with("aws-cli/") || ua.contains(" aws-cli/") || ua.contains("md/command#") {
        return CallVia::Cli;
    }
    if ua.contains("sdk") || ua.starts_with("boto") || ua.contains("botocore") || ua.starts_with("aws-sdk") {
        return CallVia::Sdk;
    }
    CallVia::Unknown
}

/// Terraform and OpenTofu identify themselves in the user agent.
fn iac_tool(user_agent: &str) -> Option<IacTool> {
    let ua = user_agent.to_ascii_lowercase();
    if ua.contains("opentofu/") {
        Some(IacTool::OpenTofu)
    } else if ua.contains("terraform/") || ua.contains("terraform-provider-aws/") || ua.contains("hashicorp/") {
        Some(IacTool::Terraform)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(identity: Value, user_agent: &str) -> Value {
        json!({
            "eventVersion": "1.09", "eventID": "e1", "eventTime": "2024-03-01T10:00:00Z",
            "eventSource": "ec2.amazonaws.com", "eventName": "ModifyInstanceAttribute",
            "awsRegion": "us-east-1", "userIdentity": identity, "userAgent": user_agent,
            "requestParameters": {"instanceId": "i-1"}, "responseElements": {"_return": true},
            "readOnly": false, "recipientAccountId": "123456789012"
        })
    }

    #[test]
    fn api_names_lose_their_version_suffix() {
        for (raw, want) in [
            ("UpdateFunctionConfiguration20150331v2", "UpdateFunctionConfiguration"),
            ("DeleteFunction20150331", "DeleteFunction"),
            ("PutFunctionConcurrency20171031", "PutFunctionConcurrency"),
            ("ModifyInstanceAttribute", "ModifyInstanceAttribute"),
            ("CreateBucket", "CreateBucket"),
            ("Get20150331", "Get"),
            ("12345678", "12345678"),
        ] {
            assert_eq!(normalize_api_name(raw), want, "{raw}");
        }
    }

    #[test]
    fn actors_and_how_they_called() {
        let cases = [
            (
                json!({"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice", "accountId": "123456789012"}),
                "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/linux#6.5 md/command#ec2.modify-instance-attribute",
                IdentityType::IamUser,
                CallVia::Cli,
                "alice",
            ),
            (
                json!({"type": "AssumedRole", "arn": "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123/carol@example.com",
                       "sessionContext": {"sessionIssuer": {"type": "Role", "arn": "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Admin_0123"},
                                          "attributes": {"sessionCredentialFromConsole": "true"}}}),
                "AWS Internal",
                IdentityType::AssumedRole,
                CallVia::Console,
                "carol@example.com",
            ),
            (
                json!({"type": "AssumedRole", "arn": "arn:aws:sts::123456789012:assumed-role/terraform-ci/run-42"}),
                "APN/1.0 HashiCorp/1.0 Terraform/1.7.5 (+https://www.terraform.io) terraform-provider-aws/5.40.0",
                IdentityType::AssumedRole,
                CallVia::Iac(IacTool::Terraform),
                "run-42",
            ),
            (
                json!({"type": "AWSService", "invokedBy": "autoscaling.amazonaws.com"}),
                "autoscaling.amazonaws.com",
                IdentityType::AwsService,
                CallVia::AwsService,
                "autoscaling.amazonaws.com",
            ),
            (
                json!({"type": "AssumedRole", "arn": "arn:aws:sts::123456789012:assumed-role/ops/bot", "sessionContext": {"sourceIdentity": "dave"}}),
                "Boto3/1.34.69 md/Botocore#1.34.69 ua/2.0",
                IdentityType::AssumedRole,
                CallVia::Sdk,
                "dave",
            ),
            (
                json!({"type": "AssumedRole", "arn": "arn:aws:sts::123456789012:assumed-role/tofu/x"}),
                "OpenTofu/1.6.2 terraform-provider-aws/5.40.0",
                IdentityType::AssumedRole,
                CallVia::Iac(IacTool::OpenTofu),
                "x",
            ),
        ];
        for (identity, ua, ty, via, name) in cases {
            let event = normalize(&record(identity, ua)).unwrap();
            assert_eq!(event.actor.identity_type, ty, "{ua}");
            assert_eq!(event.actor.via, via, "{ua}");
            assert_eq!(event.actor.display_name, name, "{ua}");
        }
    }

    #[test]
    fn records_missing_core_fields_are_rejected_by_name() {
        let mut r = record(json!({"type": "Root"}), "");
        r.as_object_mut().unwrap().remove("eventSource");
        assert_eq!(normalize(&r), Err(NormalizeError::MissingField("eventSource")));
        let mut r = record(json!({"type": "Root"}), "");
        r["eventTime"] = json!("yesterday");
        assert_eq!(normalize(&r), Err(NormalizeError::BadTime("yesterday".into())));
        assert_eq!(normalize(&json!([1])), Err(NormalizeError::NotAnObject));
    }

    #[test]
    fn read_only_is_inferred_when_absent() {
        let mut r = record(json!({"type": "Root"}), "");
        r.as_object_mut().unwrap().remove("readOnly");
        r["eventName"] = json!("DescribeInstances");
        assert!(normalize(&r).unwrap().read_only);
        r["eventName"] = json!("CreateTags");
        assert!(!normalize(&r).unwrap().read_only);
    }
}
