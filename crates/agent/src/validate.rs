//! Does a patch say what the cloud now says, and nothing else? The check behind the agent's
//! `validate` and `finish` tools, and behind every use of a learned recipe.

use std::path::PathBuf;

use serde::Serialize;

use driftback_events::ChangeSet;
use driftback_recipes::Plan;
use driftback_terraform::eval::{effective_config, value_at_path};
use driftback_terraform::patch::{values_equal, without_lifecycle};
use driftback_terraform::{Address, AttrPath, AttrValue, BlockSpec, Op, Repo, Schema, Seg, State};

use crate::proof::{
    Evidence, Footprint, Proof, import_id_from_calls, prove_reference, prove_removal, prove_value, schema_for,
};

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
    /// Every value the plan writes, with the call member it comes from.
    pub proofs: Vec<Proof>,
}

/// Check `after` (the configuration with `plan` applied to `before`) against the observed change:
/// every changed file parses and holds no redacted value; every value the plan sets is the
/// effective value afterwards and is proven (the member of a call that sets that attribute,
/// converted by a known rule, of the type the provider schema gives it); only resources the calls
/// identify change, only resources a deleting call identifies are removed, only types a creating
/// call creates are added (with the call's identifier as import id); removed paths and resources
/// are gone and created ones are there; every other managed resource's effective configuration is
/// unchanged.
pub fn validate(before: &Repo, after: &Repo, state: &State, change_set: &ChangeSet, plan: &Plan) -> Validation {
    let mut problems = Vec::new();
    let mut proofs = Vec::new();
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
    let Some(schema) = schema_for(after) else {
        problems.push("no provider schema is available, so no value can be type-checked".into());
        return Validation { ok: false, problems, diff: diff_summary(before, after), proofs };
    };
    let footprint = Footprint::of(change_set, state, Some(schema));
    let evidence = Evidence::new(change_set, state);
    for change in &plan.changes {
        let address = &change.address;
        let creates = change.ops.iter().any(|op| matches!(op, Op::CreateResource { .. }));
        if creates {
            if !footprint.creates(&address.rtype) {
                problems.push(format!("{address}: the calls create no {}; {}", address.rtype, footprint.describe()));
            }
        } else if !footprint.identifies(address) {
            problems.push(format!("{address} is not a resource the calls identify; {}", footprint.describe()));
        }
        let config = effective_config(after, address);
        for op in &change.ops {
            match op {
                Op::Set { path, value } => {
                    let Some(config) = &config else {
                        problems.push(format!("{address} is not in the configuration"));
                        continue;
                    };
                    let got = value_at_path(config, path);
                    let proven = match value {
                        AttrValue::Literal(want) => {
                            if !got.as_ref().is_some_and(|g| values_equal(g, want)) {
                                let got = got.map(|g| g.to_string()).unwrap_or_else(|| "not set".into());
                                problems.push(format!("{address}.{path} is {got} after the patch, not {want}"));
                            }
                            prove_value(&evidence, schema, address, path, want)
                        }
                        AttrValue::Reference(reference) => {
                            if got.is_none() {
                                problems.push(format!("{address}.{path} is not set after the patch"));
                            }
                            prove_reference(&evidence, schema, state, address, path, reference)
                        }
                    };
                    match proven {
                        Ok(proof) => proofs.push(proof),
                        Err(why) => problems.push(why.to_string()),
                    }
                }
                Op::Remove { path } => {
                    if let Some(got) = config.as_ref().and_then(|c| value_at_path(c, path)) {
                        problems.push(format!("{address}.{path} is still {got} after the patch"));
                    }
                    match prove_removal(&evidence, schema, address, path) {
                        Ok(proof) => proofs.push(proof),
                        Err(why) => problems.push(why.to_string()),
                    }
                }
                Op::RemoveResource => {
                    if after.find_resource(address).is_some() {
                        problems.push(format!("{address} is still in the configuration"));
                    }
                    if !footprint.deletes(address) {
                        problems.push(format!("{address}: no call deletes it, so it must stay"));
                    }
                }
                Op::CreateResource { spec, import_id } => {
                    if after.find_resource(address).is_none() {
                        problems.push(format!("{address} was not added"));
                    }
                    if !import_id_from_calls(change_set, schema, &address.rtype, import_id) {
                        problems.push(format!(
                            "{address}: the import id {import_id:?} is not the identifier of a call that creates something"
                        ));
                    }
                    prove_spec(
                        &evidence,
                        schema,
                        state,
                        address,
                        &AttrPath(Vec::new()),
                        spec,
                        &mut proofs,
                        &mut problems,
                    );
                }
                Op::AddBlock { .. } | Op::RemoveBlocks { .. } | Op::IgnoreChanges { .. } => {
                    problems.push(format!("{address}: this kind of edit cannot be proven against the calls"));
                }
            }
        }
    }
    for instance in &state.instances {
        if instance.address.data || footprint.identifies_instance(&instance.address) {
            continue;
        }
        let was = without_lifecycle(effective_config(before, &instance.address));
        if was.is_none() {
            continue;
        }
        if was != without_lifecycle(effective_config(after, &instance.address)) {
            problems.push(format!(
                "{} changed too, but the calls do not identify it ({})",
                instance.address,
                footprint.describe()
            ));
        }
    }
    // Resources the configuration declares that the state does not know yet: unchanged too, unless
    // the plan adds them.
    for address in declared_resources(before) {
        if state.instances.iter().any(|i| i.address.without_key() == address)
            || plan.changes.iter().any(|c| c.address.without_key() == address)
        {
            continue;
        }
        if without_lifecycle(effective_config(before, &address)) != without_lifecycle(effective_config(after, &address))
        {
            problems
                .push(format!("{address} changed too, but the calls do not identify it ({})", footprint.describe()));
        }
    }
    Validation { ok: problems.is_empty(), problems, diff: diff_summary(before, after), proofs }
}

/// Every `resource` block of every module, by address (without instance keys).
fn declared_resources(repo: &Repo) -> Vec<Address> {
    let mut out = Vec::new();
    for (module, dir) in repo.modules() {
        let prefix = if module.is_empty() { String::new() } else { format!("{module}.") };
        for (_, body) in repo.parsed_tf_in(dir) {
            for block in body.get_blocks("resource") {
                let (Some(rtype), Some(name)) = (block.labels.first(), block.labels.get(1)) else { continue };
                if let Ok(address) = Address::parse(&format!("{prefix}{}.{}", rtype.as_str(), name.as_str())) {
                    if !out.contains(&address) {
                        out.push(address);
                    }
                }
            }
        }
    }
    out
}

/// Every attribute of a new resource's block (nested blocks too), proven like an edit.
#[allow(clippy::too_many_arguments)]
fn prove_spec(
    evidence: &Evidence<'_>,
    schema: &Schema,
    state: &State,
    address: &Address,
    at: &AttrPath,
    spec: &BlockSpec,
    proofs: &mut Vec<Proof>,
    problems: &mut Vec<String>,
) {
    for (name, value) in &spec.attrs {
        let mut path = at.clone();
        path.0.push(Seg::Name(name.clone()));
        let proven = match value {
            AttrValue::Literal(v) => prove_value(evidence, schema, address, &path, v),
            AttrValue::Reference(r) => prove_reference(evidence, schema, state, address, &path, r),
        };
        match proven {
            Ok(proof) => proofs.push(proof),
            Err(why) => problems.push(why.to_string()),
        }
    }
    for (name, block) in &spec.blocks {
        let mut path = at.clone();
        path.0.push(Seg::Name(name.clone()));
        prove_spec(evidence, schema, state, address, &path, block, proofs, problems);
    }
}

fn changed_files(before: &Repo, after: &Repo) -> Vec<PathBuf> {
    after.files().filter(|(p, t)| before.text(p) != Some(*t)).map(|(p, _)| p.clone()).collect()
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
