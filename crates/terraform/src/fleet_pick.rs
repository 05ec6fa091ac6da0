//! A reference to one instance of a fleet picked by a computed key
//! (`target_key_id = aws_kms_key.this[each.value].key_id`), set to another instance of the same
//! fleet (`aws_kms_key.this["app"].key_id`): the change is the key that picks it, made where that
//! key comes from (the `for_each` map entry, a variable), so the reference stays a reference.

use hcl_edit::Span;
use hcl_edit::expr::{Expression, TraversalOperator};
use serde_json::Value;

use crate::origin::{Change, Trace, Tracer};
use crate::render::AttrValue;

/// `TYPE.NAME[KEY].REST` as (`TYPE.NAME`, the key, `.REST`), where KEY is a literal string or number.
fn split_reference(reference: &str) -> Option<(&str, Value, &str)> {
    let (head, rest) = reference.split_once('[')?;
    let (key, after) = rest.split_once(']')?;
    let key = match key.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
        Some(text) => Value::String(text.to_string()),
        None => Value::from(key.parse::<u64>().ok()?),
    };
    Some((head, key, after))
}

impl<'a> Tracer<'a> {
    /// `TYPE.NAME[INDEX].REST` set to `TYPE.NAME[KEY].REST` (the same fleet and attribute, another
    /// instance): INDEX is set to KEY at its origin.
    pub(crate) fn fleet_instance_picked(&mut self, at: &Trace<'_, 'a>) {
        let Trace { site, file, expr, tail, change, trail, depth } = *at;
        let (true, Change::Set(AttrValue::Reference(wanted))) = (tail.is_empty(), change) else { return };
        let Expression::Traversal(t) = expr else { return };
        let Expression::Variable(_) = &t.expr else { return };
        let ops: Vec<_> = t.operators.iter().collect();
        let (Some(TraversalOperator::GetAttr(_)), Some(TraversalOperator::Index(index))) =
            (ops.first().map(|o| o.value()), ops.get(1).map(|o| o.value()))
        else {
            return;
        };
        if matches!(index, Expression::String(_) | Expression::Number(_)) {
            return;
        }
        let Some(text) = self.repo.text(file) else { return };
        let (Some(whole), Some(index_op)) = (expr.span(), ops[1].span()) else { return };
        let (Some(head), Some(rest)) = (text.get(whole.start..index_op.start), text.get(index_op.end..whole.end))
        else {
            return;
        };
        let Some((want_head, key, want_rest)) = split_reference(wanted) else { return };
        if head.trim() != want_head || rest.trim() != want_rest || rest.trim().is_empty() {
            return;
        }
        let trail = format!("{trail} -> the key {key} that picks the instance of {want_head}");
        let pick = Change::Set(AttrValue::Literal(key));
        self.expr(site, file, index, &[], &pick, &trail, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::eval::effective_config;
    use crate::patch::{Op, apply};
    use crate::{Address, AttrPath, AttrValue, Repo};

    const KMS: &str = r#"resource "aws_kms_key" "this" {
  for_each    = toset(["app", "signing"])
  description = each.key
}

resource "aws_kms_alias" "this" {
  for_each = local.aliases

  name          = "alias/${each.key}"
  target_key_id = aws_kms_key.this[each.value].key_id
}
"#;

    const LOCALS: &str = r#"locals {
  aliases = {
    "project-key" = "app"
    "my_alias"    = "signing"
  }
}
"#;

    fn repo() -> Repo {
        Repo::from_files(
            [(PathBuf::from("kms.tf"), KMS.to_string()), (PathBuf::from("locals.tf"), LOCALS.to_string())]
                .into_iter()
                .collect(),
        )
    }

    fn point_at(key: &str) -> Op {
        Op::Set {
            path: AttrPath::parse("target_key_id").unwrap(),
            value: AttrValue::Reference(format!("aws_kms_key.this[\"{key}\"].key_id")),
        }
    }

    #[test]
    fn an_alias_pointed_at_another_key_of_the_fleet_changes_its_map_entry() {
        let mut repo = repo();
        let mine = Address::parse(r#"aws_kms_alias.this["my_alias"]"#).unwrap();
        let other = Address::parse(r#"aws_kms_alias.this["project-key"]"#).unwrap();
        let other_before = effective_config(&repo, &other).unwrap();
        let applied = apply(&mut repo, &mine, &point_at("app")).unwrap();
        assert_eq!(applied.files, vec![PathBuf::from("locals.tf")], "{applied:?}");
        assert_eq!(
            repo.text(Path::new("locals.tf")).unwrap(),
            LOCALS.replace("\"my_alias\"    = \"signing\"", "\"my_alias\"    = \"app\"")
        );
        assert_eq!(repo.text(Path::new("kms.tf")).unwrap(), KMS, "the reference stays");
        assert_eq!(effective_config(&repo, &other).unwrap(), other_before);
    }

    #[test]
    fn another_fleet_or_attribute_is_not_a_pick_of_this_one() {
        let mut repo = repo();
        let mine = Address::parse(r#"aws_kms_alias.this["my_alias"]"#).unwrap();
        let elsewhere = Op::Set {
            path: AttrPath::parse("target_key_id").unwrap(),
            value: AttrValue::Reference("aws_kms_key.other[\"app\"].key_id".into()),
        };
        // Not the map entry (the key "app" picks from this fleet, not that one): refused, nothing written.
        assert!(apply(&mut repo, &mine, &elsewhere).is_err());
        assert_eq!(repo.text(Path::new("locals.tf")).unwrap(), LOCALS);
        assert_eq!(repo.text(Path::new("kms.tf")).unwrap(), KMS);
    }
}
