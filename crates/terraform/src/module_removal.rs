//! A resource deleted inside a module instance, written at the call that makes the instance, never
//! in the module's code:
//!
//! - when it was the instance's only resource and the call makes instances from a `for_each`
//!   collection, the instance's entry leaves that collection where it comes from (a tfvars map);
//! - else, when the module switches the resource with its own input (`count = var.create ? 1 :
//!   0`, the community modules' idiom, fed by `create_db_instance` at the root), that input is
//!   turned off for this call alone, and the module's other resources stay.
//!
//! The switch is used only when nothing is left reading the gone instance in a way that fails: a
//! reference in the module must tolerate its absence (`try(aws_db_instance.this[0].arn, null)`,
//! a splat), a resource that reads it directly must go with it, and an output that exposes it
//! (then `null`) may be read by the calling modules only to pass it on as their own output. Each
//! edit is kept only when evaluation shows that the instance is gone and nothing else changed.

use std::path::{Path, PathBuf};

use hcl_edit::Span;
use hcl_edit::expr::{Expression, FuncCall, Traversal, TraversalOperator};
use hcl_edit::visit::Visit;
use serde_json::Value;

use crate::address::{Address, InstanceKey, ModuleStep};
use crate::edit::{self, BlockSel};
use crate::module_list::module_is_not_ours;
use crate::origin::{Change, Site, Tracer};
use crate::patch::{Applied, PatchError, Refusal, choose, write_candidate};
use crate::path::Seg;
use crate::render::AttrValue;
use crate::repo::{BlockLocation, Repo};

/// Remove `address`, a resource instance inside a module, at the call that makes its module
/// instance. `None` when the resource is not inside a module, its call is a `count` (another road
/// handles those), or, for a module whose code is this call's own, when neither edit applies (the
/// edit may then be made in the module's code).
pub(crate) fn remove_in_module_instance(
    repo: &mut Repo,
    address: &Address,
    location: &BlockLocation,
    applied: &mut Applied,
) -> Option<Result<(), PatchError>> {
    let call = address.module.last()?;
    if matches!(call.key, Some(InstanceKey::Int(_))) {
        return None;
    }
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    let instances = crate::eval::instances(repo);
    let others: Vec<&Address> =
        instances.iter().filter(|a| a.module.starts_with(&address.module) && *a != address).collect();
    let mut why = Vec::new();
    if let (Some(InstanceKey::Str(key)), true) = (&call.key, others.is_empty()) {
        match entry_removed(repo, address, key) {
            Ok(note) => {
                applied.notes.push(note.0);
                write_candidate(repo, note.1, applied);
                return Some(Ok(()));
            }
            Err(e) => why.push(e.to_string()),
        }
    }
    let ours = !module_is_not_ours(repo, address);
    // A module of this call's own whose whole instance goes: the call itself may go (another road).
    if ours && call.key.is_none() && others.is_empty() {
        return None;
    }
    match switched_off(repo, address, location) {
        Ok(Some((note, chosen))) => {
            applied.notes.push(note);
            write_candidate(repo, chosen, applied);
            Some(Ok(()))
        }
        Ok(None) if why.is_empty() => None,
        Ok(None) => (!ours).then(|| Err(refused(why.join("; ")))),
        Err(e) => {
            why.push(e.to_string());
            (!ours).then(|| Err(refused(why.join("; "))))
        }
    }
}

/// `module.a.module.b` for the steps `[a, b]`.
fn module_path(steps: &[ModuleStep]) -> String {
    steps.iter().map(|m| format!("module.{}", m.name)).collect::<Vec<_>>().join(".")
}

/// The call of the module instance `steps` (its last step): the directory and file of the module
/// that calls it, and its block.
fn call_site(repo: &Repo, steps: &[ModuleStep]) -> Option<Site> {
    let (call, parent) = steps.split_last()?;
    let dir = repo.module_dir(&module_path(parent))?.clone();
    let sel = BlockSel::new("module", &[&call.name]);
    let file = repo.find_block(&dir, &sel)?.clone();
    Some(Site { module: parent.to_vec(), dir, file, block: sel, key: call.key.clone() })
}

/// The module instance's entry of its call's `for_each`, removed where the collection comes from.
fn entry_removed(repo: &Repo, address: &Address, key: &str) -> Result<(String, crate::origin::Candidate), Refusal> {
    let call = address.module.last().ok_or("not in a module")?;
    let site = call_site(repo, &address.module).ok_or_else(|| format!("the call module.{} is not found", call.name))?;
    let own = format!("module.{}[{}]", call.name, crate::render::quote(key));
    if let Some((file, _)) = repo.parsed_tf_in(&site.dir).find(|(f, _)| repo.text(f).is_some_and(|t| t.contains(&own)))
    {
        return Err(format!("{} refers to {own}, which would be gone", file.display()).into());
    }
    let block = repo.body(&site.file).and_then(|b| edit::find_block(b, &site.block));
    let Some(for_each) = block.and_then(|b| b.body.get_attribute("for_each")) else {
        return Err(format!("module.{} has no for_each", call.name).into());
    };
    let mut tracer = Tracer::new(repo);
    let trail = format!("module.{}'s for_each", call.name);
    tracer.expr(&site, &site.file, &for_each.value, &[Seg::Key(key.to_string())], &Change::Remove, &trail, 0);
    let instance = address.module.clone();
    let gone = |a: &Address| a.module.starts_with(&instance);
    let chosen = choose(repo, address, None, tracer.out, &|config: Option<Value>| config.is_none(), &gone, &[])
        .map_err(|e| format!("{own} leaving its call's for_each: {e}"))?;
    let note = format!(
        "{address}: it was the only resource of {own}, which goes with its entry of the call's for_each: {}",
        chosen.note
    );
    Ok((note, chosen))
}

/// The resource's own switch (`count = var.create ? 1 : 0`) turned off at its origin outside the
/// module code. `Ok(None)` when the resource has no such switch.
fn switched_off(
    repo: &Repo,
    address: &Address,
    location: &BlockLocation,
) -> Result<Option<(String, crate::origin::Candidate)>, Refusal> {
    let Some(InstanceKey::Int(0)) = address.key else { return Ok(None) };
    let text = repo.text(&location.file).unwrap_or_default();
    let Some(block) = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel)) else {
        return Ok(None);
    };
    let Some(count) = block.body.get_attribute("count") else { return Ok(None) };
    let source = edit::expr_text(text, &count.value).trim().to_string();
    let now = crate::eval::eval_in_block(repo, &address.module, &location.file, &location.sel, None, &source);
    if now.as_ref().and_then(Value::as_f64) != Some(1.0) {
        return Ok(None);
    }
    let dir = repo.module_dir(&address.module_path()).cloned().unwrap_or_default();
    let readings = readings_of(repo, &dir, &address.rtype, &address.name, &location.sel);
    if let Some(bad) = readings.iter().find(|r| !r.tolerant && r.sel.ident != "resource") {
        return Err(format!(
            "{} in {} reads {}[0] directly and would fail without it",
            describe(&bad.sel),
            bad.file.display(),
            address.block_name()
        )
        .into());
    }
    exposed_outputs_pass_through(repo, address, &readings)?;
    let site = Site {
        module: address.module.clone(),
        dir: dir.clone(),
        file: location.file.clone(),
        block: location.sel.clone(),
        key: address.key.clone(),
    };
    let mut tracer = Tracer::new(repo);
    let off = Change::Set(AttrValue::Literal(Value::from(0)));
    tracer.expr(&site, &location.file, &count.value, &[], &off, "its count", 0);
    // Outside the code of the modules on the way only: their files serve their other calls (or are
    // fetched), and the switch is this call's.
    let module_files: Vec<PathBuf> = (1..=address.module.len())
        .filter_map(|k| repo.module_dir(&module_path(&address.module[..k])))
        .flat_map(|d| repo.parsed_tf_in(d).map(|(f, _)| f.clone()).collect::<Vec<_>>())
        .collect();
    let candidates: Vec<_> = tracer.out.into_iter().filter(|c| !module_files.contains(&c.file)).collect();
    // Resources of this module instance that read it may go with it.
    let readers: Vec<(String, String)> = readings
        .iter()
        .filter(|r| r.sel.ident == "resource")
        .filter_map(|r| match r.sel.labels.as_slice() {
            [t, n] => Some((t.clone(), n.clone())),
            _ => None,
        })
        .collect();
    let gone = |a: &Address| a.module == address.module && readers.iter().any(|(t, n)| &a.rtype == t && &a.name == n);
    let chosen = choose(repo, address, None, candidates, &|config: Option<Value>| config.is_none(), &gone, &[])
        .map_err(|e| format!("its switch `count = {source}` turned off for this call: {e}"))?;
    // A resource left that reads the instance directly would fail.
    let mut scratch = repo.clone();
    write_candidate(&mut scratch, chosen.clone(), &mut Applied::default());
    let left = crate::eval::instances(&scratch);
    for reading in readings.iter().filter(|r| !r.tolerant && r.sel.ident == "resource") {
        let [t, n] = reading.sel.labels.as_slice() else { continue };
        if left.iter().any(|a| a.module == address.module && &a.rtype == t && &a.name == n) {
            return Err(format!(
                "{} in {} reads {}[0] directly and stays when the switch is off",
                describe(&reading.sel),
                reading.file.display(),
                address.block_name()
            )
            .into());
        }
    }
    let note = format!(
        "{address}: turned off by the module's own switch (`count = {source}`) for this call, so the module's other \
         resources stay: {}",
        chosen.note
    );
    Ok(Some((note, chosen)))
}

/// One place the module reads a resource: the block it is in, and whether it tolerates the
/// resource's instance `[0]` being gone.
struct ReadingOf {
    file: PathBuf,
    sel: BlockSel,
    tolerant: bool,
}

fn describe(sel: &BlockSel) -> String {
    let labels: Vec<String> = sel.labels.iter().map(|l| format!("{l:?}")).collect();
    format!("{} {}", sel.ident, labels.join(" ")).trim().to_string()
}

/// Every top-level block of the module in `dir` (but `own`, the resource itself) that reads
/// `rtype.name`, each once, tolerant when every reading of the instance `[0]` is inside `try()`'s
/// or `can()`'s first argument, and readings of the whole (`length(aws_x.this)`, `aws_x.this[*]`)
/// which an absent instance leaves valid.
fn readings_of(repo: &Repo, dir: &Path, rtype: &str, name: &str, own: &BlockSel) -> Vec<ReadingOf> {
    let mut out = Vec::new();
    for (file, body) in repo.parsed_tf_in(dir) {
        for block in body.blocks() {
            let sel = BlockSel {
                ident: block.ident.as_str().to_string(),
                labels: block.labels.iter().map(|l| edit::label_str(l).to_string()).collect(),
            };
            if sel == *own || matches!(sel.ident.as_str(), "moved" | "import" | "removed") {
                continue;
            }
            let mut finder = Finder { rtype, name, guarded: 0, found: false, unguarded: false };
            finder.visit_body(&block.body);
            if finder.found {
                out.push(ReadingOf { file: file.clone(), sel, tolerant: !finder.unguarded });
            }
        }
    }
    out
}

struct Finder<'n> {
    rtype: &'n str,
    name: &'n str,
    /// How many `try()`/`can()` first arguments the visit is inside.
    guarded: usize,
    found: bool,
    unguarded: bool,
}

impl Visit for Finder<'_> {
    fn visit_func_call(&mut self, node: &FuncCall) {
        let guards = matches!(node.name.name.as_str(), "try" | "can");
        for (i, arg) in node.args.iter().enumerate() {
            let guarded = guards && i == 0;
            self.guarded += usize::from(guarded);
            self.visit_expr(arg);
            self.guarded -= usize::from(guarded);
        }
    }

    fn visit_traversal(&mut self, node: &Traversal) {
        let root = matches!(&node.expr, Expression::Variable(v) if v.as_str() == self.rtype);
        let mut ops = node.operators.iter().map(|o| o.value());
        let named = matches!(ops.next(), Some(TraversalOperator::GetAttr(n)) if n.as_str() == self.name);
        if root && named {
            self.found = true;
            // `[0]`, `[count.index]` or any other index reads an instance; a splat or nothing reads the whole.
            let instance = matches!(ops.next(), Some(TraversalOperator::Index(_) | TraversalOperator::LegacyIndex(_)));
            if instance && self.guarded == 0 {
                self.unguarded = true;
            }
        }
        hcl_edit::visit::visit_traversal(self, node);
    }
}

/// The outputs of the module that expose the resource become `null`: each module up the chain
/// of calls may read them only in outputs of its own (passed on, and so on up); anything else
/// that reads them (a resource, a local, another call's input) would see the value go, so a
/// person decides.
fn exposed_outputs_pass_through(repo: &Repo, address: &Address, readings: &[ReadingOf]) -> Result<(), Refusal> {
    let mut outputs: Vec<String> =
        readings.iter().filter(|r| r.sel.ident == "output").filter_map(|r| r.sel.labels.first().cloned()).collect();
    let mut level = address.module.clone();
    while let Some(call) = level.pop() {
        if outputs.is_empty() {
            return Ok(());
        }
        let Some(parent_dir) = repo.module_dir(&module_path(&level)).cloned() else { return Ok(()) };
        let mut passed = Vec::new();
        for (file, body) in repo.parsed_tf_in(&parent_dir) {
            let text = repo.text(file).unwrap_or_default();
            for block in body.blocks() {
                let Some(span) = block.span() else { continue };
                let block_text = &text[span];
                let reads = outputs.iter().find(|o| {
                    let needle = format!("module.{}", call.name);
                    block_text.match_indices(&needle).any(|(at, _)| {
                        let rest = &block_text[at + needle.len()..];
                        // `module.db.OUTPUT`, `module.db["k"].OUTPUT`, or the whole call as a value.
                        let rest = match rest.strip_prefix('[') {
                            Some(r) => r.split_once(']').map_or("", |(_, after)| after),
                            None => rest,
                        };
                        let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
                        match rest.strip_prefix('.') {
                            Some(after) => after.split(|c: char| !is_ident(c)).next() == Some(o.as_str()),
                            None => !rest.starts_with(is_ident),
                        }
                    })
                });
                let Some(output) = reads else { continue };
                let is_module_call_of_self = block.ident.as_str() == "module"
                    && block.labels.first().is_some_and(|l| edit::label_str(l) == call.name);
                if is_module_call_of_self {
                    continue;
                }
                if block.ident.as_str() == "output" {
                    passed.extend(block.labels.first().map(|l| edit::label_str(l).to_string()));
                    continue;
                }
                let labels: Vec<String> = block.labels.iter().map(|l| format!("{:?}", edit::label_str(l))).collect();
                return Err(format!(
                    "{} {} in {} reads module.{}.{output}, which exposes {} and would become null",
                    block.ident.as_str(),
                    labels.join(" "),
                    file.display(),
                    call.name,
                    address.block_name()
                )
                .into());
            }
        }
        outputs = passed;
    }
    Ok(())
}
