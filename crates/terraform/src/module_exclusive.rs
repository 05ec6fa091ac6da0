//! The exclusive styles, seen inside modules: a separate rule resource that a patch adds in the
//! root module, naming a group a module makes (`security_group_id = module.web.security_group_id`),
//! while that module writes the group's rules of the same direction inline (`ingress { ... }` or
//! `dynamic "ingress"`). Terraform then takes the inline list as complete and removes the separate
//! rule on every apply: the change belongs in the module's rules input, or with a person.

use std::path::{Path, PathBuf};

use hcl_edit::structure::{Block, Body};

use crate::edit::{self, BlockSel, label_str};
use crate::repo::Repo;

/// Inline blocks (and arguments) that a resource type must not have beside separate resources
/// managing the same things: with any inline block present, Terraform takes the inline list as
/// complete and removes what the separate resources manage on the next apply; an argument and its
/// own resource undo each other on every apply. Each entry: (resource type, its
/// inline block, the separate resource types, the argument by which they name the resource). The
/// source is each resource's documentation in the AWS provider ("Terraform currently provides both
/// a standalone ... resource and ... inline. At this time you cannot use ... in conjunction").
pub const EXCLUSIVE_INLINE_BLOCKS: &[(&str, &str, &[&str], &str)] = &[
    (
        "aws_security_group",
        "ingress",
        &["aws_security_group_rule", "aws_vpc_security_group_ingress_rule"],
        "security_group_id",
    ),
    (
        "aws_security_group",
        "egress",
        &["aws_security_group_rule", "aws_vpc_security_group_egress_rule"],
        "security_group_id",
    ),
    ("aws_route_table", "route", &["aws_route"], "route_table_id"),
    ("aws_network_acl", "ingress", &["aws_network_acl_rule"], "network_acl_id"),
    ("aws_network_acl", "egress", &["aws_network_acl_rule"], "network_acl_id"),
    (
        "aws_default_security_group",
        "ingress",
        &["aws_security_group_rule", "aws_vpc_security_group_ingress_rule"],
        "security_group_id",
    ),
    (
        "aws_default_security_group",
        "egress",
        &["aws_security_group_rule", "aws_vpc_security_group_egress_rule"],
        "security_group_id",
    ),
    ("aws_iam_role", "inline_policy", &["aws_iam_role_policy"], "role"),
    ("aws_iam_role", "managed_policy_arns", &["aws_iam_role_policy_attachment"], "role"),
    // Arguments with a resource of their own: both set, they undo each other on every apply.
    ("aws_sqs_queue", "redrive_policy", &["aws_sqs_queue_redrive_policy"], "queue_url"),
    ("aws_sqs_queue", "redrive_allow_policy", &["aws_sqs_queue_redrive_allow_policy"], "queue_url"),
    ("aws_sqs_queue", "policy", &["aws_sqs_queue_policy"], "queue_url"),
    ("aws_sns_topic", "policy", &["aws_sns_topic_policy"], "arn"),
    // The S3 bucket's older inline configuration, split into resources in AWS provider v4.
    ("aws_s3_bucket", "policy", &["aws_s3_bucket_policy"], "bucket"),
    ("aws_s3_bucket", "versioning", &["aws_s3_bucket_versioning"], "bucket"),
    (
        "aws_s3_bucket",
        "server_side_encryption_configuration",
        &["aws_s3_bucket_server_side_encryption_configuration"],
        "bucket",
    ),
    ("aws_s3_bucket", "lifecycle_rule", &["aws_s3_bucket_lifecycle_configuration"], "bucket"),
    ("aws_s3_bucket", "logging", &["aws_s3_bucket_logging"], "bucket"),
    ("aws_s3_bucket", "cors_rule", &["aws_s3_bucket_cors_configuration"], "bucket"),
    ("aws_s3_bucket", "website", &["aws_s3_bucket_website_configuration"], "bucket"),
    ("aws_s3_bucket", "replication_configuration", &["aws_s3_bucket_replication_configuration"], "bucket"),
];

/// For each new resource block of `file` (in `after`, not in `before`) that is a separate
/// resource of [`EXCLUSIVE_INLINE_BLOCKS`] naming, through a module output, a resource whose
/// module writes the same things inline: the problem, as `FILE: TYPE.NAME: reason`.
pub(crate) fn separate_beside_module_inline(before: &Repo, after: &Repo, file: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(body) = after.body(file) else { return problems };
    let Some(text) = after.text(file) else { return problems };
    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
    let module_prefix = match after.modules().iter().find(|(_, d)| **d == dir) {
        Some((path, _)) => path.clone(),
        None => return problems,
    };
    let existed = |rtype: &str, name: &str| {
        before.body(file).and_then(|b| edit::find_block(b, &BlockSel::new("resource", &[rtype, name]))).is_some()
    };
    for block in body.get_blocks("resource") {
        let (Some(rtype), Some(name)) = (block.labels.first().map(label_str), block.labels.get(1).map(label_str))
        else {
            continue;
        };
        if existed(rtype, name) {
            continue;
        }
        for (owner, inline, types, link) in EXCLUSIVE_INLINE_BLOCKS {
            if !types.contains(&rtype) || !direction_matches(text, block, rtype, inline) {
                continue;
            }
            let Some(attr) = block.body.get_attribute(link) else { continue };
            let reference = edit::expr_text(text, &attr.value).trim().to_string();
            let Some((call, output)) = module_output(&reference) else { continue };
            let call_path = if module_prefix.is_empty() {
                format!("module.{call}")
            } else {
                format!("{module_prefix}.module.{call}")
            };
            let Some(module_dir) = after.module_dir(&call_path).cloned() else { continue };
            let Some((owner_name, owner_file)) = output_resource(after, &module_dir, &output, owner) else { continue };
            let owner_block = after
                .body(&owner_file)
                .and_then(|b| edit::find_block(b, &BlockSel::new("resource", &[owner, &owner_name])));
            if owner_block.is_some_and(|b| writes_inline(&b.body, inline)) {
                problems.push(format!(
                    "{}: {rtype}.{name}: module.{call}'s {owner}.{owner_name} ({}) manages its {inline} inline, so \
                     Terraform would remove this separate {rtype} on every apply; the change belongs in the module's \
                     {inline} rules input",
                    file.display(),
                    owner_file.display()
                ));
            }
        }
    }
    problems
}

/// Whether a separate resource of type `rtype` manages the inline block `inline`'s kind: an
/// `aws_security_group_rule` by its `type` (both when it is not a literal); the direction-named
/// types by their name; the others always.
fn direction_matches(text: &str, block: &Block, rtype: &str, inline: &str) -> bool {
    if rtype == "aws_security_group_rule" {
        let kind = block
            .body
            .get_attribute("type")
            .map(|a| edit::expr_text(text, &a.value).trim().trim_matches('"').to_string());
        return kind.is_none_or(|k| k == inline || !(k == "ingress" || k == "egress"));
    }
    if rtype.ends_with("_ingress_rule") {
        return inline == "ingress";
    }
    if rtype.ends_with("_egress_rule") {
        return inline == "egress";
    }
    true
}

/// `module.NAME.OUTPUT` -> (NAME, OUTPUT).
fn module_output(reference: &str) -> Option<(String, String)> {
    let rest = reference.strip_prefix("module.")?;
    let mut parts = rest.split('.');
    let (call, output) = (parts.next()?, parts.next()?);
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (parts.next().is_none() && plain(call) && plain(output)).then(|| (call.to_string(), output.to_string()))
}

/// The resource of type `rtype` that output `output` of the module in `dir` gives (its value, or
/// a local it reads, names `rtype.NAME`): NAME and the file declaring it.
fn output_resource(repo: &Repo, dir: &Path, output: &str, rtype: &str) -> Option<(String, PathBuf)> {
    let out_file = repo.find_block(dir, &BlockSel::new("output", &[output]))?;
    let out_text = repo.text(out_file)?;
    let out_block = edit::find_block(repo.body(out_file)?, &BlockSel::new("output", &[output]))?;
    let value = edit::expr_text(out_text, &out_block.body.get_attribute("value")?.value).to_string();
    let mut sources = vec![value.clone()];
    for rest in value.split("local.").skip(1) {
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(rest.len());
        let name = &rest[..end];
        let Some(file) = repo.find_local(dir, name) else { continue };
        let (Some(text), Some(body)) = (repo.text(file), repo.body(file)) else { continue };
        for locals in body.get_blocks("locals") {
            if let Some(attr) = locals.body.get_attribute(name) {
                sources.push(edit::expr_text(text, &attr.value).to_string());
            }
        }
    }
    let needle = format!("{rtype}.");
    for source in sources {
        for (at, _) in source.match_indices(&needle) {
            if source[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            let rest = &source[at + needle.len()..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(rest.len());
            let name = &rest[..end];
            if let Some(file) = repo.find_block(dir, &BlockSel::new("resource", &[rtype, name])) {
                return Some((name.to_string(), file.clone()));
            }
        }
    }
    None
}

/// Whether a resource body writes `inline` itself: a block or argument of that name, or a
/// `dynamic` block making it.
fn writes_inline(body: &Body, inline: &str) -> bool {
    body.has_attribute(inline)
        || body.blocks().any(|b| {
            b.ident.as_str() == inline
                || (b.ident.as_str() == "dynamic" && b.labels.first().is_some_and(|l| label_str(l) == inline))
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::gate::check;
    use crate::schema::Schema;

    const MODULE_INLINE: &str = r#"variable "ingress_rules" {
  type    = list(any)
  default = []
}

resource "aws_security_group" "this" {
  name = "web"

  dynamic "ingress" {
    for_each = var.ingress_rules
    content {
      from_port   = ingress.value.from_port
      to_port     = ingress.value.to_port
      protocol    = "tcp"
      cidr_blocks = ingress.value.cidr_blocks
    }
  }
}

locals {
  id = aws_security_group.this.id
}

output "security_group_id" {
  value = local.id
}
"#;

    const ROOT: &str = "module \"web\" {\n  source = \"./modules/sg\"\n}\n";

    fn rule(kind: &str) -> String {
        format!(
            "\nresource \"aws_security_group_rule\" \"extra\" {{\n  type              = \"{kind}\"\n  security_group_id = module.web.security_group_id\n  from_port         = 8443\n  to_port           = 8443\n  protocol          = \"tcp\"\n  cidr_blocks       = [\"10.0.0.0/16\"]\n}}\n"
        )
    }

    fn repo(root: &str, module: &str) -> Repo {
        Repo::from_files(BTreeMap::from([
            (PathBuf::from("main.tf"), root.to_string()),
            (PathBuf::from("modules/sg/main.tf"), module.to_string()),
        ]))
    }

    #[test]
    fn a_root_rule_beside_a_module_that_writes_its_rules_inline_is_refused() {
        let schema = Schema::version("5.100.0").unwrap();
        let files = [PathBuf::from("main.tf")];
        let before = repo(ROOT, MODULE_INLINE);
        let problems = check(schema, &before, &repo(&format!("{ROOT}{}", rule("ingress")), MODULE_INLINE), &files);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains(
                "aws_security_group_rule.extra: module.web's aws_security_group.this (modules/sg/main.tf) manages its \
                 ingress inline"
            ),
            "{problems:?}"
        );
        // The other direction is not written inline by the module: an egress rule may be added.
        let egress = repo(&format!("{ROOT}{}", rule("egress")), MODULE_INLINE);
        assert_eq!(check(schema, &before, &egress, &files), Vec::<String>::new());
        // A module that keeps its rules as separate resources takes a root rule beside them.
        let start = MODULE_INLINE.find("\n  dynamic").unwrap();
        let end = MODULE_INLINE.find("\n}\n\nlocals").unwrap();
        let separate = format!("{}{}", &MODULE_INLINE[..start], &MODULE_INLINE[end..]);
        assert!(!separate.contains("ingress {") && !separate.contains("dynamic"));
        let before = repo(ROOT, &separate);
        let after = repo(&format!("{ROOT}{}", rule("ingress")), &separate);
        assert_eq!(check(schema, &before, &after, &files), Vec::<String>::new());
    }
}
