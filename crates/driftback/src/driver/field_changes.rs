//! The field changes a plan makes, with the value each field had before: what pull request titles,
//! commit summaries and tables show (`instance_type t3.medium -> t3.large`).

use driftback_recipes::Plan;
use driftback_terraform::{Address, AttrPath, AttrValue, Op, Repo, Seg, State};
use serde_json::Value;

/// One field a plan changes on one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedFieldChange {
    /// Resource address (`aws_instance.web`).
    pub address: String,
    /// Attribute path (`instance_type`, `tags.Team`, `ingress`).
    pub path: String,
    /// What the code (its effective value) or, failing that, the Terraform state says now.
    pub before: Option<Value>,
    /// What the plan writes; `None` when it removes the field.
    pub after: Option<AttrValue>,
}

/// The field changes of `plan`, in plan order. Resource creations and removals are not field
/// changes: a pull request for them is titled by its API calls. A field set to the value it has
/// already is not a change.
pub fn planned_changes(plan: &Plan, state: &State, repo: &Repo) -> Vec<PlannedFieldChange> {
    let mut out = Vec::new();
    for change in &plan.changes {
        let address = change.address.to_string();
        let current = Current::new(state, repo, &change.address);
        for op in &change.ops {
            let planned = |path: String, before: Option<Value>, after: Option<AttrValue>| PlannedFieldChange {
                address: address.clone(),
                path,
                before,
                after,
            };
            match op {
                // A value re-sent as it already is changes nothing: it is not listed.
                Op::Set { path, value: AttrValue::Literal(v) }
                    if current.at(path).is_some_and(|before| driftback_terraform::patch::values_equal(&before, v)) => {}
                Op::Set { path, value } => out.push(planned(path.to_string(), current.at(path), Some(value.clone()))),
                Op::Remove { path } => out.push(planned(path.to_string(), current.at(path), None)),
                Op::AddBlock { block_type, spec } => {
                    let literal: serde_json::Map<String, Value> = spec.literal_attrs();
                    out.push(planned(block_type.clone(), None, Some(AttrValue::Literal(Value::Object(literal)))));
                }
                Op::RemoveBlocks { block_type, matching } => {
                    let matching: serde_json::Map<String, Value> = matching.iter().cloned().collect();
                    out.push(planned(block_type.clone(), Some(Value::Object(matching)), None));
                }
                Op::IgnoreChanges { attr } => out.push(planned(
                    "lifecycle.ignore_changes".into(),
                    None,
                    Some(AttrValue::Literal(Value::String(attr.clone()))),
                )),
                Op::RemoveResource | Op::CreateResource { .. } => {}
            }
        }
    }
    out
}

/// The resource's values before the change: the code's effective configuration first (what the
/// next `terraform apply` would set), the Terraform state second.
struct Current {
    config: Option<Value>,
    state: Option<Value>,
}

impl Current {
    fn new(state: &State, repo: &Repo, address: &Address) -> Current {
        Current {
            config: driftback_terraform::eval::effective_config(repo, address),
            state: state.get(address).map(|i| Value::Object(i.attributes.clone())),
        }
    }

    fn at(&self, path: &AttrPath) -> Option<Value> {
        [&self.config, &self.state]
            .into_iter()
            .flatten()
            .find_map(|root| value_at(root, path).filter(|v| !v.is_null()).cloned())
    }
}

/// The value at `path`; a one-element list (a nested block) is looked through by name.
fn value_at<'a>(root: &'a Value, path: &AttrPath) -> Option<&'a Value> {
    let mut current = root;
    for seg in &path.0 {
        current = match (seg, current) {
            (Seg::Name(name) | Seg::Key(name), Value::Object(map)) => map.get(name)?,
            (Seg::Name(name), Value::Array(items)) if items.len() == 1 => items[0].get(name)?,
            (Seg::Index(i), Value::Array(items)) => items.get(*i)?,
            _ => return None,
        };
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftback_recipes::ResourceChange;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn repo() -> Repo {
        let text = r#"
variable "size" {
  default = "t3.medium"
}
resource "aws_instance" "web" {
  instance_type = var.size
  tags = { Team = "web" }
  root_block_device {
    volume_size = 20
  }
}
"#;
        Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), text.to_string())]))
    }

    fn state() -> State {
        State::parse(
            r#"{"version":4,"resources":[{"mode":"managed","type":"aws_instance","name":"web","instances":[
                {"attributes":{"id":"i-1","instance_type":"t3.medium","monitoring":false,"tags":{"Team":"web"}}}]}]}"#,
            "test",
        )
        .unwrap()
    }

    fn set(path: &str, value: Value) -> Op {
        Op::Set { path: AttrPath::parse(path).unwrap(), value: AttrValue::Literal(value) }
    }

    #[test]
    fn before_values_come_from_the_code_then_the_state() {
        let address = Address::parse("aws_instance.web").unwrap();
        let plan = Plan {
            changes: vec![ResourceChange {
                address,
                ops: vec![
                    set("instance_type", "t3.large".into()),
                    set("tags.Owner", "alice".into()),
                    set("root_block_device.volume_size", 50.into()),
                    set("monitoring", true.into()),
                    // Re-sent as it is: not a change.
                    set("tags.Team", "web".into()),
                    Op::Remove { path: AttrPath::parse("tags.Team").unwrap() },
                    Op::CreateResource { spec: Default::default(), import_id: "x".into() },
                ],
                recipes: vec![],
                created: false,
            }],
            ..Plan::default()
        };
        let changes = planned_changes(&plan, &state(), &repo());
        let shown: Vec<(&str, Option<Value>, Option<AttrValue>)> =
            changes.iter().map(|c| (c.path.as_str(), c.before.clone(), c.after.clone())).collect();
        assert_eq!(
            shown,
            vec![
                // Through the variable's default.
                ("instance_type", Some("t3.medium".into()), Some(AttrValue::Literal("t3.large".into()))),
                ("tags.Owner", None, Some(AttrValue::Literal("alice".into()))),
                ("root_block_device.volume_size", Some(20.into()), Some(AttrValue::Literal(50.into()))),
                // Not in the code: the state's value.
                ("monitoring", Some(false.into()), Some(AttrValue::Literal(true.into()))),
                ("tags.Team", Some("web".into()), None),
            ]
        );
        assert!(changes.iter().all(|c| c.address == "aws_instance.web"));
    }
}
