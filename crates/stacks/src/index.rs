//! Every state's managed resources by identity (id, ARN, name-like attributes, import id) to the
//! stack, workspace and address that manage them, with the account and region each lives in.
//!
//! A lookup never guesses: an identity two stacks (or two workspaces) manage is
//! [`Lookup::Ambiguous`], with every candidate.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use driftback_terraform::Address;
use driftback_terraform::state::arn_resource_name;

use crate::placement::{Placement, arn_placement};
use crate::read::StateRead;

/// Attributes that name a resource in API calls besides `id` and `arn`.
const NAME_ATTRIBUTES: &[&str] =
    &["name", "bucket", "function_name", "identifier", "cluster_identifier", "url", "queue_url"];

/// Import ids that are not the `id` attribute: the type and the attributes joined by `/`.
const IMPORT_IDS: &[(&str, &[&str])] = &[
    ("aws_lambda_permission", &["function_name", "statement_id"]),
    ("aws_lambda_alias", &["function_name", "name"]),
    ("aws_iam_role_policy_attachment", &["role", "policy_arn"]),
    ("aws_iam_user_policy_attachment", &["user", "policy_arn"]),
    ("aws_iam_group_policy_attachment", &["group", "policy_arn"]),
];

/// One managed resource instance in one workspace of one stack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Managed {
    pub stack: String,
    pub workspace: String,
    pub address: Address,
    #[serde(flatten)]
    pub placement: Placement,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Id,
    Arn,
    Name,
    ImportId,
}

/// What the index says about an identity.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup<'a> {
    /// No state manages it.
    Unmanaged,
    /// One workspace of one stack manages it (through one or more instances).
    Managed(Vec<&'a Managed>),
    /// More than one stack or workspace manages it: every candidate, grouped by (stack, workspace).
    Ambiguous(Vec<Vec<&'a Managed>>),
}

/// A lookup: an identity, optionally narrowed to resource types and to where the call was made.
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<'q> {
    pub id: &'q str,
    /// Resource types the identity may belong to; empty: any.
    pub types: &'q [&'q str],
    /// The event's account and region: a resource known to live elsewhere does not match.
    pub account: Option<&'q str>,
    pub region: Option<&'q str>,
}

#[derive(Debug, Clone, Default)]
pub struct Index {
    managed: Vec<Managed>,
    keys: HashMap<String, Vec<(u32, KeyKind)>>,
}

impl Index {
    pub fn new() -> Index {
        Index::default()
    }

    /// How many resource instances are indexed.
    pub fn len(&self) -> usize {
        self.managed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.managed.is_empty()
    }

    /// Add a workspace's state. `providers` is where each provider alias points
    /// ([`crate::placement::provider_placements`]); a resource's ARN, then its `region`
    /// attribute, say more precisely where it is. Replaces what this workspace added before.
    pub fn add(&mut self, stack: &str, workspace: &str, read: &StateRead, providers: &BTreeMap<String, Placement>) {
        self.remove(stack, workspace);
        // For resources whose provider says nothing.
        let usual_account = usual_account(read);
        for instance in read.state.instances.iter().filter(|i| !i.address.data) {
            let address = &instance.address;
            let alias = read.provider_aliases.get(&address.without_key().to_string()).map(String::as_str).unwrap_or("");
            let provider = providers.get(alias).cloned().unwrap_or_default();
            let arn = instance.attr_str("arn").and_then(arn_placement);
            let placement = Placement {
                account: arn
                    .as_ref()
                    .and_then(|p| p.account.clone())
                    .or(provider.account)
                    .or_else(|| usual_account.clone()),
                region: match &arn {
                    // An ARN without a region is a global resource (IAM, CloudFront, Route 53).
                    Some(p) => p.region.clone(),
                    None => instance.attr_str("region").map(str::to_string).or(provider.region),
                },
            };
            let n = self.managed.len() as u32;
            let mut keys: Vec<(String, KeyKind)> = Vec::new();
            keys.extend(instance.attr_str("id").map(|v| (v.to_string(), KeyKind::Id)));
            keys.extend(instance.attr_str("arn").map(|v| (v.to_string(), KeyKind::Arn)));
            for name in NAME_ATTRIBUTES {
                keys.extend(instance.attr_str(name).map(|v| (v.to_string(), KeyKind::Name)));
            }
            if let Some((_, attrs)) = IMPORT_IDS.iter().find(|(t, _)| *t == address.rtype) {
                let parts: Option<Vec<&str>> = attrs.iter().map(|a| instance.attr_str(a)).collect();
                keys.extend(parts.map(|p| (p.join("/"), KeyKind::ImportId)));
            }
            keys.retain(|(k, _)| !k.is_empty());
            keys.sort_by(|a, b| a.0.cmp(&b.0));
            keys.dedup_by(|a, b| a.0 == b.0);
            for (key, kind) in keys {
                self.keys.entry(key).or_default().push((n, kind));
            }
            self.managed.push(Managed {
                stack: stack.to_string(),
                workspace: workspace.to_string(),
                address: address.clone(),
                placement,
            });
        }
    }

    /// Forget what one workspace added (its state changed, or it is gone).
    pub fn remove(&mut self, stack: &str, workspace: &str) {
        let gone = |m: &Managed| m.stack == stack && m.workspace == workspace;
        if !self.managed.iter().any(gone) {
            return;
        }
        let mut renumber = Vec::with_capacity(self.managed.len());
        let mut kept = Vec::with_capacity(self.managed.len());
        for m in self.managed.drain(..) {
            if gone(&m) {
                renumber.push(None);
            } else {
                renumber.push(Some(kept.len() as u32));
                kept.push(m);
            }
        }
        self.managed = kept;
        self.keys.retain(|_, postings| {
            postings.retain_mut(|(n, _)| match renumber[*n as usize] {
                Some(new) => {
                    *n = new;
                    true
                }
                None => false,
            });
            !postings.is_empty()
        });
    }

    /// Every (stack, workspace) with resources in `account` and `region`, and the resource types
    /// it manages there: where a new resource made there may belong. A resource whose account is
    /// unknown does not count; one without a region (IAM, CloudFront) counts for every region.
    pub fn workspaces_at(&self, account: &str, region: &str) -> BTreeMap<(String, String), BTreeSet<String>> {
        let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for m in &self.managed {
            let here = m.placement.account.as_deref() == Some(account)
                && m.placement.region.as_deref().is_none_or(|r| r == region);
            if here {
                out.entry((m.stack.clone(), m.workspace.clone())).or_default().insert(m.address.rtype.clone());
            }
        }
        out
    }

    /// Every (stack, workspace) with resources in `account` whose ARN names no region (IAM,
    /// CloudFront, Route 53: global services), and their resource types.
    pub fn regionless_at(&self, account: &str) -> BTreeMap<(String, String), BTreeSet<String>> {
        let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for m in &self.managed {
            if m.placement.account.as_deref() == Some(account) && m.placement.region.is_none() {
                out.entry((m.stack.clone(), m.workspace.clone())).or_default().insert(m.address.rtype.clone());
            }
        }
        out
    }

    /// Who manages an identity. An ARN no state records also matches resources whose name-like
    /// attribute is the ARN's last segment.
    pub fn lookup(&self, query: &Query<'_>) -> Lookup<'_> {
        let mut hits = self.hits(query.id, query, |_| true);
        if hits.is_empty() && query.id.starts_with("arn:") {
            if let Some(short) = arn_resource_name(query.id) {
                // The ARN says where the resource is, when the query does not.
                let at = arn_placement(query.id).unwrap_or_default();
                let narrowed = Query {
                    account: query.account.or(at.account.as_deref()),
                    region: query.region.or(at.region.as_deref()),
                    ..*query
                };
                hits = self.hits(short, &narrowed, |kind| kind == KeyKind::Name);
            }
        }
        let mut groups: BTreeMap<(&str, &str), Vec<&Managed>> = BTreeMap::new();
        for m in hits {
            groups.entry((m.stack.as_str(), m.workspace.as_str())).or_default().push(m);
        }
        match groups.len() {
            0 => Lookup::Unmanaged,
            1 => Lookup::Managed(groups.into_values().next().unwrap_or_default()),
            _ => Lookup::Ambiguous(groups.into_values().collect()),
        }
    }

    fn hits(&self, key: &str, query: &Query<'_>, kinds: impl Fn(KeyKind) -> bool) -> Vec<&Managed> {
        let differs =
            |known: &Option<String>, wanted: Option<&str>| matches!((known, wanted), (Some(k), Some(w)) if k != w);
        self.keys
            .get(key)
            .into_iter()
            .flatten()
            .filter(|(_, kind)| kinds(*kind))
            .map(|(n, _)| &self.managed[*n as usize])
            .filter(|m| query.types.is_empty() || query.types.contains(&m.address.rtype.as_str()))
            .filter(|m| !differs(&m.placement.account, query.account) && !differs(&m.placement.region, query.region))
            .collect()
    }
}

/// The account most of a state's ARNs name: where its resources live when their provider
/// configuration does not say.
pub fn usual_account(read: &StateRead) -> Option<String> {
    let mut accounts: BTreeMap<String, usize> = BTreeMap::new();
    for i in read.state.instances.iter().filter(|i| !i.address.data) {
        if let Some(account) = i.attr_str("arn").and_then(arn_placement).and_then(|p| p.account) {
            *accounts.entry(account).or_default() += 1;
        }
    }
    accounts.into_iter().max_by_key(|(_, n)| *n).map(|(a, _)| a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::parse_state;

    fn read(json: &str) -> StateRead {
        parse_state(json.as_bytes(), "t").unwrap()
    }

    fn resource(rtype: &str, name: &str, attrs: &str) -> String {
        format!(
            r#"{{"mode": "managed", "type": "{rtype}", "name": "{name}", "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]", "instances": [{{"attributes": {attrs}}}]}}"#
        )
    }

    fn state(resources: &[String]) -> StateRead {
        read(&format!(r#"{{"version": 4, "serial": 1, "lineage": "l", "resources": [{}]}}"#, resources.join(",")))
    }

    fn where_(l: &Lookup<'_>) -> Vec<Vec<String>> {
        match l {
            Lookup::Unmanaged => vec![],
            Lookup::Managed(ms) => {
                vec![ms.iter().map(|m| format!("{}/{}/{}", m.stack, m.workspace, m.address)).collect()]
            }
            Lookup::Ambiguous(groups) => groups
                .iter()
                .map(|ms| ms.iter().map(|m| format!("{}/{}/{}", m.stack, m.workspace, m.address)).collect())
                .collect(),
        }
    }

    #[test]
    fn identities_resolve_to_one_stack_or_are_reported_ambiguous() {
        let providers: BTreeMap<String, Placement> =
            [(String::new(), Placement { account: Some("111".into()), region: Some("eu-west-1".into()) })].into();
        let mut index = Index::new();
        index.add(
            "network",
            "default",
            &state(&[
                resource("aws_vpc", "main", r#"{"id": "vpc-1", "arn": "arn:aws:ec2:eu-west-1:111:vpc/vpc-1"}"#),
                resource(
                    "aws_s3_bucket",
                    "logs",
                    r#"{"id": "acme-logs", "bucket": "acme-logs", "arn": "arn:aws:s3:::acme-logs"}"#,
                ),
                resource("aws_iam_role", "ci", r#"{"id": "ci", "name": "ci", "arn": "arn:aws:iam::111:role/ci"}"#),
            ]),
            &providers,
        );
        index.add(
            "app",
            "prod",
            &state(&[
                resource("aws_s3_bucket_policy", "logs", r#"{"id": "acme-logs", "bucket": "acme-logs"}"#),
                resource("aws_sqs_queue", "jobs", r#"{"id": "https://sqs.eu-west-1.amazonaws.com/111/jobs", "name": "jobs", "arn": "arn:aws:sqs:eu-west-1:111:jobs"}"#),
                resource(
                    "aws_lambda_permission",
                    "allow",
                    r#"{"id": "AllowS3", "function_name": "worker", "statement_id": "AllowS3"}"#,
                ),
            ]),
            &providers,
        );
        index.add(
            "app",
            "staging",
            &state(&[resource(
                "aws_sqs_queue",
                "jobs",
                r#"{"id": "https://sqs.us-east-1.amazonaws.com/222/jobs", "name": "jobs", "arn": "arn:aws:sqs:us-east-1:222:jobs"}"#,
            )]),
            &providers,
        );
        assert_eq!(index.len(), 7);
        let q = |id| Query { id, ..Query::default() };
        assert_eq!(where_(&index.lookup(&q("vpc-1"))), [["network/default/aws_vpc.main"]]);
        // The bucket's policy is managed by another stack: without a type it is ambiguous.
        assert_eq!(
            where_(&index.lookup(&q("acme-logs"))),
            [vec!["app/prod/aws_s3_bucket_policy.logs"], vec!["network/default/aws_s3_bucket.logs"]]
        );
        let bucket = Query { id: "acme-logs", types: &["aws_s3_bucket"], ..Query::default() };
        assert_eq!(where_(&index.lookup(&bucket)), [["network/default/aws_s3_bucket.logs"]]);
        // The same queue name in two workspaces: ambiguous, unless the event says where it was.
        assert!(matches!(index.lookup(&q("jobs")), Lookup::Ambiguous(ref g) if g.len() == 2));
        let in_222 = Query { id: "jobs", account: Some("222"), ..Query::default() };
        assert_eq!(where_(&index.lookup(&in_222)), [["app/staging/aws_sqs_queue.jobs"]]);
        // An ARN the state does not record matches by its name, in the ARN's account and region.
        let by_arn = Query { id: "arn:aws:sqs:eu-west-1:111:jobs", types: &["aws_sqs_queue"], ..Query::default() };
        assert_eq!(where_(&index.lookup(&by_arn)), [["app/prod/aws_sqs_queue.jobs"]]);
        assert_eq!(where_(&index.lookup(&q("worker/AllowS3"))), [["app/prod/aws_lambda_permission.allow"]]);
        assert_eq!(index.lookup(&q("vpc-404")), Lookup::Unmanaged);
        // IAM is global: any region's event finds the role.
        let role = Query { id: "ci", types: &["aws_iam_role"], region: Some("us-west-2"), account: Some("111") };
        assert_eq!(where_(&index.lookup(&role)), [["network/default/aws_iam_role.ci"]]);
        // A workspace read again replaces what it added.
        index.add("app", "staging", &state(&[]), &providers);
        assert_eq!(where_(&index.lookup(&q("jobs"))), [["app/prod/aws_sqs_queue.jobs"]]);
        assert_eq!(index.len(), 6);
        assert_eq!(where_(&index.lookup(&q("vpc-1"))), [["network/default/aws_vpc.main"]], "renumbered after removal");
    }
}
