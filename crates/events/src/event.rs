//! The one event type every source is normalised into.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One AWS API call as CloudTrail recorded it, whatever the source it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiEvent {
    /// CloudTrail's `eventID`: unique per record, the key for deduplication.
    pub id: String,
    pub time: DateTime<Utc>,
    /// `eventSource`, e.g. `ec2.amazonaws.com`.
    pub source: String,
    /// `eventName` without the API version suffix some services append
    /// (`UpdateFunctionConfiguration20150331v2` becomes `UpdateFunctionConfiguration`).
    pub name: String,
    /// `eventName` exactly as recorded.
    pub raw_name: String,
    pub region: String,
    /// The account the call was made in (`recipientAccountId`, else the caller's account).
    pub account: String,
    pub actor: Actor,
    pub user_agent: String,
    pub source_ip: String,
    /// `requestParameters`, `Value::Null` when absent.
    pub request: Value,
    /// `responseElements`, `Value::Null` when absent.
    pub response: Value,
    pub read_only: bool,
    /// `errorCode` when the call failed.
    pub error_code: Option<String>,
    /// False for data events (S3 object calls, DynamoDB item calls, ...).
    pub management: bool,
    /// `eventType`, e.g. `AwsApiCall`.
    pub event_type: String,
    /// `resources[]`: the resources CloudTrail says the call touched (records from 1.01 on, for
    /// some services; empty when absent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<TouchedResource>,
}

/// One entry of a record's `resources[]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TouchedResource {
    /// `ARN` (or `ARNPrefix`, for a resource named by a prefix).
    pub arn: Option<String>,
    /// `type`, e.g. `AWS::DynamoDB::Table`.
    pub resource_type: Option<String>,
    /// `accountId`.
    pub account_id: Option<String>,
}

impl TouchedResource {
    /// The entries of a `resources` value: a list of objects; anything else, or an entry with
    /// nothing in it, is left out.
    pub(crate) fn read(value: &Value) -> Vec<TouchedResource> {
        let text = |item: &Value, key: &str| {
            item.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
        };
        let Value::Array(items) = value else { return Vec::new() };
        items
            .iter()
            .map(|item| TouchedResource {
                arn: text(item, "ARN").or_else(|| text(item, "ARNPrefix")),
                resource_type: text(item, "type"),
                account_id: text(item, "accountId"),
            })
            .filter(|r| r.arn.is_some() || r.resource_type.is_some())
            .collect()
    }
}

impl ApiEvent {
    /// The short service name: `ec2` for `ec2.amazonaws.com`.
    pub fn service(&self) -> &str {
        self.source.split('.').next().unwrap_or(&self.source)
    }
}

/// Whether a request parameter named `key` carries transport detail (host, client token, dry-run
/// flag, `x-amz-*` headers) rather than anything about the resource: such keys are left out of
/// trace summaries and change signatures.
pub fn is_transport_key(key: &str) -> bool {
    matches!(key, "Host" | "host" | "xmlns" | "requestId" | "_return" | "clientToken" | "ClientToken" | "DryRun")
        || key.starts_with("x-amz-")
}

/// Who made a call, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Actor {
    pub identity_type: IdentityType,
    /// `userIdentity.arn`, when CloudTrail gives one.
    pub principal_arn: Option<String>,
    /// For assumed roles: the role's ARN (`sessionContext.sessionIssuer.arn`).
    pub session_issuer: Option<String>,
    /// For assumed roles: the session name (the last segment of the assumed-role ARN).
    pub session_name: Option<String>,
    /// `sourceIdentity`, when the role session was given one.
    pub source_identity: Option<String>,
    /// `userIdentity.invokedBy` (or the AWS service that made the call).
    pub invoked_by: Option<String>,
    /// How the call was made, from the user agent, `invokedBy` and the session context.
    pub via: CallVia,
    /// A short human name: the IAM user, the SSO user, the session name or the service.
    pub display_name: String,
}

impl Actor {
    /// The key that identifies one actor session: calls with the same key belong together.
    pub fn session_key(&self) -> String {
        self.principal_arn.clone().or_else(|| self.invoked_by.clone()).unwrap_or_else(|| self.display_name.clone())
    }

    /// The role an assumed-role session belongs to: the session issuer's name, else the one the
    /// assumed-role ARN names.
    pub fn role_name(&self) -> Option<String> {
        let issuer = self.session_issuer.as_deref().map(|arn| arn.rsplit('/').next().unwrap_or(arn).to_string());
        issuer.or_else(|| {
            let rest = self.principal_arn.as_deref()?.split_once(":assumed-role/")?.1;
            rest.split('/').next().map(str::to_string)
        })
    }

    /// A service-linked role made the call (`role/aws-service-role/...`, `AWSServiceRoleFor...`).
    pub fn is_service_linked(&self) -> bool {
        self.session_issuer.as_deref().is_some_and(|a| a.contains("/aws-service-role/"))
            || self.role_name().is_some_and(|r| r.starts_with("AWSServiceRoleFor"))
    }

    /// An AWS service made the call on its own behalf: its identity type, a call through a service
    /// (`invokedBy`), or a service-linked role.
    pub fn is_aws_service(&self) -> bool {
        self.identity_type == IdentityType::AwsService || self.via == CallVia::AwsService || self.is_service_linked()
    }
}

/// `userIdentity.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentityType {
    Root,
    IamUser,
    AssumedRole,
    FederatedUser,
    IdentityCenterUser,
    AwsAccount,
    AwsService,
    Unknown,
}

impl IdentityType {
    pub fn from_cloudtrail(value: &str) -> Self {
        match value {
            "Root" => Self::Root,
            "IAMUser" => Self::IamUser,
            "AssumedRole" => Self::AssumedRole,
            "FederatedUser" => Self::FederatedUser,
            "IdentityCenterUser" => Self::IdentityCenterUser,
            "AWSAccount" => Self::AwsAccount,
            "AWSService" => Self::AwsService,
            _ => Self::Unknown,
        }
    }
}

/// How a call was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallVia {
    Console,
    Cli,
    Sdk,
    AwsService,
    Iac(IacTool),
    Unknown,
}

impl CallVia {
    pub fn as_str(&self) -> &'static str {
        match self {
            CallVia::Console => "console",
            CallVia::Cli => "cli",
            CallVia::Sdk => "sdk",
            CallVia::AwsService => "aws-service",
            CallVia::Iac(IacTool::Terraform) => "terraform",
            CallVia::Iac(IacTool::OpenTofu) => "opentofu",
            CallVia::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IacTool {
    Terraform,
    OpenTofu,
}
