//! The safe defaults that hold with no policy file (and beside one, unless it disables them by
//! name): well-known AWS services own the fields they manage at run time, VPC, IAM and network
//! boundary fields are immutable outside Terraform, and everything else is reconciled. The
//! security-weakening check on the calls themselves is `default:security-weakening`; oscillation is
//! `default:oscillation`.

use crate::change::ChangeKind;
use crate::decision::DecisionKind;
use crate::rule::{Effect, Matcher, Rule};

/// Built-in rule names that are not field rules.
pub const SECURITY_WEAKENING: &str = "default:security-weakening";
/// The security baseline on a plan's resulting values (`driftback_security`): a field whose new
/// value weakens a control is held for a person.
pub const SECURITY_BASELINE: &str = "default:security-baseline";
/// The IAM rule: field changes of `aws_iam_*` resources, and permissions granted to an IAM identity
/// that already exists (checked on the calls).
pub const IMMUTABLE_IAM: &str = "default:immutable-iam";
pub const OSCILLATION: &str = "default:oscillation";
pub const RECONCILE: &str = "default:reconcile";
pub const OUTSIDE_REPOSITORY: &str = "default:ignore-changes-outside-repository";
/// A field whose new value can never be written (CloudTrail redacted it, or it is a secret): held
/// for a person, whatever else the change set does.
pub const SECRET_VALUE: &str = "default:secret-value";

/// Services and the fields they manage at run time.
const SERVICE_OWNERS: &[(&str, &str, &str, &[&str])] = &[
    (
        "default:autoscaling-owns-desired-capacity",
        "autoscaling.amazonaws.com",
        "aws_autoscaling_group",
        &["desired_capacity"],
    ),
    (
        "default:application-autoscaling-owns-ecs-count",
        "application-autoscaling.amazonaws.com",
        "aws_ecs_service",
        &["desired_count"],
    ),
    (
        "default:application-autoscaling-owns-dynamodb-capacity",
        "application-autoscaling.amazonaws.com",
        "aws_dynamodb_table",
        &["read_capacity", "write_capacity"],
    ),
    (
        "default:application-autoscaling-owns-target-capacity",
        "application-autoscaling.amazonaws.com",
        "aws_appautoscaling_target",
        &["min_capacity", "max_capacity"],
    ),
];

/// Resource types that are network boundaries: any change but their tags is immutable.
const NETWORK_BOUNDARIES: &[&str] = &[
    "aws_network_acl",
    "aws_network_acl_rule",
    "aws_network_acl_association",
    "aws_default_network_acl",
    "aws_route",
    "aws_route_table",
    "aws_route_table_association",
    "aws_default_route_table",
    "aws_vpc_peering_connection*",
    "aws_internet_gateway*",
    "aws_egress_only_internet_gateway",
    "aws_nat_gateway",
    "aws_ec2_transit_gateway*",
    "aws_vpn_*",
    "aws_customer_gateway",
    "aws_vpc_endpoint*",
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Every built-in field rule, in the order they are listed by `policy check`.
pub fn rules() -> Vec<Rule> {
    let mut out = Vec::new();
    for (name, service, rtype, fields) in SERVICE_OWNERS {
        out.push(Rule {
            name: name.to_string(),
            description: format!("{service} manages {} at run time", fields.join(" and ")),
            matcher: Matcher {
                resource_types: vec![rtype.to_string()],
                attributes: strings(fields),
                ..Matcher::default()
            },
            effect: Effect::Own {
                owners: vec![service.to_string()],
                owner_decision: DecisionKind::IgnoreChanges,
                others: DecisionKind::Reconcile,
            },
            examples: vec![],
        });
    }
    let tags = strings(&["tags", "tags_all"]);
    out.push(Rule {
        name: "default:immutable-vpc-layout".into(),
        description: "the address space and placement of VPCs, subnets and security groups".into(),
        matcher: Matcher {
            resource_types: strings(&[
                "aws_vpc",
                "aws_subnet",
                "aws_security_group",
                "aws_vpc_ipv*_cidr_block_association",
            ]),
            attributes: strings(&[
                "cidr_block",
                "ipv6_cidr_block",
                "vpc_id",
                "availability_zone",
                "availability_zone_id",
                "instance_tenancy",
            ]),
            ..Matcher::default()
        },
        effect: Effect::Immutable(DecisionKind::Escalate),
        examples: vec![],
    });
    out.push(Rule {
        name: "default:immutable-network-deletion".into(),
        description: "deleting a VPC or subnet".into(),
        matcher: Matcher {
            resource_types: strings(&["aws_vpc", "aws_subnet"]),
            changes: vec![ChangeKind::Delete],
            ..Matcher::default()
        },
        effect: Effect::Immutable(DecisionKind::Escalate),
        examples: vec![],
    });
    out.push(Rule {
        name: "default:immutable-network-boundaries".into(),
        description: "routes, network ACLs, gateways, peering and endpoints are network boundaries".into(),
        matcher: Matcher {
            resource_types: strings(NETWORK_BOUNDARIES),
            except_attributes: tags.clone(),
            changes: vec![ChangeKind::Update, ChangeKind::Delete],
            ..Matcher::default()
        },
        effect: Effect::Immutable(DecisionKind::Escalate),
        examples: vec![],
    });
    out.push(Rule {
        name: IMMUTABLE_IAM.into(),
        description: "who may do what (IAM) changes only through reviewed code".into(),
        matcher: Matcher {
            resource_types: strings(&["aws_iam_*"]),
            except_attributes: strings(&["tags", "tags_all", "description"]),
            changes: vec![ChangeKind::Update, ChangeKind::Delete],
            ..Matcher::default()
        },
        effect: Effect::Immutable(DecisionKind::Escalate),
        examples: vec![],
    });
    out.push(Rule {
        name: RECONCILE.into(),
        description: "ordinary changes are written into the code".into(),
        matcher: Matcher::default(),
        effect: Effect::Decide(DecisionKind::Reconcile),
        examples: vec![],
    });
    out
}

/// Names of every built-in rule, including the ones that are not field rules.
pub fn names() -> Vec<String> {
    let mut names: Vec<String> = rules().into_iter().map(|r| r.name).collect();
    names.extend([SECURITY_WEAKENING.to_string(), SECURITY_BASELINE.to_string(), OSCILLATION.to_string()]);
    names
}
