//! Does a patch say what the cloud now says, and nothing else? The check behind the agent's
//! `validate` and `finish` tools, and behind every use of a learned recipe.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use driftback_events::ChangeSet;
use driftback_recipes::Plan;
use driftback_terraform::eval::{effective_config, value_at_path};
use driftback_terraform::patch::values_equal;
use driftback_terraform::{AttrValue, Op, Repo, Seg, State};

const REDACTED: &str = "HIDDEN_DUE_TO_SECURITY_REASONS";
const MAX_DIFF: usize = 3_000;

/// The verdict on a patch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Validation {
    pub ok: bool,
    /// What does not hold, one sentence each.
    pub problems: Vec<String>,
    /// The change, as short per-file hunks.
    pub diff: String,
}

/// Check `after` (the configuration with `plan` applied to `before`) against the observed change:
/// every changed file parses and holds no redacted value; every value the plan sets is the
/// effective value afterwards and appears in the recorded calls; removed paths and resources are
/// gone and created ones are there; every other managed resource's effective configuration is
/// unchanged.
pub fn validate(before: &Repo, after: &Repo, state: &State, change_set: &ChangeSet, plan: &Plan) -> Validation {
    let mut problems = Vec::new();
    let changed = changed_files(before, after);
    for d in &after.diagnostics() {
        if changed.contains(&d.file) {
            problems.push(format!("{} no longer parses: {}", d.file.display(), d.message));
        }
    }
    for file in &changed {
        if after.text(file).is_some_and(|t| t.contains(REDACTED)) {
            problems.push(format!("{} would contain a value CloudTrail redacted", file.display()));
        }
    }
    if plan.is_empty() {
        problems.push("nothing was changed".into());
    }
    for change in &plan.changes {
        let address = &change.address;
        let config = effective_config(after, address);
        for op in &change.ops {
            match op {
                Op::Set { path, value } => {
                    let Some(config) = &config else {
                        problems.push(format!("{address} is not in the configuration"));
                        continue;
                    };
                    let got = value_at_path(config, path);
                    match value {
                        AttrValue::Literal(want) => {
                            if !got.as_ref().is_some_and(|g| values_equal(g, want)) {
                                let got = got.map(|g| g.to_string()).unwrap_or_else(|| "not set".into());
                                problems.push(format!("{address}.{path} is {got} after the patch, not {want}"));
                            }
                            if let Some(leaf) = untraceable(want, change_set) {
                                problems.push(format!(
                                    "{address}.{path}: the value {leaf} does not appear in the recorded calls"
                                ));
                            }
                            if let Some(Seg::Key(k)) = path.0.last() {
                                if untraceable(&Value::String(k.clone()), change_set).is_some() {
                                    problems.push(format!(
                                        "{address}.{path}: the key {k:?} does not appear in the recorded calls"
                                    ));
                                }
                            }
                        }
                        AttrValue::Reference(_) => {
                            if got.is_none() {
                                problems.push(format!("{address}.{path} is not set after the patch"));
                            }
                        }
                    }
                }
                Op::Remove { path } => {
                    if let Some(got) = config.as_ref().and_then(|c| value_at_path(c, path)) {
                        problems.push(format!("{address}.{path} is still {got} after the patch"));
                    }
                }
                Op::RemoveResource => {
                    if after.find_resource(address).is_some() {
                        problems.push(format!("{address} is still in the configuration"));
                    }
                }
                Op::CreateResource { import_id, .. } => {
                    if after.find_resource(address).is_none() {
                        problems.push(format!("{address} was not added"));
                    }
                    if untraceable(&Value::String(import_id.clone()), change_set).is_some() {
                        problems.push(format!(
                            "{address}: the import id {import_id:?} does not appear in the recorded calls"
                        ));
                    }
                }
                Op::AddBlock { .. } | Op::RemoveBlocks { .. } | Op::IgnoreChanges { .. } => {}
            }
        }
    }
    let touched: Vec<String> = plan.changes.iter().map(|c| c.address.without_key().to_string()).collect();
    for instance in &state.instances {
        if instance.address.data || touched.contains(&instance.address.without_key().to_string()) {
            continue;
        }
        let was = without_lifecycle(effective_config(before, &instance.address));
        if was.is_none() {
            continue;
        }
        if was != without_lifecycle(effective_config(after, &instance.address)) {
            problems.push(format!("{} changed too, but only the drifted resource should", instance.address));
        }
    }
    Validation { ok: problems.is_empty(), problems, diff: diff_summary(before, after) }
}

fn without_lifecycle(value: Option<Value>) -> Option<Value> {
    value.map(|mut v| {
        if let Some(map) = v.as_object_mut() {
            map.remove("lifecycle");
        }
        v
    })
}

fn changed_files(before: &Repo, after: &Repo) -> Vec<PathBuf> {
    after.files().filter(|(p, t)| before.text(p) != Some(*t)).map(|(p, _)| p.clone()).collect()
}

/// The first leaf of `value` that no request or response value of the change set spells (strings
/// exactly; numbers by value, also from numeric strings; booleans also from `Enabled`/`Disabled`).
fn untraceable(value: &Value, change_set: &ChangeSet) -> Option<String> {
    match value {
        Value::Array(items) => items.iter().find_map(|i| untraceable(i, change_set)),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            untraceable(&Value::String(k.clone()), change_set).or_else(|| untraceable(v, change_set))
        }),
        Value::Null => None,
        leaf => {
            let found = change_set
                .events
                .iter()
                .any(|e| any_leaf(&e.request, &|v| spells(v, leaf)) || any_leaf(&e.response, &|v| spells(v, leaf)));
            (!found).then(|| leaf.to_string())
        }
    }
}

fn any_leaf(value: &Value, test: &dyn Fn(&Value) -> bool) -> bool {
    match value {
        Value::Object(map) => map.values().any(|v| any_leaf(v, test)),
        Value::Array(items) => items.iter().any(|v| any_leaf(v, test)),
        leaf => test(leaf),
    }
}

/// Whether the recorded leaf `recorded` spells the configuration value `want`.
pub(crate) fn spells(recorded: &Value, want: &Value) -> bool {
    match (recorded, want) {
        (Value::String(r), Value::Bool(b)) => {
            let r = r.to_ascii_lowercase();
            r == b.to_string() || (*b && r == "enabled") || (!*b && (r == "disabled" || r == "suspended"))
        }
        (Value::Bool(r), Value::String(w)) => w == &r.to_string(),
        (r, w) => values_equal(r, w),
    }
}

/// Per changed file, the changed lines: common leading and trailing lines left out.
pub fn diff_summary(before: &Repo, after: &Repo) -> String {
    let mut out = String::new();
    let mut paths: Vec<&PathBuf> = before.files().chain(after.files()).map(|(p, _)| p).collect();
    paths.sort();
    paths.dedup();
    for path in paths {
        let old = before.text(path).unwrap_or("");
        let new = after.text(path).unwrap_or("");
        if old == new {
            continue;
        }
        let a: Vec<&str> = old.lines().collect();
        let b: Vec<&str> = new.lines().collect();
        let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let suffix = a[prefix..].iter().rev().zip(b[prefix..].iter().rev()).take_while(|(x, y)| x == y).count();
        out.push_str(&format!("--- {} (line {})\n", path.display(), prefix + 1));
        for line in &a[prefix..a.len() - suffix] {
            out.push_str(&format!("-{line}\n"));
        }
        for line in &b[prefix..b.len() - suffix] {
            out.push_str(&format!("+{line}\n"));
        }
    }
    crate::context::cut(&out, MAX_DIFF)
}
