//! The unit of a decision: one field of one resource (or a resource created or deleted as a
//! whole), read from a plan's operations.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use driftback_recipes::Plan;
use driftback_terraform::{Address, AttrPath, AttrValue, Op, Seg};

/// How a field or resource changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A resource created out of band, adopted with an import.
    Create,
    /// An attribute, map entry or nested block of an existing resource.
    Update,
    /// A resource deleted out of band.
    Delete,
}

impl ChangeKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ChangeKind::Create => "create",
            ChangeKind::Update => "update",
            ChangeKind::Delete => "delete",
        }
    }

    pub fn parse(text: &str) -> Option<ChangeKind> {
        [ChangeKind::Create, ChangeKind::Update, ChangeKind::Delete].into_iter().find(|k| k.as_str() == text)
    }
}

/// One field a plan changes.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldChange {
    pub address: Address,
    /// Dotted path (`tags.Team`, `ingress[1].from_port`); `None` for create and delete.
    pub path: Option<String>,
    pub change: ChangeKind,
    /// The new value when it is a literal; `None` for removals, references and blocks.
    pub value: Option<Value>,
    /// Index of the resource change and the operation in the plan, to rewrite it.
    pub(crate) op: (usize, usize),
}

/// A path as the policy file and the corpus write it: names and map keys joined by dots, list
/// items as `[i]`.
pub fn path_text(path: &AttrPath) -> String {
    let mut out = String::new();
    for seg in &path.0 {
        match seg {
            Seg::Name(n) | Seg::Key(n) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(n);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The fields a plan changes, in plan order.
pub fn field_changes(plan: &Plan) -> Vec<FieldChange> {
    let mut out = Vec::new();
    for (ci, change) in plan.changes.iter().enumerate() {
        for (oi, op) in change.ops.iter().enumerate() {
            let (path, kind, value) = match op {
                Op::Set { path, value } => (
                    Some(path_text(path)),
                    ChangeKind::Update,
                    match value {
                        AttrValue::Literal(v) => Some(v.clone()),
                        AttrValue::Reference(_) => None,
                    },
                ),
                Op::Remove { path } => (Some(path_text(path)), ChangeKind::Update, None),
                Op::AddBlock { block_type, .. } | Op::RemoveBlocks { block_type, .. } => {
                    (Some(block_type.clone()), ChangeKind::Update, None)
                }
                Op::IgnoreChanges { attr } => (Some(attr.clone()), ChangeKind::Update, None),
                Op::RemoveResource => (None, ChangeKind::Delete, None),
                Op::CreateResource { .. } => (None, ChangeKind::Create, None),
            };
            out.push(FieldChange { address: change.address.clone(), path, change: kind, value, op: (ci, oi) });
        }
    }
    out
}

/// The attribute `lifecycle { ignore_changes }` names for a path: its first name.
pub(crate) fn ignore_changes_attr(path: &str) -> &str {
    path.split(['.', '[']).next().unwrap_or(path)
}

/// `ingress[1].from_port` -> `ingress[1].from_port`, `ingress[1]`, `ingress`: a rule on an
/// attribute also covers what is nested under it.
pub(crate) fn path_and_ancestors(path: &str) -> Vec<&str> {
    let mut out = vec![path];
    let mut end = path.len();
    while let Some(i) = path[..end].rfind(['.', '[']) {
        end = i;
        if end == 0 {
            break;
        }
        out.push(&path[..end]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors() {
        assert_eq!(path_and_ancestors("ingress[1].from_port"), ["ingress[1].from_port", "ingress[1]", "ingress"]);
        assert_eq!(path_and_ancestors("tags.Team"), ["tags.Team", "tags"]);
        assert_eq!(path_and_ancestors("instance_type"), ["instance_type"]);
        assert_eq!(ignore_changes_attr("tags.Team"), "tags");
    }

    #[test]
    fn paths_print_as_the_policy_writes_them() {
        let p = AttrPath(vec![Seg::Name("tags".into()), Seg::Key("Cost Center".into())]);
        assert_eq!(path_text(&p), "tags.Cost Center");
        let p = AttrPath::parse("ingress[1].cidr_blocks[0]").unwrap();
        assert_eq!(path_text(&p), "ingress[1].cidr_blocks[0]");
    }
}
