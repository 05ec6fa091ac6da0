//! Changes to a resource, applied where the value comes from.
//!
//! A value written as a literal in the resource block is changed in place. A value that comes from
//! a variable is changed in the tfvars file that sets it or in the variable's default; from a
//! local, in the local; from a module input, at the module call; from a `for_each` map, in that
//! map's entry; from `merge()`, in the argument that supplies the key.
//!
//! Every candidate edit ([`crate::origin`]) is checked by evaluation before it is kept: the changed
//! instance must have the new value, and every other resource instance's effective configuration
//! must stay as it was. When the origin is shared, the narrowest edit that passes is made instead
//! (a literal on the one resource, or a condition on the one instance), and a note says which and
//! why. When no edit passes, the change is refused with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hcl_edit::Span;
use hcl_edit::expr::Expression;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::address::{Address, InstanceKey, ModuleStep};
use crate::edit::{self, BlockSel, EditError};
use crate::eval::{effective_config, is_symbolic, value_at_path};
use crate::origin::{self, Candidate, Change, Site, Tracer};
use crate::path::{AttrPath, Seg};
use crate::render::{AttrValue, BlockSpec, render_key};
use crate::repo::{BlockLocation, Referrer, Repo, count_references};

/// One change to one resource, in the terms of its configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Op {
    /// Set the value at a path (attribute, nested block attribute, map entry).
    Set { path: AttrPath, value: AttrValue },
    /// Remove the attribute, map entry or nested block at a path.
    Remove { path: AttrPath },
    /// Add a nested block (`ingress { ... }`).
    AddBlock { block_type: String, spec: BlockSpec },
    /// Remove the nested blocks of a type whose literal attributes equal all of `matching`.
    RemoveBlocks { block_type: String, matching: Vec<(String, Value)> },
    /// Add an attribute to `lifecycle { ignore_changes }`.
    IgnoreChanges { attr: String },
    /// Remove the resource block (and its `import`/`moved` companions).
    RemoveResource,
    /// Add a resource block, with an `import` block for the cloud object's id.
    CreateResource { spec: BlockSpec, import_id: String },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    #[error("{address}: no resource block found in the configuration")]
    NoBlock { address: String },
    #[error("{address}: {file}: {source}")]
    Edit { address: String, file: String, source: EditError },
    #[error("{address}: {reason}")]
    Refused { address: String, reason: String },
}

/// What an operation did, for the audit trail and the pull request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    pub files: Vec<PathBuf>,
    pub notes: Vec<String>,
}

/// Apply one operation to the repository in memory.
pub fn apply(repo: &mut Repo, address: &Address, op: &Op) -> Result<Applied, PatchError> {
    apply_alongside(repo, address, op, &[])
}

/// As [`apply`], where the same calls change other resources too (`alongside`: one `CreateTags` on
/// two subnets): an edit that also makes exactly those changes to them (a shared input both read)
/// is not a leak.
pub fn apply_alongside(
    repo: &mut Repo,
    address: &Address,
    op: &Op,
    alongside: &[(Address, Op)],
) -> Result<Applied, PatchError> {
    // A refusal inside fetched or shared module code names the call, its version and the input.
    let in_module_terms = |repo: &Repo, e| crate::module_refusal::in_module_terms(repo, address, op, e);
    let applied = apply_in_place(repo, address, op, alongside).map_err(|e| in_module_terms(repo, e))?;
    // Module code fetched from outside the repository is read, never written (`Repo::set_file`
    // keeps it as it was): an edit that chose such a file is refused.
    if let Some(file) = applied.files.iter().find(|f| repo.is_external(f)) {
        return Err(in_module_terms(
            repo,
            PatchError::Refused {
                address: address.to_string(),
                reason: format!(
                    "the edit would change {}, module code from outside the repository; it must be written in the repository's own files (the module call's inputs)",
                    file.display()
                ),
            },
        ));
    }
    Ok(applied)
}

fn apply_in_place(
    repo: &mut Repo,
    address: &Address,
    op: &Op,
    alongside: &[(Address, Op)],
) -> Result<Applied, PatchError> {
    let mut applied = Applied::default();
    let err = |file: &Path, source: EditError| PatchError::Edit {
        address: address.to_string(),
        file: file.display().to_string(),
        source,
    };
    if let Op::CreateResource { spec, import_id } = op {
        create_resource(repo, address, spec, import_id, &mut applied).map_err(|e| err(Path::new(""), e))?;
        return Ok(applied);
    }
    let location = repo.find_resource(address).ok_or_else(|| PatchError::NoBlock { address: address.to_string() })?;
    let file = location.file.clone();
    let text = repo.text(&file).unwrap_or_default().to_string();
    match op {
        Op::Set { path, value } => set_value(repo, address, &location, path, value, &mut applied, alongside)?,
        Op::Remove { path } => remove_value(repo, address, &location, path, &mut applied, alongside)?,
        Op::AddBlock { block_type, spec } => {
            if has_dynamic(repo, &location, block_type) {
                add_through_dynamic(repo, address, &location, block_type, spec, &mut applied)?;
            } else {
                if let Some(other) = sharing_block(repo, address, &location) {
                    return Err(PatchError::Refused {
                        address: address.to_string(),
                        reason: format!(
                            "a `{block_type}` block written here would be {other}'s too: they share this resource block"
                        ),
                    });
                }
                let new = edit::add_nested_block(&text, &location.sel, block_type, spec).map_err(|e| err(&file, e))?;
                write(repo, &file, new, &mut applied);
            }
        }
        Op::RemoveBlocks { block_type, matching } => {
            // Compare with the blocks' effective values, so `cidr_blocks = var.allowed` matches too.
            let config = effective_config(repo, address).unwrap_or(Value::Null);
            let blocks = config.get(block_type).and_then(Value::as_array).cloned().unwrap_or_default();
            let indices: Vec<usize> = blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| matching.iter().all(|(k, want)| b.get(k).is_some_and(|v| values_equal(v, want))))
                .map(|(i, _)| i)
                .collect();
            if indices.is_empty() {
                return Err(PatchError::Refused {
                    address: address.to_string(),
                    reason: format!("no `{block_type}` block matches {}", describe_matching(matching)),
                });
            }
            if has_dynamic(repo, &location, block_type) {
                return remove_through_dynamic(repo, address, &location, block_type, matching, indices, &mut applied)
                    .map(|()| applied);
            }
            if has_count_or_for_each(&text, &location.sel) && address.key.is_some() {
                return Err(PatchError::Refused {
                    address: address.to_string(),
                    reason: format!(
                        "the `{block_type}` blocks are shared by every instance of {}",
                        address.block_name()
                    ),
                });
            }
            let mut current = text.clone();
            for index in indices.into_iter().rev() {
                let path = AttrPath(vec![Seg::Name(block_type.clone()), Seg::Index(index)]);
                current = edit::remove(&current, Some(&location.sel), &path).map_err(|e| err(&file, e))?;
            }
            write(repo, &file, current, &mut applied);
        }
        Op::IgnoreChanges { attr } => {
            // An argument the configuration leaves out and the provider computes is not managed by
            // Terraform at all: `ignore_changes` on it would change nothing.
            let unset =
                effective_config(repo, address).is_some_and(|c| c.get(attr.as_str()).is_none_or(Value::is_null));
            let computed = crate::schema::Schema::newest()
                .ok()
                .and_then(|s| s.resource(&address.rtype))
                .and_then(|r| r.argument(attr))
                .is_some_and(|a| a.is_computed());
            if unset && computed {
                applied.notes.push(format!(
                    "{address}: `{attr}` is not set by the configuration and the provider computes it: Terraform \
                     already leaves it alone, so no ignore_changes is written"
                ));
                return Ok(applied);
            }
            let new = edit::add_ignore_changes(&text, &location.sel, attr).map_err(|e| err(&file, e))?;
            write(repo, &file, new, &mut applied);
        }
        Op::RemoveResource => remove_resource(repo, address, &location, &mut applied, alongside)?,
        Op::CreateResource { .. } => unreachable!("handled above"),
    }
    Ok(applied)
}

/// The site of a resource block's instance, where tracing starts.
fn site_of(repo: &Repo, address: &Address, location: &BlockLocation) -> Site {
    Site {
        module: address.module.clone(),
        dir: repo.module_dir(&address.module_path()).cloned().unwrap_or_default(),
        file: location.file.clone(),
        block: location.sel.clone(),
        key: address.key.clone(),
    }
}

fn set_value(
    repo: &mut Repo,
    address: &Address,
    location: &BlockLocation,
    path: &AttrPath,
    value: &AttrValue,
    applied: &mut Applied,
    alongside: &[(Address, Op)],
) -> Result<(), PatchError> {
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    let current = effective_config(repo, address).and_then(|c| value_at_path(&c, path));
    if let (AttrValue::Literal(want), Some(have)) = (value, &current) {
        if values_equal(have, want) {
            applied.notes.push(format!("{address}: {path} already is {want}"));
            return Ok(());
        }
        // A whole map (Lambda environment, a tag set): change the entries that differ, each at its origin.
        if let (Value::Object(new), Value::Object(old)) = (want, have) {
            if is_map_attribute(repo, location, path) {
                for (key, v) in new {
                    let sub = with_key(path, key);
                    match old.get(key) {
                        Some(o) if is_symbolic(o) => applied
                            .notes
                            .push(format!("{address}: kept {sub} = {o}: a reference, whatever its value now")),
                        Some(o) if values_equal(o, v) => {}
                        _ => set_value(
                            repo,
                            address,
                            location,
                            &sub,
                            &AttrValue::Literal(v.clone()),
                            applied,
                            alongside,
                        )?,
                    }
                }
                for (key, o) in old {
                    if !new.contains_key(key) && !is_symbolic(o) {
                        remove_value(repo, address, location, &with_key(path, key), applied, alongside)?;
                    }
                }
                return Ok(());
            }
        }
    }
    if let Some(done) =
        crate::dynamic_nested::set_in_nested_dynamic(repo, address, location, path, value, applied, alongside)
    {
        return done;
    }
    let site = site_of(repo, address, location);
    let text = repo.text(&location.file).unwrap_or_default().to_string();
    let body = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel));
    let change = Change::Set(value.clone());
    let mut tracer = Tracer::new(repo);
    let route = body.and_then(|b| through_dynamic(repo, address, b, path));
    let found = match &route {
        None => body.and_then(|b| origin::attribute_at(&b.body, &path.0)),
        Some(DynamicRoute::Written(written)) => body.and_then(|b| origin::attribute_at(&b.body, &written.0)),
        Some(DynamicRoute::Element { .. } | DynamicRoute::Unknown) => None,
    };
    let keyed = address.key.is_some() && has_count_or_for_each(&text, &location.sel);
    match (&found, &route) {
        (_, Some(DynamicRoute::Unknown)) => {
            return Err(refused(format!(
                "{path}: the blocks of this type come from a `dynamic` block whose for_each cannot be computed here"
            )));
        }
        (_, Some(DynamicRoute::Element { expr, tail, iterator, for_each, element })) => {
            tracer.iterator = Some((iterator.clone(), *for_each, element.clone()));
            tracer.expr(&site, &location.file, expr, tail, &change, "", 0);
        }
        (Some((expr, tail, _)), _) => tracer.expr(&site, &location.file, expr, tail, &change, "", 0),
        (None, _) => {
            // Not set yet: a literal in the block (every instance's, when there are several).
            if let Ok(new) = edit::set(&text, Some(&location.sel), path, value) {
                tracer.out.push(Candidate {
                    file: location.file.clone(),
                    text: new,
                    note: format!("added {path} to the block"),
                    also: Vec::new(),
                });
            }
        }
    }
    let mut candidates = tracer.out;
    // The narrowest edits: a condition on this one instance, or an overlay on this one resource.
    if let Some(c) = instance_override(&text, location, address, path, found.as_ref(), value).filter(|_| keyed) {
        candidates.push(c);
    }
    // An item a shared list gains for this instance alone (a statement one key's policy gained).
    if let (true, Some(key), Some((expr, tail, _)), AttrValue::Literal(item)) = (keyed, &address.key, &found, value) {
        candidates.extend(crate::instance_item::with_item_for_instance(&location.file, &text, expr, tail, key, item));
    }
    if let Some((expr, tail, used)) = &found {
        if !tail.is_empty() && !keyed && !is_text_argument(&address.rtype, &path.0[..*used]) {
            if let Some(c) = merge_overlay(&text, location, expr, &AttrPath(path.0[..*used].to_vec()), tail, value) {
                candidates.push(c);
            }
        }
    }
    // Last: a map entry for one call of a shared module, through a new input of that module.
    if let Some((expr, tail, 1)) = &found {
        if let Some(c) = module_input_overlay(repo, address, location, expr, &path.0[0], tail, value) {
            candidates.push(c);
        }
    }
    let want = match value {
        AttrValue::Literal(v) => Some(v.clone()),
        AttrValue::Reference(_) => None,
    };
    let check = |config: Option<Value>| match (&want, config.map(|c| document_value(&c, path))) {
        (None, _) => true,
        // A `data "aws_iam_policy_document"` whose statements the edit rewrote: it checked there
        // that the data source now writes the document (`policy_document`).
        (Some(_), Some(Member::Known(got))) if crate::policy_document::is_document_reference(&got) => true,
        (Some(want), Some(Member::Known(got))) => values_equal(&got, want) || same_document(&got, want),
        // A member of a JSON document built from other resources: the edit went to the member's
        // literal in the object it is built from; the whole cannot be evaluated here.
        (Some(_), Some(Member::Computed)) => true,
        (Some(_), _) => false,
    };
    let computed =
        found.as_ref().is_some_and(|(expr, tail, _)| tail.is_empty() && origin::refers_to_other_objects(expr));
    let chosen = choose(repo, address, Some(path), candidates, &check, &|_| false, alongside).map_err(|e| {
        if computed {
            refused(format!(
                "{path} is computed from other resources in the code; writing the new value as a literal would cut \
                 those references, and no edit of its literal parts expresses the change"
            ))
        } else {
            refused(format!("{path}: {e}"))
        }
    })?;
    applied.notes.push(format!("{address}: {path}: {}", chosen.note));
    write_candidate(repo, chosen, applied);
    Ok(())
}

fn remove_value(
    repo: &mut Repo,
    address: &Address,
    location: &BlockLocation,
    path: &AttrPath,
    applied: &mut Applied,
    alongside: &[(Address, Op)],
) -> Result<(), PatchError> {
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    let config = effective_config(repo, address);
    let Some(config) = config.filter(|c| !matches!(document_value(c, path), Member::Missing)) else {
        applied.notes.push(format!("{address}: {path} is not set: nothing to remove"));
        return Ok(());
    };
    // An item of a list (a policy's statement, an action): the list keeps the others, in order.
    let list_without = match path.0.split_last() {
        Some((Seg::Index(i), parent)) => {
            let parent = AttrPath(parent.to_vec());
            match document_value(&config, &parent) {
                Member::Known(Value::Array(mut items)) if *i < items.len() => {
                    items.remove(*i);
                    Some((parent, Some(items)))
                }
                _ => Some((parent, None)),
            }
        }
        _ => None,
    };
    let site = site_of(repo, address, location);
    let text = repo.text(&location.file).unwrap_or_default().to_string();
    let body = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel));
    let mut tracer = Tracer::new(repo);
    match body.and_then(|b| origin::attribute_at(&b.body, &path.0)) {
        Some((expr, tail, _)) if !tail.is_empty() => {
            tracer.expr(&site, &location.file, expr, &tail, &Change::Remove, "", 0)
        }
        _ => {
            if let Ok(new) = edit::remove(&text, Some(&location.sel), path) {
                tracer.out.push(Candidate {
                    file: location.file.clone(),
                    text: new,
                    note: format!("removed {path} from the block"),
                    also: Vec::new(),
                });
            }
        }
    }
    let mut candidates = tracer.out;
    // Narrowest: an item of a list every instance shares, left out for this instance alone.
    let keyed = address.key.is_some() && has_count_or_for_each(&text, &location.sel);
    if let (true, Some(key)) = (keyed, &address.key) {
        let found = body.and_then(|b| origin::attribute_at(&b.body, &path.0));
        if let Some((expr, tail, _)) = found.filter(|(_, tail, _)| !tail.is_empty()) {
            let c = crate::instance_item::without_item_for_instance(&location.file, &text, expr, &tail, key);
            candidates.extend(c);
        }
    }
    let check = |config: Option<Value>| {
        let Some(config) = config else { return false };
        match (&list_without, document_value(&config, path)) {
            // A member of a document built from other resources: the edit went to its literal.
            (_, Member::Computed) => true,
            (None, got) => matches!(got, Member::Missing),
            (Some((parent, Some(want))), _) => {
                matches!(document_value(&config, parent), Member::Known(got) if values_equal(&got, &Value::Array(want.clone())))
            }
            (Some((parent, None)), _) => matches!(document_value(&config, parent), Member::Computed),
        }
    };
    let chosen = choose(repo, address, Some(path), candidates, &check, &|_| false, alongside)
        .map_err(|e| refused(format!("{path}: {e}")))?;
    applied.notes.push(format!("{address}: {path}: {}", chosen.note));
    write_candidate(repo, chosen, applied);
    Ok(())
}

fn has_dynamic(repo: &Repo, location: &BlockLocation, block_type: &str) -> bool {
    repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel)).is_some_and(|b| {
        b.body
            .blocks()
            .any(|d| d.ident.as_str() == "dynamic" && d.labels.first().map(edit::label_str) == Some(block_type))
    })
}

/// A nested block where `dynamic` blocks make that type: a new element of a `dynamic` block's
/// `for_each` map whose content writes exactly this block (`name = parameter.key`, `value =
/// parameter.value`, or `each field = ITER.value.FIELD`), added at the map's origin (a tfvars entry).
/// A block no `dynamic` block can express is refused: a literal block beside them would hide the
/// new setting from whoever reads the map.
fn add_through_dynamic(
    repo: &mut Repo,
    address: &Address,
    location: &BlockLocation,
    block_type: &str,
    spec: &BlockSpec,
    applied: &mut Applied,
) -> Result<(), PatchError> {
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    let want: Map<String, Value> = spec.literal_attrs();
    if want.len() != spec.attrs.len() || !spec.blocks.is_empty() {
        return Err(refused(format!("the new {block_type} block has parts a dynamic block's map cannot hold")));
    }
    let text = repo.text(&location.file).unwrap_or_default().to_string();
    let body = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel));
    let check = check_blocks(block_type, &want);
    let path = AttrPath(vec![Seg::Name(block_type.to_string())]);
    let mut candidates = Vec::new();
    for dynamic in body
        .into_iter()
        .flat_map(|b| b.body.blocks())
        .filter(|d| d.ident.as_str() == "dynamic" && d.labels.first().map(edit::label_str) == Some(block_type))
    {
        // Content arguments the call gives no value for (a rule's description) are null in a new
        // list element; the fields left out below must keep them null.
        let (found, unset) = match dynamic_element(&text, dynamic, block_type, &want) {
            Some(found) => (Some(found), Vec::new()),
            None => match crate::dynamic_list::element_with_unset_fields(&text, dynamic, block_type, &want) {
                Some((element, unset)) => (Some((None, element)), unset),
                None => (None, Vec::new()),
            },
        };
        let Some((key, element)) = found else { continue };
        let Some(for_each) = dynamic.body.get_attribute("for_each") else { continue };
        let site = site_of(repo, address, location);
        // A list (of objects or of plain values) gains the element at its end.
        let list = match crate::eval::eval_in_block(
            repo,
            &site.module,
            &site.file,
            &site.block,
            site.key.as_ref(),
            &edit::expr_text(&text, &for_each.value),
        ) {
            Some(Value::Array(items)) if key.is_none() => Some(items),
            _ => None,
        };
        let mut keeps_unset = want.clone();
        keeps_unset.extend(unset.iter().map(|name| (name.clone(), Value::Null)));
        let check_unset = check_blocks(block_type, &keeps_unset);
        let candidates_for = |element: Value| {
            let mut tracer = Tracer::new(repo);
            let change = Change::Set(AttrValue::Literal(element));
            match &key {
                // A map entry of that key.
                Some(key) => {
                    tracer.expr(&site, &location.file, &for_each.value, &[Seg::Key(key.clone())], &change, "", 0)
                }
                // A list of at most one element (`var.x == null ? [] : [var.x]`): that element's
                // value, which also makes the list hold it.
                None => {
                    for one in single_elements(&for_each.value) {
                        tracer.expr(&site, &location.file, one, &[], &change, " -> the for_each's one element", 0);
                    }
                }
            }
            let mut out = tracer.out;
            if let (Some(items), Change::Set(AttrValue::Literal(element))) = (&list, change) {
                out.extend(crate::dynamic_list::appended(repo, &site, &for_each.value, items, element));
            }
            out
        };
        // A field the element's type already defaults to the value (`optional(number, 10)`) is
        // left out, as the entries beside it leave it out: one at a time, kept out while the new
        // block still gets every value.
        let mut element = element;
        let fields: Vec<String> = element.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        if fields.len() > 1 {
            for field in fields {
                let mut without = element.clone();
                if let Some(m) = without.as_object_mut() {
                    m.remove(&field);
                }
                let candidates = candidates_for(without.clone());
                if choose(repo, address, Some(&path), candidates, &check_unset, &|_| false, &[]).is_ok() {
                    element = without;
                }
            }
        }
        candidates.extend(candidates_for(element));
    }
    let chosen = choose(repo, address, Some(&path), candidates, &check, &|_| false, &[])
        .map_err(|e| refused(format!("a new {block_type} block where dynamic blocks make them: {e}")))?;
    applied.notes.push(format!(
        "{address}: a new {block_type} block, as an element of its dynamic block's for_each: {}",
        chosen.note
    ));
    write_candidate(repo, chosen, applied);
    Ok(())
}

/// Nested blocks to remove where `dynamic` blocks make that type: a block written in the body goes
/// from the body; a block of a `dynamic` block goes as its element of the `for_each` (a tfvars
/// list's item, a map's entry), at the element's origin, each edit kept only when the instance
/// loses exactly that block and nothing else changes. Last first, so the indices before stay.
fn remove_through_dynamic(
    repo: &mut Repo,
    address: &Address,
    location: &BlockLocation,
    block_type: &str,
    matching: &[(String, Value)],
    indices: Vec<usize>,
    applied: &mut Applied,
) -> Result<(), PatchError> {
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    let origins = crate::eval::block_origins(repo, address, block_type).ok_or_else(|| {
        refused(format!("the `{block_type}` blocks come from a `dynamic` block whose for_each cannot be computed here"))
    })?;
    let matches = |config: &Option<Value>| {
        config
            .as_ref()
            .and_then(|c| c.get(block_type))
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| matching.iter().all(|(k, want)| b.get(k).is_some_and(|v| values_equal(v, want))))
                    .count()
            })
            .unwrap_or(0)
    };
    for index in indices.into_iter().rev() {
        let text = repo.text(&location.file).unwrap_or_default().to_string();
        match origins.get(index) {
            Some(crate::eval::BlockOrigin::Written(k)) => {
                if has_count_or_for_each(&text, &location.sel) && address.key.is_some() {
                    return Err(refused(format!(
                        "the written `{block_type}` blocks are shared by every instance of {}",
                        address.block_name()
                    )));
                }
                let path = AttrPath(vec![Seg::Name(block_type.to_string()), Seg::Index(*k)]);
                let new = edit::remove(&text, Some(&location.sel), &path).map_err(|e| PatchError::Edit {
                    address: address.to_string(),
                    file: location.file.display().to_string(),
                    source: e,
                })?;
                write(repo, &location.file, new, applied);
            }
            Some(crate::eval::BlockOrigin::Dynamic { block, element, .. }) => {
                let candidates = {
                    let body = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel));
                    let mut dynamic = body.into_iter().flat_map(|b| b.body.blocks()).filter(|d| {
                        d.ident.as_str() == "dynamic" && d.labels.first().map(edit::label_str) == Some(block_type)
                    });
                    let Some(for_each) = dynamic.nth(*block).and_then(|d| d.body.get_attribute("for_each")) else {
                        return Err(refused(format!("the `dynamic \"{block_type}\"` block has no for_each")));
                    };
                    let site = site_of(repo, address, location);
                    crate::dynamic_list::dropped(repo, &site, &for_each.value, element)
                };
                let before = matches(&effective_config(repo, address));
                let check = |config: Option<Value>| config.is_some() && matches(&config) + 1 == before;
                let path = AttrPath(vec![Seg::Name(block_type.to_string())]);
                let chosen = choose(repo, address, Some(&path), candidates, &check, &|_| false, &[])
                    .map_err(|e| refused(format!("the {block_type} block a dynamic block makes: {e}")))?;
                applied.notes.push(format!("{address}: removed a {block_type} block: {}", chosen.note));
                write_candidate(repo, chosen, applied);
            }
            None => return Err(refused(format!("no `{block_type}` block at {index}"))),
        }
    }
    Ok(())
}

/// Whether a configuration has a `block_type` block with every value of `want`.
fn check_blocks<'w>(block_type: &'w str, want: &'w Map<String, Value>) -> impl Fn(Option<Value>) -> bool + 'w {
    move |config: Option<Value>| {
        config.and_then(|c| c.get(block_type).cloned()).and_then(|b| b.as_array().cloned()).is_some_and(|blocks| {
            blocks.iter().any(|b| want.iter().all(|(k, v)| b.get(k).is_some_and(|have| values_equal(have, v))))
        })
    }
}

/// The (key, value) of a new `for_each` map element that makes a `dynamic` block's content write
/// `want`, when every content argument reads the iterator's key, its value, or one field of it (or
/// is a literal that already says the same).
fn dynamic_element(
    text: &str,
    dynamic: &hcl_edit::structure::Block,
    block_type: &str,
    want: &Map<String, Value>,
) -> Option<(Option<String>, Value)> {
    let iterator = match dynamic.body.get_attribute("iterator") {
        Some(attr) => edit::expr_text(text, &attr.value).trim().to_string(),
        None => block_type.to_string(),
    };
    let content = dynamic.body.blocks().find(|b| b.ident.as_str() == "content")?;
    let (mut key, mut whole, mut fields) = (None, None, Map::new());
    for attr in content.body.attributes() {
        let name = attr.key.as_str();
        let source = edit::expr_text(text, &attr.value).trim().to_string();
        let value = want.get(name)?;
        // The key as it is, or converted (`tonumber(custom_error_response.key)`: a map's keys are
        // strings).
        let key_read =
            [format!("{iterator}.key"), format!("tonumber({iterator}.key)"), format!("tostring({iterator}.key)")];
        if key_read.contains(&source) {
            key = Some(match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            });
        } else if source == format!("{iterator}.value") {
            whole = Some(value.clone());
        } else if let Some(field) = source.strip_prefix(&format!("{iterator}.value.")) {
            fields.insert(field.to_string(), value.clone());
        } else if !source
            .parse::<hcl::Expression>()
            .ok()
            .and_then(|e| serde_json::to_value(e).ok())
            .is_some_and(|v| values_equal(&v, value))
        {
            return None;
        }
    }
    let written = content.body.attributes().count();
    if written != want.len() {
        return None;
    }
    let value = match (whole, fields.is_empty()) {
        (Some(v), true) => v,
        (None, false) => Value::Object(fields),
        _ => return None,
    };
    Some((key, value))
}

/// The expressions that are the one element of a `for_each` list of at most one: `[x]`, and the
/// one-element branch of `cond ? [] : [x]` (either way round).
fn single_elements(expr: &hcl_edit::expr::Expression) -> Vec<&hcl_edit::expr::Expression> {
    use hcl_edit::expr::Expression as E;
    match expr {
        E::Parenthesis(inner) => single_elements(inner.inner()),
        E::Array(items) if items.len() == 1 => items.iter().collect(),
        E::Conditional(c) => {
            let empty = |e: &E| matches!(e, E::Array(items) if items.is_empty());
            match (&c.true_expr, &c.false_expr) {
                (yes, no) if empty(no) => single_elements(yes),
                (yes, no) if empty(yes) => single_elements(no),
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// The operations of one resource as the patcher applies them: settings of a nested block that
/// `dynamic` blocks make and that does not exist yet (`ttl.enabled`, `ttl.attribute_name` where
/// `dynamic "ttl"` yields nothing) become one new block, which the patcher writes as an element of
/// the `for_each`; a setting on its own could not say which element.
pub fn grouped_for_dynamic_blocks(repo: &Repo, address: &Address, ops: &[Op]) -> Vec<Op> {
    let absent_dynamic = |block: &str| {
        repo.find_resource(address).is_some_and(|location| has_dynamic(repo, &location, block))
            && crate::eval::block_origins(repo, address, block).is_some_and(|o| o.is_empty())
    };
    let nested = |op: &Op| match op {
        Op::Set { path, value: value @ AttrValue::Literal(_) } => match path.0.as_slice() {
            [Seg::Name(block), Seg::Name(attr)] => Some((block.clone(), attr.clone(), value.clone())),
            _ => None,
        },
        _ => None,
    };
    let mut out: Vec<Op> = Vec::new();
    let mut grouped: Vec<String> = Vec::new();
    for op in ops {
        match nested(op) {
            Some((block, _, _)) if grouped.contains(&block) => {}
            Some((block, _, _)) if absent_dynamic(&block) => {
                let mut spec = BlockSpec::default();
                for (_, attr, value) in ops.iter().filter_map(nested).filter(|(b, _, _)| *b == block) {
                    spec.attrs.push((attr, value));
                }
                out.push(Op::AddBlock { block_type: block.clone(), spec });
                grouped.push(block);
            }
            _ => out.push(op.clone()),
        }
    }
    out
}

/// How a path into a block type that `dynamic` blocks produce reaches its attribute.
enum DynamicRoute<'b> {
    /// A block written in the body: the path with the index among the written blocks.
    Written(AttrPath),
    /// A block of a `dynamic` block: the attribute in its `content`, the rest of the path, and the
    /// iterator with the `for_each` element it is bound to.
    Element {
        expr: &'b hcl_edit::expr::Expression,
        tail: Vec<Seg>,
        iterator: String,
        for_each: &'b hcl_edit::expr::Expression,
        element: Seg,
    },
    /// A `for_each` of those blocks cannot be computed.
    Unknown,
}

/// `None` when no `dynamic` block produces blocks of the path's first type.
fn through_dynamic<'b>(
    repo: &Repo,
    address: &Address,
    body: &'b hcl_edit::structure::Block,
    path: &AttrPath,
) -> Option<DynamicRoute<'b>> {
    let (Seg::Name(block_type), rest) = path.0.split_first()? else { return None };
    let is_dynamic = |b: &&hcl_edit::structure::Block| {
        b.ident.as_str() == "dynamic" && b.labels.first().map(edit::label_str) == Some(block_type)
    };
    if !body.body.blocks().any(|b| is_dynamic(&b)) {
        return None;
    }
    let Some(origins) = crate::eval::block_origins(repo, address, block_type) else {
        return Some(DynamicRoute::Unknown);
    };
    let (index, rest) = match rest.split_first() {
        Some((Seg::Index(i), rest)) => (*i, rest),
        _ if origins.len() == 1 => (0, rest),
        _ => return Some(DynamicRoute::Unknown),
    };
    match origins.get(index)? {
        crate::eval::BlockOrigin::Written(k) => {
            let segs = [vec![Seg::Name(block_type.clone()), Seg::Index(*k)], rest.to_vec()].concat();
            Some(DynamicRoute::Written(AttrPath(segs)))
        }
        crate::eval::BlockOrigin::Dynamic { block, element, iterator } => {
            let dynamic = body.body.blocks().filter(is_dynamic).nth(*block)?;
            let for_each = &dynamic.body.get_attribute("for_each")?.value;
            let content = dynamic.body.blocks().find(|b| b.ident.as_str() == "content")?;
            let (expr, tail, _) = origin::attribute_at(&content.body, rest)?;
            Some(DynamicRoute::Element { expr, tail, iterator: iterator.clone(), for_each, element: element.clone() })
        }
    }
}

/// The first candidate after which the target passes `check`, no other argument of the target
/// changed than the one at `changing` (when given: an origin the drifted value shares with the
/// target's name would rename, and so replace, the resource), and no other resource instance's
/// effective configuration changed (instances `expected_gone` may disappear; instances the same
/// calls change too, `alongside`, may change exactly that way).
pub(crate) fn choose(
    repo: &Repo,
    target: &Address,
    changing: Option<&AttrPath>,
    candidates: Vec<Candidate>,
    check: &dyn Fn(Option<Value>) -> bool,
    expected_gone: &dyn Fn(&Address) -> bool,
    alongside: &[(Address, Op)],
) -> Result<Candidate, String> {
    if candidates.is_empty() {
        return Err("no edit of the configuration expresses this change".into());
    }
    // The other instances' configurations before, each computed at most once and only where a
    // candidate can reach it.
    let before_eval = crate::eval::Evaluator::new(repo);
    let before_instances = before_eval.instances();
    let mut before_configs: BTreeMap<Address, Option<Value>> = BTreeMap::new();
    let target_before = changing.and_then(|path| Some((path, effective_config(repo, target)?)));
    let mut leaks = Vec::new();
    for candidate in candidates {
        // Module code fetched from outside the repository is never written (`Repo::set_file`).
        if let Some(file) =
            std::iter::once(&candidate.file).chain(candidate.also.iter().map(|(f, _)| f)).find(|f| repo.is_external(f))
        {
            leaks.push(format!(
                "{} (would change {}, module code from outside the repository)",
                candidate.note,
                file.display()
            ));
            continue;
        }
        let scratch = with_candidate(repo, &candidate);
        if !check(effective_config(&scratch, target)) {
            leaks.push(format!("{} (does not give {target} the value)", candidate.note));
            continue;
        }
        if let Some((path, target_before)) = &target_before {
            let target_after = effective_config(&scratch, target).unwrap_or(Value::Null);
            if let Some(other) = changed_argument(target_before, &target_after, path) {
                leaks.push(format!("{} (would change {target}'s {other} too)", candidate.note));
                continue;
            }
        }
        let files: Vec<&Path> =
            std::iter::once(candidate.file.as_path()).chain(candidate.also.iter().map(|(f, _)| f.as_path())).collect();
        let reach = Reach::of(repo, &scratch, &files);
        let other = |a: &Address| a != target && !(a.without_key() == target.without_key() && a.key.is_none());
        let mut before = BTreeMap::new();
        for a in before_instances.iter().filter(|a| other(a) && reach.contains(repo, a)) {
            let config = before_configs.entry(a.clone()).or_insert_with(|| without_lifecycle(before_eval.config(a)));
            if let Some(config) = config {
                before.insert(a.clone(), config.clone());
            }
        }
        let after_eval = crate::eval::Evaluator::new(&scratch);
        let after: BTreeMap<Address, Value> = after_eval
            .instances()
            .into_iter()
            .filter(|a| other(a) && reach.contains(&scratch, a))
            .filter_map(|a| Some((a.clone(), without_lifecycle(after_eval.config(&a))?)))
            .collect();
        let changed = before
            .iter()
            .filter(|(a, _)| !expected_gone(a))
            .find(|(a, v)| after.get(*a) != Some(*v) && !made_alongside(alongside, a, v, after.get(*a)))
            .map(|(a, _)| a.clone())
            .or_else(|| after.keys().find(|a| !before.contains_key(*a)).cloned());
        if let Some(other) = changed {
            leaks.push(format!("{} (would change {other} too)", candidate.note));
            continue;
        }
        match other_workspace_changed(repo, &scratch, &reach, expected_gone) {
            None => return Ok(candidate),
            Some(other) => leaks.push(format!("{} (would change {other} too)", candidate.note)),
        }
    }
    Err(format!("every edit considered would change something else: {}", leaks.join("; ")))
}

/// `repo` with `candidate`'s files written.
fn with_candidate(repo: &Repo, candidate: &Candidate) -> Repo {
    let mut scratch = repo.clone();
    scratch.set_file(&candidate.file, candidate.text.clone());
    for (file, text) in &candidate.also {
        scratch.set_file(file, text.clone());
    }
    scratch
}

/// Whether the same calls delete `address` too (`alongside`).
fn removed_alongside(alongside: &[(Address, Op)], address: &Address) -> bool {
    alongside.iter().any(|(other, op)| other == address && *op == Op::RemoveResource)
}

/// Another instance the configuration makes from the same resource block as `address` (another
/// `count`/`for_each` instance, or the same resource of another call of its module).
fn sharing_block(repo: &Repo, address: &Address, location: &BlockLocation) -> Option<Address> {
    crate::eval::instances(repo).into_iter().find(|a| {
        a != address
            && a.rtype == address.rtype
            && a.name == address.name
            && a.data == address.data
            && repo.find_resource(a).is_some_and(|l| l.file == location.file && l.sel == location.sel)
    })
}

fn remove_at(value: &mut Value, segs: &[Seg]) {
    match segs {
        [] => {}
        [last] => match (last, value) {
            (Seg::Name(n) | Seg::Key(n), Value::Object(map)) => {
                map.remove(n);
            }
            (Seg::Name(n) | Seg::Key(n), Value::Array(items)) if items.len() == 1 => {
                if let Some(map) = items[0].as_object_mut() {
                    map.remove(n);
                }
            }
            (Seg::Index(i), Value::Array(items)) if *i < items.len() => items[*i] = Value::Null,
            _ => {}
        },
        [first, rest @ ..] => {
            if let Some(child) = child_mut(value, first) {
                remove_at(child, rest);
            }
        }
    }
}

/// One step into a configuration, as [`value_at_path`] takes it (a block that occurs once is
/// entered without an index).
fn child_mut<'a>(value: &'a mut Value, seg: &Seg) -> Option<&'a mut Value> {
    match seg {
        Seg::Name(n) | Seg::Key(n) => {
            if value.as_array().is_some_and(|items| items.len() == 1) {
                return value.get_mut(0)?.get_mut(n);
            }
            value.as_object_mut()?.get_mut(n)
        }
        Seg::Index(0) if value.is_object() => Some(value),
        Seg::Index(i) => value.as_array_mut()?.get_mut(*i),
    }
}

/// The first top-level argument (or block) that differs between two configurations of one instance
/// other than what is at `path` (for a member of a JSON document held as text, the argument that
/// holds the document; a block left empty once that value is gone counts as absent).
fn changed_argument(before: &Value, after: &Value, path: &AttrPath) -> Option<String> {
    let (mut before, mut after) = (before.clone(), after.clone());
    let depth = (1..=path.0.len())
        .rev()
        .find(|len| {
            let prefix = AttrPath(path.0[..*len].to_vec());
            value_at_path(&before, &prefix).is_some() || value_at_path(&after, &prefix).is_some()
        })
        .unwrap_or(path.0.len());
    for len in (1..=depth).rev() {
        let prefix = &path.0[..len];
        for config in [&mut before, &mut after] {
            let empty = len == depth || value_at_path(config, &AttrPath(prefix.to_vec())).is_none_or(|v| is_empty(&v));
            if empty {
                remove_at(config, prefix);
            }
        }
    }
    let (Value::Object(b), Value::Object(a)) = (&before, &after) else {
        return (before != after).then(|| "configuration".into());
    };
    b.keys().chain(a.keys()).find(|k| b.get(*k) != a.get(*k)).cloned()
}

/// An object with nothing in it, or a block list whose blocks have nothing in them.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.values().all(Value::is_null),
        Value::Array(items) => items.iter().all(is_empty),
        Value::Null => true,
        _ => false,
    }
}

/// Whether `after` is `before` with exactly the changes the same calls make to `address`.
fn made_alongside(alongside: &[(Address, Op)], address: &Address, before: &Value, after: Option<&Value>) -> bool {
    let ops: Vec<&Op> = alongside.iter().filter(|(a, _)| a == address).map(|(_, op)| op).collect();
    let Some(after) = after else { return false };
    if ops.is_empty() {
        return false;
    }
    let mut expected = before.clone();
    for op in ops {
        match op {
            Op::Set { path, value: AttrValue::Literal(v) } => {
                if !set_at(&mut expected, &path.0, v.clone()) {
                    return false;
                }
            }
            Op::Remove { path } => remove_at(&mut expected, &path.0),
            _ => return false,
        }
    }
    values_equal(&expected, after)
}

/// Set a value in a configuration at a path (objects made as needed). `false` where the path goes
/// through something else.
fn set_at(value: &mut Value, segs: &[Seg], new: Value) -> bool {
    let Some((first, rest)) = segs.split_first() else {
        *value = new;
        return true;
    };
    if value.is_null() {
        *value = Value::Object(Map::new());
    }
    match first {
        Seg::Name(n) | Seg::Key(n) => {
            if value.as_array().is_some_and(|items| items.len() == 1) {
                return value.get_mut(0).is_some_and(|v| set_at(v, segs, new));
            }
            match value.as_object_mut() {
                Some(map) => set_at(map.entry(n.clone()).or_insert(Value::Null), rest, new),
                None => false,
            }
        }
        Seg::Index(i) => value.as_array_mut().and_then(|items| items.get_mut(*i)).is_some_and(|v| set_at(v, rest, new)),
    }
}

/// The first instance, in another workspace of the root module, whose configuration the edit
/// `before` -> `after` changes (the drifted instance included: the drift is this workspace's).
fn other_workspace_changed(
    before: &Repo,
    after: &Repo,
    reach: &Reach,
    expected_gone: &dyn Fn(&Address) -> bool,
) -> Option<String> {
    for (name, files) in before.other_workspaces() {
        let (Ok(was), Ok(now)) = (before.as_workspace(name, files), after.as_workspace(name, files)) else {
            return Some(format!("workspace {name} (its variable files are missing)"));
        };
        let (was_eval, now_eval) = (crate::eval::Evaluator::new(&was), crate::eval::Evaluator::new(&now));
        let mut addresses: Vec<Address> = was_eval.instances();
        addresses.extend(now_eval.instances());
        addresses.sort();
        addresses.dedup();
        for a in addresses.iter().filter(|a| reach.contains(before, a) && !expected_gone(a)) {
            if without_lifecycle(was_eval.config(a)) != without_lifecycle(now_eval.config(a)) {
                return Some(format!("{a} in workspace {name}"));
            }
        }
    }
    None
}

/// A configuration without `lifecycle`, which is Terraform's bookkeeping, not the resource's
/// configuration: what "unchanged" compares.
pub fn without_lifecycle(config: Option<Value>) -> Option<Value> {
    let mut config = config?;
    if let Some(map) = config.as_object_mut() {
        map.remove("lifecycle");
    }
    without_nulls(&mut config);
    Some(config)
}

/// An argument set to `null` is an argument left out, as Terraform reads it
/// (`x = each.key == "a" ? 1 : null` leaves the other instances as they were).
fn without_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(without_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(without_nulls),
        _ => {}
    }
}

/// The instances an edit of some files can change. References to other resources stay symbolic in
/// an effective configuration, so an edit inside resource blocks only changes the instances of
/// those blocks; an `import` or `moved` block changes no instance's configuration; an edit of
/// anything else (a variable, a local, a module call, a provider, a `.tfvars` file, text outside
/// blocks) may change any instance, and every one is checked.
#[derive(Debug)]
pub enum Reach {
    All,
    /// Resource blocks, by the module directory that holds them, type and name.
    Blocks(Vec<(PathBuf, String, String)>),
}

impl Reach {
    /// What the edit of `files` from `before` to `after` can reach.
    pub fn of(before: &Repo, after: &Repo, files: &[&Path]) -> Reach {
        let mut blocks = Vec::new();
        for file in files {
            if file.extension().is_none_or(|e| e != "tf") {
                return Reach::All;
            }
            let (Some(old), Some(new)) = (top_level(before, file), top_level(after, file)) else { return Reach::All };
            let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
            for key in old.keys().chain(new.keys()) {
                if old.get(key) == new.get(key) {
                    continue;
                }
                match key {
                    (ident, labels, _) if ident == "resource" && labels.len() == 2 => {
                        blocks.push((dir.clone(), labels[0].clone(), labels[1].clone()))
                    }
                    (ident, _, _) if ident == "import" || ident == "moved" => {}
                    _ => return Reach::All,
                }
            }
        }
        Reach::Blocks(blocks)
    }

    /// Whether the edit can change `address`'s configuration.
    pub fn contains(&self, repo: &Repo, address: &Address) -> bool {
        match self {
            Reach::All => true,
            Reach::Blocks(blocks) => blocks.iter().any(|(dir, rtype, name)| {
                address.rtype == *rtype
                    && address.name == *name
                    && !address.data
                    && repo.module_dir(&address.module_path()).is_some_and(|d| d == dir)
            }),
        }
    }
}

/// A top-level block by kind, labels and occurrence (the second `locals` block is 1).
type BlockKey = (String, Vec<String>, usize);

/// A file's top-level blocks with their text; `None` when the file does not parse or has
/// top-level attributes.
fn top_level(repo: &Repo, file: &Path) -> Option<BTreeMap<BlockKey, String>> {
    let (body, text) = (repo.body(file)?, repo.text(file)?);
    if body.attributes().next().is_some() {
        return None;
    }
    let mut out = BTreeMap::new();
    for block in body.blocks() {
        let labels: Vec<String> = block.labels.iter().map(|l| edit::label_str(l).to_string()).collect();
        let mut occurrence = 0;
        while out.contains_key(&(block.ident.to_string(), labels.clone(), occurrence)) {
            occurrence += 1;
        }
        let source = text.get(block.span()?)?.to_string();
        out.insert((block.ident.to_string(), labels, occurrence), source);
    }
    Some(out)
}

/// What a path holds in an effective configuration, looking into JSON documents held as text.
enum Member {
    Known(Value),
    /// Inside a document the evaluator cannot compute (it refers to other resources).
    Computed,
    Missing,
}

fn document_value(config: &Value, path: &AttrPath) -> Member {
    if let Some(v) = value_at_path(config, path) {
        return Member::Known(v);
    }
    for split in (1..path.0.len()).rev() {
        let Some(held) = value_at_path(config, &AttrPath(path.0[..split].to_vec())) else { continue };
        let Some(text) = held.as_str() else { continue };
        if is_symbolic(&held) {
            return Member::Computed;
        }
        let Ok(document) = serde_json::from_str::<Value>(text) else { return Member::Missing };
        return match value_at_path(&document, &AttrPath(path.0[split..].to_vec())) {
            Some(v) => Member::Known(v),
            None => Member::Missing,
        };
    }
    Member::Missing
}

/// Two texts that hold the same JSON document (a heredoc pretty-prints what the call sent
/// compact): the provider compares documents, not their spelling.
fn same_document(a: &Value, b: &Value) -> bool {
    let parse = |v: &Value| v.as_str().and_then(|t| serde_json::from_str::<Value>(t).ok());
    matches!((parse(a), parse(b)), (Some(x @ (Value::Object(_) | Value::Array(_))), Some(y)) if x == y)
}

fn with_key(path: &AttrPath, key: &str) -> AttrPath {
    let mut segs = path.0.clone();
    segs.push(Seg::Key(key.to_string()));
    AttrPath(segs)
}

/// Whether `path` names a map-valued attribute (not a nested block).
fn is_map_attribute(repo: &Repo, location: &BlockLocation, path: &AttrPath) -> bool {
    let body = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel));
    match body.and_then(|b| origin::attribute_at(&b.body, &path.0)) {
        Some((_, tail, _)) => tail.is_empty(),
        None => path.0.len() > 1,
    }
}

/// A map argument of a resource inside a module (`tags = merge({ Name = var.name }, var.tags)`) whose
/// every origin is shared with other calls: the module gains an input for this resource's extra
/// entries (`vpc_tags`, default `{}`, merged last, as widely used modules do), and this call sets it.
/// Only for a call without `count`/`for_each`, whose input belongs to one instance.
fn module_input_overlay(
    repo: &Repo,
    address: &Address,
    location: &BlockLocation,
    expr: &Expression,
    attr: &Seg,
    tail: &[Seg],
    value: &AttrValue,
) -> Option<Candidate> {
    let (Seg::Name(attr), [Seg::Key(_) | Seg::Name(_)]) = (attr, tail) else { return None };
    let call = address.module.last()?;
    if call.key.is_some() {
        return None;
    }
    let noun = address.rtype.strip_prefix("aws_").unwrap_or(&address.rtype);
    let input = if address.name == "this" || address.name == noun {
        format!("{noun}_{attr}")
    } else {
        format!("{}_{noun}_{attr}", address.name)
    };
    let module_dir = repo.module_dir(&address.module_path())?.clone();
    if repo.find_block(&module_dir, &BlockSel::new("variable", &[&input])).is_some() {
        return None;
    }
    let parent_path = address.module[..address.module.len() - 1]
        .iter()
        .map(|m| format!("module.{}", m.name))
        .collect::<Vec<_>>()
        .join(".");
    let parent_dir = repo.module_dir(&parent_path)?.clone();
    let call_sel = BlockSel::new("module", &[&call.name]);
    let call_file = repo.find_block(&parent_dir, &call_sel)?.clone();
    // The variables go where the module declares its others.
    let variables_file = repo
        .parsed_tf_in(&module_dir)
        .find(|(_, body)| body.blocks().any(|b| b.ident.as_str() == "variable"))
        .map(|(file, _)| file.clone())
        .unwrap_or_else(|| location.file.clone());
    let mut texts: std::collections::BTreeMap<PathBuf, String> = std::collections::BTreeMap::new();
    let text_of = |texts: &std::collections::BTreeMap<PathBuf, String>, file: &Path| {
        texts.get(file).cloned().or_else(|| repo.text(file).map(str::to_string))
    };
    // The resource merges the new input last.
    let span = expr.span()?;
    let resource_text = text_of(&texts, &location.file)?;
    let written = &resource_text[span.clone()];
    let merged_expr = match written.strip_prefix("merge(").and_then(|w| w.strip_suffix(')')) {
        // One more argument of a one-line merge().
        Some(args) if !written.contains('\n') => {
            format!("merge({}, var.{input})", args.trim_end().trim_end_matches(','))
        }
        _ => format!("merge({written}, var.{input})"),
    };
    let merged = format!("{}{merged_expr}{}", &resource_text[..span.start], &resource_text[span.end..]);
    texts.insert(location.file.clone(), merged);
    // The module declares it.
    let mut declared = text_of(&texts, &variables_file)?;
    if !declared.ends_with('\n') {
        declared.push('\n');
    }
    declared.push_str(&format!(
        "\nvariable \"{input}\" {{\n  description = \"Additional {attr} for the {noun}\"\n  type        = map(string)\n  default     = {{}}\n}}\n"
    ));
    texts.insert(variables_file, declared);
    // The call sets this entry.
    let call_text = text_of(&texts, &call_file)?;
    let entry = AttrValue::Literal(Value::Object(
        [(
            edit::seg_name(&tail[0])?.to_string(),
            match value {
                AttrValue::Literal(v) => v.clone(),
                AttrValue::Reference(_) => return None,
            },
        )]
        .into_iter()
        .collect(),
    ));
    let with_input = edit::set(&call_text, Some(&call_sel), &AttrPath(vec![Seg::Name(input.clone())]), &entry).ok()?;
    texts.insert(call_file.clone(), with_input);
    if texts.values().any(|t| edit::parse(t).is_err()) {
        return None;
    }
    let mut files = texts.into_iter();
    let (file, text) = files.next()?;
    Some(Candidate {
        file,
        text,
        note: format!(
            "a new input {input} of the module in {}, merged into {attr} of {}.{}, set on module.{} in {}",
            module_dir.display(),
            address.rtype,
            address.name,
            call.name,
            call_file.display()
        ),
        also: files.collect(),
    })
}

/// One instance of a count/for_each block differs: a condition on its index or key.
fn instance_override(
    text: &str,
    location: &BlockLocation,
    address: &Address,
    path: &AttrPath,
    found: Option<&(&Expression, Vec<Seg>, usize)>,
    value: &AttrValue,
) -> Option<Candidate> {
    let condition = match address.key.as_ref()? {
        InstanceKey::Int(i) => format!("count.index == {i}"),
        InstanceKey::Str(k) => format!("each.key == {}", crate::render::quote(k)),
    };
    let rendered = value.render("").ok()?;
    let new = match found {
        Some((expr, tail, _)) => {
            let span = expr.span()?;
            let old = &text[span.clone()];
            let replacement = if tail.is_empty() {
                format!("{condition} ? {rendered} : {old}")
            } else {
                format!("merge({old}, {condition} ? {} : {{}})", overlay(tail, &rendered)?)
            };
            format!("{}{replacement}{}", &text[..span.start], &text[span.end..])
        }
        None => {
            let created = edit::set(text, Some(&location.sel), path, value).ok()?;
            let span = edit::find(&created, Some(&location.sel), path).ok()??;
            let set = &created[span.clone()];
            format!("{}{condition} ? {set} : null{}", &created[..span.start], &created[span.end..])
        }
    };
    edit::parse(&new).ok()?;
    Some(Candidate {
        file: location.file.clone(),
        text: new,
        note: format!("written as a condition on {address} only, since its origin is shared"),
        also: Vec::new(),
    })
}

/// `{ a = { b = VALUE } }` for the path `a.b`.
fn overlay(tail: &[Seg], rendered: &str) -> Option<String> {
    let mut out = rendered.to_string();
    for seg in tail.iter().rev() {
        let key = match seg {
            Seg::Name(n) | Seg::Key(n) => render_key(n),
            Seg::Index(_) => return None,
        };
        out = format!("{{ {key} = {out} }}");
    }
    Some(out)
}

/// A map built elsewhere (a shared local, a function): overlay the one entry with `merge()` on this resource.
fn merge_overlay(
    text: &str,
    location: &BlockLocation,
    expr: &Expression,
    attr: &AttrPath,
    tail: &[Seg],
    value: &AttrValue,
) -> Option<Candidate> {
    // merge() takes maps: a document the code writes as text (`jsonencode({...})`, a heredoc) is
    // a string, and merging into it would not even validate.
    if yields_text(expr) {
        return None;
    }
    let span = expr.span()?;
    let rendered = value.render("").ok()?;
    let new = format!(
        "{}merge({}, {}){}",
        &text[..span.start],
        &text[span.clone()],
        overlay(tail, &rendered)?,
        &text[span.end..]
    );
    edit::parse(&new).ok()?;
    Some(Candidate {
        file: location.file.clone(),
        text: new,
        note: format!(
            "overlaid {} on {attr} with merge() on this resource, since its origin is shared",
            AttrPath(tail.to_vec())
        ),
        also: Vec::new(),
    })
}

/// A top-level argument the provider's schema types as a string (a policy document): no
/// `merge()` can overlay a member of it.
fn is_text_argument(rtype: &str, path: &[Seg]) -> bool {
    let [Seg::Name(name)] = path else { return false };
    crate::Schema::newest()
        .ok()
        .and_then(|schema| schema.resource(rtype))
        .and_then(|resource| resource.argument(name))
        .is_some_and(|attribute| matches!(attribute.value_type(), crate::schema::ValueType::String))
}

/// An expression whose value is text whatever its arguments: a string, a template, or a function
/// that returns a string.
fn yields_text(expr: &Expression) -> bool {
    const TEXT_FUNCTIONS: &[&str] = &[
        "jsonencode",
        "yamlencode",
        "templatefile",
        "format",
        "join",
        "file",
        "replace",
        "tostring",
        "base64encode",
        "trimspace",
    ];
    match expr {
        Expression::String(_) | Expression::StringTemplate(_) | Expression::HeredocTemplate(_) => true,
        Expression::FuncCall(call) => TEXT_FUNCTIONS.contains(&call.name.name.as_str()),
        Expression::Parenthesis(inner) => yields_text(inner.inner()),
        _ => false,
    }
}

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

fn remove_resource(
    repo: &mut Repo,
    address: &Address,
    location: &BlockLocation,
    applied: &mut Applied,
    alongside: &[(Address, Op)],
) -> Result<(), PatchError> {
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    if let Some(done) = crate::module_removal::remove_in_module_instance(repo, address, location, applied) {
        return done;
    }
    if let Some(done) = remove_module_instance(repo, address, applied) {
        return done;
    }
    let text = repo.text(&location.file).unwrap_or_default().to_string();
    if address.key.is_some() && has_count_or_for_each(&text, &location.sel) {
        return remove_instance(repo, address, location, applied, alongside);
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
        Err(e) => return Some(Err(refused(e))),
    };
    applied
        .notes
        .push(format!("{address}: the last instance of module.{} goes with its entry: {}", call.name, chosen.note));
    write_candidate(repo, chosen, applied);
    Some(Ok(()))
}

/// One instance of a count/for_each resource: its entry leaves the `for_each` map at its origin, or
/// the last `count` item leaves the list; other instances must stay as they are.
fn remove_instance(
    repo: &mut Repo,
    address: &Address,
    location: &BlockLocation,
    applied: &mut Applied,
    alongside: &[(Address, Op)],
) -> Result<(), PatchError> {
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
        None => refused(e),
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

/// Write a file the patch changed, with what the change touched laid out as `terraform fmt` would
/// ([`crate::fmt::tidy`]).
pub(crate) fn write_candidate(repo: &mut Repo, chosen: Candidate, applied: &mut Applied) {
    write(repo, &chosen.file, chosen.text, applied);
    for (file, text) in chosen.also {
        write(repo, &file, text, applied);
    }
}

pub(crate) fn write(repo: &mut Repo, file: &Path, text: String, applied: &mut Applied) {
    let text = match repo.text(file) {
        Some(before) => crate::fmt::tidy(before, &text),
        None => crate::fmt::format(&text),
    };
    repo.set_file(file, text);
    if !applied.files.iter().any(|f| f == file) {
        applied.files.push(file.to_path_buf());
    }
}

fn describe_matching(matching: &[(String, Value)]) -> String {
    matching.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
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

/// A resource made outside Terraform that follows the pattern of a `for_each` fleet of its type
/// (`name = "${local.name_prefix}-${each.key}"`, and its name is that prefix and suffix around a new
/// key): the address it would have as a new entry of the fleet. Only in the root module, where an
/// import block can name it.
pub fn fleet_address(repo: &Repo, rtype: &str, name_attr: &str, name: &str) -> Option<Address> {
    let instances = crate::eval::instances(repo);
    let mut blocks: Vec<Address> = instances
        .iter()
        .filter(|a| a.module.is_empty() && a.rtype == rtype && matches!(a.key, Some(InstanceKey::Str(_))))
        .map(|a| a.without_key())
        .collect();
    blocks.dedup();
    for block in blocks {
        let keyed: Vec<(String, String)> = instances
            .iter()
            .filter(|a| a.without_key() == block)
            .filter_map(|a| {
                let Some(InstanceKey::Str(k)) = &a.key else { return None };
                let config = effective_config(repo, a)?;
                Some((k.clone(), config.get(name_attr)?.as_str()?.to_string()))
            })
            .collect();
        let Some((k0, n0)) = keyed.first() else { continue };
        let Some(at) = n0.find(k0.as_str()) else { continue };
        let (prefix, suffix) = (&n0[..at], &n0[at + k0.len()..]);
        if prefix.is_empty() && suffix.is_empty() {
            continue;
        }
        let follows = keyed.iter().all(|(k, n)| *n == format!("{prefix}{k}{suffix}"));
        let Some(key) = name.strip_prefix(prefix).and_then(|rest| rest.strip_suffix(suffix)) else { continue };
        let fresh = !keyed.iter().any(|(k, _)| k == key);
        let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if follows && fresh && plain {
            return Some(Address { key: Some(InstanceKey::Str(key.to_string())), ..block });
        }
    }
    None
}

/// The next instance of every `count` block of `rtype`, in every module instance: `block[n]` for a
/// block that makes the instances `0..n`. What the new instance would be is for the caller to check
/// ([`adopt_into_count`] makes it).
pub fn count_fleet_addresses(repo: &Repo, rtype: &str) -> Vec<Address> {
    let instances = crate::eval::instances(repo);
    let mut blocks: Vec<Address> = instances
        .iter()
        .filter(|a| !a.data && a.rtype == rtype && matches!(a.key, Some(InstanceKey::Int(_))))
        .map(Address::without_key)
        .collect();
    blocks.sort();
    blocks.dedup();
    blocks
        .into_iter()
        .filter_map(|block| {
            let n = instances.iter().filter(|a| a.without_key() == block).count();
            let indexes_in_order = (0..n).all(|i| {
                instances.iter().any(|a| a.without_key() == block && a.key == Some(InstanceKey::Int(i as i64)))
            });
            indexes_in_order.then_some(Address { key: Some(InstanceKey::Int(n as i64)), ..block })
        })
        .collect()
}

/// A new instance of a `count` block: its `count` grows by one at its origin (a module call's input,
/// a variable, the literal), with nothing else changed, and an import block in the root module
/// names the instance. The new instance's values are the block's: the caller checks them against
/// the creating call before choosing this.
fn adopt_into_count(
    repo: &mut Repo,
    address: &Address,
    import_id: &str,
    applied: &mut Applied,
) -> Result<(), EditError> {
    let Some(InstanceKey::Int(n)) = address.key else {
        return Err(EditError::Value(format!("{address} is not an instance of a count resource")));
    };
    let block = address.without_key();
    let location = repo.find_resource(&block).ok_or_else(|| EditError::Value(format!("no block for {block}")))?;
    let count = repo
        .body(&location.file)
        .and_then(|b| edit::find_block(b, &location.sel))
        .and_then(|b| b.body.get_attribute("count"))
        .ok_or_else(|| EditError::Value(format!("{block} has no count")))?;
    let dir = repo.module_dir(&address.module_path()).cloned().unwrap_or_default();
    let site = Site {
        module: address.module.clone(),
        dir,
        file: location.file.clone(),
        block: location.sel.clone(),
        key: None,
    };
    let mut tracer = Tracer::new(repo);
    let grown = Change::Set(AttrValue::Literal(Value::from(n + 1)));
    tracer.expr(&site, &location.file, &count.value, &[], &grown, "count", 0);
    let candidates = tracer.out;
    let check = |config: Option<Value>| config.is_some();
    let chosen = choose(repo, address, None, candidates, &check, &|_| false, &[]).map_err(EditError::Value)?;
    applied.notes.push(format!("{address}: the next instance of its count: {}", chosen.note));
    write_candidate(repo, chosen, applied);
    if import_id.is_empty() {
        return Ok(());
    }
    append_import(repo, address, address.to_string(), &location.file, import_id, applied)?;
    Ok(())
}

/// A new instance of a `for_each` block: the element its `for_each` map gains (each argument that
/// reads `each.value.FIELD` gives FIELD its value), at the map's origin, with an import block. The
/// new instance must then have every value the creating call set.
fn adopt_into_fleet(
    repo: &mut Repo,
    address: &Address,
    spec: &BlockSpec,
    import_id: &str,
    applied: &mut Applied,
) -> Result<(), EditError> {
    let Some(InstanceKey::Str(key)) = &address.key else {
        return Err(EditError::Value(format!("{address} is not an instance of a for_each resource")));
    };
    let block = address.without_key();
    let location = repo.find_resource(&block).ok_or_else(|| EditError::Value(format!("no block for {block}")))?;
    let text = repo.text(&location.file).unwrap_or_default().to_string();
    let body = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel));
    let for_each = body
        .and_then(|b| b.body.get_attribute("for_each"))
        .ok_or_else(|| EditError::Value(format!("{block} has no for_each")))?;
    let want: Map<String, Value> = spec.literal_attrs();
    let mut element = Map::new();
    for attr in body.into_iter().flat_map(|b| b.body.attributes()) {
        let source = edit::expr_text(&text, &attr.value);
        if let (Some(field), Some(value)) = (source.trim().strip_prefix("each.value."), want.get(attr.key.as_str())) {
            element.insert(field.to_string(), value.clone());
        }
    }
    // Nested blocks that `dynamic` blocks make from a field of the entry (`for_each =
    // each.value.attributes`): that field, a map by the iterator's key or a list of its values.
    for dynamic in body.into_iter().flat_map(|b| b.body.blocks()).filter(|d| d.ident.as_str() == "dynamic") {
        let Some(block_type) = dynamic.labels.first().map(edit::label_str) else { continue };
        let Some(for_each) = dynamic.body.get_attribute("for_each") else { continue };
        let source = edit::expr_text(&text, &for_each.value);
        let Some(field) = source.trim().strip_prefix("each.value.") else { continue };
        let (mut map, mut list) = (Map::new(), Vec::new());
        for (_, nested) in spec.blocks.iter().filter(|(t, _)| t == block_type) {
            let literal: Map<String, Value> = nested.literal_attrs();
            match dynamic_element(&text, dynamic, block_type, &literal) {
                Some((Some(k), v)) => {
                    map.insert(k, v);
                }
                Some((None, v)) => list.push(v),
                None => {}
            }
        }
        match (map.is_empty(), list.is_empty()) {
            (false, true) => {
                element.insert(field.to_string(), Value::Object(map));
            }
            (true, false) => {
                element.insert(field.to_string(), Value::Array(list));
            }
            _ => {}
        }
    }
    let site = Site {
        module: Vec::new(),
        dir: repo.module_dir("").cloned().unwrap_or_default(),
        file: location.file.clone(),
        block: location.sel.clone(),
        key: address.key.clone(),
    };
    let mut tracer = Tracer::new(repo);
    let change = Change::Set(AttrValue::Literal(Value::Object(element)));
    tracer.expr(&site, &location.file, &for_each.value, &[Seg::Key(key.clone())], &change, "", 0);
    let candidates = tracer.out;
    let check = |config: Option<Value>| {
        config.is_some_and(|c| want.iter().all(|(k, v)| c.get(k).is_some_and(|have| values_equal(have, v))))
    };
    let chosen = choose(repo, address, None, candidates, &check, &|_| false, &[]).map_err(EditError::Value)?;
    applied.notes.push(format!("{address}: a new entry of its for_each: {}", chosen.note));
    write_candidate(repo, chosen, applied);
    // The import block names the instance (`aws_sqs_queue.jobs["audit"]`), beside the block; a
    // resource the provider cannot import has none.
    if import_id.is_empty() {
        return Ok(());
    }
    let to = format!("{}[{}]", address.block_name(), crate::render::quote(key));
    append_import(repo, address, to, &location.file, import_id, applied)?;
    Ok(())
}

/// An import block naming `to` for the cloud object `import_id`, where Terraform reads it, in the
/// root module: in `file` for a resource of the root module, beside its module's call (else in
/// `imports.tf`) for one in a child module. Returns the file it went to.
pub(crate) fn append_import(
    repo: &mut Repo,
    address: &Address,
    to: String,
    file: &Path,
    import_id: &str,
    applied: &mut Applied,
) -> Result<PathBuf, EditError> {
    let target = match address.module.first() {
        None => file.to_path_buf(),
        Some(call) => {
            let root = repo.module_dir("").cloned().unwrap_or_default();
            repo.find_block(&root, &BlockSel::new("module", &[&call.name]))
                .cloned()
                .unwrap_or_else(|| root.join("imports.tf"))
        }
    };
    let text = repo.text(&target).unwrap_or_default().to_string();
    let text = edit::append_block(&text, "import", &[], &import_spec(to, import_id))?;
    write(repo, &target, text, applied);
    Ok(target)
}

/// `import { to = ..., id = ... }`.
fn import_spec(to: String, import_id: &str) -> BlockSpec {
    BlockSpec {
        attrs: vec![
            ("to".into(), AttrValue::Reference(to)),
            ("id".into(), AttrValue::Literal(Value::String(import_id.to_string()))),
        ],
        blocks: vec![],
    }
}

fn create_resource(
    repo: &mut Repo,
    address: &Address,
    spec: &BlockSpec,
    import_id: &str,
    applied: &mut Applied,
) -> Result<(), EditError> {
    // The next instance of a `count` block: its count grows where it comes from (a module call's
    // input, a variable, the literal). Tried first, on a copy: in a module two calls share, growing
    // one call's count is still that call's alone.
    let count_instance =
        matches!(address.key, Some(InstanceKey::Int(_))) && repo.find_resource(&address.without_key()).is_some();
    let mut grown = None;
    if count_instance {
        let (mut scratch, mut noted) = (repo.clone(), applied.clone());
        match adopt_into_count(&mut scratch, address, import_id, &mut noted) {
            Ok(()) => {
                *repo = scratch;
                *applied = noted;
                return Ok(());
            }
            Err(e) => grown = Some(e),
        }
    }
    // Inside a module whose code is not this call's to write (fetched, or called by others too):
    // the next element of a list input the module makes such resources from, or a resource at the
    // calling root on the module's outputs.
    if let Some(done) = crate::module_list::create_for_module(repo, address, spec, import_id, applied) {
        return done;
    }
    if let Some(e) = grown {
        return Err(e);
    }
    if address.module.is_empty()
        && matches!(address.key, Some(InstanceKey::Str(_)))
        && repo.find_resource(&address.without_key()).is_some()
    {
        return adopt_into_fleet(repo, address, spec, import_id, applied);
    }
    let dir = repo.module_dir(&address.module_path()).cloned().unwrap_or_default();
    // Where resources of this type live; else a new file named for them.
    let existing = repo.resources_of_type(&dir, &address.rtype);
    let mut counts: std::collections::BTreeMap<&PathBuf, usize> = std::collections::BTreeMap::new();
    for (file, _) in &existing {
        *counts.entry(file).or_default() += 1;
    }
    // Else beside the resource it refers to (a bucket's split resources go with the bucket); else
    // a new file named for the type.
    let referenced = || {
        spec.attrs.iter().find_map(|(_, value)| {
            let AttrValue::Reference(r) = value else { return None };
            let mut parts = r.split('.');
            let (rtype, name) = (parts.next()?, parts.next()?);
            let target = Address { module: address.module.clone(), key: None, ..Address::resource(rtype, name) };
            repo.find_resource(&target).map(|l| l.file)
        })
    };
    let file = counts
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(f, _)| (*f).clone())
        .or_else(referenced)
        .unwrap_or_else(|| dir.join(format!("{}.tf", address.rtype.trim_start_matches("aws_"))));
    // Terraform reads import blocks in the root module only: one for a resource in a child module
    // names it by its full address, beside the module's call.
    let to = if address.module.is_empty() { address.block_name() } else { address.without_key().to_string() };
    if address.module.iter().any(|step| step.key.is_some()) {
        return Err(EditError::Value(format!(
            "{address} would be written into a module that has several instances; an import block cannot \
             name the one it belongs to"
        )));
    }
    let text = repo.text(&file).unwrap_or_default().to_string();
    let text = edit::append_block(&text, "resource", &[&address.rtype, &address.name], spec)?;
    // A resource the provider cannot import (a target group attachment): written without an import
    // block; the next apply makes the call again, which AWS takes as already done.
    if import_id.is_empty() {
        applied.notes.push(format!(
            "added {address} to {} without an import block: the provider cannot import it; the next apply \
             repeats the call, which leaves it as it is",
            file.display()
        ));
        write(repo, &file, text, applied);
        return Ok(());
    }
    if address.module.is_empty() {
        let text = edit::append_block(&text, "import", &[], &import_spec(to, import_id))?;
        applied.notes.push(format!("added {} to {} with an import block for {import_id:?}", address, file.display()));
        write(repo, &file, text, applied);
        return Ok(());
    }
    write(repo, &file, text, applied);
    let import_file = append_import(repo, address, to, &file, import_id, applied)?;
    applied.notes.push(format!(
        "added {} to {} with an import block for {import_id:?} in {} (the root module)",
        address,
        file.display(),
        import_file.display()
    ));
    Ok(())
}

fn has_count_or_for_each(text: &str, sel: &BlockSel) -> bool {
    edit::parse(text)
        .ok()
        .and_then(|body| {
            edit::find_block(&body, sel).map(|b| b.body.has_attribute("count") || b.body.has_attribute("for_each"))
        })
        .unwrap_or(false)
}

/// The value of a literal expression (no references), as JSON.
pub fn literal_value(text: &str, expr: &Expression) -> Option<Value> {
    let source = edit::expr_text(text, expr);
    let parsed: hcl::Expression = source.parse().ok()?;
    let ctx = hcl::eval::Context::new();
    use hcl::eval::Evaluate;
    let value = parsed.evaluate(&ctx).ok()?;
    serde_json::to_value(value).ok()
}

/// Equality as Terraform compares configuration values: numbers by value, numeric strings equal
/// to the number they spell, maps by their entries.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => {
            s.trim().parse::<f64>().ok() == n.as_f64()
        }
        (Value::Bool(x), Value::String(s)) | (Value::String(s), Value::Bool(x)) => s == &x.to_string(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| values_equal(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_inside_resource_blocks_reaches_their_instances_and_anything_else_reaches_all() {
        let main = "variable \"size\" {\n  default = 1\n}\n\nresource \"aws_sqs_queue\" \"a\" {\n  delay_seconds = var.size\n}\n\n\
                    resource \"aws_sqs_queue\" \"b\" {\n  delay_seconds = 2\n}\n";
        let child = "resource \"aws_sqs_queue\" \"a\" {\n  delay_seconds = 3\n}\n";
        let calls = "module \"one\" {\n  source = \"./child\"\n}\n";
        let repo = Repo::from_files(
            [
                (PathBuf::from("main.tf"), main.to_string()),
                (PathBuf::from("calls.tf"), calls.to_string()),
                (PathBuf::from("child/main.tf"), child.to_string()),
                (PathBuf::from("terraform.tfvars"), "size = 1\n".to_string()),
            ]
            .into_iter()
            .collect(),
        );
        let edited = |file: &str, from: &str, to: &str| {
            let mut after = repo.clone();
            after.set_file(Path::new(file), repo.text(Path::new(file)).unwrap().replacen(from, to, 1));
            Reach::of(&repo, &after, &[Path::new(file)])
        };
        let address = |text: &str| Address::parse(text).unwrap();
        // Inside `b`: only `b`, not `a` here nor the child module's `a`.
        let reach = edited("main.tf", "delay_seconds = 2", "delay_seconds = 5");
        assert!(reach.contains(&repo, &address("aws_sqs_queue.b")));
        assert!(!reach.contains(&repo, &address("aws_sqs_queue.a")));
        // The child's block: the instance in the module, not the root's block of the same name.
        let reach = edited("child/main.tf", "delay_seconds = 3", "delay_seconds = 4");
        assert!(reach.contains(&repo, &address("module.one.aws_sqs_queue.a")));
        assert!(!reach.contains(&repo, &address("aws_sqs_queue.a")));
        // A variable, a module call, a tfvars file: every instance.
        for (file, from, to) in [
            ("main.tf", "default = 1", "default = 2"),
            ("calls.tf", "./child", "./child/"),
            ("terraform.tfvars", "1", "2"),
        ] {
            assert!(matches!(edited(file, from, to), Reach::All), "{file}");
        }
    }

    #[test]
    fn values_compare_as_terraform_does() {
        assert!(values_equal(&json!(10), &json!(10.0)));
        assert!(values_equal(&json!("60"), &json!(60)));
        assert!(!values_equal(&json!("t3.large"), &json!("t3.Large")));
        assert!(values_equal(&json!({"a": 1, "b": "x"}), &json!({"b": "x", "a": 1.0})));
        assert!(!values_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(values_equal(&json!(true), &json!("true")));
    }

    #[test]
    fn references_are_counted_whole() {
        assert_eq!(count_references("a = var.x\nb = var.x_y\nc = [var.x]\nd = local.var.x", "var.x"), 2);
    }
}
