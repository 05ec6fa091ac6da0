//! What turning one CloudTrail record into an [`ApiEvent`](crate::ApiEvent) needs besides the
//! record's reader ([`crate::record`], where [`crate::normalize`] lives): why a record is refused, and how a
//! call's name, its read-only kind and its way in are read.

use crate::event::{CallVia, IacTool, IdentityType};

/// Why a JSON value is not a CloudTrail record we can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NormalizeError {
    #[error("not a JSON object")]
    NotAnObject,
    #[error("missing or empty field `{0}`: not a CloudTrail record")]
    MissingField(&'static str),
    #[error("field `eventTime` is not an ISO-8601 time (nor a CloudTrail Lake timestamp): {0:?}")]
    BadTime(String),
    /// A record the reader cannot take apart unambiguously (a field given twice, say).
    #[error("malformed record: {0}")]
    Malformed(String),
    /// `requestParameters` or `responseElements` is valid JSON the event cannot hold (nested too deep).
    #[error("field `{field}` cannot be read: {message}")]
    Payload { field: &'static str, message: String },
}

/// Strip the API version suffix some services put on event names: Lambda's
/// (`UpdateFunctionConfiguration20150331v2`, `DeleteFunction20150331`) and CloudFront's
/// (`UpdateDistribution2020_05_31`).
pub fn normalize_api_name(name: &str) -> &str {
    let bytes = name.as_bytes();
    // CloudFront: `_`-separated date `YYYY_MM_DD` after the operation name.
    if let Some(start) = bytes.len().checked_sub(10) {
        let tail = &bytes[start..];
        let dated =
            tail.iter().enumerate().all(|(i, b)| if i == 4 || i == 7 { *b == b'_' } else { b.is_ascii_digit() });
        if dated && start > 0 && bytes[start - 1].is_ascii_alphabetic() {
            return &name[..start];
        }
    }
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

/// Whether a call reads only, by its name, for records that do not say (`readOnly` came with event
/// version 1.04): the prefixes the table of calls marks read-only (docs/aws-calls.md), `BatchGet`
/// included (ECR's `BatchGetImage` as its guide prints it, 1.04).
pub(crate) fn looks_read_only(name: &str) -> bool {
    ["Describe", "Get", "List", "Head", "Lookup", "Search", "Check", "BatchGet"].iter().any(|p| name.starts_with(p))
}

/// How a call was made, from the user agent, the caller's identity and the session context.
pub(crate) fn call_via(
    identity_type: IdentityType,
    user_agent: &str,
    invoked_by: Option<&str>,
    from_console: bool,
) -> CallVia {
    let ua = user_agent.to_ascii_lowercase();
    // Terraform and OpenTofu identify themselves in the user agent.
    if ua.contains("opentofu/") {
        return CallVia::Iac(IacTool::OpenTofu);
    }
    if ua.contains("terraform/") || ua.contains("terraform-provider-aws/") || ua.contains("hashicorp/") {
        return CallVia::Iac(IacTool::Terraform);
    }
    if identity_type == IdentityType::AwsService || invoked_by.is_some_and(|s| s.ends_with(".amazonaws.com")) {
        return CallVia::AwsService;
    }
    if from_console
        || ua == "aws internal"
        // Event version 1.0's console (the CloudTrail User Guide's examples).
        || ua == "awsconsole"
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::normalize;
    use serde_json::{Value, json};

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
            ("UpdateDistribution2020_05_31", "UpdateDistribution"),
            ("GetResponseHeadersPolicy2020_05_31", "GetResponseHeadersPolicy"),
            ("2020_05_31", "2020_05_31"),
            ("Update_2020_05_31", "Update_2020_05_31"),
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
                // Event version 1.0's console, as the CloudTrail User Guide's examples show it.
                json!({"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/Alice", "userName": "Alice"}),
                "AWSConsole",
                IdentityType::IamUser,
                CallVia::Console,
                "Alice",
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
    fn aws_internal_without_a_principal_is_aws_at_work() {
        // As the KMS Developer Guide prints SynchronizeMultiRegionKey: no type, no ARN.
        let event =
            normalize(&record(json!({"accountId": "111122223333", "invokedBy": "AWS Internal"}), "AWS Internal"))
                .unwrap();
        assert_eq!(event.actor.identity_type, IdentityType::AwsService);
        assert_eq!(event.actor.via, CallVia::AwsService);
        // A person's session whose user agent or caller reads "AWS Internal" is still that person.
        let person = json!({"type": "AssumedRole", "arn": "arn:aws:sts::123456789012:assumed-role/admin/dana",
                            "invokedBy": "AWS Internal"});
        let event = normalize(&record(person, "AWS Internal")).unwrap();
        assert_eq!(event.actor.identity_type, IdentityType::AssumedRole);
        assert_ne!(event.actor.via, CallVia::AwsService);
        // No type and another caller stays unknown.
        let event = normalize(&record(json!({"invokedBy": "partner.example.com"}), "")).unwrap();
        assert_eq!(event.actor.identity_type, IdentityType::Unknown);
    }

    #[test]
    fn event_time_is_read_as_cloudtrail_and_cloudtrail_lake_write_it() {
        let at = |raw: &str| {
            let mut r = record(json!({"type": "Root"}), "");
            r["eventTime"] = json!(raw);
            normalize(&r).map(|e| e.time.to_rfc3339())
        };
        assert_eq!(at("2024-11-25T17:51:21Z"), Ok("2024-11-25T17:51:21+00:00".to_string()));
        // CloudTrail Lake and Athena results: a SQL timestamp in UTC, with or without fractions.
        assert_eq!(at("2024-11-25 17:51:21.000000000"), Ok("2024-11-25T17:51:21+00:00".to_string()));
        assert_eq!(at("2021-01-24 04:55:45.000"), Ok("2021-01-24T04:55:45+00:00".to_string()));
        assert_eq!(at("2022-09-24 00:38:26"), Ok("2022-09-24T00:38:26+00:00".to_string()));
        // A day without a time, or a time in another layout, is still refused by name.
        assert_eq!(at("2024-11-25"), Err(NormalizeError::BadTime("2024-11-25".into())));
        assert_eq!(at("25/11/2024 17:51"), Err(NormalizeError::BadTime("25/11/2024 17:51".into())));
    }

    #[test]
    fn read_only_is_inferred_when_absent() {
        let mut r = record(json!({"type": "Root"}), "");
        r.as_object_mut().unwrap().remove("readOnly");
        r["eventName"] = json!("DescribeInstances");
        assert!(normalize(&r).unwrap().read_only);
        r["eventName"] = json!("BatchGetImage");
        assert!(normalize(&r).unwrap().read_only);
        r["eventName"] = json!("CreateTags");
        assert!(!normalize(&r).unwrap().read_only);
        r["eventName"] = json!("BatchDeleteImage");
        assert!(!normalize(&r).unwrap().read_only);
    }
}
