//! A policy whose code is a `data "aws_iam_policy_document"` (`policy =
//! data.aws_iam_policy_document.bucket.json`), set to a new document as a whole: the data source
//! gains and loses `statement {}` blocks. A statement that stays keeps its block, references and
//! all; a new or changed one is a new block written from the document; a gone one leaves. Only for
//! a data source that this one resource instance reads, written plainly (no `count`/`for_each`,
//! `dynamic` blocks or documents merged in): another reader would change with it, and evaluation
//! cannot see that through the reference.

use std::path::PathBuf;

use hcl_edit::expr::{Expression, TraversalOperator};
use hcl_edit::structure::Block;
use serde_json::{Map, Value};

use crate::edit::{self, BlockSel};
use crate::origin::{Change, Site, Tracer, refers_to_other_objects};
use crate::patch::values_equal;
use crate::path::{AttrPath, Seg};
use crate::render::{AttrValue, BlockSpec};

const DATA_TYPE: &str = "aws_iam_policy_document";

/// Whether an evaluated value is the unevaluated reference to such a data source's document.
pub(crate) fn is_document_reference(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.starts_with(&format!("${{data.{DATA_TYPE}.")) && s.ends_with(".json}"))
}

/// A statement of an IAM policy document in the data source's terms: its arguments and its
/// `principals`/`not_principals`/`condition` blocks.
#[derive(Debug, Clone, PartialEq)]
struct Statement {
    attrs: Map<String, Value>,
    blocks: Vec<(String, Map<String, Value>)>,
}

fn as_list(value: &Value) -> Value {
    match value {
        Value::Array(_) => value.clone(),
        other => Value::Array(vec![other.clone()]),
    }
}

/// A JSON statement as the data source writes it; `None` for what it cannot write.
fn statement_of(json: &Value) -> Option<Statement> {
    let object = json.as_object()?;
    let mut attrs = Map::new();
    let mut blocks = Vec::new();
    for (key, value) in object {
        match key.as_str() {
            "Sid" => {
                attrs.insert("sid".into(), value.clone());
            }
            "Effect" => {
                if value != "Allow" {
                    attrs.insert("effect".into(), value.clone());
                }
            }
            "Action" | "NotAction" | "Resource" | "NotResource" => {
                let name = match key.as_str() {
                    "Action" => "actions",
                    "NotAction" => "not_actions",
                    "Resource" => "resources",
                    _ => "not_resources",
                };
                attrs.insert(name.into(), as_list(value));
            }
            "Principal" | "NotPrincipal" => {
                let block = if key == "Principal" { "principals" } else { "not_principals" };
                match value {
                    Value::String(s) if s == "*" => blocks.push((block.to_string(), principal("*", &json_star()))),
                    Value::Object(by_type) => {
                        for (kind, ids) in by_type {
                            blocks.push((block.to_string(), principal(kind, &as_list(ids))));
                        }
                    }
                    _ => return None,
                }
            }
            "Condition" => {
                for (test, by_variable) in value.as_object()? {
                    for (variable, values) in by_variable.as_object()? {
                        let mut condition = Map::new();
                        condition.insert("test".into(), Value::String(test.clone()));
                        condition.insert("variable".into(), Value::String(variable.clone()));
                        condition.insert("values".into(), as_list(values));
                        blocks.push(("condition".to_string(), condition));
                    }
                }
            }
            _ => return None,
        }
    }
    // Principals before conditions, as the data source's documentation writes them.
    let rank = |kind: &str| ["principals", "not_principals", "condition"].iter().position(|k| *k == kind);
    blocks.sort_by_key(|(kind, _)| rank(kind));
    Some(Statement { attrs, blocks })
}

fn json_star() -> Value {
    Value::Array(vec![Value::String("*".into())])
}

fn principal(kind: &str, identifiers: &Value) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("type".into(), Value::String(kind.to_string()));
    map.insert("identifiers".into(), identifiers.clone());
    map
}

/// The block that writes a statement.
fn spec_of(statement: &Statement) -> BlockSpec {
    let order = ["sid", "effect", "actions", "not_actions", "resources", "not_resources"];
    let attrs = order
        .iter()
        .filter_map(|name| Some((name.to_string(), AttrValue::Literal(statement.attrs.get(*name)?.clone()))))
        .collect();
    let blocks = statement
        .blocks
        .iter()
        .map(|(kind, members)| {
            let order = ["type", "identifiers", "test", "variable", "values"];
            let attrs = order
                .iter()
                .filter_map(|name| Some((name.to_string(), AttrValue::Literal(members.get(*name)?.clone()))))
                .collect();
            (kind.clone(), BlockSpec { attrs, blocks: Vec::new() })
        })
        .collect();
    BlockSpec { attrs, blocks }
}

/// Two lists of strings with the same members (IAM reads them as sets), or two equal values.
fn same_members(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            let sorted = |items: &Vec<Value>| {
                let mut texts: Vec<String> = items.iter().map(|v| v.to_string()).collect();
                texts.sort();
                texts.dedup();
                texts
            };
            x.len() == y.len() && sorted(x) == sorted(y) || values_equal(a, b)
        }
        _ => values_equal(a, b),
    }
}

impl<'a> Tracer<'a> {
    /// `data.aws_iam_policy_document.NAME.json` set to a new document: see the module's text.
    pub(crate) fn policy_document_edited(
        &mut self,
        site: &Site,
        expr: &'a Expression,
        tail: &[Seg],
        change: &Change,
        trail: &str,
    ) {
        let (true, Change::Set(AttrValue::Literal(Value::String(document)))) = (tail.is_empty(), change) else {
            return;
        };
        if site.key.is_some() {
            return;
        }
        let Some(name) = document_name(expr) else { return };
        let Ok(Value::Object(document)) = serde_json::from_str::<Value>(document) else { return };
        let repo = self.repo;
        let sel = BlockSel::new("data", &[DATA_TYPE, &name]);
        let Some(file) = repo.find_block(&site.dir, &sel).cloned() else { return };
        // Read by this resource alone.
        let needle = format!("data.{DATA_TYPE}.{name}");
        let readers: usize = repo
            .parsed_tf_in(&site.dir)
            .map(|(f, _)| crate::repo::count_references(repo.text(f).unwrap_or(""), &needle))
            .sum();
        if readers != 1 {
            return;
        }
        let (Some(text), Some(block)) = (repo.text(&file), repo.body(&file).and_then(|b| edit::find_block(b, &sel)))
        else {
            return;
        };
        let plain = block.body.attributes().all(|a| matches!(a.key.as_str(), "version" | "policy_id"))
            && block.body.blocks().all(|b| b.ident.as_str() == "statement");
        if !plain {
            return;
        }
        let statements = match document.get("Statement") {
            Some(Value::Array(items)) => items.clone(),
            Some(one @ Value::Object(_)) => vec![one.clone()],
            _ => return,
        };
        let Some(new): Option<Vec<Statement>> = statements.iter().map(statement_of).collect() else { return };
        let data_site = Site {
            module: site.module.clone(),
            dir: site.dir.clone(),
            file: file.clone(),
            block: sel.clone(),
            key: None,
        };
        let old: Vec<&Block> = block.body.blocks().collect();
        // Which of the code's statements stay: each matched to one new statement, in order.
        let mut taken = vec![false; new.len()];
        let mut stays = Vec::new();
        for (i, b) in old.iter().enumerate() {
            let found = (0..new.len()).find(|j| !taken[*j] && self.block_says(&data_site, text, b, &new[*j]));
            if let Some(j) = found {
                taken[j] = true;
                stays.push(i);
            }
        }
        // Gone ones leave, last first; then the new ones come, in the document's order.
        let mut edited = text.to_string();
        for i in (0..old.len()).rev().filter(|i| !stays.contains(i)) {
            let path = AttrPath(vec![Seg::Name("statement".into()), Seg::Index(i)]);
            let Ok(next) = edit::remove(&edited, Some(&sel), &path) else { return };
            edited = next;
        }
        for (_, statement) in new.iter().enumerate().filter(|(j, _)| !taken[*j]) {
            let Ok(next) = edit::add_nested_block(&edited, &sel, "statement", &spec_of(statement)) else { return };
            edited = next;
        }
        // No blank line left before the block's closing brace by a statement that went last.
        if let Some(span) = edit::parse(&edited).ok().and_then(|b| {
            edit::find_block(&b, &sel).and_then(|b| {
                use hcl_edit::Span;
                b.span()
            })
        }) {
            let close = edited[..span.end].rfind('}').unwrap_or(span.end);
            let body_end = edited[..close].trim_end_matches([' ', '\t', '\n']).len();
            if edited[body_end..close].matches('\n').count() > 1 {
                edited = format!("{}\n{}", &edited[..body_end], &edited[close..]);
            }
        }
        let version = document.get("Version").cloned();
        let have_version =
            block.body.get_attribute("version").and_then(|a| self.eval(&data_site, &edit::expr_text(text, &a.value)));
        if let Some(version) =
            version.filter(|v| !values_equal(v, have_version.as_ref().unwrap_or(&Value::String("2012-10-17".into()))))
        {
            let path = AttrPath(vec![Seg::Name("version".into())]);
            let Ok(next) = edit::set(&edited, Some(&sel), &path, &AttrValue::Literal(version)) else { return };
            edited = next;
        }
        // The data source now writes the document: checked on the edited text.
        let mut scratch = repo.clone();
        scratch.set_file(&file, edited.clone());
        let Some(after) = scratch.body(&file).and_then(|b| edit::find_block(b, &sel)) else { return };
        let after_blocks: Vec<&Block> = after.body.blocks().collect();
        let sub = Tracer::new(&scratch);
        let mut used = vec![false; after_blocks.len()];
        let all_written = new.iter().all(|statement| {
            let found = (0..after_blocks.len())
                .find(|i| !used[*i] && sub.block_says(&data_site, &edited, after_blocks[*i], statement));
            found.map(|i| used[i] = true).is_some()
        });
        if !all_written || used.iter().any(|u| !u) {
            return;
        }
        let line = text[..block_start(text, block)].matches('\n').count() + 1;
        let through = trail.trim().trim_start_matches("->").trim();
        let note = format!(
            "the statements of data.{DATA_TYPE}.{name} in {}:{line}{}: {} kept, {} removed, {} added",
            file.display(),
            if through.is_empty() { String::new() } else { format!(" (through {through})") },
            stays.len(),
            old.len() - stays.len(),
            taken.iter().filter(|t| !**t).count()
        );
        self.push(PathBuf::from(&file), edited, note);
    }

    /// Whether a `statement` block says `statement`: every argument and nested block, where a part
    /// that reads another resource says any text.
    fn block_says(&self, site: &Site, text: &str, block: &Block, statement: &Statement) -> bool {
        let mut attrs = Map::new();
        for attr in block.body.attributes() {
            let name = attr.key.as_str();
            if name == "effect" && self.value_says(site, text, &attr.value, &Value::String("Allow".into())) {
                continue;
            }
            let Some(want) = statement.attrs.get(name) else { return false };
            if !self.value_says(site, text, &attr.value, want) {
                return false;
            }
            attrs.insert(name.to_string(), Value::Null);
        }
        if attrs.len() != statement.attrs.len() {
            return false;
        }
        let nested: Vec<&Block> = block.body.blocks().collect();
        if nested.len() != statement.blocks.len() {
            return false;
        }
        let mut used = vec![false; statement.blocks.len()];
        nested.iter().all(|b| {
            let found = statement.blocks.iter().enumerate().find(|(i, (kind, members))| {
                !used[*i]
                    && kind == b.ident.as_str()
                    && b.body.attributes().count() == members.len()
                    && b.body.blocks().next().is_none()
                    && b.body.attributes().all(|a| {
                        members.get(a.key.as_str()).is_some_and(|want| self.value_says(site, text, &a.value, want))
                    })
            });
            found.map(|(i, _)| used[i] = true).is_some()
        })
    }

    fn value_says(&self, site: &Site, text: &str, expr: &Expression, want: &Value) -> bool {
        if refers_to_other_objects(expr) {
            return match (expr, want) {
                (Expression::Array(items), Value::Array(values)) => {
                    items.len() == values.len()
                        && items.iter().zip(values).all(|(item, value)| self.value_says(site, text, item, value))
                }
                (_, Value::String(_)) => true,
                (_, Value::Array(values)) => values.iter().all(Value::is_string),
                _ => false,
            };
        }
        self.eval(site, &edit::expr_text(text, expr)).is_some_and(|have| same_members(&as_list_if(&have, want), want))
    }
}

/// `have` as a list where `want` is one (a single string the code writes where the document has a list).
fn as_list_if(have: &Value, want: &Value) -> Value {
    if want.is_array() { as_list(have) } else { have.clone() }
}

fn block_start(text: &str, block: &Block) -> usize {
    use hcl_edit::Span;
    block.span().map(|s| s.start).unwrap_or(0).min(text.len())
}

/// `data.aws_iam_policy_document.NAME.json` -> NAME.
fn document_name(expr: &Expression) -> Option<String> {
    let Expression::Traversal(t) = expr else { return None };
    let Expression::Variable(root) = &t.expr else { return None };
    let names: Vec<&str> = t
        .operators
        .iter()
        .map(|o| match o.value() {
            TraversalOperator::GetAttr(name) => Some(name.as_str()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    match (root.as_str(), names.as_slice()) {
        ("data", [kind, name, "json"]) if *kind == DATA_TYPE => Some(name.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use serde_json::json;

    use crate::patch::{Op, apply};
    use crate::{Address, AttrPath, AttrValue, Repo};

    const BUCKET: &str = r#"resource "aws_s3_bucket" "site" {
  bucket = "example-site"
}

data "aws_iam_policy_document" "site" {
  statement {
    sid       = "CloudFrontRead"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.site.arn}/*"]

    principals {
      type        = "Service"
      identifiers = ["cloudfront.amazonaws.com"]
    }
  }

  statement {
    sid       = "Legacy"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.site.arn]

    principals {
      type        = "AWS"
      identifiers = ["arn:aws:iam::111122223333:role/legacy"]
    }
  }
}

resource "aws_s3_bucket_policy" "site" {
  bucket = aws_s3_bucket.site.id
  policy = data.aws_iam_policy_document.site.json
}
"#;

    fn read_statement() -> serde_json::Value {
        json!({"Sid": "CloudFrontRead", "Effect": "Allow", "Principal": {"Service": "cloudfront.amazonaws.com"},
               "Action": "s3:GetObject", "Resource": "arn:aws:s3:::example-site/*"})
    }

    fn tls_statement() -> serde_json::Value {
        json!({"Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
               "Resource": ["arn:aws:s3:::example-site", "arn:aws:s3:::example-site/*"],
               "Condition": {"Bool": {"aws:SecureTransport": "false"}}})
    }

    fn set_policy(statements: serde_json::Value) -> Op {
        let document = json!({"Version": "2012-10-17", "Statement": statements});
        Op::Set { path: AttrPath::parse("policy").unwrap(), value: AttrValue::Literal(json!(document.to_string())) }
    }

    #[test]
    fn the_data_source_gains_and_loses_statement_blocks_and_keeps_the_ones_that_stay() {
        let mut repo = Repo::from_files([(PathBuf::from("main.tf"), BUCKET.to_string())].into_iter().collect());
        let policy = Address::parse("aws_s3_bucket_policy.site").unwrap();
        let applied = apply(&mut repo, &policy, &set_policy(json!([read_statement(), tls_statement()]))).unwrap();
        assert_eq!(applied.files, vec![PathBuf::from("main.tf")], "{applied:?}");
        let text = repo.text(Path::new("main.tf")).unwrap();
        // The kept statement with its reference, the legacy one gone, the new one as a block.
        assert!(text.contains("resources = [\"${aws_s3_bucket.site.arn}/*\"]"), "{text}");
        assert!(!text.contains("Legacy") && !text.contains("role/legacy"), "{text}");
        assert!(text.contains("sid       = \"DenyInsecureTransport\""), "{text}");
        assert!(text.contains("effect    = \"Deny\""), "{text}");
        assert!(text.contains("variable = \"aws:SecureTransport\""), "{text}");
        assert!(text.contains("type        = \"*\""), "{text}");
        assert!(text.contains("policy = data.aws_iam_policy_document.site.json"), "the reference stays: {text}");
        assert!(!text.contains("jsonencode") && !text.contains("merge("), "{text}");
        assert!(text.contains("      values   = [\"false\"]\n    }\n  }\n}\n"), "no blank line before the end: {text}");
    }

    #[test]
    fn a_document_two_resources_read_is_not_edited_for_one() {
        let shared = format!(
            "{BUCKET}\nresource \"aws_s3_bucket_policy\" \"mirror\" {{\n  bucket = \"example-mirror\"\n  policy = data.aws_iam_policy_document.site.json\n}}\n"
        );
        let mut repo = Repo::from_files([(PathBuf::from("main.tf"), shared.clone())].into_iter().collect());
        let policy = Address::parse("aws_s3_bucket_policy.site").unwrap();
        assert!(apply(&mut repo, &policy, &set_policy(json!([read_statement()]))).is_err());
        assert_eq!(repo.text(Path::new("main.tf")).unwrap(), shared);
    }

    #[test]
    fn statements_read_as_the_data_source_writes_them() {
        let statement = super::statement_of(&tls_statement()).unwrap();
        assert_eq!(statement.attrs["effect"], json!("Deny"));
        assert_eq!(statement.attrs["actions"], json!(["s3:*"]));
        assert_eq!(
            statement.blocks,
            vec![
                ("principals".to_string(), super::principal("*", &json!(["*"]))),
                (
                    "condition".to_string(),
                    json!({"test": "Bool", "variable": "aws:SecureTransport", "values": ["false"]})
                        .as_object()
                        .unwrap()
                        .clone()
                ),
            ]
        );
        // An Allow is the data source's default, and is not written.
        assert!(!super::statement_of(&read_statement()).unwrap().attrs.contains_key("effect"));
        assert!(super::statement_of(&json!({"Sid": "x", "Unknown": 1})).is_none());
    }
}
