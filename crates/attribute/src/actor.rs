//! Who made a change: a person, a delivery pipeline, an AWS service, other automation or an agent.

use serde::{Deserialize, Serialize};

use driftback_events::{Actor, CallVia, IdentityType};

use crate::pattern::glob_match;
use crate::words::find_word;

/// The kind of actor behind a change set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    /// A human: an IAM user, an SSO user, the root user, a person's role session.
    Person,
    /// A delivery pipeline (CI/CD) acting with its own role.
    Pipeline,
    /// An AWS service acting on its own behalf (Auto Scaling, Application Auto Scaling, ...).
    AwsService,
    /// Scripts, bots, scheduled jobs, functions: automation that is not a pipeline.
    Automation,
    /// An AI operations agent.
    Agent,
    /// Nothing in the record says who it was.
    Unknown,
}

impl ActorKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ActorKind::Person => "person",
            ActorKind::Pipeline => "pipeline",
            ActorKind::AwsService => "aws_service",
            ActorKind::Automation => "automation",
            ActorKind::Agent => "agent",
            ActorKind::Unknown => "unknown",
        }
    }

    /// Every kind, for help texts and validation messages.
    pub const ALL: [ActorKind; 6] = [
        ActorKind::Person,
        ActorKind::Pipeline,
        ActorKind::AwsService,
        ActorKind::Automation,
        ActorKind::Agent,
        ActorKind::Unknown,
    ];
}

/// An actor the operator names in the policy file: principals matching any of `principals` (globs
/// over ARNs, role, user, session and service names) are this actor, of this kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedActor {
    pub name: String,
    pub kind: ActorKind,
    pub principals: Vec<String>,
}

/// The resolved actor of a change set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActorInfo {
    pub kind: ActorKind,
    /// Stable identity across sessions, used by the ownership ledger: the person (IAM user, SSO user,
    /// source identity), the role of automation (`ops-bot`, not its per-run session), the service.
    pub id: String,
    /// The role the call was made with (for SSO: the permission set), when there is one.
    pub role: Option<String>,
    /// The assumed-role session name, when there is one.
    pub session: Option<String>,
    /// How the call was made.
    pub via: CallVia,
    /// Every name the actor answers to in policy rules: ids, ARNs, role, session, service.
    pub names: Vec<String>,
    pub evidence: Vec<String>,
}

impl ActorInfo {
    /// Whether a policy pattern names this actor: `kind:<kind>` or a glob over its names.
    pub fn matches(&self, pattern: &str) -> bool {
        match pattern.strip_prefix("kind:") {
            Some(kind) => self.kind.as_str() == kind,
            None => self.names.iter().any(|n| glob_match(pattern, n)),
        }
    }

    /// `dave (person, cli, role OpsAdmin)`.
    pub fn describe(&self) -> String {
        let mut parts = vec![self.kind.as_str().to_string(), self.via.as_str().to_string()];
        if let Some(role) = &self.role {
            parts.push(format!("role {role}"));
        }
        format!("{} ({})", self.id, parts.join(", "))
    }
}

const AGENT_WORDS: &[&str] =
    &["agent", "ai", "llm", "gpt", "copilot", "bedrock", "claude", "genai", "assistant", "aiops"];
const PIPELINE_WORDS: &[&str] = &[
    "ci",
    "cd",
    "cicd",
    "pipeline",
    "deploy*",
    "github",
    "gha",
    "gitlab",
    "jenkins",
    "circleci",
    "buildkite",
    "codebuild",
    "codepipeline",
    "atlantis",
    "spacelift",
    "argocd",
    "build",
    "release",
];
const AUTOMATION_WORDS: &[&str] = &[
    "bot",
    "automation",
    "automated",
    "lambda",
    "cron",
    "scheduler",
    "job",
    "script",
    "operator",
    "controller",
    "karpenter",
    "daemon",
    "function",
];

/// Resolve who an [`Actor`] is.
pub fn resolve_actor(actor: &Actor, named: &[NamedActor]) -> ActorInfo {
    // Without a session context the assumed-role ARN still names the role.
    let role = actor.role_name();
    let user = actor.principal_arn.as_deref().and_then(|arn| arn.split_once(":user/")).map(|(_, u)| u.to_string());
    let mut names: Vec<String> = [
        actor.principal_arn.clone(),
        actor.session_issuer.clone(),
        role.clone(),
        actor.session_name.clone(),
        actor.source_identity.clone(),
        actor.invoked_by.clone(),
        user.clone(),
        Some(actor.display_name.clone()),
    ]
    .into_iter()
    .flatten()
    .collect();
    names.dedup();
    let mut info = ActorInfo {
        kind: ActorKind::Unknown,
        id: actor.display_name.clone(),
        role: role.clone(),
        session: actor.session_name.clone(),
        via: actor.via,
        names,
        evidence: Vec::new(),
    };

    if let Some(n) = named.iter().find(|n| n.principals.iter().any(|p| info.names.iter().any(|x| glob_match(p, x)))) {
        info.kind = n.kind;
        info.id = n.name.clone();
        info.names.push(n.name.clone());
        info.evidence.push(format!("the policy file names this principal {:?} ({})", n.name, n.kind.as_str()));
        return info;
    }

    let service_linked = actor.is_service_linked();
    if actor.is_aws_service() {
        info.kind = ActorKind::AwsService;
        let principals = service_principals(actor);
        info.id = service_name(&principals, role.as_deref()).unwrap_or_else(|| actor.display_name.clone());
        // The service answers to every principal it acted through and to its family's name, so a
        // rule naming `application-autoscaling.amazonaws.com` holds for its ECS and DynamoDB
        // principals too.
        for name in principals.iter().cloned().chain([info.id.clone()]) {
            if !info.names.contains(&name) {
                info.names.push(name);
            }
        }
        info.evidence.push(if service_linked {
            format!("service-linked role {}", role.as_deref().unwrap_or("?"))
        } else if actor.identity_type == IdentityType::AwsService {
            "identity type AWSService".to_string()
        } else {
            format!("invoked by {}", actor.invoked_by.as_deref().unwrap_or("an AWS service"))
        });
        if let Some(specific) = principals.iter().find(|p| **p != info.id) {
            info.evidence.push(format!("service principal {specific} is {}'s", info.id));
        }
        return info;
    }
    if actor.identity_type == IdentityType::Root {
        info.kind = ActorKind::Person;
        info.id = "root".into();
        info.evidence.push("the account's root user".into());
        return info;
    }
    if let Some(permission_set) = role.as_deref().and_then(sso_permission_set) {
        info.kind = ActorKind::Person;
        info.id = actor.session_name.clone().unwrap_or_else(|| actor.display_name.clone());
        info.role = Some(permission_set.clone());
        info.names.push(permission_set.clone());
        info.evidence.push(format!("IAM Identity Center user {} with permission set {permission_set}", info.id));
        return info;
    }
    if let Some(source) = &actor.source_identity {
        info.kind = ActorKind::Person;
        info.id = source.clone();
        info.evidence.push(format!("source identity {source} set on the role session"));
        return info;
    }

    // Names of roles, users and sessions say what automation is, more reliably than the client.
    let self_names: Vec<(&str, &str)> = [
        role.as_deref().map(|r| ("role", r)),
        user.as_deref().map(|u| ("user", u)),
        actor.session_name.as_deref().map(|s| ("session", s)),
    ]
    .into_iter()
    .flatten()
    .collect();
    for (kind, vocabulary) in [
        (ActorKind::Agent, AGENT_WORDS),
        (ActorKind::Pipeline, PIPELINE_WORDS),
        (ActorKind::Automation, AUTOMATION_WORDS),
    ] {
        if let Some((what, name, word)) =
            self_names.iter().find_map(|(what, name)| find_word(name, vocabulary).map(|w| (*what, *name, w)))
        {
            info.kind = kind;
            info.id = role.clone().or_else(|| user.clone()).unwrap_or_else(|| actor.display_name.clone());
            info.evidence.push(format!(
                "{what} name {name:?} contains {:?}, a word for {}",
                word.trim_end_matches('*'),
                kind.as_str()
            ));
            return info;
        }
    }

    match actor.identity_type {
        IdentityType::IamUser | IdentityType::FederatedUser | IdentityType::IdentityCenterUser => {
            info.kind = ActorKind::Person;
            info.id = user.unwrap_or_else(|| actor.display_name.clone());
            info.evidence.push(format!("IAM user {}", info.id));
        }
        IdentityType::AssumedRole => match actor.via {
            CallVia::Console | CallVia::Cli => {
                info.kind = ActorKind::Person;
                info.id = actor.session_name.clone().unwrap_or_else(|| actor.display_name.clone());
                info.evidence.push(format!(
                    "a {} call from role {} with session name {} (a person's session)",
                    actor.via.as_str(),
                    role.as_deref().unwrap_or("?"),
                    info.id
                ));
            }
            CallVia::Sdk => {
                info.kind = ActorKind::Automation;
                info.id = role.clone().unwrap_or_else(|| actor.display_name.clone());
                info.evidence.push(format!("an SDK call from role {}", info.id));
            }
            CallVia::AwsService | CallVia::Iac(_) | CallVia::Unknown => {
                info.evidence.push("the role session says nothing about who used it".into());
            }
        },
        IdentityType::Root | IdentityType::AwsService | IdentityType::AwsAccount | IdentityType::Unknown => {
            info.evidence.push("the identity type says nothing about who it was".into());
        }
    }
    info
}

/// `arn:aws:iam::1:role/path/Name` -> `Name`.
/// `AWSReservedSSO_AdministratorAccess_0123abcd` -> `AdministratorAccess`.
fn sso_permission_set(role: &str) -> Option<String> {
    let rest = role.strip_prefix("AWSReservedSSO_")?;
    let set = match rest.rsplit_once('_') {
        Some((set, suffix)) if suffix.chars().all(|c| c.is_ascii_hexdigit()) => set,
        _ => rest,
    };
    Some(set.to_string())
}

/// The service principals a service call names: `invokedBy`, and the service in a service-linked
/// role's path (`role/aws-service-role/ecs.application-autoscaling.amazonaws.com/...`).
fn service_principals(actor: &Actor) -> Vec<String> {
    let invoked = actor.invoked_by.as_deref().filter(|s| service_family(s).is_some());
    let linked = actor
        .session_issuer
        .as_deref()
        .and_then(|issuer| issuer.split_once("/aws-service-role/"))
        .and_then(|(_, rest)| rest.split('/').next())
        .filter(|s| service_family(s).is_some());
    let mut out: Vec<String> = Vec::new();
    for principal in [invoked, linked].into_iter().flatten() {
        if !out.iter().any(|p| p == principal) {
            out.push(principal.to_string());
        }
    }
    out
}

/// The service behind a service call: the family of its principals (`invokedBy` first, then the
/// service-linked role's path), else what a service-linked role's name says.
fn service_name(principals: &[String], role: Option<&str>) -> Option<String> {
    if let Some(family) = principals.iter().find_map(|p| service_family(p)) {
        return Some(family);
    }
    // AWSServiceRoleForApplicationAutoScaling_DynamoDBTable -> application-autoscaling.amazonaws.com
    let role = role?.strip_prefix("AWSServiceRoleFor")?;
    let base = role.split('_').next().unwrap_or(role);
    let known = [
        ("ApplicationAutoScaling", "application-autoscaling.amazonaws.com"),
        ("AutoScaling", "autoscaling.amazonaws.com"),
        ("ElasticLoadBalancing", "elasticloadbalancing.amazonaws.com"),
        ("ECS", "ecs.amazonaws.com"),
        ("RDS", "rds.amazonaws.com"),
        ("Config", "config.amazonaws.com"),
        ("SSM", "ssm.amazonaws.com"),
    ];
    known
        .iter()
        .find(|(k, _)| *k == base)
        .map(|(_, s)| s.to_string())
        .or_else(|| Some(format!("AWSServiceRoleFor{role}")))
}

/// The service a service principal belongs to, as `<service>.amazonaws.com`: the last label before
/// the domain that is not a region. A prefix names what the service acts on
/// (`ecs.application-autoscaling.amazonaws.com`, `dynamodb.application-autoscaling.amazonaws.com`:
/// Application Auto Scaling scaling ECS and DynamoDB) or a part of it
/// (`delivery.logs.amazonaws.com`); a region label is where (`logs.us-east-1.amazonaws.com`); the
/// China partition's principals (`.amazonaws.com.cn`) belong to the same services. `None` when the
/// text is not a service principal.
fn service_family(principal: &str) -> Option<String> {
    let rest = principal.strip_suffix(".amazonaws.com.cn").or_else(|| principal.strip_suffix(".amazonaws.com"))?;
    let service = rest.rsplit('.').find(|label| !is_region(label))?;
    let valid =
        !service.is_empty() && service.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    valid.then(|| format!("{service}.amazonaws.com"))
}

/// `us-east-1`, `ap-southeast-4`, `us-gov-west-1`, `cn-north-1`: two letters, one or two words, a
/// number.
fn is_region(label: &str) -> bool {
    let parts: Vec<&str> = label.split('-').collect();
    let (Some(first), Some(last)) = (parts.first(), parts.last()) else { return false };
    (3..=4).contains(&parts.len())
        && first.len() == 2
        && first.bytes().all(|b| b.is_ascii_lowercase())
        && !last.is_empty()
        && last.bytes().all(|b| b.is_ascii_digit())
        && parts[1..parts.len() - 1].iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_principals_belong_to_their_service() {
        for (principal, family) in [
            ("application-autoscaling.amazonaws.com", Some("application-autoscaling.amazonaws.com")),
            ("ecs.application-autoscaling.amazonaws.com", Some("application-autoscaling.amazonaws.com")),
            ("dynamodb.application-autoscaling.amazonaws.com", Some("application-autoscaling.amazonaws.com")),
            ("autoscaling.amazonaws.com", Some("autoscaling.amazonaws.com")),
            ("delivery.logs.amazonaws.com", Some("logs.amazonaws.com")),
            ("logs.us-east-1.amazonaws.com", Some("logs.amazonaws.com")),
            ("states.us-gov-west-1.amazonaws.com", Some("states.amazonaws.com")),
            ("ecs.application-autoscaling.amazonaws.com.cn", Some("application-autoscaling.amazonaws.com")),
            ("AWS Internal", None),
            ("203.0.113.7", None),
            ("amazonaws.com", None),
            ("evil.com", None),
            ("x.amazonaws.com.example.org", None),
        ] {
            assert_eq!(service_family(principal).as_deref(), family, "{principal}");
        }
        assert!(is_region("ap-southeast-4") && is_region("us-gov-west-1") && !is_region("application-autoscaling"));
    }
}
