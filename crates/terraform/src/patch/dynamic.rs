//! Nested blocks that `dynamic` blocks make: added and removed as elements of their `for_each`, and
//! paths into them traced through the `content`.

use serde_json::{Map, Value};

use super::choose::choose;
use super::op::{Applied, Op, PatchError, Target, has_count_or_for_each, site_of};
use super::write::{write, write_candidate};
use crate::address::Address;
use crate::edit;
use crate::eval::effective_config;
use crate::origin::{self, Change, Tracer};
use crate::path::{AttrPath, Seg};
use crate::render::{AttrValue, BlockSpec};
use crate::repo::{BlockLocation, Repo};
use crate::values::values_equal;

pub(super) fn has_dynamic(repo: &Repo, location: &BlockLocation, block_type: &str) -> bool {
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
pub(super) fn add_through_dynamic(
    repo: &mut Repo,
    target: &Target,
    block_type: &str,
    spec: &BlockSpec,
    applied: &mut Applied,
) -> Result<(), PatchError> {
    let Target { address, location, .. } = *target;
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
pub(super) fn remove_through_dynamic(
    repo: &mut Repo,
    target: &Target,
    block_type: &str,
    matching: &[(String, Value)],
    indices: Vec<usize>,
    applied: &mut Applied,
) -> Result<(), PatchError> {
    let Target { address, location, .. } = *target;
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
pub(super) fn dynamic_element(
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
pub(super) enum DynamicRoute<'b> {
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
pub(super) fn through_dynamic<'b>(
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
