//! The schema gate: what a patch adds to `resource` blocks must exist on that resource type in the
//! AWS provider's schema, written as the right kind (argument or block), and be settable.
//!
//! Only what the patch adds is judged (paths present after it and not before, in the files it
//! changed), so code the repository already has cannot block a patch, and a patch cannot pass by
//! hiding among it. A new `resource` block of a type the provider does not have is refused whole.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hcl_edit::structure::{Block, BlockLabel, Body, Structure};

use crate::module_exclusive::EXCLUSIVE_INLINE_BLOCKS;
use crate::repo::Repo;
use crate::schema::{Schema, Step};

/// Every attribute and block path under a resource body, as schema steps. `dynamic "x"` is the
/// block `x` with its `content` block's body; nothing inside `lifecycle`, `provisioner` or
/// `connection` is the provider's.
pub fn paths(body: &Body) -> Vec<Vec<Step<'_>>> {
    let mut out = Vec::new();
    walk(body, &mut Vec::new(), &mut out);
    out
}

fn walk<'a>(body: &'a Body, prefix: &mut Vec<Step<'a>>, out: &mut Vec<Vec<Step<'a>>>) {
    for structure in body.iter() {
        match structure {
            Structure::Attribute(a) => {
                prefix.push(Step::Attribute(a.key.as_str()));
                out.push(prefix.clone());
                prefix.pop();
            }
            Structure::Block(b) => walk_block(b, prefix, out),
        }
    }
}

fn walk_block<'a>(b: &'a Block, prefix: &mut Vec<Step<'a>>, out: &mut Vec<Vec<Step<'a>>>) {
    if b.ident.as_str() == "dynamic" {
        let Some(name) = b.labels.first().map(label) else { return };
        prefix.push(Step::Block(name));
        out.push(prefix.clone());
        for content in b.body.get_blocks("content") {
            walk(&content.body, prefix, out);
        }
        prefix.pop();
        return;
    }
    prefix.push(Step::Block(b.ident.as_str()));
    out.push(prefix.clone());
    if !(prefix.len() == 1 && ["lifecycle", "provisioner", "connection"].contains(&b.ident.as_str())) {
        walk(&b.body, prefix, out);
    }
    prefix.pop();
}

fn label(l: &BlockLabel) -> &str {
    match l {
        BlockLabel::Ident(i) => i.as_str(),
        BlockLabel::String(s) => s.as_str(),
    }
}

/// A path as people read it: `versioning_configuration{}.status`.
pub fn show(steps: &[Step<'_>]) -> String {
    steps
        .iter()
        .map(|s| match s {
            Step::Attribute(n) => n.to_string(),
            Step::Block(n) => format!("{n}{{}}"),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// A resource block's paths: `(type, name)` and its paths.
type ResourcePaths<'a> = ((&'a str, &'a str), Vec<Vec<Step<'a>>>);

/// The paths of each `aws_*` resource block of one file.
/// The arguments and blocks the provider requires that the resource block `rtype.rname` leaves out
/// (a `dynamic` block counts for its type).
fn missing_required(schema: &Schema, body: &Body, rtype: &str, rname: &str) -> Vec<String> {
    let Some(resource) = schema.resource(rtype) else { return Vec::new() };
    let Some(block) = body
        .get_blocks("resource")
        .find(|b| b.labels.first().map(label) == Some(rtype) && b.labels.get(1).map(label) == Some(rname))
    else {
        return Vec::new();
    };
    let dynamic = |name: &str| block.body.get_blocks("dynamic").any(|d| d.labels.first().map(label) == Some(name));
    let mut out: Vec<String> = resource
        .arguments()
        .filter(|(name, attribute)| attribute.is_required() && block.body.get_attribute(name).is_none())
        .map(|(name, _)| name.to_string())
        .collect();
    out.extend(
        resource
            .blocks()
            .filter(|(name, nested)| {
                nested.min_items() > 0 && block.body.get_blocks(name).next().is_none() && !dynamic(name)
            })
            .map(|(name, _)| format!("{name} {{}}")),
    );
    out
}

fn resource_paths(body: &Body) -> Vec<ResourcePaths<'_>> {
    body.get_blocks("resource")
        .filter_map(|block| {
            let rtype = block.labels.first().map(label)?;
            let rname = block.labels.get(1).map(label)?;
            rtype.starts_with("aws_").then(|| ((rtype, rname), paths(&block.body)))
        })
        .collect()
}

/// The separate resources in `file`'s directory whose `link` argument refers to `rtype.rname`.
fn separate_resources(repo: &Repo, file: &Path, rtype: &str, rname: &str, types: &[&str], link: &str) -> Vec<String> {
    let dir = file.parent().unwrap_or(Path::new(""));
    let needle = format!("{rtype}.{rname}");
    let mut found = Vec::new();
    for (path, text) in repo.files() {
        if path.parent().unwrap_or(Path::new("")) != dir {
            continue;
        }
        let Some(body) = repo.body(path) else { continue };
        for block in body.get_blocks("resource") {
            let (Some(ptype), Some(pname)) = (block.labels.first().map(label), block.labels.get(1).map(label)) else {
                continue;
            };
            if !types.contains(&ptype) {
                continue;
            }
            let Some(attr) = block.body.get_attribute(link) else { continue };
            let expr = crate::edit::expr_text(text, &attr.value);
            let refers = expr.match_indices(&needle).any(|(at, _)| {
                let before = expr[..at].chars().next_back();
                let after = expr[at + needle.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
                    && matches!(after, Some('.') | Some('['))
            });
            if refers {
                found.push(format!("{ptype}.{pname}"));
            }
        }
    }
    found
}

/// What the patch from `before` to `after` adds to the `resource` blocks of `files` that `schema`
/// refuses, or that would remove what separate resources manage ([`EXCLUSIVE_INLINE_BLOCKS`]),
/// each as `FILE: TYPE.NAME PATH: reason`. Empty: the patch passes the gate.
pub fn check(schema: &Schema, before: &Repo, after: &Repo, files: &[PathBuf]) -> Vec<String> {
    let mut problems = Vec::new();
    for file in files {
        let Some(body) = after.body(file) else { continue };
        // Terraform reads `import` blocks in the root module only.
        let in_root = file.parent().unwrap_or(Path::new("")) == before.root_dir();
        let imports = |body: Option<&Body>| body.map(|b| b.get_blocks("import").count()).unwrap_or(0);
        if !in_root && imports(Some(body)) > imports(before.body(file)) {
            problems.push(format!(
                "{}: an import block in a child module: Terraform reads import blocks in the root module only",
                file.display()
            ));
        }
        // A separate resource naming a group whose module writes the same rules inline.
        problems.extend(crate::module_exclusive::separate_beside_module_inline(before, after, file));
        let old: Vec<ResourcePaths<'_>> = before.body(file).map(resource_paths).unwrap_or_default();
        for ((rtype, rname), new_paths) in resource_paths(body) {
            let known: BTreeSet<&Vec<Step<'_>>> =
                old.iter().filter(|(id, _)| *id == (rtype, rname)).flat_map(|(_, p)| p.iter()).collect();
            if schema.resource(rtype).is_none() {
                if !old.iter().any(|(id, _)| *id == (rtype, rname)) {
                    problems.push(format!(
                        "{}: {rtype}.{rname}: the AWS provider {} has no resource type {rtype}",
                        file.display(),
                        schema.provider_version()
                    ));
                }
                continue;
            }
            // An inline block beside the separate resources that manage the same sub-objects.
            for (_, block, types, link) in EXCLUSIVE_INLINE_BLOCKS.iter().filter(|(t, ..)| *t == rtype) {
                let adds =
                    new_paths.iter().any(|p| !known.contains(p) && p.first().is_some_and(|step| step.name() == *block));
                if !adds {
                    continue;
                }
                let separate = separate_resources(after, file, rtype, rname, types, link);
                if !separate.is_empty() {
                    problems.push(format!(
                        "{}: {rtype}.{rname} {block}: an inline {block} beside {} makes Terraform remove or undo \
                         what those manage on every apply; this change belongs in the separate {} resource",
                        file.display(),
                        separate.join(", "),
                        types.join(" or ")
                    ));
                }
            }
            // A new resource block sets every argument the provider requires.
            if !old.iter().any(|(id, _)| *id == (rtype, rname)) {
                for missing in missing_required(schema, body, rtype, rname) {
                    problems.push(format!(
                        "{}: {rtype}.{rname}: the required argument {missing} is not set; the provider refuses the \
                         resource without it",
                        file.display()
                    ));
                }
            }
            // Below a path that failed, its members fail for the same reason: one report each.
            let mut failed: Vec<&Vec<Step<'_>>> = Vec::new();
            for path in new_paths.iter().filter(|p| !known.contains(p)) {
                if failed.iter().any(|f| path.starts_with(f)) {
                    continue;
                }
                if let Err(e) = schema.check_body(rtype, path) {
                    problems.push(format!("{}: {rtype}.{rname} {}: {e}", file.display(), show(path)));
                    failed.push(path);
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const GROUP_WITH_RULE_RESOURCES: &str = r#"
resource "aws_security_group" "alb" {
  name = "alb"
}

resource "aws_security_group_rule" "http" {
  type              = "ingress"
  security_group_id = aws_security_group.alb.id
  from_port         = 80
  to_port           = 80
  protocol          = "tcp"
  cidr_blocks       = ["0.0.0.0/0"]
}

resource "aws_security_group" "other" {
  name = "other"
}
"#;

    #[test]
    fn an_import_block_goes_in_the_root_module_only() {
        let schema = Schema::version("5.100.0").unwrap();
        let import = "import {\n  to = aws_s3_bucket.logs\n  id = \"logs\"\n}\n";
        let module = PathBuf::from("modules/bucket/main.tf");
        let files = |path: &Path, extra: &str| {
            Repo::from_files(BTreeMap::from([(path.to_path_buf(), format!("{BEFORE}{extra}"))]))
        };
        let problems = check(schema, &files(&module, ""), &files(&module, import), std::slice::from_ref(&module));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("root module only"), "{problems:?}");
        let root = PathBuf::from("main.tf");
        assert_eq!(check(schema, &files(&root, ""), &files(&root, import), &[root]), Vec::<String>::new());
    }

    #[test]
    fn an_inline_rule_beside_rule_resources_is_refused_naming_them() {
        let schema = Schema::version("5.100.0").unwrap();
        let files = [PathBuf::from("main.tf")];
        let before = repo(GROUP_WITH_RULE_RESOURCES);
        let inline = "  ingress {\n    from_port   = 8080\n    to_port     = 8080\n    protocol    = \"tcp\"\n    cidr_blocks = [\"10.0.0.0/8\"]\n  }\n";
        let on = |group: &str| {
            repo(
                &GROUP_WITH_RULE_RESOURCES
                    .replace(&format!("  name = \"{group}\"\n"), &format!("  name = \"{group}\"\n{inline}")),
            )
        };
        let problems = check(schema, &before, &on("alb"), &files);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("aws_security_group.alb ingress: an inline ingress beside"), "{problems:?}");
        assert!(problems[0].contains("aws_security_group_rule.http"), "{problems:?}");
        // A group whose rules are all inline (no rule resource refers to it) may get another.
        assert_eq!(check(schema, &before, &on("other"), &files), Vec::<String>::new());
        // Every entry of the table names real resource types, blocks and arguments.
        for (rtype, block, types, link) in EXCLUSIVE_INLINE_BLOCKS {
            let resource = schema.resource(rtype).unwrap_or_else(|| panic!("{rtype}"));
            assert!(resource.block(block).is_some() || resource.argument(block).is_some(), "{rtype}.{block}");
            for t in *types {
                let separate = schema.resource(t).unwrap_or_else(|| panic!("{t}"));
                assert!(separate.argument(link).is_some(), "{t}.{link}");
            }
        }
    }

    #[test]
    fn an_argument_beside_its_own_resource_is_refused() {
        let schema = Schema::version("5.100.0").unwrap();
        let files = [PathBuf::from("main.tf")];
        let code = r#"resource "aws_sqs_queue" "orders" {
  name = "orders"
}

resource "aws_sqs_queue_redrive_policy" "orders" {
  queue_url      = aws_sqs_queue.orders.id
  redrive_policy = "{}"
}
"#;
        let before = repo(code);
        let after =
            repo(&code.replace("  name = \"orders\"\n", "  name           = \"orders\"\n  redrive_policy = \"{}\"\n"));
        let problems = check(schema, &before, &after, &files);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("aws_sqs_queue.orders redrive_policy")
                && problems[0].contains("aws_sqs_queue_redrive_policy.orders"),
            "{problems:?}"
        );
        // Without the separate resource the argument is the queue's own.
        let alone = "resource \"aws_sqs_queue\" \"orders\" {\n  name = \"orders\"\n}\n";
        let set = alone.replace("  name = \"orders\"\n", "  name           = \"orders\"\n  redrive_policy = \"{}\"\n");
        assert!(check(schema, &repo(alone), &repo(&set), &files).is_empty());
    }

    fn repo(text: &str) -> Repo {
        Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), text.to_string())]))
    }

    const BEFORE: &str = r#"
resource "aws_s3_bucket" "logs" {
  bucket = "logs"
  legacy_thing = true
}
"#;

    #[test]
    fn only_what_the_patch_adds_is_judged_and_each_problem_is_named_once() {
        let schema = Schema::version("5.100.0").unwrap();
        let files = [PathBuf::from("main.tf")];
        // What was there before (even if the provider has no such argument) is not the patch's.
        let tagged = repo(&BEFORE.replace("  bucket = \"logs\"", "  bucket = \"logs\"\n  tags = { Team = \"web\" }"));
        assert_eq!(check(schema, &repo(BEFORE), &tagged, &files), Vec::<String>::new());
        // A block of the split resource written into the bucket: refused, naming where it belongs,
        // once (not again for its members).
        let wrong = repo(&BEFORE.replace(
            "  legacy_thing = true",
            "  legacy_thing = true\n  versioning_configuration {\n    status = \"Enabled\"\n  }",
        ));
        let problems = check(schema, &repo(BEFORE), &wrong, &files);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("aws_s3_bucket.logs versioning_configuration{}"), "{problems:?}");
        assert!(problems[0].contains("aws_s3_bucket_versioning"), "{problems:?}");
        // A new resource of a type the provider lacks, and a computed-only argument.
        let invented = repo(&format!(
            "{BEFORE}\nresource \"aws_made_up\" \"x\" {{\n  a = 1\n}}\nresource \"aws_instance\" \"web\" {{\n  arn = \"x\"\n}}\n"
        ));
        let problems = check(schema, &repo(BEFORE), &invented, &files);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("no resource type aws_made_up")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("aws_instance.web arn")), "{problems:?}");
    }

    #[test]
    fn a_new_resource_without_an_argument_the_provider_requires_is_refused() {
        let schema = Schema::version("5.100.0").unwrap();
        let files = [PathBuf::from("main.tf")];
        let before = repo(GROUP_WITH_RULE_RESOURCES);
        let rule = |protocol: &str| {
            format!(
                "{GROUP_WITH_RULE_RESOURCES}\nresource \"aws_network_acl_rule\" \"in_12\" {{\n  network_acl_id = \"acl-1\"\n  rule_number    = 12\n  egress         = false\n{protocol}  rule_action    = \"allow\"\n  cidr_block     = \"0.0.0.0/0\"\n}}\n"
            )
        };
        let problems = check(schema, &before, &repo(&rule("")), &files);
        assert!(problems.iter().any(|p| p.contains("required argument protocol")), "{problems:?}");
        assert_eq!(check(schema, &before, &repo(&rule("  protocol       = \"6\"\n")), &files), Vec::<String>::new());
    }
}
