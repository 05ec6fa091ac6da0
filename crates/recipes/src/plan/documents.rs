//! JSON documents and references: statements added or removed by label, members of a document
//! written as code, ids written as references to a fleet's instances.

use serde_json::{Value, json};

use driftback_events::ApiEvent;
use driftback_terraform::eval::{effective_config, value_at_path};
use driftback_terraform::{Address, AttrPath, AttrValue, Op};

use super::convert::{is_empty_json, with_index, with_key};
use super::model::PlanError;
use super::planner::Planner;
use crate::catalog::Recipe;
use crate::extract::{as_list, event_value};

impl Planner<'_> {
    /// The policy document after a statement is added or removed by label: the state's document
    /// (the target's, or for a target not in the state yet, `current`'s), or an empty one.
    pub(super) fn statement_document(
        &self,
        recipe: &Recipe,
        rule: &crate::catalog::StatementRule,
        event: &ApiEvent,
        address: &Address,
    ) -> Result<Value, PlanError> {
        let err = |message: String| PlanError::Recipe { recipe: recipe.id.clone(), message };
        let id = recipe.key.as_deref().and_then(|k| event_value(event, k)).and_then(|v| v.as_str().map(str::to_string));
        let identity = id.as_deref().and_then(driftback_terraform::state::Identity::parse);
        let text = match self.state.get(address) {
            Some(instance) => instance.attributes.get(&rule.path).cloned(),
            None => rule.current.as_ref().and_then(|current| {
                let found = self.state.find(id.as_deref()?, &[current.rtype.as_str()], &[]);
                found.first().and_then(|i| i.attributes.get(&current.attr).cloned())
            }),
        };
        let mut document = match text {
            Some(Value::String(t)) if !t.trim().is_empty() => serde_json::from_str::<Value>(&t)
                .map_err(|e| err(format!("the state's `{}` is not a JSON document: {e}", rule.path)))?,
            _ => json!({"Version": "2012-10-17", "Statement": []}),
        };
        let Some(Value::String(sid)) = event_value(event, &rule.sid) else {
            return Err(err(format!("the call names no `{}` for the statement", rule.sid)));
        };
        let statements = match document.get_mut("Statement") {
            Some(Value::Array(list)) => list,
            Some(one) => {
                *one = Value::Array(vec![one.take()]);
                one.as_array_mut().expect("just made a list")
            }
            None => {
                document["Statement"] = json!([]);
                document["Statement"].as_array_mut().expect("just made a list")
            }
        };
        let same = |s: &Value| s.get("Sid").and_then(Value::as_str) == Some(sid.as_str());
        if rule.remove {
            statements.retain(|s| !same(s));
            return Ok(document);
        }
        if statements.iter().any(same) {
            return Err(err(format!("the policy already has a statement labelled {sid:?}")));
        }
        let Some(identity) = identity else {
            return Err(err("the call names no resource whose ARN the statement could name".into()));
        };
        let arn = identity.arn();
        let partition = arn.split(':').nth(1).unwrap_or("aws").to_string();
        let one_or_list = |mut items: Vec<Value>| if items.len() == 1 { items.remove(0) } else { Value::Array(items) };
        let list = |path: &Option<String>| path.as_deref().and_then(|p| event_value(event, p)).map(|v| as_list(&v));
        let (Some(accounts), Some(actions)) = (list(&rule.accounts), list(&rule.actions)) else {
            return Err(err("the call names no accounts or no actions for the statement".into()));
        };
        let principals: Vec<Value> = accounts
            .iter()
            .filter_map(Value::as_str)
            .map(|a| Value::String(format!("arn:{partition}:iam::{a}:root")))
            .collect();
        let actions: Vec<Value> = actions
            .iter()
            .filter_map(Value::as_str)
            .map(|a| Value::String(format!("{}{a}", rule.action_prefix)))
            .collect();
        statements.push(json!({
            "Sid": sid,
            "Effect": "Allow",
            "Principal": {"AWS": one_or_list(principals)},
            "Action": one_or_list(actions),
            "Resource": arn,
        }));
        Ok(document)
    }

    /// APIs that take a whole configuration (`PutMetricAlarm`) re-send values that did not change.
    /// A value the configuration leaves unset and the state already holds is one of those: the
    /// provider's default, not drift.
    /// For a JSON document the code builds with `jsonencode({...})` (from literals, or from other
    /// resources: its effective value is then symbolic): one change per member that differs between
    /// the state's document and the new one, so the code keeps its shape and its references. `None` when the code
    /// writes the document as plain text, or either document does not parse.
    pub(super) fn json_members(
        &self,
        address: &Address,
        config: Option<&Value>,
        path: &AttrPath,
        value: &Value,
    ) -> Option<Vec<Op>> {
        let code = config.and_then(|c| value_at_path(c, path))?;
        let built_in_code = code.as_str().is_some_and(|s| s.starts_with("${jsonencode("))
            || self
                .written_as(address, path)
                .is_some_and(|source| source.starts_with("jsonencode(") || self.built_in_local(address, &source));
        if !built_in_code {
            return None;
        }
        let parse = |v: &Value| v.as_str().and_then(|s| serde_json::from_str::<Value>(s).ok());
        let new = parse(value)?;
        let instance = self.state.get(address)?;
        let old = parse(&value_at_path(&Value::Object(instance.attributes.clone()), path)?)?;
        let mut ops = Vec::new();
        json_diff(path, &old, &new, &mut ops);
        Some(ops)
    }

    /// Whether an argument written as `source` reads a document the code builds with
    /// `jsonencode(...)` in a local (`local.NAME` whose expression is `jsonencode(...)`). One entry
    /// of a local map of them (`local.NAME[each.key]`) is not read so yet: the patcher cannot follow
    /// a map entry into its `jsonencode`.
    fn built_in_local(&self, address: &Address, source: &str) -> bool {
        let Some(name) = source.strip_prefix("local.") else { return false };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return false;
        }
        let repo = self.repo;
        let Some(location) = repo.find_resource(address) else { return false };
        let dir = location.file.parent().unwrap_or(std::path::Path::new(""));
        let Some(file) = repo.find_local(dir, name) else { return false };
        let (Some(text), Some(body)) = (repo.text(file), repo.body(file)) else { return false };
        body.blocks().filter(|b| b.ident.as_str() == "locals").find_map(|b| b.body.get_attribute(name)).is_some_and(
            |attr| driftback_terraform::edit::expr_text(text, &attr.value).trim().starts_with("jsonencode("),
        )
    }

    /// A JSON document set whole (a topic's `Policy` through `SetTopicAttributes`, a domain's
    /// `AccessPolicies`), whatever recipe rule read it: where the code builds it with
    /// `jsonencode({...})`, it changes member by member, so the code keeps its form and references.
    pub(super) fn documents_in_code_form(&self, address: &Address, ops: Vec<Op>) -> Vec<Op> {
        let is_document =
            |text: &str| matches!(serde_json::from_str::<Value>(text), Ok(Value::Object(_) | Value::Array(_)));
        if !ops.iter().any(|op| matches!(op, Op::Set { path, value: AttrValue::Literal(Value::String(text)) } if path.0.len() == 1 && is_document(text))) {
            return ops;
        }
        let config = effective_config(self.repo, address);
        let mut out = Vec::new();
        for op in ops {
            match &op {
                Op::Set { path, value: AttrValue::Literal(value @ Value::String(text)) }
                    if path.0.len() == 1 && is_document(text) =>
                {
                    match self.json_members(address, config.as_ref(), path, value) {
                        Some(members) => out.extend(members),
                        None => out.push(op),
                    }
                }
                _ => out.push(op),
            }
        }
        out
    }

    /// An argument the code sets as an attribute of one instance of a fleet picked by a computed
    /// key (`target_key_id = aws_kms_key.this[each.value].key_id`), set by the call to what another
    /// instance of that fleet has: the new value is a reference to that instance
    /// (`aws_kms_key.this["app"].key_id`), so the patch changes the key that picks it at its origin
    /// (a map entry) instead of writing an id over the reference.
    pub(super) fn ids_as_fleet_references(&self, address: &Address, ops: Vec<Op>) -> Vec<Op> {
        ops.into_iter()
            .map(|op| {
                let Op::Set { path, value: AttrValue::Literal(Value::String(id)) } = &op else { return op };
                let Some((rtype, name, attr)) = self.written_as(address, path).as_deref().and_then(picked_from_fleet)
                else {
                    return op;
                };
                let found: Vec<&driftback_terraform::StateInstance> = self
                    .state
                    .find(id, &[rtype.as_str()], &[attr.as_str(), "arn", "id"])
                    .into_iter()
                    .filter(|i| i.address.module == address.module && i.address.name == name && i.address.key.is_some())
                    .collect();
                match found.as_slice() {
                    [one] => Op::Set {
                        path: path.clone(),
                        value: AttrValue::Reference(format!(
                            "{}.{attr}",
                            Address { module: Vec::new(), ..one.address.clone() }
                        )),
                    },
                    _ => op,
                }
            })
            .collect()
    }
}

/// The changes that turn JSON document `old` into `new`, member by member (lists as a whole).
fn json_diff(path: &AttrPath, old: &Value, new: &Value, ops: &mut Vec<Op>) {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            for (key, nv) in n {
                match o.get(key) {
                    Some(ov) => json_diff(&with_key(path, key), ov, nv, ops),
                    // A member sent empty that the document leaves out (the console's `"mountPoints": []`)
                    // changes nothing.
                    None if is_empty_json(nv) => {}
                    None => ops.push(Op::Set { path: with_key(path, key), value: AttrValue::Literal(nv.clone()) }),
                }
            }
            for key in o.keys().filter(|k| !n.contains_key(*k)) {
                if !is_empty_json(&o[key]) {
                    ops.push(Op::Remove { path: with_key(path, key) });
                }
            }
        }
        // Lists of the same length change item by item (one container of several).
        (Value::Array(o), Value::Array(n)) if o.len() == n.len() => {
            for (i, (ov, nv)) in o.iter().zip(n).enumerate() {
                json_diff(&with_index(path, i), ov, nv, ops);
            }
        }
        // A list that gained or lost items (a statement, an action): item by item where it can.
        (Value::Array(o), Value::Array(n)) if list_edits(path, o, n, ops) => {}
        _ if driftback_terraform::patch::values_equal(old, new) => {}
        _ => ops.push(Op::Set { path: path.clone(), value: AttrValue::Literal(new.clone()) }),
    }
}

/// The edits that turn list `old` into `new` while the items both keep stay as the code writes
/// them: items are matched as a longest common subsequence; between two kept items, an item of each
/// side is one item changed in place, the old side's extra items are removed, and the new side's
/// extra items are added. Added only at the end, where the code can append them; `false` (and no
/// ops) when a new item goes anywhere else.
fn list_edits(path: &AttrPath, old: &[Value], new: &[Value], ops: &mut Vec<Op>) -> bool {
    use driftback_terraform::patch::values_equal;
    let (m, k) = (old.len(), new.len());
    let mut common = vec![vec![0usize; k + 1]; m + 1];
    for i in (0..m).rev() {
        for j in (0..k).rev() {
            common[i][j] = if values_equal(&old[i], &new[j]) {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut changed, mut removed, mut added) = (Vec::new(), Vec::new(), Vec::new());
    let (mut gap_old, mut gap_new) = (Vec::new(), Vec::new());
    let mut close_gap = |gap_old: &mut Vec<usize>, gap_new: &mut Vec<usize>| {
        let paired = gap_old.len().min(gap_new.len());
        changed.extend(gap_old.iter().copied().zip(gap_new.iter().copied()).take(paired));
        removed.extend(gap_old.drain(..).skip(paired));
        added.extend(gap_new.drain(..).skip(paired));
    };
    let (mut i, mut j) = (0, 0);
    while i < m && j < k {
        if values_equal(&old[i], &new[j]) {
            close_gap(&mut gap_old, &mut gap_new);
            (i, j) = (i + 1, j + 1);
        } else if common[i + 1][j] >= common[i][j + 1] {
            gap_old.push(i);
            i += 1;
        } else {
            gap_new.push(j);
            j += 1;
        }
    }
    gap_old.extend(i..m);
    gap_new.extend(j..k);
    close_gap(&mut gap_old, &mut gap_new);
    // New items only at the end: after the edits in place and the removals, the list is `new`
    // without them, so each goes at its own index.
    if added.iter().enumerate().any(|(n, &at)| at != k - added.len() + n) {
        return false;
    }
    for (o, n) in changed {
        json_diff(&with_index(path, o), &old[o], &new[n], ops);
    }
    for o in removed.into_iter().rev() {
        ops.push(Op::Remove { path: with_index(path, o) });
    }
    for n in added {
        ops.push(Op::Set { path: with_index(path, n), value: AttrValue::Literal(new[n].clone()) });
    }
    true
}

/// `TYPE.NAME[INDEX].ATTR` with an index computed from something (`each.value`, `var.x`), not a
/// literal: (TYPE, NAME, ATTR).
fn picked_from_fleet(source: &str) -> Option<(String, String, String)> {
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let (head, rest) = source.split_once('[')?;
    let (index, attr) = rest.rsplit_once("].")?;
    let (rtype, name) = head.split_once('.')?;
    let literal = index.starts_with('"') || index.parse::<i64>().is_ok();
    let computed = !literal && !index.is_empty() && !index.contains(['[', ']']);
    (word(rtype) && word(name) && word(attr) && computed && rtype.contains('_'))
        .then(|| (rtype.to_string(), name.to_string(), attr.to_string()))
}

#[cfg(test)]
mod document_tests {
    use serde_json::json;

    use super::*;

    fn diff(old: Value, new: Value) -> Vec<String> {
        let mut ops = Vec::new();
        json_diff(&AttrPath::parse("policy").unwrap(), &old, &new, &mut ops);
        ops.iter()
            .map(|op| match op {
                Op::Set { path, value: AttrValue::Literal(v) } => format!("set {path} = {v}"),
                Op::Remove { path } => format!("remove {path}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_list_that_loses_an_item_keeps_the_others_where_the_code_writes_them() {
        let ops = diff(json!({"Action": ["a", "b", "c"]}), json!({"Action": ["a", "c"]}));
        assert_eq!(ops, ["remove policy[\"Action\"][1]"]);
    }

    #[test]
    fn a_new_item_at_the_end_is_added_and_a_changed_one_is_changed_in_place() {
        let old = json!({"Statement": [{"Sid": "A", "Action": "x"}, {"Sid": "B", "Action": "y"}]});
        let new = json!({"Statement": [{"Sid": "A", "Action": "x"}, {"Sid": "B", "Action": "z"}, {"Sid": "C"}]});
        assert_eq!(
            diff(old, new),
            ["set policy[\"Statement\"][1][\"Action\"] = \"z\"", "set policy[\"Statement\"][2] = {\"Sid\":\"C\"}"]
        );
    }

    #[test]
    fn removals_go_from_the_end_so_each_index_is_still_the_item_meant() {
        let ops = diff(json!(["a", "b", "c", "d"]), json!(["b", "d"]));
        assert_eq!(ops, ["remove policy[2]", "remove policy[0]"]);
    }

    #[test]
    fn a_new_item_in_the_middle_rewrites_the_list_whole() {
        let ops = diff(json!(["a", "c"]), json!(["a", "b", "c"]));
        assert_eq!(ops, ["set policy = [\"a\",\"b\",\"c\"]"]);
    }
}
