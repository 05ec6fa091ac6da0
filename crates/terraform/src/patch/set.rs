//! Setting and removing a value at its origin, and the narrowest edits when the origin is shared:
//! a condition on one instance, a `merge()` overlay on one resource.

use hcl_edit::Span;
use hcl_edit::expr::Expression;
use serde_json::Value;

use super::choose::choose;
use super::dynamic::{DynamicRoute, through_dynamic};
use super::module_overlay::module_input_overlay;
use super::op::{Applied, PatchError, Target, has_count_or_for_each, site_of};
use super::write::write_candidate;
use crate::address::{Address, InstanceKey};
use crate::edit;
use crate::eval::{effective_config, is_symbolic, value_at_path};
use crate::origin::{self, Candidate, Change, Tracer};
use crate::path::{AttrPath, Seg};
use crate::render::{AttrValue, render_key};
use crate::repo::{BlockLocation, Repo};
use crate::values::values_equal;

pub(super) fn set_value(
    repo: &mut Repo,
    target: &Target,
    path: &AttrPath,
    value: &AttrValue,
    applied: &mut Applied,
) -> Result<(), PatchError> {
    let Target { address, location, alongside } = *target;
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
                        _ => set_value(repo, target, &sub, &AttrValue::Literal(v.clone()), applied)?,
                    }
                }
                for (key, o) in old {
                    if !new.contains_key(key) && !is_symbolic(o) {
                        remove_value(repo, target, &with_key(path, key), applied)?;
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

pub(super) fn remove_value(
    repo: &mut Repo,
    target: &Target,
    path: &AttrPath,
    applied: &mut Applied,
) -> Result<(), PatchError> {
    let Target { address, location, alongside } = *target;
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
