//! Creating a resource with its `import` block: a new instance of a `count` or `for_each` fleet, or
//! a new block where resources of its type live.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::choose::choose;
use super::dynamic::dynamic_element;
use super::op::Applied;
use super::write::{append_import, import_spec, write, write_candidate};
use crate::address::{Address, InstanceKey};
use crate::edit::{self, EditError};
use crate::eval::effective_config;
use crate::origin::{Change, Site, Tracer};
use crate::path::Seg;
use crate::render::{AttrValue, BlockSpec};
use crate::repo::Repo;
use crate::values::values_equal;

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
    let chosen = choose(repo, address, None, candidates, &check, &|_| false, &[])
        .map_err(|e| EditError::Value(e.to_string()))?;
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
    let chosen = choose(repo, address, None, candidates, &check, &|_| false, &[])
        .map_err(|e| EditError::Value(e.to_string()))?;
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

pub(super) fn create_resource(
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
