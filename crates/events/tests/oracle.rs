//! The record readers against an oracle: the plain, field-by-field reading of a `Value` that the
//! pipeline had before its fast reader. The scanner, `normalize` and the oracle must agree on every
//! shape a field can take, and on the corpus.

use chrono::{DateTime, Utc};
use driftback_events::{
    Actor, ApiEvent, CallVia, FilterConfig, IacTool, IdentityType, NormalizeError, TouchedResource, classify, decode,
    normalize, normalize_api_name, read_record,
};
use serde_json::{Value, json};

/// What the oracle says of a derived event id: that there is one (its value is the readers' own,
/// checked to agree between them).
const DERIVED: &str = "(derived)";

/// The event with a derived id said as [`DERIVED`].
fn as_oracle(read: Result<ApiEvent, String>) -> Result<ApiEvent, String> {
    read.map(|mut event| {
        if event.id.starts_with("derived-") {
            event.id = DERIVED.to_string();
        }
        event
    })
}

/// The record read the plain way, field by field from a `Value`.
fn reference(record: &Value) -> Result<ApiEvent, NormalizeError> {
    let obj = record.as_object().ok_or(NormalizeError::NotAnObject)?;
    let text = |key: &'static str| -> Option<&str> { obj.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()) };
    let required = |key: &'static str| text(key).ok_or(NormalizeError::MissingField(key));

    // A record written without an eventID (event versions 1.0x) gets one derived from it; one
    // whose eventID is there but not text is refused.
    let id = match obj.get("eventID") {
        None | Some(Value::Null) => DERIVED.to_string(),
        Some(_) => required("eventID")?.to_string(),
    };
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
        resources: match obj.get("resources") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    let s =
                        |key: &str| item.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
                    TouchedResource {
                        arn: s("ARN").or_else(|| s("ARNPrefix")),
                        resource_type: s("type"),
                        account_id: s("accountId"),
                    }
                })
                .filter(|r| r.arn.is_some() || r.resource_type.is_some())
                .collect(),
            _ => Vec::new(),
        },
    })
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

fn base() -> Value {
    json!({
        "eventVersion": "1.09", "eventID": "e1", "eventTime": "2024-03-01T10:00:00Z",
        "eventSource": "ec2.amazonaws.com", "eventName": "ModifyInstanceAttribute", "awsRegion": "us-east-1",
        "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/terraform-ci/s",
                         "accountId": "1", "userName": "u", "invokedBy": "x", "sourceIdentity": "si",
                         "sessionContext": {"sessionIssuer": {"arn": "arn:aws:iam::1:role/terraform-ci"},
                                            "sourceIdentity": "csi",
                                            "attributes": {"sessionCredentialFromConsole": "true"}}},
        "userAgent": "aws-cli/2.15", "sourceIPAddress": "203.0.113.9", "sessionCredentialFromConsole": true,
        "readOnly": false, "managementEvent": true, "eventCategory": "Management", "errorCode": "E",
        "eventType": "AwsApiCall", "recipientAccountId": "2",
        "requestParameters": {"instanceId": "i-1"}, "responseElements": {"_return": true},
        "resources": [{"ARN": "arn:aws:ec2:us-east-1:1:instance/i-1", "accountId": "1", "type": "AWS::EC2::Instance"},
                      {"ARNPrefix": "arn:aws:s3:::b/logs/"}, {"accountId": "1"}]
    })
}

/// A plainer caller: every optional field absent but the ones an IAM user's console call has.
fn iam_user() -> Value {
    json!({
        "eventID": "e2", "eventTime": "2024-03-01T10:00:00Z", "eventSource": "s3.amazonaws.com",
        "eventName": "GetBucketPolicy20150331v2",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::1:user/alice", "userName": "alice"},
        "userAgent": "Boto3/1.34 Botocore/1.34"
    })
}

/// Every way a field can be given: the scanner and `normalize` read it exactly as the oracle does.
#[test]
fn every_shape_of_every_field_reads_as_the_oracle_reads_it() {
    let variants = [
        json!(null),
        json!(5),
        json!(""),
        json!("true"),
        json!("TRUE"),
        json!("false"),
        json!(true),
        json!(false),
        json!({}),
        json!([1, {"a": 2}]),
        json!("arn:aws:iam::1:role/terraform-ci"),
        json!("Mozilla/5.0 \"quoted\" \u{e9}"),
        json!("2024-03-01T10:00:00+02:00"),
        json!("ec2.amazonaws.com"),
    ];
    let top = base().as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    let nested = [
        "/userIdentity/type",
        "/userIdentity/arn",
        "/userIdentity/accountId",
        "/userIdentity/userName",
        "/userIdentity/invokedBy",
        "/userIdentity/sourceIdentity",
        "/userIdentity/sessionContext",
        "/userIdentity/sessionContext/sessionIssuer",
        "/userIdentity/sessionContext/sessionIssuer/arn",
        "/userIdentity/sessionContext/sourceIdentity",
        "/userIdentity/sessionContext/attributes",
        "/userIdentity/sessionContext/attributes/sessionCredentialFromConsole",
    ];
    let pointers: Vec<String> = top.iter().map(|k| format!("/{k}")).chain(nested.map(String::from)).collect();
    let config = FilterConfig { iac_principals: vec!["terraform-*".into()] };
    let mut checked = 0;
    for base in [base(), iam_user()] {
        for pointer in &pointers {
            for variant in variants.iter().map(Some).chain([None]) {
                let mut record = base.clone();
                let (parent, key) = pointer.rsplit_once('/').unwrap();
                let Some(Value::Object(map)) = record.pointer_mut(parent) else { continue };
                match variant {
                    Some(v) => map.insert(key.to_string(), v.clone()),
                    None => map.remove(key),
                };
                let want = reference(&record).map_err(|e| e.to_string());
                let normalized = normalize(&record).map_err(|e| e.to_string());
                assert_eq!(as_oracle(normalized.clone()), want, "normalize: {pointer} = {variant:?}");
                let text = record.to_string();
                let scanned = read_record(&text).map_err(|e| e.to_string());
                let by_scan =
                    scanned.as_ref().map_err(Clone::clone).and_then(|r| r.to_event().map_err(|e| e.to_string()));
                assert_eq!(by_scan, normalized, "scanner and normalize: {pointer} = {variant:?}");
                assert_eq!(as_oracle(by_scan), want, "scanner: {pointer} = {variant:?}");
                if let (Ok(r), Ok(event)) = (&scanned, &want) {
                    assert_eq!(r.disposition(&config), classify(event, &config), "{pointer} = {variant:?}");
                    assert_eq!(r.actor_name(), event.actor.display_name);
                    let id = if r.id().starts_with("derived-") { DERIVED } else { r.id() };
                    assert_eq!((id, r.source(), r.raw_name()), (&*event.id, &*event.source, &*event.raw_name));
                    assert_eq!(r.time(), event.time);
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 800, "{checked} shapes checked");
}

/// The corpus, read by the scanner, equals the corpus read into `Value`s by the oracle.
#[test]
fn the_corpus_reads_as_the_oracle_reads_it() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/scenarios");
    let mut records = 0;
    for scenario in std::fs::read_dir(&dir).unwrap() {
        let path = scenario.unwrap().path().join("events.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let value: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            // JSON lines
            Err(_) => Value::Array(
                text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect(),
            ),
        };
        let list = match &value {
            Value::Array(list) => list.clone(),
            Value::Object(o) if o.contains_key("Records") => o["Records"].as_array().unwrap().clone(),
            other => vec![other.clone()],
        };
        let want: Vec<ApiEvent> = list
            .iter()
            .map(|r| if r.get("detail-type").is_some() { &r["detail"] } else { r })
            .filter_map(|r| reference(r).ok())
            .collect();
        let got: Vec<ApiEvent> =
            decode(text.as_bytes(), "t").unwrap().events.into_iter().map(|(e, _)| as_oracle(Ok(e)).unwrap()).collect();
        assert_eq!(got, want, "{}", path.display());
        records += got.len();
    }
    assert!(records > 500, "{records} records read");
}
