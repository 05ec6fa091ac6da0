//! The AWS account and region each provider configuration of a stack's workspace points at, from
//! literal values or variables set in the workspace's tfvars (or their defaults).

use std::collections::BTreeMap;
use std::path::Path;

use hcl_edit::expr::{Expression, TraversalOperator};
use hcl_edit::structure::Body;
use serde::Serialize;
use serde_json::{Map, Value};

use driftback_terraform::Repo;

use crate::settings::literal;
use crate::stack::Stack;

/// Where a provider configuration (or a resource) lives; `None` where nothing says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Placement {
    pub account: Option<String>,
    pub region: Option<String>,
}

/// `(account, region)` of an ARN: `arn:aws:sqs:eu-west-1:111:q` -> (111, eu-west-1). Empty
/// parts (IAM's region, S3's account) are `None`.
pub fn arn_placement(arn: &str) -> Option<Placement> {
    let mut parts = arn.splitn(6, ':');
    if parts.next()? != "arn" {
        return None;
    }
    let (_partition, _service) = (parts.next()?, parts.next()?);
    let region = parts.next()?;
    let account = parts.next()?;
    parts.next()?;
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Some(Placement { account: some(account), region: some(region) })
}

/// The variables of a stack's workspace: defaults, then the auto-loaded tfvars, then the
/// workspace's own, later ones winning (literal values only).
pub fn variables(repo: &Repo, stack: &Stack, workspace: &str) -> Map<String, Value> {
    let mut vars = Map::new();
    for (_, body) in repo.parsed_tf_in(&stack.dir) {
        for block in body.get_blocks("variable") {
            let Some(label) = block.labels.first() else { continue };
            if let Some(default) = block.body.get_attribute("default").and_then(|a| literal(&a.value)) {
                vars.insert(driftback_terraform::edit::label_str(label).to_string(), default);
            }
        }
    }
    let own = stack.workspace(workspace).map(|w| w.tfvars.clone()).unwrap_or_default();
    let files: Vec<&Path> =
        repo.tfvars_files(&stack.dir).into_iter().map(|p| p.as_path()).chain(own.iter().map(|p| p.as_path())).collect();
    for file in files {
        if let Some(body) = repo.body(file) {
            for attr in body.attributes() {
                if let Some(v) = literal(&attr.value) {
                    vars.insert(attr.key.as_str().to_string(), v);
                }
            }
        }
    }
    vars
}

/// Provider alias (`""` for the default `aws` provider) -> where it points: `region`,
/// `allowed_account_ids` (when it names one account) or the account of `assume_role.role_arn`.
pub fn provider_placements(repo: &Repo, stack: &Stack, workspace: &str) -> BTreeMap<String, Placement> {
    let vars = variables(repo, stack, workspace);
    let mut out = BTreeMap::new();
    for (_, body) in repo.parsed_tf_in(&stack.dir) {
        for block in body.get_blocks("provider") {
            if block.labels.first().map(driftback_terraform::edit::label_str) != Some("aws") {
                continue;
            }
            let text = |body: &Body, name: &str| {
                body.get_attribute(name)
                    .and_then(|a| value_of(&a.value, &vars))
                    .and_then(|v| v.as_str().map(str::to_string))
            };
            let alias = text(&block.body, "alias").unwrap_or_default();
            let region = text(&block.body, "region");
            let allowed = block.body.get_attribute("allowed_account_ids").and_then(|a| value_of(&a.value, &vars));
            let account = match allowed {
                Some(Value::Array(ids)) if ids.len() == 1 => ids[0].as_str().map(str::to_string),
                _ => block
                    .body
                    .get_blocks("assume_role")
                    .find_map(|b| text(&b.body, "role_arn"))
                    .and_then(|arn| arn_placement(&arn))
                    .and_then(|p| p.account),
            };
            out.insert(alias, Placement { account, region });
        }
    }
    out
}

/// A literal, or `var.NAME` when the variable has a literal value.
fn value_of(expr: &Expression, vars: &Map<String, Value>) -> Option<Value> {
    if let Some(v) = literal(expr) {
        return Some(v);
    }
    let Expression::Traversal(t) = expr else { return None };
    let Expression::Variable(root) = &t.expr else { return None };
    match (root.as_str(), t.operators.as_slice()) {
        ("var", [op]) => match op.value() {
            TraversalOperator::GetAttr(name) => vars.get(name.as_str()).cloned(),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::{Tree, discover};
    use std::collections::BTreeMap as Files;
    use std::path::PathBuf;

    #[test]
    fn regions_and_accounts_from_literals_and_workspace_variables() {
        let files: Files<PathBuf, String> = [
            (
                "app/main.tf",
                "terraform {\n  backend \"s3\" {}\n}\nvariable \"region\" {\n  default = \"us-east-1\"\n}\nprovider \"aws\" {\n  region = var.region\n  allowed_account_ids = [\"111111111111\"]\n}\nprovider \"aws\" {\n  alias = \"dr\"\n  region = \"eu-central-1\"\n  assume_role {\n    role_arn = \"arn:aws:iam::222222222222:role/deploy\"\n  }\n}\n",
            ),
            ("app/prod.tfvars", "region = \"eu-west-1\"\n"),
        ]
        .into_iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
        let tree = Tree { repo: Repo::from_files(files), ..Tree::default() };
        let config = crate::config::StackConfig {
            path: "app".into(),
            workspaces: vec![
                crate::config::WorkspaceConfig {
                    name: "prod".into(),
                    tfvars: vec!["app/prod.tfvars".into()],
                    ..Default::default()
                },
                crate::config::WorkspaceConfig { name: "staging".into(), ..Default::default() },
            ],
            ..Default::default()
        };
        let stack = discover(&tree, &[config]).stacks.remove(0);
        let prod = provider_placements(&tree.repo, &stack, "prod");
        assert_eq!(prod[""], Placement { account: Some("111111111111".into()), region: Some("eu-west-1".into()) });
        assert_eq!(prod["dr"], Placement { account: Some("222222222222".into()), region: Some("eu-central-1".into()) });
        let staging = provider_placements(&tree.repo, &stack, "staging");
        assert_eq!(staging[""].region.as_deref(), Some("us-east-1"), "the variable's default");
        assert_eq!(
            arn_placement("arn:aws:iam::333:role/x"),
            Some(Placement { account: Some("333".into()), region: None })
        );
        assert_eq!(arn_placement("i-123"), None);
    }
}
