//! Applying a decided plan to the repository held in memory: the changed files (each must
//! re-parse), the resources it adopts, and what the state learns from them.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};

use driftback_recipes::Plan;
use driftback_terraform::schema::Schema;
use driftback_terraform::{Address, AttrValue, Op, Repo, State, StateInstance};

use super::outcome::{Outcome, Status};

/// The result of applying a plan: the files it changed (path and new text), the patch engine's
/// notes, and how many operations were applied.
#[derive(Debug, Default)]
pub struct Patched {
    pub files: Vec<(PathBuf, String)>,
    pub notes: Vec<String>,
    pub edits: usize,
}

/// Apply every operation of `plan` to a copy of `repo` (which is not modified). `Err` names the
/// operation that could not be applied or the file that would not parse after the edit.
pub fn apply(repo: &Repo, plan: &Plan) -> Result<Patched, String> {
    let mut work = repo.clone();
    let mut notes = Vec::new();
    let mut touched: Vec<PathBuf> = Vec::new();
    let mut edits = 0;
    // What the same calls change elsewhere: the plan's other resources, and those it only notes.
    // An edit at a shared origin may change them exactly that way.
    let alongside: Vec<(Address, Op)> = plan
        .changes
        .iter()
        .chain(&plan.alongside)
        .flat_map(|c| c.ops.iter().map(|op| (c.address.clone(), op.clone())))
        .collect();
    let mut apply_op = |work: &mut Repo, address: &Address, op: &Op| -> Result<(), String> {
        let applied =
            driftback_terraform::patch::apply_alongside(work, address, op, &alongside).map_err(|e| e.to_string())?;
        notes.extend(applied.notes);
        for file in applied.files {
            if !touched.contains(&file) {
                touched.push(file);
            }
        }
        edits += 1;
        Ok(())
    };
    for change in &plan.changes {
        // The operations that create the resource first, so that the rest see its blocks.
        let (creating, rest): (Vec<Op>, Vec<Op>) =
            change.ops.iter().cloned().partition(|op| matches!(op, Op::CreateResource { .. }));
        for op in &creating {
            apply_op(&mut work, &change.address, op)?;
        }
        for op in &driftback_terraform::patch::grouped_for_dynamic_blocks(&work, &change.address, &rest) {
            apply_op(&mut work, &change.address, op)?;
        }
    }
    let files: Vec<(PathBuf, String)> = touched
        .into_iter()
        .filter(|f| repo.text(f) != work.text(f))
        .map(|f| {
            let text = work.text(&f).unwrap_or_default().to_string();
            (f, text)
        })
        .collect();
    for (file, text) in &files {
        driftback_terraform::edit::parse(text)
            .map_err(|e| format!("{} would not parse after the edit: {e}", file.display()))?;
    }
    Ok(Patched { files, notes, edits })
}

/// The problems of the files a patch writes on `repo`, judged before anything is committed
/// against the AWS provider's schema and Terraform's rules (`terraform::gate`); none when they
/// may be written.
pub fn gate(repo: &Repo, files: &[(PathBuf, String)], schema: &Schema) -> Vec<String> {
    let changed: Vec<PathBuf> = files.iter().map(|(file, _)| file.clone()).collect();
    let after = with_files(repo, files);
    driftback_terraform::gate::check(schema, repo, &after, &changed)
}

/// The files `plan` writes on `repo` when they may be committed as a reconciled patch may: applied,
/// no value CloudTrail redacted, passing [`gate`]. `Err` says why not (fail closed: an edit whose
/// effect cannot be evaluated is never written, not even into a draft). `Ok` and empty: the code
/// already says it.
pub fn writable(repo: &Repo, plan: &Plan, schema: &Schema) -> Result<Vec<(PathBuf, String)>, String> {
    let patched = apply(repo, plan)?;
    if patched.files.iter().any(|(_, text)| text.contains(super::outcome::REDACTED)) {
        return Err("it would write a value CloudTrail redacted".into());
    }
    let problems = gate(repo, &patched.files, schema);
    if !problems.is_empty() {
        return Err(format!(
            "it fails the checks made before a commit (AWS provider {} schema, Terraform's rules): {}",
            schema.provider_version(),
            problems.join("; ")
        ));
    }
    Ok(patched.files)
}

/// `repo` with `files` written into it.
pub fn with_files(repo: &Repo, files: &[(PathBuf, String)]) -> Repo {
    let mut after = repo.clone();
    for (file, text) in files {
        after.set_file(file, text.clone());
    }
    after
}

/// The resources `plan` adopts (a resource block with an import), each with the attributes the
/// state will know it by.
pub fn created_resources(plan: &Plan) -> Vec<(Address, Map<String, Value>)> {
    let mut out = Vec::new();
    for change in &plan.changes {
        for op in &change.ops {
            if let Op::CreateResource { spec, import_id } = op {
                let mut attributes = Map::new();
                attributes.insert("id".into(), Value::String(import_id.clone()));
                for (k, v) in &spec.attrs {
                    if let AttrValue::Literal(v) = v {
                        attributes.insert(k.clone(), v.clone());
                    }
                }
                if import_id.starts_with("arn:") {
                    attributes.insert("arn".into(), Value::String(import_id.clone()));
                }
                out.push((change.address.clone(), attributes));
            }
        }
    }
    out
}

/// After a reconciled change set, the resources it adopted become known to the state, so later
/// change sets on them (tags added a few minutes after the creation) find them. The state is
/// shared (a workspace's clones hold it): a new one replaces it, the old one is not copied first.
/// Returns whether the state changed.
pub fn remember_created(state: &mut Arc<State>, outcome: &Outcome) -> bool {
    if outcome.status != Status::Reconciled || outcome.created.is_empty() {
        return false;
    }
    let mut instances = state.instances.clone();
    for (address, attributes) in &outcome.created {
        if state.get(address).is_none() {
            instances.push(StateInstance { address: address.clone(), attributes: attributes.clone() });
        }
    }
    *state = Arc::new(State::from_instances(instances));
    true
}
