//! A value of a nested block that a `dynamic` block makes inside another `dynamic` block's
//! content (an S3 encryption `rule` whose `apply_server_side_encryption_by_default` comes from
//! `try([rule.value.apply_server_side_encryption_by_default], [])`): traced through the inner
//! block's `for_each`, which reads the outer block's element, to the outer `for_each` and on to
//! where that comes from (a module call's nested object input). Each edit is kept only when
//! evaluation shows the instance gets the value and nothing else changes.

use hcl_edit::structure::Block;
use serde_json::Value;

use crate::address::Address;
use crate::edit;
use crate::eval::{BlockOrigin, block_origins, effective_config, value_at_path};
use crate::origin::{Change, Site, Tracer, attribute_at};
use crate::patch::{Applied, Op, PatchError, choose, values_equal, write_candidate};
use crate::path::{AttrPath, Seg};
use crate::render::AttrValue;
use crate::repo::{BlockLocation, Repo};

/// Set `path` of `address` where it runs through a `dynamic` block nested in another one's
/// content. `None` when the path does not (the value is set the usual way).
pub(crate) fn set_in_nested_dynamic(
    repo: &mut Repo,
    address: &Address,
    location: &BlockLocation,
    path: &AttrPath,
    value: &AttrValue,
    applied: &mut Applied,
    alongside: &[(Address, Op)],
) -> Option<Result<(), PatchError>> {
    let AttrValue::Literal(want) = value else { return None };
    let route = Route::of(repo, address, location, path)?;
    let refused = |reason: String| PatchError::Refused { address: address.to_string(), reason };
    let candidates = {
        let body = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel))?;
        let outer = dynamic_blocks(body, &route.outer_type).nth(route.outer_block)?;
        let outer_for_each = &outer.body.get_attribute("for_each")?.value;
        let outer_content = content(outer)?;
        let inner = dynamic_blocks(outer_content, &route.inner_type).next()?;
        let inner_for_each = &inner.body.get_attribute("for_each")?.value;
        let (expr, tail, _) = attribute_at(&content(inner)?.body, &route.rest)?;
        let site = Site {
            module: address.module.clone(),
            dir: repo.module_dir(&address.module_path()).cloned().unwrap_or_default(),
            file: location.file.clone(),
            block: location.sel.clone(),
            key: address.key.clone(),
        };
        let mut tracer = Tracer::new(repo);
        tracer.iterator = Some((route.outer_iterator.clone(), outer_for_each, route.outer_element.clone()));
        let inner_iterator = iterator_of(repo, location, inner, &route.inner_type);
        match crate::dynamic_reading::reading(expr, &inner_iterator) {
            // The inner element's field: that field of the inner for_each's element, which reads the outer one.
            Some(read) if tail.is_empty() => {
                let held = read.held(want)?;
                let segs = [vec![Seg::Index(route.inner_index)], read.path.clone()].concat();
                let change = Change::Set(AttrValue::Literal(held));
                let trail = format!(" -> element {} of the nested dynamic block's for_each", route.inner_index);
                tracer.expr(&site, &location.file, inner_for_each, &segs, &change, &trail, 0);
            }
            Some(_) => return None,
            // A value the inner content reads elsewhere (the outer element, an input): traced as it is.
            None => tracer.expr(&site, &location.file, expr, &tail, &Change::Set(value.clone()), "", 0),
        }
        tracer.out
    };
    let check = |config: Option<Value>| {
        config.and_then(|c| value_at_path(&c, path)).is_some_and(|got| values_equal(&got, want))
    };
    Some(match choose(repo, address, Some(path), candidates, &check, &|_| false, alongside) {
        Ok(chosen) => {
            applied.notes.push(format!("{address}: {path}: {}", chosen.note));
            write_candidate(repo, chosen, applied);
            Ok(())
        }
        Err(e) => Err(refused(format!("{path}, in a dynamic block nested in another: {e}"))),
    })
}

/// Where a path runs: `OUTER[i].INNER[j].rest...`, the outer block made by the `outer_block`-th
/// `dynamic "OUTER"` at `outer_element` of its `for_each`, the inner by the one `dynamic "INNER"`
/// of its content at `inner_index`.
struct Route {
    outer_type: String,
    outer_block: usize,
    outer_iterator: String,
    outer_element: Seg,
    inner_type: String,
    inner_index: usize,
    rest: Vec<Seg>,
}

impl Route {
    fn of(repo: &Repo, address: &Address, location: &BlockLocation, path: &AttrPath) -> Option<Route> {
        let (outer_type, outer_index, after) = named_block(&path.0)?;
        let (inner_type, inner_index, rest) = named_block(after)?;
        let rest = rest.to_vec();
        if rest.is_empty() {
            return None;
        }
        let body = repo.body(&location.file).and_then(|b| edit::find_block(b, &location.sel))?;
        let origins = block_origins(repo, address, outer_type)?;
        let index = match outer_index {
            Some(i) => i,
            None if origins.len() == 1 => 0,
            None => return None,
        };
        let BlockOrigin::Dynamic { block, element, iterator } = origins.get(index)?.clone() else { return None };
        let outer = dynamic_blocks(body, outer_type).nth(block)?;
        let outer_content = content(outer)?;
        // Inner blocks from one dynamic block only; a written one is reached the usual way.
        let written = outer_content.body.blocks().any(|b| b.ident.as_str() == inner_type.as_str());
        if written || dynamic_blocks(outer_content, inner_type).count() != 1 {
            return None;
        }
        let inner = dynamic_blocks(outer_content, inner_type).next()?;
        if iterator_of(repo, location, inner, inner_type) == iterator {
            return None;
        }
        // Without an index, the one inner block there is now (or the first one the edit makes).
        let config = effective_config(repo, address)?;
        let made = value_at_path(&config, &AttrPath(vec![Seg::Name(outer_type.clone()), Seg::Index(index)]))
            .and_then(|b| b.get(inner_type.as_str()).and_then(Value::as_array).map(Vec::len))
            .unwrap_or(0);
        let inner_index = match inner_index {
            Some(j) => j,
            None if made <= 1 => 0,
            None => return None,
        };
        Some(Route {
            outer_type: outer_type.clone(),
            outer_block: block,
            outer_iterator: iterator,
            outer_element: element,
            inner_type: inner_type.clone(),
            inner_index,
            rest,
        })
    }
}

/// `NAME[i]` or `NAME` at the start of a path, and the rest.
fn named_block(segs: &[Seg]) -> Option<(&String, Option<usize>, &[Seg])> {
    match segs {
        [Seg::Name(name), Seg::Index(i), rest @ ..] => Some((name, Some(*i), rest)),
        [Seg::Name(name), rest @ ..] => Some((name, None, rest)),
        _ => None,
    }
}

fn dynamic_blocks<'b>(body: &'b Block, block_type: &'b str) -> impl Iterator<Item = &'b Block> + 'b {
    body.body
        .blocks()
        .filter(move |d| d.ident.as_str() == "dynamic" && d.labels.first().map(edit::label_str) == Some(block_type))
}

fn content(dynamic: &Block) -> Option<&Block> {
    dynamic.body.blocks().find(|b| b.ident.as_str() == "content")
}

/// A `dynamic` block's iterator: its `iterator` argument, else its label.
fn iterator_of(repo: &Repo, location: &BlockLocation, dynamic: &Block, label: &str) -> String {
    match dynamic.body.get_attribute("iterator") {
        Some(attr) => edit::expr_text(repo.text(&location.file).unwrap_or_default(), &attr.value).trim().to_string(),
        None => label.to_string(),
    }
}
