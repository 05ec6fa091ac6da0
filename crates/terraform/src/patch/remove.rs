//! Removing a resource: its dependents and companions, one instance of a `count`/`for_each` block,
//! and a module instance whose resources are all gone.

use std::path::{Path, PathBuf};

use hcl_edit::Span;
use hcl_edit::expr::Expression;
use serde_json::Value;

use super::choose::{choose, removed_alongside, with_candidate};
use super::op::{Applied, Op, PatchError, Target, has_count_or_for_each, site_of};
use super::write::{write, write_candidate};
use crate::address::{Address, InstanceKey, ModuleStep};
use crate::edit::{self, BlockSel, EditError};
use crate::origin::{Candidate, Change, Site, Tracer};
use crate::path::Seg;
use crate::render::AttrValue;
use crate::repo::{BlockLocation, Referrer, Repo, count_references};

/// AWS resources that configure another one and cannot outlive it: `(parent type, child type
/// or prefix*, the child's attribute naming the parent)`. When the parent is deleted, they are gone too.
const DEPENDENTS: &[(&str, &str, &str)] = &[
    ("aws_s3_bucket", "aws_s3_bucket_*", "bucket"),
    ("aws_security_group", "aws_vpc_security_group_ingress_rule", "security_group_id"),
    ("aws_security_group", "aws_vpc_security_group_egress_rule", "security_group_id"),
    ("aws_security_group", "aws_security_group_rule", "security_group_id"),
    ("aws_iam_role", "aws_iam_role_policy_attachment", "role"),
    ("aws_iam_role", "aws_iam_role_policy", "role"),
    ("aws_sqs_queue", "aws_sqs_queue_policy", "queue_url"),
    ("aws_sqs_queue", "aws_sqs_queue_redrive_policy", "queue_url"),
    ("aws_sns_topic", "aws_sns_topic_subscription", "topic_arn"),
    ("aws_sns_topic", "aws_sns_topic_policy", "arn"),
    ("aws_lambda_function", "aws_lambda_permission", "function_name"),
    ("aws_lambda_function", "aws_lambda_function_event_invoke_config", "function_name"),
    ("aws_autoscaling_group", "aws_autoscaling_policy", "autoscaling_group_name"),
    ("aws_autoscaling_group", "aws_autoscaling_schedule", "autoscaling_group_name"),
    ("aws_instance", "aws_volume_attachment", "instance_id"),
    ("aws_instance", "aws_eip_association", "instance_id"),
];

/// Resource blocks in `dir` that depend on `TYPE.NAME` per [`DEPENDENTS`].
fn dependents_of(repo: &Repo, dir: &Path, rtype: &str, name: &str) -> Vec<(String, String)> {
    let needle = format!("{rtype}.{name}");
    let mut out = Vec::new();
    for (file, body) in repo.parsed_tf_in(dir) {
        let text = repo.text(file).unwrap_or_default();
        for block in body.blocks().filter(|b| b.ident.as_str() == "resource") {
            let (Some(ctype), Some(cname)) = (block.labels.first(), block.labels.get(1)) else { continue };
            let (ctype, cname) = (edit::label_str(ctype), edit::label_str(cname));
            let rule = DEPENDENTS.iter().find(|(p, c, _)| {
                *p == rtype && (c.strip_suffix('*').map_or(*c == ctype, |prefix| ctype.starts_with(prefix)))
            });
            let Some((_, _, attr)) = rule else { continue };
            let refers = block
                .body
                .get_attribute(attr)
                .is_some_and(|a| count_references(&edit::expr_text(text, &a.value), &needle) > 0);
            if refers {
                out.push((ctype.to_string(), cname.to_string()));
            }
        }
    }
    out
}

pub(super) fn remove_resource(repo: &mut Repo, target: &Target, applied: &mut Applied) -> Result<(), PatchError> {
    let Target { address, location, .. } = *target;
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    if let Some(done) = crate::module_removal::remove_in_module_instance(repo, address, location, applied) {
        return done;
    }
    if let Some(done) = remove_module_instance(repo, address, applied) {
        return done;
    }
    let text = repo.text(&location.file).unwrap_or_default().to_string();
    if address.key.is_some() && has_count_or_for_each(&text, &location.sel) {
        return remove_instance(repo, target, applied);
    }
    let dir = repo.module_dir(&address.module_path()).cloned().unwrap_or_default();
    // The resource and what cannot outlive it, transitively.
    let mut doomed = vec![(address.rtype.clone(), address.name.clone())];
    let mut i = 0;
    while i < doomed.len() {
        for d in dependents_of(repo, &dir, &doomed[i].0, &doomed[i].1) {
            if !doomed.contains(&d) {
                doomed.push(d);
            }
        }
        i += 1;
    }
    // Blocks that refer to them and make no instance at all (`for_each` over an empty map) lose no
    // resource: they go with them.
    let empty = with_empty_referrers(repo, &dir, &mut doomed);
    let names: Vec<String> = doomed.iter().map(|(t, n)| format!("{t}.{n}")).collect();
    // Whoever else refers to them: outputs that only expose them go too; anything else is a person's call.
    let mut outputs = Vec::new();
    for (t, n) in &doomed {
        for referrer in repo.referencing_structures(&dir, t, n) {
            let is_doomed = referrer.sel.ident == "resource"
                && doomed.iter().any(|(dt, dn)| referrer.sel.labels == [dt.clone(), dn.clone()]);
            if is_doomed {
                continue;
            }
            if referrer.sel.ident == "output" && only_refers_to(repo, &dir, &referrer, &names) {
                if !outputs.contains(&referrer) {
                    outputs.push(referrer);
                }
                continue;
            }
            return Err(refused(format!(
                "{} in {} refers to {t}.{n}; a person must remove that reference first",
                describe_sel(&referrer.sel),
                referrer.file.display()
            )));
        }
    }
    if !address.module.is_empty() {
        return remove_in_module(repo, address, &dir, &doomed, &outputs, applied);
    }
    for (t, n) in &doomed {
        remove_block_of(repo, &dir, &BlockSel::resource(t, n), applied).map_err(|e| refused(e.to_string()))?;
        let gone = Address { module: address.module.clone(), ..Address::resource(t, n) };
        remove_companions(repo, &dir, &gone, applied).map_err(|e| refused(e.to_string()))?;
        if empty.contains(&(t.clone(), n.clone())) {
            applied.notes.push(format!(
                "removed {t}.{n} with {}: it refers to it and makes no instance (its count or for_each is empty in \
                 every workspace), so no resource goes with it",
                address.block_name()
            ));
        } else if (t, n) != (&address.rtype, &address.name) {
            applied.notes.push(format!("removed {t}.{n} with {}: it cannot exist without it", address.block_name()));
        }
    }
    for output in outputs {
        remove_block_of(repo, &dir, &output.sel, applied).map_err(|e| refused(e.to_string()))?;
        applied.notes.push(format!(
            "removed {} from {}: it only exposed what was deleted",
            describe_sel(&output.sel),
            output.file.display()
        ));
    }
    Ok(())
}

/// Resource blocks in `dir` that refer to a doomed one and make no instance (their `count` is 0 or
/// their `for_each` empty, in this workspace and every other one), added to `doomed` with what
/// cannot outlive them, until none is left; returns the ones added for that reason. A block whose
/// `count`/`for_each` cannot be computed is not taken for empty.
fn with_empty_referrers(repo: &Repo, dir: &Path, doomed: &mut Vec<(String, String)>) -> Vec<(String, String)> {
    let mut added = Vec::new();
    let mut i = 0;
    while i < doomed.len() {
        let (t, n) = doomed[i].clone();
        for referrer in repo.referencing_structures(dir, &t, &n) {
            let [rtype, name] = referrer.sel.labels.as_slice() else { continue };
            let pair = (rtype.clone(), name.clone());
            if referrer.sel.ident != "resource" || doomed.contains(&pair) || !makes_no_instance(repo, &referrer) {
                continue;
            }
            doomed.push(pair.clone());
            added.push(pair);
            for d in dependents_of(repo, dir, rtype, name) {
                if !doomed.contains(&d) {
                    doomed.push(d);
                }
            }
        }
        i += 1;
    }
    added
}

/// Whether a resource block's `count` is 0 or its `for_each` an empty collection in every
/// workspace (evaluated in the root module: a block of a child module is never taken for empty).
fn makes_no_instance(repo: &Repo, referrer: &Referrer) -> bool {
    if repo.module_dir("").is_none_or(|root| referrer.file.parent() != Some(root.as_path())) {
        return false;
    }
    let empty_in = |repo: &Repo| {
        let Some(block) = repo.body(&referrer.file).and_then(|b| edit::find_block(b, &referrer.sel)) else {
            return false;
        };
        let text = repo.text(&referrer.file).unwrap_or_default();
        let value = |name: &str| {
            let attr = block.body.get_attribute(name)?;
            crate::eval::eval_in_block(
                repo,
                &[],
                &referrer.file,
                &referrer.sel,
                None,
                &edit::expr_text(text, &attr.value),
            )
        };
        match (value("count"), value("for_each")) {
            (Some(count), None) => count.as_f64() == Some(0.0),
            (None, Some(Value::Object(map))) => map.is_empty(),
            (None, Some(Value::Array(items))) => items.is_empty(),
            _ => false,
        }
    };
    empty_in(repo)
        && repo
            .other_workspaces()
            .iter()
            .all(|(name, files)| repo.as_workspace(name, files).is_ok_and(|other| empty_in(&other)))
}

/// A resource inside a module: the module's files serve every call of it, so the edit is the
/// call itself. When everything the module manages is gone, the call goes (with root outputs that
/// only exposed it); otherwise a person decides.
fn remove_in_module(
    repo: &mut Repo,
    address: &Address,
    dir: &Path,
    doomed: &[(String, String)],
    _outputs: &[Referrer],
    applied: &mut Applied,
) -> Result<(), PatchError> {
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    let index = repo.module_index(dir);
    let everything =
        index.resources.iter().filter(|r| !r.data).all(|r| doomed.contains(&(r.rtype.clone(), r.name.clone())));
    let call = address.module.last().cloned().unwrap_or_else(|| ModuleStep { name: String::new(), key: None });
    if !everything || !index.module_calls.is_empty() {
        return Err(refused(format!(
            "{} is one of several resources of module.{}; its files serve every call of the module, so a person must decide",
            address.block_name(),
            call.name
        )));
    }
    if let Some(InstanceKey::Str(key)) = &call.key {
        return remove_module_entry(repo, address, &call.name, key, doomed, applied);
    }
    if call.key.is_some() {
        return Err(refused(format!("module.{} is called with count/for_each; shrink it by hand", call.name)));
    }
    let parent = Address { module: address.module[..address.module.len() - 1].to_vec(), ..address.clone() };
    let parent_dir = repo.module_dir(&parent.module_path()).cloned().unwrap_or_default();
    let needle = format!("module.{}", call.name);
    let sel = BlockSel::new("module", &[&call.name]);
    let mut outputs = Vec::new();
    for (file, body) in repo.parsed_tf_in(&parent_dir) {
        let text = repo.text(file).unwrap_or_default();
        for block in body.blocks() {
            let block_text = block.span().map(|s| &text[s]).unwrap_or_default();
            let own = block.ident.as_str() == "module"
                && block.labels.first().map(edit::label_str) == Some(call.name.as_str());
            if own
                || count_references(block_text, &needle) == 0
                || matches!(block.ident.as_str(), "moved" | "removed" | "import")
            {
                continue;
            }
            let referrer = Referrer {
                file: file.clone(),
                sel: BlockSel {
                    ident: block.ident.as_str().to_string(),
                    labels: block.labels.iter().map(|l| edit::label_str(l).to_string()).collect(),
                },
            };
            if referrer.sel.ident == "output"
                && only_refers_to(repo, &parent_dir, &referrer, std::slice::from_ref(&needle))
            {
                outputs.push(referrer);
            } else {
                return Err(refused(format!(
                    "{} in {} uses module.{}; a person must remove that first",
                    describe_sel(&referrer.sel),
                    file.display(),
                    call.name
                )));
            }
        }
    }
    remove_block_of(repo, &parent_dir, &sel, applied).map_err(|e| refused(e.to_string()))?;
    applied.notes.push(format!(
        "removed the call module.{}: everything it managed ({}) was deleted",
        call.name,
        doomed.iter().map(|(t, n)| format!("{t}.{n}")).collect::<Vec<_>>().join(", ")
    ));
    for output in outputs {
        remove_block_of(repo, &parent_dir, &output.sel, applied).map_err(|e| refused(e.to_string()))?;
        applied.notes.push(format!(
            "removed {} from {}: it only exposed module.{}",
            describe_sel(&output.sel),
            output.file.display(),
            call.name
        ));
    }
    Ok(())
}

/// Every resource of one instance of a module called with `for_each` was deleted: the instance
/// goes as its entry leaving the map the call's `for_each` reads, at the map's origin (a tfvars
/// entry, a local), and nothing else changes: not the call, not another entry, not another module
/// instance. A reference to this very instance elsewhere (`module.NAME["key"]`) is a person's to
/// remove first.
fn remove_module_entry(
    repo: &mut Repo,
    address: &Address,
    call_name: &str,
    key: &str,
    doomed: &[(String, String)],
    applied: &mut Applied,
) -> Result<(), PatchError> {
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    let parent_module = address.module[..address.module.len() - 1].to_vec();
    let parent_path = parent_module.iter().map(|m| format!("module.{}", m.name)).collect::<Vec<_>>().join(".");
    let parent_dir = repo
        .module_dir(&parent_path)
        .cloned()
        .ok_or_else(|| refused(format!("the module that calls module.{call_name} is not in the repository")))?;
    let sel = BlockSel::new("module", &[call_name]);
    let call_file =
        repo.find_block(&parent_dir, &sel).cloned().ok_or_else(|| refused(format!("no call module.{call_name}")))?;
    let own = format!("module.{call_name}[{}]", crate::render::quote(key));
    if let Some((file, _)) =
        repo.parsed_tf_in(&parent_dir).find(|(f, _)| repo.text(f).is_some_and(|t| t.contains(&own)))
    {
        return Err(refused(format!("{} refers to {own}; a person must remove that reference first", file.display())));
    }
    let candidates = {
        let block = repo.body(&call_file).and_then(|b| edit::find_block(b, &sel));
        let Some(for_each) = block.and_then(|b| b.body.get_attribute("for_each")) else {
            return Err(refused(format!("module.{call_name} has no for_each")));
        };
        let site = Site {
            module: parent_module,
            dir: parent_dir,
            file: call_file.clone(),
            block: sel.clone(),
            key: address.module.last().and_then(|c| c.key.clone()),
        };
        let mut tracer = Tracer::new(repo);
        tracer.expr(&site, &call_file, &for_each.value, &[Seg::Key(key.to_string())], &Change::Remove, "for_each", 0);
        tracer.out
    };
    let instance = address.module.clone();
    let gone = |a: &Address| a.module.starts_with(&instance);
    let chosen = choose(repo, address, None, candidates, &|config: Option<Value>| config.is_none(), &gone, &[])
        .map_err(|e| refused(format!("{own}: {e}")))?;
    applied.notes.push(format!(
        "{address}: {own} goes with its entry of the call's for_each, since everything it managed ({}) was deleted: {}",
        doomed.iter().map(|(t, n)| format!("{t}.{n}")).collect::<Vec<_>>().join(", "),
        chosen.note
    ));
    write_candidate(repo, chosen, applied);
    Ok(())
}

/// The only managed resource of one instance of a module called with `count = length(LIST)` (the
/// community-module pattern: `count = var.create ? 1 : 0` inside, `try(aws_x.this[0].id, null)`
/// outputs): the instance goes by the module's own switch, its entry leaving `LIST` at the list's
/// origin, when it is the last one (an earlier one would renumber the others). `None` when the
/// resource is not such a module instance's only one.
fn remove_module_instance(repo: &mut Repo, address: &Address, applied: &mut Applied) -> Option<Result<(), PatchError>> {
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    let call = address.module.last()?;
    let Some(InstanceKey::Int(k)) = call.key.clone() else { return None };
    let dir = repo.module_dir(&address.module_path())?.clone();
    let mut doomed = vec![(address.rtype.clone(), address.name.clone())];
    doomed.extend(dependents_of(repo, &dir, &address.rtype, &address.name));
    let index = repo.module_index(&dir);
    let only = index.resources.iter().filter(|r| !r.data).all(|r| doomed.contains(&(r.rtype.clone(), r.name.clone())));
    if !only || !index.module_calls.is_empty() {
        return None;
    }
    let parent_module = address.module[..address.module.len() - 1].to_vec();
    let parent_path = parent_module.iter().map(|m| format!("module.{}", m.name)).collect::<Vec<_>>().join(".");
    let parent_dir = repo.module_dir(&parent_path)?.clone();
    let sel = BlockSel::new("module", &[&call.name]);
    let call_file = repo.find_block(&parent_dir, &sel)?.clone();
    let block = repo.body(&call_file).and_then(|b| edit::find_block(b, &sel))?;
    let count = block.body.get_attribute("count")?;
    let Expression::FuncCall(length) = &count.value else { return None };
    if length.name.name.as_str() != "length" || length.args.iter().count() != 1 {
        return None;
    }
    let list = length.args.iter().next()?;
    // A reference to this very instance (`module.api[2]`) elsewhere would break.
    let own = format!("module.{}[{k}]", call.name);
    if let Some((file, _)) =
        repo.parsed_tf_in(&parent_dir).find(|(f, _)| repo.text(f).is_some_and(|t| t.contains(&own)))
    {
        return Some(Err(refused(format!(
            "{} refers to {own}; a person must remove that reference first",
            file.display()
        ))));
    }
    let text = repo.text(&call_file).unwrap_or_default();
    let source = edit::expr_text(text, &count.value);
    let n = crate::eval::eval_in_block(repo, &parent_module, &call_file, &sel, None, &source)?.as_i64()?;
    let instance = address.module.clone();
    let gone = |a: &Address| a.module.starts_with(&instance);
    if n != k + 1 {
        // Not the last instance: dropping its entry would renumber the others. The module's own
        // switch (`count = var.create ? 1 : 0`) turned off for this instance keeps them in place.
        let location = repo.find_resource(address)?;
        let resource = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel))?;
        let switch = resource.body.get_attribute("count").map(|a| &a.value);
        let mut tracer = Tracer::new(repo);
        if let Some(switch) = switch {
            let site = site_of(repo, address, &location);
            let off = Change::Set(AttrValue::Literal(Value::from(0)));
            tracer.expr(&site, &location.file, switch, &[], &off, "the module's switch", 0);
        }
        let candidates = tracer.out;
        return Some(
            match choose(repo, address, None, candidates, &|config: Option<Value>| config.is_none(), &gone, &[]) {
                Ok(chosen) => {
                    applied.notes.push(format!(
                    "{address}: module.{}[{k}] is turned off by the module's own switch, so the other instances keep \
                     their numbers: {}",
                    call.name, chosen.note
                ));
                    write_candidate(repo, chosen, applied);
                    Ok(())
                }
                Err(e) => Err(refused(format!(
                    "module.{}[{k}] is not the last instance of the call; removing it would renumber the others, and \
                 the module has no switch that turns one instance off ({e}), so a person must decide",
                    call.name
                ))),
            },
        );
    }
    let site =
        Site { module: parent_module, dir: parent_dir, file: call_file.clone(), block: sel, key: call.key.clone() };
    let mut tracer = Tracer::new(repo);
    tracer.expr(&site, &call_file, list, &[Seg::Index(k as usize)], &Change::Remove, "the module's count", 0);
    let candidates = tracer.out;
    let chosen = match choose(repo, address, None, candidates, &|config: Option<Value>| config.is_none(), &gone, &[]) {
        Ok(chosen) => chosen,
        Err(e) => return Some(Err(refused(e.to_string()))),
    };
    applied
        .notes
        .push(format!("{address}: the last instance of module.{} goes with its entry: {}", call.name, chosen.note));
    write_candidate(repo, chosen, applied);
    Some(Ok(()))
}

/// One instance of a count/for_each resource: its entry leaves the `for_each` map at its origin, or
/// the last `count` item leaves the list; other instances must stay as they are.
fn remove_instance(repo: &mut Repo, target: &Target, applied: &mut Applied) -> Result<(), PatchError> {
    let Target { address, location, alongside } = *target;
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    let dir = repo.module_dir(&address.module_path()).cloned().unwrap_or_default();
    // A reference to this very instance would break.
    let own = format!("{}{}", address.block_name(), address.key.as_ref().map(|k| k.to_string()).unwrap_or_default());
    for (file, _) in repo.parsed_tf_in(&dir) {
        if repo.text(file).is_some_and(|t| t.contains(&own)) {
            return Err(refused(format!(
                "{} refers to {own}; a person must remove that reference first",
                file.display()
            )));
        }
    }
    let site = site_of(repo, address, location);
    let block = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel));
    let mut tracer = Tracer::new(repo);
    match (&address.key, block) {
        (Some(InstanceKey::Str(key)), Some(block)) => {
            if let Some(fe) = block.body.get_attribute("for_each") {
                tracer.expr(&site, &location.file, &fe.value, &[Seg::Key(key.clone())], &Change::Remove, "for_each", 0);
            }
        }
        (Some(InstanceKey::Int(i)), Some(block)) => {
            let count = block.body.get_attribute("count");
            let n = effective_count(repo, address, location);
            if n != Some(*i + 1) {
                return Err(refused(format!(
                    "instance [{i}] is not the last of {}; removing it would renumber the others, so a person must decide",
                    address.block_name()
                )));
            }
            if let Some(count) = count {
                match &count.value {
                    Expression::FuncCall(call)
                        if call.name.name.as_str() == "length" && call.args.iter().count() == 1 =>
                    {
                        if let Some(list) = call.args.iter().next() {
                            tracer.expr(
                                &site,
                                &location.file,
                                list,
                                &[Seg::Index(*i as usize)],
                                &Change::Remove,
                                "count",
                                0,
                            );
                        }
                    }
                    other => tracer.expr(
                        &site,
                        &location.file,
                        other,
                        &[],
                        &Change::Set(AttrValue::Literal(Value::from(*i))),
                        "count",
                        0,
                    ),
                }
            }
        }
        _ => {}
    }
    // An edit that leaves another instance reading this one by a computed key would not plan.
    let mut dangling = None;
    let candidates: Vec<Candidate> = tracer
        .out
        .into_iter()
        .filter(|candidate| match reader_left_behind(repo, candidate, address, &dir, alongside) {
            Some(reason) => {
                dangling.get_or_insert(format!("{} ({reason})", candidate.note));
                false
            }
            None => true,
        })
        .collect();
    if let (true, Some(reason)) = (candidates.is_empty(), &dangling) {
        return Err(refused(format!("every edit considered would leave a reference behind: {reason}")));
    }
    let check = |config: Option<Value>| config.is_none();
    // Dependents of this instance (same key) may go with it, and so may instances the same calls
    // delete (a queue and its dead-letter queue, made from one map entry).
    let dependents = dependents_of(repo, &dir, &address.rtype, &address.name);
    let gone = |a: &Address| {
        let dependent = a.key == address.key
            && a.module == address.module
            && dependents.iter().any(|(t, n)| &a.rtype == t && &a.name == n);
        dependent || removed_alongside(alongside, a)
    };
    let chosen = choose(repo, address, None, candidates, &check, &gone, &[]).map_err(|e| match &dangling {
        Some(reason) => refused(format!("{e}; and an edit that would leave a reference behind: {reason}")),
        None => refused(e.to_string()),
    })?;
    applied.notes.push(format!("{address}: removed its instance: {}", chosen.note));
    write_candidate(repo, chosen, applied);
    Ok(())
}

/// After `candidate`, another resource instance in the module that still reads the removed
/// instance through a computed key (`aws_sqs_queue.dlq[each.key].arn` in the instance of the same
/// key, `[count.index]` in the one of the same index); a key driftback cannot resolve counts as
/// reading it while the reader has any instance. Instances the same calls delete are not readers.
fn reader_left_behind(
    repo: &Repo,
    candidate: &Candidate,
    address: &Address,
    dir: &Path,
    alongside: &[(Address, Op)],
) -> Option<String> {
    let scratch = with_candidate(repo, candidate);
    let pattern = format!("{}.{}[", address.rtype, address.name);
    let after = crate::eval::instances(&scratch);
    for (file, body) in scratch.parsed_tf_in(dir) {
        let text = scratch.text(file).unwrap_or_default();
        for block in body.blocks().filter(|b| b.ident.as_str() == "resource" && b.labels.len() == 2) {
            let (rtype, name) = (edit::label_str(&block.labels[0]), edit::label_str(&block.labels[1]));
            if rtype == address.rtype && name == address.name {
                continue;
            }
            let Some(span) = block.span() else { continue };
            let block_text = &text[span];
            let readers: Vec<&Address> = after
                .iter()
                .filter(|a| {
                    a.module == address.module && a.rtype == rtype && a.name == name && !removed_alongside(alongside, a)
                })
                .collect();
            for (at, _) in block_text.match_indices(&pattern) {
                let rest = &block_text[at + pattern.len()..];
                let Some(end) = rest.find(']') else { continue };
                let index = rest[..end].trim();
                let same = |a: &&&Address| match (index, &a.key, &address.key) {
                    ("each.key", Some(InstanceKey::Str(k)), Some(InstanceKey::Str(removed))) => k == removed,
                    ("count.index", Some(InstanceKey::Int(i)), Some(InstanceKey::Int(removed))) => i == removed,
                    // A literal key is the own-reference check's; anything else cannot be resolved.
                    (i, _, _) if i.starts_with('"') || i.parse::<i64>().is_ok() => false,
                    ("each.key" | "count.index", _, _) => false,
                    _ => true,
                };
                if let Some(reader) = readers.iter().find(same) {
                    return Some(format!("{reader} reads {pattern}{index}]"));
                }
            }
        }
    }
    None
}

fn effective_count(repo: &Repo, address: &Address, location: &BlockLocation) -> Option<i64> {
    let text = repo.text(&location.file)?;
    let block = edit::find_block(repo.body(&location.file)?, &location.sel)?;
    let count = block.body.get_attribute("count")?;
    let source = edit::expr_text(text, &count.value);
    crate::eval::eval_in_block(repo, &address.module, &location.file, &location.sel, None, &source)?.as_i64()
}

/// Whether every resource or module reference in an output's value is one of `names` (`TYPE.NAME`
/// or `module.NAME`).
fn only_refers_to(repo: &Repo, dir: &Path, referrer: &Referrer, names: &[String]) -> bool {
    let Some(file) = repo.find_block(dir, &referrer.sel) else { return false };
    let Some(text) = repo.text(file) else { return false };
    let Some(block) = repo.body(file).and_then(|b| edit::find_block(b, &referrer.sel)) else { return false };
    let Some(value) = block.body.get_attribute("value") else { return false };
    let source = edit::expr_text(text, &value.value);
    let managed: Vec<String> = repo
        .module_index(dir)
        .resources
        .iter()
        .filter(|r| !r.data)
        .map(|r| format!("{}.{}", r.rtype, r.name))
        .chain(repo.module_index(dir).module_calls.iter().map(|c| format!("module.{}", c.name)))
        .collect();
    let mentioned: Vec<&String> = managed.iter().filter(|m| count_references(&source, m) > 0).collect();
    !mentioned.is_empty()
        && mentioned.iter().all(|m| names.contains(m))
        && !source.contains("var.")
        && !source.contains("local.")
        && !source.contains("data.")
}

fn describe_sel(sel: &BlockSel) -> String {
    if sel.ident.is_empty() {
        return "a top-level attribute".into();
    }
    let labels: Vec<String> = sel.labels.iter().map(|l| format!("{l:?}")).collect();
    format!("{} {}", sel.ident, labels.join(" ")).trim().to_string()
}

fn remove_block_of(repo: &mut Repo, dir: &Path, sel: &BlockSel, applied: &mut Applied) -> Result<(), EditError> {
    let Some(file) = repo.find_block(dir, sel).cloned() else { return Ok(()) };
    let text = repo.text(&file).unwrap_or_default();
    let new = edit::remove_block(text, edit::block_index(text, sel)?)?;
    write(repo, &file, new, applied);
    Ok(())
}

/// `import` and `moved` blocks that name the removed resource go with it.
fn remove_companions(repo: &mut Repo, dir: &Path, address: &Address, applied: &mut Applied) -> Result<(), EditError> {
    let target = address.without_key().to_string();
    let files: Vec<PathBuf> = repo.parsed_tf_in(dir).map(|(p, _)| p.clone()).collect();
    for file in files {
        let mut text = repo.text(&file).unwrap_or_default().to_string();
        let mut changed = false;
        loop {
            let body = edit::parse(&text)?;
            let found = body.blocks().enumerate().find(|(_, b)| {
                let attr = match b.ident.as_str() {
                    "import" => "to",
                    "moved" => "to",
                    _ => return false,
                };
                b.body.get_attribute(attr).is_some_and(|a| {
                    edit::expr_text(&text, &a.value).split('[').next().map(str::trim) == Some(target.as_str())
                })
            });
            let Some((index, _)) = found else { break };
            text = edit::remove_block(&text, index)?;
            changed = true;
        }
        if changed {
            write(repo, &file, text, applied);
        }
    }
    Ok(())
}
