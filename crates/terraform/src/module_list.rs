//! A resource created beside the ones a module makes from a list input, written as a new element
//! of that list at the module call.
//!
//! Modules in the style of the community's security group module make one resource per element of
//! a list of objects (`count = length(var.ingress_with_cidr_blocks)`, each argument read as
//! `lookup(var.ingress_with_cidr_blocks[count.index], "from_port", 0)`). A rule added in the
//! console to such a module's group belongs in that list: the element is built from the block's
//! readings (a value the module splits from a comma-separated string is joined into one), appended
//! where the list comes from (the call's input, or the tfvars, local or variable that feed it), and
//! kept only when evaluation shows the next instance of the block gets every value the new
//! resource has and nothing else changes. The import block names that instance.

use std::path::Path;

use hcl_edit::expr::Expression;
use serde_json::{Map, Value};

use crate::address::{Address, InstanceKey};
use crate::edit::{self, BlockSel, EditError};
use crate::eval::{eval_in_block, is_symbolic};
use crate::origin::{Change, Site, Tracer};
use crate::patch::{Applied, Refusal, append_import, choose, values_equal, write, write_candidate};
use crate::path::Seg;
use crate::render::{AttrValue, BlockSpec};
use crate::repo::Repo;

/// Whether the code of `address`'s module must not be written for it: fetched from outside the
/// repository, or called by more than one module call.
pub(crate) fn module_is_not_ours(repo: &Repo, address: &Address) -> bool {
    if address.module.is_empty() {
        return false;
    }
    let Some(dir) = repo.module_dir(&address.module_path()) else { return false };
    let fetched = repo.parsed_tf_in(dir).any(|(file, _)| repo.is_external(file));
    fetched || repo.modules().values().filter(|d| *d == dir).count() > 1 || !repo.other_callers(dir).is_empty()
}

/// A new resource `address` inside a module whose code is not this call's to write
/// ([`module_is_not_ours`]): the next element of a list input the module makes such resources
/// from; else, for a module the root calls directly, a resource in the root module naming the
/// module's objects through its outputs. `None` when the module's code is this call's.
pub(crate) fn create_for_module(
    repo: &mut Repo,
    address: &Address,
    spec: &BlockSpec,
    import_id: &str,
    applied: &mut Applied,
) -> Option<Result<(), EditError>> {
    if !module_is_not_ours(repo, address) {
        return None;
    }
    let as_element = create_as_list_element(repo, address, spec, import_id, applied);
    if let Some(Ok(())) = as_element {
        return as_element;
    }
    match create_at_calling_root(repo, address, spec, import_id, applied) {
        Ok(()) => Some(Ok(())),
        Err(why) => {
            let dir = repo.module_dir(&address.module_path()).cloned().unwrap_or_default();
            let callers = repo.other_callers(&dir);
            let shared = if callers.is_empty() {
                String::new()
            } else {
                format!(
                    "; the module's code is shared with {}, which an edit there would change too",
                    callers.join(", ")
                )
            };
            let listed = match as_element {
                Some(Err(e)) => format!("; {e}"),
                _ => String::new(),
            };
            Some(Err(EditError::Value(format!(
                "{address} cannot be written at the calling root: {why}{listed}{shared}"
            ))))
        }
    }
}

/// The new resource in the root module, beside the call of the module it was seen in: each
/// reference to an object inside the module (`aws_security_group.alb.id`) becomes the module's
/// output that gives it (`module.web.alb_security_group_id`), with an import block for it.
fn create_at_calling_root(
    repo: &mut Repo,
    address: &Address,
    spec: &BlockSpec,
    import_id: &str,
    applied: &mut Applied,
) -> Result<(), Refusal> {
    let [step] = address.module.as_slice() else {
        return Err("the module is not called by the root module directly".into());
    };
    if step.key.is_some() {
        return Err(format!("module.{} has several instances", step.name).into());
    }
    let dir =
        repo.module_dir(&address.module_path()).cloned().ok_or("the module's code is not in the configuration")?;
    let mut translated = BlockSpec { attrs: Vec::new(), blocks: spec.blocks.clone() };
    for (attr, value) in &spec.attrs {
        let value = match value {
            AttrValue::Reference(r) => match output_giving(repo, &dir, r) {
                Some(output) => AttrValue::Reference(format!("module.{}.{output}", step.name)),
                None => return Err(format!("the module exposes no output giving {r} (for {attr})").into()),
            },
            literal => literal.clone(),
        };
        translated.attrs.push((attr.clone(), value));
    }
    let root = repo.module_dir("").cloned().unwrap_or_default();
    let call_sel = BlockSel::new("module", &[&step.name]);
    let file = repo.find_block(&root, &call_sel).cloned().ok_or("the module call is not in the root module")?;
    let mut name = address.name.clone();
    let mut n = 2;
    while repo.find_block(&root, &BlockSel::new("resource", &[&address.rtype, &name])).is_some() {
        name = format!("{}_{n}", address.name);
        n += 1;
    }
    let text = repo.text(&file).unwrap_or_default().to_string();
    let mut text =
        edit::append_block(&text, "resource", &[&address.rtype, &name], &translated).map_err(|e| e.to_string())?;
    let new = Address::resource(&address.rtype, &name);
    if !import_id.is_empty() {
        let import = BlockSpec {
            attrs: vec![
                ("to".into(), AttrValue::Reference(new.block_name())),
                ("id".into(), AttrValue::Literal(Value::String(import_id.to_string()))),
            ],
            blocks: vec![],
        };
        text = edit::append_block(&text, "import", &[], &import).map_err(|e| e.to_string())?;
    }
    if edit::parse(&text).is_err() {
        return Err("the new block does not parse".into());
    }
    write(repo, &file, text, applied);
    applied.notes.push(format!(
        "{address} is written as {new} in {} beside module.{}'s call, naming the module's objects through its outputs          (the module's code is {}){}",
        file.display(),
        step.name,
        if repo.other_callers(&dir).is_empty() { "not this call's to change".to_string() } else { format!("shared with {}", repo.other_callers(&dir).join(", ")) },
        if import_id.is_empty() { String::new() } else { format!(", with an import block for {import_id:?}") }
    ));
    Ok(())
}

/// The output of the module in `dir` whose value is `reference` (`aws_security_group.alb.id`),
/// directly or through a local.
fn output_giving(repo: &Repo, dir: &Path, reference: &str) -> Option<String> {
    let gives = |text: &str, expr: &Expression| edit::expr_text(text, expr).trim() == reference;
    let local_giving: Vec<String> = repo
        .parsed_tf_in(dir)
        .flat_map(|(file, body)| {
            let text = repo.text(file).unwrap_or_default();
            body.get_blocks("locals")
                .flat_map(|b| b.body.attributes())
                .filter(|a| gives(text, &a.value))
                .map(|a| format!("local.{}", a.key.as_str()))
                .collect::<Vec<_>>()
        })
        .collect();
    for (file, body) in repo.parsed_tf_in(dir) {
        let text = repo.text(file).unwrap_or_default();
        for output in body.get_blocks("output") {
            let Some(value) = output.body.get_attribute("value") else { continue };
            let source = edit::expr_text(text, &value.value).trim().to_string();
            if source == reference || local_giving.contains(&source) {
                return output.labels.first().map(|l| edit::label_str(l).to_string());
            }
        }
    }
    None
}

/// Write the new resource `address` (inside a module) as the next element of a list input that a
/// resource block of its type in that module is made from. `None` when no such block takes it;
/// else what writing it did.
pub(crate) fn create_as_list_element(
    repo: &mut Repo,
    address: &Address,
    spec: &BlockSpec,
    import_id: &str,
    applied: &mut Applied,
) -> Option<Result<(), EditError>> {
    let dir = repo.module_dir(&address.module_path())?.clone();
    let mut refusals = Vec::new();
    for (file, name) in repo.resources_of_type(&dir, &address.rtype) {
        let sel = BlockSel::new("resource", &[&address.rtype, &name]);
        let Some(element) = element_for(repo, &file, &sel, spec) else { continue };
        let (list, element) = element;
        let target_base =
            Address { module: address.module.clone(), key: None, ..Address::resource(&address.rtype, &name) };
        let length = match eval_in_block(repo, &address.module, &file, &sel, None, &format!("var.{list}")) {
            Some(Value::Array(items)) => items.len(),
            _ => continue,
        };
        let target = Address { key: Some(InstanceKey::Int(length as i64)), ..target_base.clone() };
        let site = Site {
            module: address.module.clone(),
            dir: dir.clone(),
            file: file.clone(),
            block: sel.clone(),
            key: None,
        };
        let Ok(reading) = format!("var.{list}").parse::<Expression>() else { continue };
        let mut tracer = Tracer::new(repo);
        let change = Change::Set(AttrValue::Literal(Value::Object(element.clone())));
        let trail = format!(" -> a new element of var.{list}, which {} is made from", target_base.block_name());
        tracer.expr(&site, &file, &reading, &[Seg::Index(length)], &change, &trail, 0);
        let candidates = tracer.out;
        let check = |config: Option<Value>| {
            let Some(config) = config else { return false };
            spec.attrs.iter().all(|(attr, value)| match value {
                // An argument the module computes from its own resources (the group's id) is
                // the module's wiring: the new instance takes it as the others do.
                AttrValue::Literal(want) => {
                    config.get(attr).is_some_and(|got| values_equal(got, want) || is_symbolic(got))
                }
                AttrValue::Reference(_) => true,
            })
        };
        match choose(repo, &target, None, candidates, &check, &|_| false, &[]) {
            Ok(chosen) => {
                let note = chosen.note.clone();
                write_candidate(repo, chosen, applied);
                if !import_id.is_empty() {
                    if let Err(e) = append_import(repo, address, target.to_string(), &file, import_id, applied) {
                        return Some(Err(e));
                    }
                }
                applied.notes.push(format!(
                    "{address} is made by the module as {target}: {note}{}",
                    if import_id.is_empty() {
                        String::new()
                    } else {
                        format!(", with an import block for {import_id:?}")
                    }
                ));
                return Some(Ok(()));
            }
            Err(reason) => refusals.push(format!("{} from var.{list}: {reason}", target_base.block_name())),
        }
    }
    if refusals.is_empty() {
        return None;
    }
    Some(Err(EditError::Value(format!(
        "{address} would be a new element of a list the module makes its resources from, but {}",
        refusals.join("; ")
    ))))
}

/// The list input a block is made from (`count = length(var.NAME)`, possibly behind a condition)
/// and the element that gives the block `spec`'s literal values, read off the block's arguments.
fn element_for(repo: &Repo, file: &Path, sel: &BlockSel, spec: &BlockSpec) -> Option<(String, Map<String, Value>)> {
    let text = repo.text(file)?;
    let block = edit::find_block(repo.body(file)?, sel)?;
    let count = block.body.get_attribute("count")?;
    let list = listed_by_length(&edit::expr_text(text, &count.value))?;
    let mut element = Map::new();
    for (attr, value) in &spec.attrs {
        let AttrValue::Literal(value) = value else { continue };
        let Some(arg) = block.body.get_attribute(attr) else { continue };
        let source = edit::expr_text(text, &arg.value);
        let Some(key) = element_key(&source, &list) else { continue };
        // `split(",", lookup(var.rules[count.index], "cidr_blocks", ...))`: the element holds the
        // list joined.
        let value = match value {
            Value::Array(items) if source.trim_start().starts_with("split(") => {
                let parts: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
                Value::String(parts?.join(","))
            }
            other => other.clone(),
        };
        element.insert(key, value);
    }
    (!element.is_empty()).then_some((list, element))
}

/// `NAME` in a `count` that is `length(var.NAME)`, alone or as a branch of a condition.
fn listed_by_length(count: &str) -> Option<String> {
    let at = count.find("length(var.")? + "length(var.".len();
    let rest = &count[at..];
    let end = rest.find(')')?;
    let name = &rest[..end];
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .then(|| name.to_string())
}

/// The key of the list element an argument reads: `lookup(var.L[count.index], "key", ...)`,
/// `var.L[count.index].key`, `var.L[count.index]["key"]`, inside any wrapping (`try`, `split`).
fn element_key(source: &str, list: &str) -> Option<String> {
    let element = format!("var.{list}[count.index]");
    let at = source.find(&element)?;
    let after = &source[at + element.len()..];
    let before = source[..at].trim_end();
    if before.ends_with("lookup(") {
        let rest = after.trim_start().strip_prefix(',')?.trim_start().strip_prefix('"')?;
        return Some(rest[..rest.find('"')?].to_string());
    }
    if let Some(rest) = after.strip_prefix('.') {
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(rest.len());
        return (end > 0).then(|| rest[..end].to_string());
    }
    let rest = after.strip_prefix("[\"")?;
    Some(rest[..rest.find('"')?].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_of_a_list_element_name_their_key() {
        let list = "ingress_with_cidr_blocks";
        let read = |s: &str| element_key(s, list);
        assert_eq!(
            read(
                "split(\",\", lookup(var.ingress_with_cidr_blocks[count.index], \"cidr_blocks\", join(\",\", var.x)))"
            )
            .as_deref(),
            Some("cidr_blocks")
        );
        assert_eq!(read("try(var.ingress_with_cidr_blocks[count.index].from_port, 0)").as_deref(), Some("from_port"));
        assert_eq!(read("var.ingress_with_cidr_blocks[count.index][\"to_port\"]").as_deref(), Some("to_port"));
        assert_eq!(read("var.other[count.index].from_port"), None);
        assert_eq!(listed_by_length("var.create ? length(var.rules) : 0").as_deref(), Some("rules"));
        assert_eq!(listed_by_length("length(local.rules)"), None);
    }
}
