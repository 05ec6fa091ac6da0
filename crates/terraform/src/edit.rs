//! Format-preserving edits of one HCL file, by block and attribute path.
//!
//! Every edit parses the file, finds what it changes by structure, and splices new text into the
//! original bytes: everything outside the edited span stays byte for byte. The result must re-parse.

use std::ops::Range;

use hcl_edit::Span;
use hcl_edit::expr::{Expression, Object, ObjectKey};
use hcl_edit::structure::{Block, BlockLabel, Body, Structure};

use crate::path::{AttrPath, Seg};
use crate::render::{AttrValue, BlockSpec, render_block_body, render_key};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    #[error("does not parse as HCL: {0}")]
    Parse(String),
    #[error("no {0} block in this file")]
    BlockNotFound(String),
    #[error("`{path}` not found")]
    PathNotFound { path: String },
    #[error("`{path}` is ambiguous: {count} `{name}` blocks; give an index like `{name}[0]`")]
    Ambiguous { path: String, name: String, count: usize },
    #[error("`{path}` is set by the expression `{expr}`, not a literal")]
    NotLiteral { path: String, expr: String },
    #[error("cannot write value: {0}")]
    Value(String),
    #[error("the edit produced HCL that does not parse: {0}")]
    Reparse(String),
}

/// A top-level block, by type and labels: `resource "aws_instance" "web"`, `locals`, `variable "x"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlockSel {
    pub ident: String,
    pub labels: Vec<String>,
}

impl BlockSel {
    pub fn resource(rtype: &str, name: &str) -> Self {
        BlockSel { ident: "resource".into(), labels: vec![rtype.into(), name.into()] }
    }
    pub fn new(ident: &str, labels: &[&str]) -> Self {
        BlockSel { ident: ident.into(), labels: labels.iter().map(|s| s.to_string()).collect() }
    }
    fn describe(&self) -> String {
        let labels: Vec<String> = self.labels.iter().map(|l| format!("{l:?}")).collect();
        format!("{} {}", self.ident, labels.join(" ")).trim().to_string()
    }
}

pub fn parse(text: &str) -> Result<Body, EditError> {
    hcl_edit::parser::parse_body(text).map_err(|e| EditError::Parse(e.to_string()))
}

pub fn label_str(label: &BlockLabel) -> &str {
    match label {
        BlockLabel::Ident(i) => i.as_str(),
        BlockLabel::String(s) => s.as_str(),
    }
}

/// The top-level block `sel` in `body`.
pub fn find_block<'a>(body: &'a Body, sel: &BlockSel) -> Option<&'a Block> {
    body.blocks().find(|b| is_block(b, sel))
}

fn is_block(b: &Block, sel: &BlockSel) -> bool {
    b.ident.as_str() == sel.ident
        && b.labels.len() == sel.labels.len()
        && b.labels.iter().zip(&sel.labels).all(|(l, s)| label_str(l) == s)
}

/// Set the value at `path` inside block `sel` (or at top level when `sel` is `None`, as in tfvars),
/// creating missing attributes, nested blocks and map entries.
pub fn set(text: &str, sel: Option<&BlockSel>, path: &AttrPath, value: &AttrValue) -> Result<String, EditError> {
    let body = parse(text)?;
    let splice = {
        let (container, start_body) = container(&body, text, sel)?;
        plan_set(text, &Node::Body { body: start_body, span: container }, &path.0, path, value)?
    };
    apply(text, splice)
}

/// Remove the attribute, map entry or nested block at `path` inside block `sel`.
/// Removing something that is not there is not an error: the result is the text unchanged.
pub fn remove(text: &str, sel: Option<&BlockSel>, path: &AttrPath) -> Result<String, EditError> {
    let body = parse(text)?;
    let (container, start_body) = container(&body, text, sel)?;
    match locate(text, &Node::Body { body: start_body, span: container }, &path.0, path)? {
        Some(span) => apply(text, (remove_span(text, span), String::new())),
        None => Ok(text.to_string()),
    }
}

/// The span of the attribute value or block at `path`, if present.
pub fn find(text: &str, sel: Option<&BlockSel>, path: &AttrPath) -> Result<Option<Range<usize>>, EditError> {
    let body = parse(text)?;
    let (container, start_body) = container(&body, text, sel)?;
    locate_value(text, &Node::Body { body: start_body, span: container }, &path.0, path)
}

/// Append a nested block of type `block_type` inside block `sel` (after the last block of that type,
/// else at the end of the body).
pub fn add_nested_block(text: &str, sel: &BlockSel, block_type: &str, spec: &BlockSpec) -> Result<String, EditError> {
    let body = parse(text)?;
    let block = find_block(&body, sel).ok_or_else(|| EditError::BlockNotFound(sel.describe()))?;
    let span = block.span().ok_or_else(|| EditError::BlockNotFound(sel.describe()))?;
    let indent = child_indent(text, &block.body, span.start);
    let rendered = format!(
        "{indent}{block_type} {{\n{}{indent}}}\n",
        render_block_body(spec, &format!("{indent}  ")).map_err(|e| EditError::Value(e.to_string()))?
    );
    let splice = match block.body.get_blocks(block_type).last().and_then(|b| b.span()) {
        Some(last) => {
            let at = line_end(text, last.end);
            (at..at, format!("{}{rendered}", blank_line_between(text, &block.body, block_type)))
        }
        None => {
            let at = line_start(text, span.end - 1);
            let sep = if block.body.is_empty() { "" } else { "\n" };
            (at..at, format!("{sep}{rendered}"))
        }
    };
    apply(text, splice)
}

/// Append a top-level block at the end of the file, separated by one blank line.
pub fn append_block(text: &str, ident: &str, labels: &[&str], spec: &BlockSpec) -> Result<String, EditError> {
    let header: Vec<String> =
        std::iter::once(ident.to_string()).chain(labels.iter().map(|l| format!("{l:?}"))).collect();
    let rendered = format!(
        "{} {{\n{}}}\n",
        header.join(" "),
        render_block_body(spec, "  ").map_err(|e| EditError::Value(e.to_string()))?
    );
    let mut out = text.to_string();
    if !out.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        if !out.ends_with("\n\n") {
            out.push('\n');
        }
    }
    out.push_str(&rendered);
    parse(&out).map_err(|e| EditError::Reparse(e.to_string()))?;
    Ok(out)
}

/// The position of block `sel` among the file's top-level blocks (what [`remove_block`] takes).
pub fn block_index(text: &str, sel: &BlockSel) -> Result<usize, EditError> {
    let body = parse(text)?;
    body.blocks().position(|b| is_block(b, sel)).ok_or_else(|| EditError::BlockNotFound(sel.describe()))
}

/// Remove the `index`-th top-level block (with its leading comment lines and one blank line around it).
pub fn remove_block(text: &str, index: usize) -> Result<String, EditError> {
    let body = parse(text)?;
    let missing = || EditError::BlockNotFound(format!("top-level block #{index}"));
    let span = body.blocks().nth(index).and_then(|b| b.span()).ok_or_else(missing)?;
    let mut range = remove_span(text, span);
    // Leading comment lines directly above belong to the block.
    let mut start = range.start;
    while start > 0 {
        let prev = line_start(text, start - 1);
        let line = text[prev..start].trim();
        if line.starts_with('#') || line.starts_with("//") {
            start = prev;
        } else {
            break;
        }
    }
    range.start = start;
    // One blank line: drop the one after the block, or else the one before it.
    if text[range.end..].starts_with('\n') {
        range.end += 1;
    } else if range.start >= 2 && &text[range.start - 2..range.start] == "\n\n" {
        range.start -= 1;
    }
    apply(text, (range, String::new()))
}

/// Add `attr` to the resource's `lifecycle { ignore_changes = [...] }`, creating what is missing.
pub fn add_ignore_changes(text: &str, sel: &BlockSel, attr: &str) -> Result<String, EditError> {
    let body = parse(text)?;
    let block = find_block(&body, sel).ok_or_else(|| EditError::BlockNotFound(sel.describe()))?;
    let lifecycle = block.body.get_blocks("lifecycle").next();
    let existing = lifecycle.and_then(|l| l.body.get_attribute("ignore_changes"));
    match existing.map(|a| &a.value) {
        // Creates `lifecycle` too when it is missing.
        None => set_raw(
            text,
            sel,
            &AttrPath(vec![Seg::Name("lifecycle".into()), Seg::Name("ignore_changes".into())]),
            &format!("[{attr}]"),
        ),
        Some(Expression::Array(items)) => {
            let present = items.iter().any(|i| expr_text(text, i).trim() == attr);
            if present {
                return Ok(text.to_string());
            }
            let span = items.span().ok_or_else(|| EditError::Value("ignore_changes without a span".into()))?;
            let inner = text[span.start + 1..span.end - 1].trim_end();
            let replacement = if inner.trim().is_empty() {
                format!("[{attr}]")
            } else {
                let sep = if inner.ends_with(',') { " " } else { ", " };
                format!("[{}{sep}{attr}]", text[span.start + 1..span.start + 1 + inner.len()].trim_start())
            };
            apply(text, (span, replacement))
        }
        Some(Expression::Variable(v)) if v.as_str() == "all" => Ok(text.to_string()),
        Some(other) => {
            Err(EditError::NotLiteral { path: "lifecycle.ignore_changes".into(), expr: expr_text(text, other) })
        }
    }
}

fn set_raw(text: &str, sel: &BlockSel, path: &AttrPath, raw: &str) -> Result<String, EditError> {
    let body = parse(text)?;
    let (container, start_body) = container(&body, text, Some(sel))?;
    let splice = plan_set_text(text, &Node::Body { body: start_body, span: container }, &path.0, path, raw)?;
    apply(text, splice)
}

/// The source text of an expression.
pub fn expr_text(text: &str, expr: &Expression) -> String {
    expr.span().map(|s| text[s].to_string()).unwrap_or_else(|| expr.to_string())
}

// ---------------------------------------------------------------------------------------------
// Navigation

enum Node<'a> {
    /// A body and the span of what contains it (the block; the whole file for top level).
    Body {
        body: &'a Body,
        span: Range<usize>,
    },
    Object {
        object: &'a Object,
        span: Range<usize>,
    },
}

fn container<'a>(body: &'a Body, text: &str, sel: Option<&BlockSel>) -> Result<(Range<usize>, &'a Body), EditError> {
    match sel {
        None => Ok((0..text.len(), body)),
        Some(sel) => {
            let block = find_block(body, sel).ok_or_else(|| EditError::BlockNotFound(sel.describe()))?;
            let span = block.span().ok_or_else(|| EditError::BlockNotFound(sel.describe()))?;
            Ok((span, &block.body))
        }
    }
}

pub(crate) fn seg_name(seg: &Seg) -> Option<&str> {
    match seg {
        Seg::Name(n) | Seg::Key(n) => Some(n),
        Seg::Index(_) => None,
    }
}

pub(crate) fn object_get<'a>(object: &'a Object, text: &str, key: &str) -> Option<(&'a ObjectKey, &'a Expression)> {
    object.iter().find_map(|(k, v)| (object_key_str(text, k).as_deref() == Some(key)).then(|| (k, v.expr())))
}

pub(crate) fn object_key_str(text: &str, key: &ObjectKey) -> Option<String> {
    match key {
        ObjectKey::Ident(i) => Some(i.as_str().to_string()),
        ObjectKey::Expression(Expression::String(s)) => Some(s.as_str().to_string()),
        ObjectKey::Expression(e) => {
            let t = expr_text(text, e);
            Some(t.trim_matches(|c| c == '(' || c == ')').to_string())
        }
    }
}

/// Choose the nested block(s) named `name`, consuming an index segment when present.
fn pick_block<'a, 'p>(
    body: &'a Body,
    name: &'a str,
    rest: &'p [Seg],
    full: &AttrPath,
) -> Result<Option<(&'a Block, &'p [Seg])>, EditError> {
    let blocks: Vec<&Block> = body.get_blocks(name).collect();
    if blocks.is_empty() {
        return Ok(None);
    }
    match rest.first() {
        Some(Seg::Index(i)) => Ok(blocks.get(*i).map(|b| (*b, &rest[1..]))),
        _ if blocks.len() == 1 => Ok(Some((blocks[0], rest))),
        _ => Err(EditError::Ambiguous { path: full.to_string(), name: name.to_string(), count: blocks.len() }),
    }
}

/// The span to remove for `path`: an attribute, a map item, or a block.
fn locate(text: &str, node: &Node<'_>, segs: &[Seg], full: &AttrPath) -> Result<Option<Range<usize>>, EditError> {
    let Some((seg, rest)) = segs.split_first() else { return Ok(None) };
    let Some(name) = seg_name(seg) else { return Err(EditError::PathNotFound { path: full.to_string() }) };
    match node {
        Node::Body { body, .. } => {
            if let Some(attr) = body.get_attribute(name) {
                if rest.is_empty() {
                    return Ok(attr.span());
                }
                return match (&attr.value, attr.value.span()) {
                    (Expression::Object(o), Some(span)) => locate(text, &Node::Object { object: o, span }, rest, full),
                    _ => Err(EditError::NotLiteral { path: full.to_string(), expr: expr_text(text, &attr.value) }),
                };
            }
            match pick_block(body, name, rest, full)? {
                Some((block, [])) => Ok(block.span()),
                Some((block, rest)) => {
                    let span = block.span().unwrap_or_default();
                    locate(text, &Node::Body { body: &block.body, span }, rest, full)
                }
                None => Ok(None),
            }
        }
        Node::Object { object, .. } => match object_get(object, text, name) {
            None => Ok(None),
            Some((key, value)) if rest.is_empty() => {
                let (Some(k), Some(v)) = (key.span(), value.span()) else { return Ok(None) };
                Ok(Some(k.start..v.end))
            }
            Some((_, Expression::Object(o))) => {
                locate(text, &Node::Object { object: o, span: o.span().unwrap_or_default() }, rest, full)
            }
            Some((_, other)) => Err(EditError::NotLiteral { path: full.to_string(), expr: expr_text(text, other) }),
        },
    }
}

/// The span of the value (attribute expression, map value, or block) at `path`.
fn locate_value(text: &str, node: &Node<'_>, segs: &[Seg], full: &AttrPath) -> Result<Option<Range<usize>>, EditError> {
    let Some((seg, rest)) = segs.split_first() else { return Ok(None) };
    let Some(name) = seg_name(seg) else { return Err(EditError::PathNotFound { path: full.to_string() }) };
    match node {
        Node::Body { body, .. } => {
            if let Some(attr) = body.get_attribute(name) {
                if rest.is_empty() {
                    return Ok(attr.value.span());
                }
                return match (&attr.value, attr.value.span()) {
                    (Expression::Object(o), Some(span)) => {
                        locate_value(text, &Node::Object { object: o, span }, rest, full)
                    }
                    _ => Err(EditError::NotLiteral { path: full.to_string(), expr: expr_text(text, &attr.value) }),
                };
            }
            match pick_block(body, name, rest, full)? {
                Some((block, [])) => Ok(block.span()),
                Some((block, rest)) => locate_value(
                    text,
                    &Node::Body { body: &block.body, span: block.span().unwrap_or_default() },
                    rest,
                    full,
                ),
                None => Ok(None),
            }
        }
        Node::Object { object, .. } => match object_get(object, text, name) {
            None => Ok(None),
            Some((_, value)) if rest.is_empty() => Ok(value.span()),
            Some((_, Expression::Object(o))) => {
                locate_value(text, &Node::Object { object: o, span: o.span().unwrap_or_default() }, rest, full)
            }
            Some((_, other)) => Err(EditError::NotLiteral { path: full.to_string(), expr: expr_text(text, other) }),
        },
    }
}

fn plan_set(
    text: &str,
    node: &Node<'_>,
    segs: &[Seg],
    full: &AttrPath,
    value: &AttrValue,
) -> Result<(Range<usize>, String), EditError> {
    // The indentation of the place the value lands decides how a multi-line value is rendered,
    // so rendering happens where the place is known.
    plan_set_with(text, node, segs, full, &|indent: &str| {
        value.render(indent).map_err(|e| EditError::Value(e.to_string()))
    })
}

fn plan_set_text(
    text: &str,
    node: &Node<'_>,
    segs: &[Seg],
    full: &AttrPath,
    raw: &str,
) -> Result<(Range<usize>, String), EditError> {
    plan_set_with(text, node, segs, full, &|_: &str| Ok(raw.to_string()))
}

type Renderer<'r> = dyn Fn(&str) -> Result<String, EditError> + 'r;

fn plan_set_with(
    text: &str,
    node: &Node<'_>,
    segs: &[Seg],
    full: &AttrPath,
    render: &Renderer<'_>,
) -> Result<(Range<usize>, String), EditError> {
    let Some((seg, rest)) = segs.split_first() else { return Err(EditError::PathNotFound { path: full.to_string() }) };
    let Some(name) = seg_name(seg) else { return Err(EditError::PathNotFound { path: full.to_string() }) };
    match node {
        Node::Body { body, span } => {
            if let Some(attr) = body.get_attribute(name) {
                let vspan = attr.value.span().ok_or_else(|| EditError::PathNotFound { path: full.to_string() })?;
                if rest.is_empty() {
                    let indent = indent_of(text, vspan.start);
                    return Ok((vspan, render(&indent)?));
                }
                return match &attr.value {
                    Expression::Object(o) => {
                        plan_set_with(text, &Node::Object { object: o, span: vspan }, rest, full, render)
                    }
                    other => Err(EditError::NotLiteral { path: full.to_string(), expr: expr_text(text, other) }),
                };
            }
            if !matches!(seg, Seg::Key(_)) {
                if let Some((block, rest)) = pick_block(body, name, rest, full)? {
                    let bspan = block.span().unwrap_or_default();
                    if rest.is_empty() {
                        return Err(EditError::Value(format!("`{full}` is a block, not a value")));
                    }
                    return plan_set_with(text, &Node::Body { body: &block.body, span: bspan }, rest, full, render);
                }
            }
            // Missing: create it, as an attribute (last step or map key next) or nested blocks.
            let indent = child_indent_for(text, body, span);
            let new_text = render_missing(name, rest, &indent, render, full)?;
            Ok(insert_into_body(text, body, span, &indent, &new_text))
        }
        Node::Object { object, span } => match object_get(object, text, name) {
            Some((_, value)) => {
                let vspan = value.span().ok_or_else(|| EditError::PathNotFound { path: full.to_string() })?;
                if rest.is_empty() {
                    let indent = indent_of(text, vspan.start);
                    return Ok((vspan, render(&indent)?));
                }
                match value {
                    Expression::Object(o) => {
                        plan_set_with(text, &Node::Object { object: o, span: vspan }, rest, full, render)
                    }
                    other => Err(EditError::NotLiteral { path: full.to_string(), expr: expr_text(text, other) }),
                }
            }
            None => {
                let multi_line = text[span.clone()].contains('\n');
                let last = object.iter().last().and_then(|(_, v)| v.expr().span());
                match (last, multi_line) {
                    (Some(last), true) => {
                        let indent = indent_of(text, last.start);
                        let item = render_missing_item(name, rest, &indent, render, full)?;
                        // Beside entries written as one-line objects, the new one is written so too,
                        // its keys in their order.
                        let item = match (rest.is_empty(), one_line_siblings(object, text)) {
                            (true, Some(order)) => one_line_item(&item, &order).unwrap_or(item),
                            _ => item,
                        };
                        let at = line_end(text, last.end);
                        let width = eq_width(text, last.start, &indent);
                        let item = pad_key(&item, width);
                        Ok((at..at, format!("{indent}{item}\n")))
                    }
                    (Some(last), false) => {
                        let item = render_missing_item(name, rest, "", render, full)?;
                        Ok((last.end..last.end, format!(", {item}")))
                    }
                    (None, _) => {
                        let base = indent_of(text, span.start);
                        let inner = format!("{base}  ");
                        let item = render_missing_item(name, rest, &inner, render, full)?;
                        Ok((span.clone(), format!("{{\n{inner}{item}\n{base}}}")))
                    }
                }
            }
        },
    }
}

/// The key order of an object's entries when every entry is a one-line object literal (`"404" = {
/// response_code = 404, page_path = "/404.html" }`): the keys of all of them, first seen first.
fn one_line_siblings(object: &Object, text: &str) -> Option<Vec<String>> {
    let mut order: Vec<String> = Vec::new();
    for (_, value) in object.iter() {
        let Expression::Object(entry) = value.expr() else { return None };
        let span = value.expr().span()?;
        if text[span].contains('\n') {
            return None;
        }
        for (key, _) in entry.iter() {
            let key = object_key_str(text, key)?;
            if !order.contains(&key) {
                order.push(key);
            }
        }
    }
    (!order.is_empty()).then_some(order)
}

/// `key = { ... }` rendered over several lines as one line, its members in `order` (others after):
/// `None` when a member's value spans lines.
fn one_line_item(item: &str, order: &[String]) -> Option<String> {
    // The item is an entry of an object (`"504" = {...}`): parsed inside one.
    let wrapped = format!("x = {{\n{}\n}}\n", item.trim());
    let body = parse(&wrapped).ok()?;
    let attr = body.attributes().next()?;
    let Expression::Object(outer) = &attr.value else { return None };
    let (entry_key, entry) = outer.iter().next()?;
    let Expression::Object(object) = entry.expr() else { return None };
    let mut members: Vec<(String, String)> = Vec::new();
    for (key, value) in object.iter() {
        let name = object_key_str(&wrapped, key)?;
        let value = expr_text(&wrapped, value.expr()).trim().to_string();
        if value.contains('\n') {
            return None;
        }
        members.push((name, value));
    }
    members.sort_by_key(|(name, _)| order.iter().position(|o| o == name).unwrap_or(order.len()));
    let inner: Vec<String> = members.iter().map(|(k, v)| format!("{} = {v}", render_key(k))).collect();
    let key = render_key(&object_key_str(&wrapped, entry_key)?);
    Some(format!("{key} = {{ {} }}", inner.join(", ")))
}

fn render_missing(
    name: &str,
    rest: &[Seg],
    indent: &str,
    render: &Renderer<'_>,
    full: &AttrPath,
) -> Result<String, EditError> {
    match rest.first() {
        None => Ok(format!("{name} = {}", render(indent)?)),
        Some(Seg::Key(_)) => {
            let inner = format!("{indent}  ");
            let item = render_missing_item_segs(rest, &inner, render, full)?;
            Ok(format!("{name} = {{\n{inner}{item}\n{indent}}}"))
        }
        Some(Seg::Name(next)) => {
            let inner = format!("{indent}  ");
            let child = render_missing(next, &rest[1..], &inner, render, full)?;
            Ok(format!("{name} {{\n{inner}{child}\n{indent}}}"))
        }
        Some(Seg::Index(0)) if rest.len() > 1 => render_missing(name, &rest[1..], indent, render, full),
        Some(Seg::Index(_)) => Err(EditError::PathNotFound { path: full.to_string() }),
    }
}

fn render_missing_item(
    name: &str,
    rest: &[Seg],
    indent: &str,
    render: &Renderer<'_>,
    full: &AttrPath,
) -> Result<String, EditError> {
    let mut segs = vec![Seg::Key(name.to_string())];
    segs.extend_from_slice(rest);
    render_missing_item_segs(&segs, indent, render, full)
}

fn render_missing_item_segs(
    segs: &[Seg],
    indent: &str,
    render: &Renderer<'_>,
    full: &AttrPath,
) -> Result<String, EditError> {
    let Some((seg, rest)) = segs.split_first() else { return Err(EditError::PathNotFound { path: full.to_string() }) };
    let Some(name) = seg_name(seg) else { return Err(EditError::PathNotFound { path: full.to_string() }) };
    let key = render_key(name);
    if rest.is_empty() {
        return Ok(format!("{key} = {}", render(indent)?));
    }
    let inner = format!("{indent}  ");
    let item = render_missing_item_segs(rest, &inner, render, full)?;
    Ok(format!("{key} = {{\n{inner}{item}\n{indent}}}"))
}

/// Where a new attribute goes in a body: after the last attribute, else before the first block,
/// else before the closing brace (or at the end of a file).
fn insert_into_body(
    text: &str,
    body: &Body,
    container: &Range<usize>,
    indent: &str,
    new_text: &str,
) -> (Range<usize>, String) {
    let is_block = new_text.lines().next().is_some_and(|l| l.trim_end().ends_with('{') && !l.contains('='));
    // After the last one-line attribute (keeps `=` alignment groups), else after the last attribute.
    let spans: Vec<Range<usize>> = body.attributes().filter_map(|a| a.span()).collect();
    let last_attr = spans.iter().rev().find(|s| !text[(*s).clone()].contains('\n')).or(spans.last()).cloned();
    let first_block = body.blocks().next().and_then(|b| b.span());
    if let (Some(last), false) = (&last_attr, is_block) {
        let at = line_end(text, last.end);
        let width = eq_width(text, last.start, indent);
        return (at..at, format!("{indent}{}\n", pad_key(new_text, width)));
    }
    let top_level =
        container.start == 0 && container.end == text.len() && !text[container.clone()].trim_end().ends_with('}');
    if top_level || (container.start == 0 && container.end == text.len()) {
        let mut prefix = String::new();
        if !text.is_empty() && !text.ends_with('\n') {
            prefix.push('\n');
        }
        return (text.len()..text.len(), format!("{prefix}{indent}{new_text}\n"));
    }
    match (first_block, is_block) {
        (Some(block), false) => {
            let at = line_start(text, block.start);
            (at..at, format!("{indent}{new_text}\n\n"))
        }
        _ => {
            let close = container.end - 1;
            let at = line_start(text, close);
            if text[at..close].trim().is_empty() {
                let sep = if body.is_empty() { "" } else { "\n" };
                let sep = if is_block { sep } else { "" };
                (at..at, format!("{sep}{indent}{new_text}\n"))
            } else {
                (close..close, format!("\n{indent}{new_text}\n{}", indent_of(text, container.start)))
            }
        }
    }
}

fn blank_line_between(text: &str, body: &Body, block_type: &str) -> &'static str {
    // Keep the neighbours' style: a blank line between sibling blocks if they have one.
    let spans: Vec<Range<usize>> = body.get_blocks(block_type).filter_map(|b| b.span()).collect();
    match spans.as_slice() {
        [.., a, b] if text[a.end..b.start].matches('\n').count() >= 2 => "\n",
        [_] => "\n",
        _ => "",
    }
}

/// The indentation of children of a body whose container starts at `start`.
fn child_indent(text: &str, body: &Body, start: usize) -> String {
    match body.iter().next().and_then(|s| s.span()) {
        Some(first) if line_start(text, first.start) != line_start(text, start) => indent_of(text, first.start),
        _ => format!("{}  ", indent_of(text, start)),
    }
}

fn child_indent_for(text: &str, body: &Body, container: &Range<usize>) -> String {
    if container.start == 0 && container.end == text.len() {
        return String::new();
    }
    child_indent(text, body, container.start)
}

/// The whitespace at the start of the line holding `pos`.
pub(crate) fn indent_of(text: &str, pos: usize) -> String {
    let start = line_start(text, pos);
    text[start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect()
}

fn line_start(text: &str, pos: usize) -> usize {
    text[..pos].rfind('\n').map_or(0, |i| i + 1)
}

/// The position after the newline ending the line holding `pos` (or the end of the text).
fn line_end(text: &str, pos: usize) -> usize {
    text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1)
}

/// The key width that lines `=` up with the attribute at `pos`, when that line is `key = value`.
fn eq_width(text: &str, pos: usize, indent: &str) -> usize {
    let start = line_start(text, pos);
    let line = &text[start..line_end(text, pos)];
    match line.find('=') {
        Some(eq) if line[..eq].ends_with(' ') => eq.saturating_sub(indent.len() + 1),
        _ => 0,
    }
}

fn pad_key(item: &str, width: usize) -> String {
    match item.split_once(" = ") {
        Some((key, rest)) if key.len() < width && !key.contains('\n') => format!("{key:<width$} = {rest}"),
        _ => item.to_string(),
    }
}

/// Widen a span to whole lines when it stands alone on them (with its trailing comment).
pub(crate) fn remove_span(text: &str, span: Range<usize>) -> Range<usize> {
    let start = line_start(text, span.start);
    let end = line_end(text, span.end);
    let before_alone = text[start..span.start].trim().is_empty();
    let after = text[span.end..end].trim();
    let after_alone = after.is_empty() || after.starts_with('#') || after.starts_with("//") || after == ",";
    if before_alone && after_alone {
        return start..end;
    }
    // Inline (one-line object): take a neighbouring comma with it.
    let tail = &text[span.end..];
    let trimmed = tail.trim_start_matches([' ', '\t']);
    if let Some(after_comma) = trimmed.strip_prefix(',') {
        let skip = tail.len() - after_comma.trim_start_matches([' ', '\t']).len();
        return span.start..span.end + skip;
    }
    let head = &text[..span.start];
    let trimmed = head.trim_end_matches([' ', '\t']);
    if let Some(before_comma) = trimmed.strip_suffix(',') {
        return before_comma.len()..span.end;
    }
    span
}

fn apply(text: &str, (range, replacement): (Range<usize>, String)) -> Result<String, EditError> {
    let mut out = String::with_capacity(text.len() + replacement.len());
    out.push_str(&text[..range.start]);
    out.push_str(&replacement);
    out.push_str(&text[range.end..]);
    parse(&out).map_err(|e| EditError::Reparse(e.to_string()))?;
    Ok(out)
}

/// All structures of a body with their spans: used by the index.
pub fn structures(body: &Body) -> impl Iterator<Item = &Structure> {
    body.iter()
}
