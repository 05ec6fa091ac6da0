//! Where a value of a resource's configuration comes from, and the edits that would change it
//! there.
//!
//! Starting at the expression that sets an attribute, [`Tracer`] follows it through variables
//! (tfvars entry, default), module inputs (the call site, then the module's default), locals,
//! `each.value` (the `for_each` map entry), `merge()` arguments and conditionals, and proposes one
//! candidate edit at every level it passes: the origin first, then ever closer to the resource. A
//! map read through a reference others read too can change for this reading alone: an entry set
//! as `merge(reference, { key = value })`, an entry dropped as a `for` expression that filters it.
//! [`crate::patch`] keeps the first candidate that changes this resource instance and nothing else.

use std::ops::Range;
use std::path::{Path, PathBuf};

use hcl_edit::Span;
use hcl_edit::expr::{Array, Expression, Object, TraversalOperator};
use serde_json::Value;

use crate::address::{InstanceKey, ModuleStep};
use crate::edit::{self, BlockSel};
use crate::eval::{contains_symbolic, eval_in_block};
use crate::path::{AttrPath, Seg};
use crate::render::AttrValue;
use crate::repo::Repo;
use crate::values::values_equal;

/// The block an expression belongs to, for `each.*`, `count.index` and `var.*`: a resource block or
/// a module call, in one module instance.
#[derive(Debug, Clone)]
pub(crate) struct Site {
    pub module: Vec<ModuleStep>,
    pub dir: PathBuf,
    pub file: PathBuf,
    pub block: BlockSel,
    pub key: Option<InstanceKey>,
}

/// What to do at the end of the path.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    Set(AttrValue),
    Remove,
}

/// One possible edit: a file's new text (and, for an edit that spans files, the others'), and what
/// it does.
#[derive(Debug, Clone, Default)]
pub(crate) struct Candidate {
    pub file: PathBuf,
    pub text: String,
    pub note: String,
    pub also: Vec<(PathBuf, String)>,
}

/// One step of a trace, as the tracer's steps for a traversal take it: the block the expression
/// belongs to, the file it is written in, the expression, what is left of the path below it, the
/// change to make there, how the trace got here (for the note) and how deep it is.
#[derive(Clone, Copy)]
pub(crate) struct Trace<'t, 'a> {
    pub site: &'t Site,
    pub file: &'t Path,
    pub expr: &'a Expression,
    pub tail: &'t [Seg],
    pub change: &'t Change,
    pub trail: &'t str,
    pub depth: usize,
}

pub(crate) struct Tracer<'a> {
    pub repo: &'a Repo,
    pub out: Vec<Candidate>,
    /// Inside a `dynamic` block's content: its iterator's name, its `for_each` expression and the
    /// element this block comes from (`rule.value` is that element of `for_each`).
    pub iterator: Option<(String, &'a Expression, Seg)>,
}

const MAX_DEPTH: usize = 12;

impl<'a> Tracer<'a> {
    pub fn new(repo: &'a Repo) -> Self {
        Tracer { repo, out: Vec::new(), iterator: None }
    }

    /// Propose edits that apply `change` at `tail` inside `expr` (an expression of `file`), origin first.
    #[allow(clippy::too_many_arguments)]
    pub fn expr(
        &mut self,
        site: &Site,
        file: &Path,
        expr: &'a Expression,
        tail: &[Seg],
        change: &Change,
        trail: &str,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        match expr {
            Expression::Parenthesis(inner) => {
                return self.expr(site, file, inner.inner(), tail, change, trail, depth + 1);
            }
            Expression::Traversal(_) => {
                // `var.list[count.index]` in a block with `count`: the element of this instance.
                let count_index = match &site.key {
                    Some(InstanceKey::Int(i)) => Some(*i as usize),
                    _ => None,
                };
                if let Some((root, first, rest)) = split_traversal_at(expr, count_index, self.repo.workspace()) {
                    let tail = [rest, tail.to_vec()].concat();
                    self.traversal(site, &root, &first, &tail, change, trail, depth);
                }
                let at = Trace { site, file, expr, tail, change, trail, depth };
                self.picked_by_key(&at);
                self.fleet_instance_picked(&at);
                self.policy_document_edited(site, expr, tail, change, trail);
                self.overridden_here(&at);
            }
            // `try(var.list[count.index].key, default)`: the first argument is the value when it
            // exists, so that is where the change goes (an entry gains the key it lacked).
            Expression::FuncCall(call) if call.name.name.as_str() == "try" => {
                if let Some(first) = call.args.iter().next() {
                    let trail = format!("{trail} -> try()'s first argument");
                    self.expr(site, file, first, tail, change, &trail, depth + 1);
                }
            }
            // `lookup(each.value, "periods", 2)`: the map's entry first, then the default.
            Expression::FuncCall(call) if call.name.name.as_str() == "lookup" => {
                self.lookup(site, file, call, tail, change, trail, depth)
            }
            // `coalesce(each.value.days, var.default_days)`: the first argument that is set wins, so
            // setting the first one gives this value (an entry gains the key it lacked); a later
            // argument changes the value only while every one before it is null.
            Expression::FuncCall(call) if call.name.name.as_str() == "coalesce" && tail.is_empty() => {
                for (i, arg) in call.args.iter().enumerate() {
                    let trail = format!("{trail} -> coalesce()'s argument {}", i + 1);
                    self.expr(site, file, arg, tail, change, &trail, depth + 1);
                }
            }
            // `flatten([var.rule])`: the item (or the element of the item) the index falls in.
            Expression::FuncCall(call) if call.name.name.as_str() == "flatten" && !tail.is_empty() => {
                self.flatten(site, file, call, tail, change, trail, depth)
            }
            // A member of a JSON document the code builds: edited in the object it is built from.
            Expression::FuncCall(call) if call.name.name.as_str() == "jsonencode" && !tail.is_empty() => {
                if let Some(arg) = call.args.iter().next() {
                    let trail = format!("{trail} -> jsonencode");
                    self.expr(site, file, arg, tail, change, &trail, depth + 1);
                }
            }
            Expression::FuncCall(call) if call.name.name.as_str() == "merge" && !tail.is_empty() => {
                let args: Vec<&'a Expression> = call.args.iter().collect();
                self.merge(site, file, &args, tail, change, trail, depth);
            }
            Expression::Conditional(cond) => self.conditional(
                site,
                file,
                &cond.cond_expr,
                &cond.true_expr,
                &cond.false_expr,
                tail,
                change,
                trail,
                depth,
            ),
            Expression::Object(object) if !tail.is_empty() => {
                self.object(site, file, object, tail, change, trail, depth)
            }
            // A whole list that reads other resources: item by item, the items that stay kept.
            Expression::Array(array) if tail.is_empty() && refers_to_other_objects(expr) => {
                if let Change::Set(AttrValue::Literal(Value::Array(new))) = change {
                    self.list_rewritten(site, file, array, new, trail);
                }
            }
            Expression::Array(array) if matches!(tail.first(), Some(Seg::Index(_))) => {
                self.array(site, file, array, tail, change, trail, depth)
            }
            // `{ for name, cfg in var.buckets : name => cfg if ... }`: each entry is the collection's
            // entry of the same key, so the change goes there.
            Expression::ForExpr(for_expr) if matches!(tail.first(), Some(Seg::Key(_))) && !for_expr.grouping => {
                let is_var = |e: &Expression, name: &str| matches!(e, Expression::Variable(v) if v.as_str() == name);
                let intro = &for_expr.intro;
                let keeps_entries = intro.key_var.as_ref().is_some_and(|k| {
                    for_expr.key_expr.as_ref().is_some_and(|e| is_var(e, k.as_str()))
                        && is_var(&for_expr.value_expr, intro.value_var.as_str())
                });
                if keeps_entries {
                    let trail = format!("{trail} -> the for expression's collection");
                    self.expr(site, file, &intro.collection_expr, tail, change, &trail, depth + 1);
                }
            }
            _ => {}
        }
        // At this level: the whole expression replaced by the value; but never an expression
        // computed from other resources, data sources or modules (`jsonencode({arn = aws_sqs_queue.dlq.arn})`):
        // a literal there would cut the link and freeze today's value.
        if let (true, Change::Set(value), Some(span)) = (tail.is_empty(), change, expr.span()) {
            if !refers_to_other_objects(expr) {
                match (expr, value) {
                    // A document written as a heredoc stays one.
                    (Expression::HeredocTemplate(_), AttrValue::Literal(Value::String(new))) => {
                        self.replace_heredoc(file, span, new, trail)
                    }
                    _ => self.replace(file, span, value, trail),
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn traversal(
        &mut self,
        site: &Site,
        root: &str,
        first: &str,
        tail: &[Seg],
        change: &Change,
        trail: &str,
        depth: usize,
    ) {
        let repo = self.repo;
        match root {
            "var" if site.module.is_empty() => {
                // A workspace's change lands in the workspace's own variable file, so the other
                // workspaces keep their values: first, when the value comes from anything shared.
                let files = repo.tfvars_files(&site.dir);
                let winner = files.iter().rev().find(|f| repo.body(f).and_then(|b| b.get_attribute(first)).is_some());
                if let Some(own) = repo.var_files().last() {
                    if winner.is_none_or(|w| !repo.var_files().contains(w)) {
                        let current = self.eval(site, &format!("var.{first}"));
                        let path = AttrPath(vec![Seg::Name(first.to_string())]);
                        let edited = changed_value(current, tail, change)
                            .and_then(|v| edit::set(repo.text(own)?, None, &path, &v).ok());
                        if let Some(new) = edited {
                            let note = format!(
                                "{trail} -> var.{first} set in {}, the variable file of workspace {}",
                                own.display(),
                                repo.workspace()
                            );
                            self.push(own.clone(), new, note);
                        }
                    }
                }
                // The last tfvars file that sets it wins, as in Terraform.
                for file in repo.tfvars_files(&site.dir).into_iter().rev() {
                    if let Some(attr) = repo.body(file).and_then(|b| b.get_attribute(first)) {
                        let trail = format!("{trail} -> var.{first} in {}", file.display());
                        return self.expr(site, file, &attr.value, tail, change, &trail, depth + 1);
                    }
                }
                let sel = BlockSel::new("variable", &[first]);
                if let Some(file) = repo.find_block(&site.dir, &sel) {
                    let block = repo.body(file).and_then(|b| edit::find_block(b, &sel));
                    if let Some(default) = block.and_then(|b| b.body.get_attribute("default")) {
                        let trail = format!("{trail} -> the default of var.{first} in {}", file.display());
                        self.expr(site, file, &default.value, tail, change, &trail, depth + 1);
                    }
                }
            }
            "var" => {
                let Some(call) = site.module.last() else { return };
                let parent_steps = site.module[..site.module.len() - 1].to_vec();
                let parent_path =
                    parent_steps.iter().map(|m| format!("module.{}", m.name)).collect::<Vec<_>>().join(".");
                let Some(parent_dir) = repo.module_dir(&parent_path).cloned() else { return };
                let sel = BlockSel::new("module", &[&call.name]);
                let Some(call_file) = repo.find_block(&parent_dir, &sel).cloned() else { return };
                let parent = Site {
                    module: parent_steps,
                    dir: parent_dir,
                    file: call_file.clone(),
                    block: sel.clone(),
                    key: call.key.clone(),
                };
                let call_block = repo.body(&call_file).and_then(|b| edit::find_block(b, &sel));
                match call_block.and_then(|b| b.body.get_attribute(first)) {
                    Some(attr) => {
                        let trail =
                            format!("{trail} -> the input {first} of module.{} in {}", call.name, call_file.display());
                        self.expr(&parent, &call_file, &attr.value, tail, change, &trail, depth + 1);
                    }
                    None => {
                        // The call takes the module's default: give this call its own input.
                        let current = self.eval(site, &format!("var.{first}"));
                        if let Some(new_value) = changed_value(current, tail, change) {
                            let path = AttrPath(vec![Seg::Name(first.to_string())]);
                            if let Some(text) = repo.text(&call_file) {
                                if let Ok(new) = edit::set(text, Some(&sel), &path, &new_value) {
                                    let note = format!(
                                        "{trail} -> a new input {first} on module.{} in {}, instead of the module's default",
                                        call.name,
                                        call_file.display()
                                    );
                                    self.push(call_file.clone(), new, note);
                                }
                            }
                        }
                        let input = PerInstanceInput {
                            call_name: &call.name,
                            call_file: &call_file,
                            sel: &sel,
                            input: first,
                            module_dir: &site.dir,
                        };
                        self.per_instance_input(&parent, &input, tail, change, trail, depth);
                    }
                }
                // The module's own default is shared by every call; it is the last resort.
                let var_sel = BlockSel::new("variable", &[first]);
                if let Some(file) = repo.find_block(&site.dir, &var_sel) {
                    let block = repo.body(file).and_then(|b| edit::find_block(b, &var_sel));
                    if let Some(default) = block.and_then(|b| b.body.get_attribute("default")) {
                        let trail = format!("{trail} -> the default of var.{first} in {}", file.display());
                        self.expr(site, file, &default.value, tail, change, &trail, depth + 1);
                    }
                }
            }
            "local" => {
                let Some(file) = repo.find_local(&site.dir, first) else { return };
                let attr = repo
                    .body(file)
                    .into_iter()
                    .flat_map(|b| b.blocks())
                    .filter(|b| b.ident.as_str() == "locals")
                    .find_map(|b| b.body.get_attribute(first));
                if let Some(attr) = attr {
                    let trail = format!("{trail} -> local.{first} in {}", file.display());
                    self.expr(site, file, &attr.value, tail, change, &trail, depth + 1);
                }
            }
            name if first == "value" && self.iterator.as_ref().is_some_and(|(n, _, _)| n == name) => {
                let Some((_, for_each, element)) = self.iterator.clone() else { return };
                let tail = [vec![element.clone()], tail.to_vec()].concat();
                let which = match &element {
                    Seg::Index(i) => format!("{i}"),
                    Seg::Key(k) | Seg::Name(k) => format!("{k:?}"),
                };
                let trail = format!("{trail} -> element {which} of the dynamic block's for_each");
                self.expr(site, &site.file, for_each, &tail, change, &trail, depth + 1);
            }
            "each" if first == "value" => {
                let Some(InstanceKey::Str(key)) = &site.key else { return };
                let block = repo.body(&site.file).and_then(|b| edit::find_block(b, &site.block));
                if let Some(for_each) = block.and_then(|b| b.body.get_attribute("for_each")) {
                    let tail = [vec![Seg::Key(key.clone())], tail.to_vec()].concat();
                    let trail = format!("{trail} -> the for_each entry {key:?}");
                    self.expr(site, &site.file, &for_each.value, &tail, change, &trail, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// A module call with `count`/`for_each` over a list or map whose entries its other inputs read
    /// (`try(var.api_instances[count.index].monitoring, false)`): an input the call does not pass
    /// yet is added the same way, defaulting to the module's own default, and the change goes to
    /// this instance's entry. Every other instance keeps the default it had.
    fn per_instance_input(
        &mut self,
        parent: &Site,
        input: &PerInstanceInput<'_>,
        tail: &[Seg],
        change: &Change,
        trail: &str,
        depth: usize,
    ) {
        let repo = self.repo;
        let (Some(text), Some(block)) =
            (repo.text(input.call_file), repo.body(input.call_file).and_then(|b| edit::find_block(b, input.sel)))
        else {
            return;
        };
        let block_text = block.span().map(|s| &text[s]).unwrap_or_default();
        let element = if block.body.get_attribute("count").is_some() {
            let Some(list) = count_indexed_list(block_text) else { return };
            format!("var.{list}[count.index]")
        } else if block.body.get_attribute("for_each").is_some() && block_text.contains("each.value") {
            "each.value".to_string()
        } else {
            return;
        };
        let var_sel = BlockSel::new("variable", &[input.input]);
        let default = repo
            .find_block(input.module_dir, &var_sel)
            .and_then(|file| {
                let block = edit::find_block(repo.body(file)?, &var_sel)?;
                Some(edit::expr_text(repo.text(file)?, &block.body.get_attribute("default")?.value).trim().to_string())
            })
            .unwrap_or_else(|| "null".to_string());
        let reading = format!("try({element}.{}, {default})", input.input);
        let placeholder = "__driftback_per_instance_input__";
        let path = AttrPath(vec![Seg::Name(input.input.to_string())]);
        let Ok(with_input) =
            edit::set(text, Some(input.sel), &path, &AttrValue::Literal(Value::String(placeholder.into())))
        else {
            return;
        };
        let new_call = with_input.replacen(&format!("\"{placeholder}\""), &reading, 1);
        // On a line of its own, after a blank line, so the arguments above keep their alignment;
        // alone in its run, its `=` has one space before it (`terraform fmt`).
        let new_call = match new_call.find(&reading).and_then(|at| new_call[..at].rfind('\n')) {
            Some(line_start) if !new_call[..line_start].ends_with('\n') && !new_call[..line_start].ends_with('{') => {
                let line = &new_call[line_start + 1..];
                let line = match line.split_once(" =") {
                    Some((name, rest)) => format!("{} ={rest}", name.trim_end()),
                    None => line.to_string(),
                };
                format!("{}\n\n{line}", &new_call[..line_start])
            }
            _ => new_call,
        };
        if edit::parse(&new_call).is_err() {
            return;
        }
        let mut scratch = repo.clone();
        scratch.set_file(input.call_file, new_call.clone());
        let Some(attr) = scratch
            .body(input.call_file)
            .and_then(|b| edit::find_block(b, input.sel))
            .and_then(|b| b.body.get_attribute(input.input))
        else {
            return;
        };
        let trail = format!(
            "{trail} -> a new input {} on module.{} in {}, read per instance as {reading}",
            input.input,
            input.call_name,
            input.call_file.display()
        );
        let mut sub = Tracer::new(&scratch);
        sub.expr(parent, input.call_file, &attr.value, tail, change, &trail, depth + 1);
        for candidate in sub.out {
            if candidate.file == input.call_file {
                self.push(candidate.file, candidate.text, candidate.note);
            } else if !self.out.iter().any(|c| c.file == candidate.file && c.text == candidate.text) {
                self.out.push(Candidate { also: vec![(input.call_file.to_path_buf(), new_call.clone())], ..candidate });
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn merge(
        &mut self,
        site: &Site,
        file: &Path,
        args: &[&'a Expression],
        tail: &[Seg],
        change: &Change,
        trail: &str,
        depth: usize,
    ) {
        let Some(key) = tail.first().and_then(edit::seg_name) else { return };
        let text = self.repo.text(file).unwrap_or_default();
        // Which arguments set the key: the last of them decides the value.
        let defining: Vec<usize> = args
            .iter()
            .enumerate()
            .filter(|(_, arg)| {
                let value = self.eval(site, &edit::expr_text(text, arg));
                matches!(value, Some(Value::Object(m)) if m.contains_key(key))
            })
            .map(|(i, _)| i)
            .collect();
        let trail = format!("{trail} -> merge()");
        match change {
            Change::Set(_) => match defining.last() {
                // Where the key is set; then, narrower, an argument after it that overrides it
                // (a per-instance map merged over a shared local).
                Some(&i) => {
                    self.expr(site, file, args[i], tail, change, &trail, depth + 1);
                    for arg in args[i + 1..].iter().rev() {
                        let trail = format!("{trail} (an override in a later argument)");
                        self.expr(site, file, arg, tail, change, &trail, depth + 1);
                    }
                }
                // A new key: wherever it can go, the most specific argument last.
                None => {
                    for arg in args.iter().rev() {
                        self.expr(site, file, arg, tail, change, &trail, depth + 1);
                    }
                }
            },
            Change::Remove => {
                if let [i] = defining.as_slice() {
                    self.expr(site, file, args[*i], tail, change, &trail, depth + 1);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn conditional(
        &mut self,
        site: &Site,
        file: &Path,
        cond: &'a Expression,
        yes: &'a Expression,
        no: &'a Expression,
        tail: &[Seg],
        change: &Change,
        trail: &str,
        depth: usize,
    ) {
        let text = self.repo.text(file).unwrap_or_default();
        // `flag ? "Enabled" : "Suspended"`: the value is one of the branches; change the flag. Only
        // a flag (a reference, a literal): a computed condition (`each.key == "api"`) says which
        // instances take which branch, and a literal in its place would say nothing.
        let is_flag = |e: &Expression| matches!(e, Expression::Traversal(_) | Expression::Bool(_));
        let flag_expr = match cond {
            Expression::Parenthesis(inner) => inner.inner(),
            other => other,
        };
        if let (true, true, Change::Set(AttrValue::Literal(want))) = (is_flag(flag_expr), tail.is_empty(), change) {
            let a = self.eval(site, &edit::expr_text(text, yes));
            let b = self.eval(site, &edit::expr_text(text, no));
            let is = |v: &Option<Value>| v.as_ref().is_some_and(|v| values_equal(v, want));
            let flag = match (is(&a), is(&b)) {
                (true, false) => Some(true),
                (false, true) => Some(false),
                _ => None,
            };
            if let Some(flag) = flag {
                let set_flag = Change::Set(AttrValue::Literal(Value::Bool(flag)));
                let trail = format!("{trail} -> the condition");
                self.expr(site, file, cond, &[], &set_flag, &trail, depth + 1);
            }
        }
        // Otherwise, the branch this instance takes.
        match self.eval(site, &edit::expr_text(text, cond)) {
            Some(Value::Bool(true)) => self.expr(site, file, yes, tail, change, trail, depth + 1),
            Some(Value::Bool(false)) => self.expr(site, file, no, tail, change, trail, depth + 1),
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn object(
        &mut self,
        site: &Site,
        file: &Path,
        object: &'a Object,
        tail: &[Seg],
        change: &Change,
        trail: &str,
        depth: usize,
    ) {
        let Some(key) = tail.first().and_then(edit::seg_name) else { return };
        let text = self.repo.text(file).unwrap_or_default();
        match edit::object_get(object, text, key) {
            Some((_, value)) if tail.len() > 1 || matches!(change, Change::Set(_)) => {
                self.expr(site, file, value, &tail[1..], change, trail, depth + 1)
            }
            Some(_) => self.in_object(file, object, tail, change, trail),
            None => {
                if matches!(change, Change::Set(_)) {
                    self.in_object(file, object, tail, change, trail);
                }
            }
        }
    }

    /// Add or remove an entry of a literal object by editing it as a one-attribute document.
    fn in_object(&mut self, file: &Path, object: &Object, tail: &[Seg], change: &Change, trail: &str) {
        let Some(span) = object.span() else { return };
        let text = self.repo.text(file).unwrap_or_default();
        let wrapper = format!("x = {}\n", &text[span.clone()]);
        let path = AttrPath([vec![Seg::Name("x".into())], tail.to_vec()].concat());
        let edited = match change {
            Change::Set(value) => edit::set(&wrapper, None, &path, value),
            Change::Remove => edit::remove(&wrapper, None, &path),
        };
        let Ok(edited) = edited else { return };
        let Some(inner) = edited.strip_prefix("x = ").and_then(|s| s.strip_suffix('\n')) else { return };
        // An object on one line (`returns = {}`) that the edit spreads over several: its lines are
        // indented as the line it starts on.
        let inner = match (text[span.clone()].contains('\n'), inner.contains('\n')) {
            (false, true) => inner.replace('\n', &format!("\n{}", edit::indent_of(text, span.start))),
            _ => inner.to_string(),
        };
        let new = format!("{}{}{}", &text[..span.start], inner, &text[span.end..]);
        let what = match change {
            Change::Set(_) => "set",
            Change::Remove => "removed",
        };
        let place = place(trail, file, text, span.start);
        self.push(file.to_path_buf(), new, format!("{what} {} in {place}", AttrPath(tail.to_vec())));
    }

    #[allow(clippy::too_many_arguments)]
    fn array(
        &mut self,
        site: &Site,
        file: &Path,
        array: &'a Array,
        tail: &[Seg],
        change: &Change,
        trail: &str,
        depth: usize,
    ) {
        let Some(Seg::Index(i)) = tail.first() else { return };
        let Some(item) = array.iter().nth(*i) else {
            // One past the end: the list gains an item (a policy's new statement).
            if let (Change::Set(value), true) = (change, tail.len() == 1 && *i == array.len()) {
                self.append_item(file, array, value, trail);
            }
            return;
        };
        if tail.len() > 1 || matches!(change, Change::Set(_)) {
            return self.expr(site, file, item, &tail[1..], change, trail, depth + 1);
        }
        let (Some(span), Some(text)) = (item.span(), self.repo.text(file)) else { return };
        let range = edit::remove_span(text, span);
        let new = format!("{}{}", &text[..range.start], &text[range.end..]);
        let new = tidy_list_end(&new, range.start);
        let place = place(trail, file, text, range.start);
        self.push(file.to_path_buf(), new, format!("removed item {i} of the list in {place}"));
    }

    /// Add `value` as the last item of a list literal, in the list's own layout: one item per line
    /// when it is written so, with its trailing comma kept or left out as the list has it.
    fn append_item(&mut self, file: &Path, array: &Array, value: &AttrValue, trail: &str) {
        let (Some(text), Some(span)) = (self.repo.text(file), array.span()) else { return };
        let Some(last) = array.iter().last() else {
            // `[]`: the list is the one item.
            let Ok(rendered) = value.render(&edit::indent_of(text, span.start)) else { return };
            let new = format!("{}[{rendered}]{}", &text[..span.start], &text[span.end..]);
            let place = place(trail, file, text, span.start);
            return self.push(file.to_path_buf(), new, format!("added an item to the list in {place}"));
        };
        let Some(last_span) = last.span() else { return };
        let indent = edit::indent_of(text, last_span.start);
        let rendered = match (value, last) {
            // An object item written like the ones before it: their keys in their order.
            (AttrValue::Literal(v), Expression::Object(sibling)) => {
                let like: Vec<String> = sibling.iter().filter_map(|(k, _)| edit::object_key_str(text, k)).collect();
                let one_line = !text[last_span.clone()].contains('\n');
                match crate::render::render_inline_like(v, &like).filter(|_| one_line) {
                    Some(inline) => inline,
                    None => crate::render::render_value_like(v, &indent, &like),
                }
            }
            _ => match value.render(&indent) {
                Ok(rendered) => rendered,
                Err(_) => return,
            },
        };
        let after_last = &text[last_span.end..span.end];
        let comma = after_last.trim_start_matches([' ', '\t']).starts_with(',');
        let multiline = text[span.start..last_span.start].contains('\n');
        let (at, insert) = match (multiline, comma) {
            (true, true) => {
                let at = last_span.end + after_last.find(',').unwrap_or(0) + 1;
                (at, format!("\n{indent}{rendered},"))
            }
            (true, false) => (last_span.end, format!(",\n{indent}{rendered}")),
            (false, _) => (last_span.end, format!(", {rendered}")),
        };
        let new = format!("{}{insert}{}", &text[..at], &text[at..]);
        let place = place(trail, file, text, span.start);
        self.push(file.to_path_buf(), new, format!("added an item at the end of the list in {place}"));
    }

    /// The heredoc at `span` holds `new` instead, with its own delimiter and indentation; a JSON
    /// document is written pretty-printed, as heredoc documents are. Template sequences in the
    /// data are escaped, so data stays data.
    fn replace_heredoc(&mut self, file: &Path, span: Range<usize>, new: &str, trail: &str) {
        let Some(text) = self.repo.text(file) else { return };
        let Some(opening) = text[span.clone()].lines().next() else { return };
        let Some(marker) = opening.trim().strip_prefix("<<") else { return };
        let (indented, delimiter) = match marker.strip_prefix('-') {
            Some(d) => (true, d.trim()),
            None => (false, marker.trim()),
        };
        let content = match serde_json::from_str::<Value>(new) {
            Ok(document @ (Value::Object(_) | Value::Array(_))) => {
                serde_json::to_string_pretty(&document).unwrap_or_else(|_| new.to_string())
            }
            _ => new.to_string(),
        };
        let content = content.replace("${", "$${").replace("%{", "%%{");
        if delimiter.is_empty() || content.lines().any(|line| line.trim() == delimiter) {
            return;
        }
        let indent = edit::indent_of(text, span.start);
        let (body_indent, end_indent) =
            if indented { (format!("{indent}  "), indent) } else { (String::new(), String::new()) };
        let mut out = format!("<<{}{delimiter}\n", if indented { "-" } else { "" });
        for line in content.lines() {
            if !line.is_empty() {
                out.push_str(&body_indent);
            }
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&end_indent);
        out.push_str(delimiter);
        // The span may or may not hold the newline after the closing delimiter: keep what follows as it was.
        let tail_newline = text[span.clone()].ends_with('\n');
        if tail_newline {
            out.push('\n');
        }
        let new_text = format!("{}{out}{}", &text[..span.start], &text[span.end..]);
        let place = place(trail, file, text, span.start);
        self.push(file.to_path_buf(), new_text, format!("wrote the document in the heredoc in {place}"));
    }

    fn replace(&mut self, file: &Path, span: Range<usize>, value: &AttrValue, trail: &str) {
        let Some(text) = self.repo.text(file) else { return };
        let indent = edit::indent_of(text, span.start);
        let Ok(rendered) = value.render(&indent) else { return };
        let new = format!("{}{}{}", &text[..span.start], rendered, &text[span.end..]);
        let place = place(trail, file, text, span.start);
        self.push(file.to_path_buf(), new, format!("wrote the value in {place}"));
    }

    pub(crate) fn push(&mut self, file: PathBuf, text: String, note: String) {
        if edit::parse(&text).is_err() || self.repo.text(&file) == Some(text.as_str()) {
            return;
        }
        if self.out.iter().any(|c| c.file == file && c.text == text) {
            return;
        }
        self.out.push(Candidate { file, text, note: note.trim_start_matches(" -> ").to_string(), also: Vec::new() });
    }

    /// `local.cache_policy_ids[behavior.value.cache_policy]`: a value picked from a collection by
    /// a computed key. The one key whose value is the new one goes where the key comes from.
    fn picked_by_key(&mut self, at: &Trace<'_, 'a>) {
        let Trace { site, file, expr, tail, change, trail, depth } = *at;
        let (true, Change::Set(AttrValue::Literal(want))) = (tail.is_empty(), change) else { return };
        let Expression::Traversal(t) = expr else { return };
        let Some(last) = t.operators.last() else { return };
        let TraversalOperator::Index(index) = last.value() else { return };
        if matches!(index, Expression::String(_) | Expression::Number(_)) || is_count_index(index) {
            return;
        }
        let text = self.repo.text(file).unwrap_or_default();
        let (Some(whole), Some(op)) = (expr.span(), last.span()) else { return };
        let Some(collection) = text.get(whole.start..op.start) else { return };
        let keys: Vec<Value> = match self.eval(site, collection) {
            Some(Value::Object(map)) => {
                map.iter().filter(|(_, v)| values_equal(v, want)).map(|(k, _)| Value::String(k.clone())).collect()
            }
            Some(Value::Array(items)) => {
                items.iter().enumerate().filter(|(_, v)| values_equal(v, want)).map(|(i, _)| Value::from(i)).collect()
            }
            _ => return,
        };
        if let [key] = keys.as_slice() {
            let trail = format!("{trail} -> the key {key} that picks it from {}", collection.trim());
            let pick = Change::Set(AttrValue::Literal(key.clone()));
            self.expr(site, file, index, &[], &pick, &trail, depth + 1);
        }
    }

    /// A map read here that others read too (`cluster_parameters = local.cluster_parameters` in one
    /// of two module calls): this reading alone changes its entry, as
    /// `merge(local.cluster_parameters, { key = "value" })`, or drops it, as
    /// `{ for k, v in var.trusted_cidrs : k => v if k != "key" }`. Proposed after the origins, so
    /// it is kept only where every edit of the shared value would change the others too.
    fn overridden_here(&mut self, at: &Trace<'_, 'a>) {
        let Trace { site, file, expr, tail, change, trail, .. } = *at;
        let Some((Seg::Key(key) | Seg::Name(key), rest)) = tail.split_first() else { return };
        let Some(span) = expr.span() else { return };
        let Some(text) = self.repo.text(file) else { return };
        let source = edit::expr_text(text, expr).trim().to_string();
        let Some(Value::Object(map)) = self.eval(site, &source) else { return };
        let rendered_key = crate::render::render_key(key);
        let (new_expr, did) = match change {
            Change::Set(_) => {
                let Some(entry) = changed_value(map.get(key).cloned(), rest, change) else { return };
                let indent = edit::indent_of(text, span.start);
                let Ok(value) = entry.render(&indent) else { return };
                (format!("merge({source}, {{ {rendered_key} = {value} }})"), "overridden")
            }
            Change::Remove if rest.is_empty() && map.contains_key(key) => {
                (format!("{{ for k, v in {source} : k => v if k != {} }}", crate::render::quote(key)), "filtered out")
            }
            Change::Remove => return,
        };
        if new_expr.contains('\n') {
            return;
        }
        let new = format!("{}{}{}", &text[..span.start], new_expr, &text[span.end..]);
        let place = place(trail, file, text, span.start);
        self.push(file.to_path_buf(), new, format!("{did} for this reading only in {place}: {new_expr}"));
    }

    pub(crate) fn eval(&self, site: &Site, source: &str) -> Option<Value> {
        eval_in_block(self.repo, &site.module, &site.file, &site.block, site.key.as_ref(), source)
    }
}

/// Where a per-instance input would go: the module call, and the module's directory.
struct PerInstanceInput<'p> {
    call_name: &'p str,
    call_file: &'p Path,
    sel: &'p BlockSel,
    input: &'p str,
    module_dir: &'p Path,
}

/// The list a `count` module call's inputs read per instance: `api_instances` in
/// `try(var.api_instances[count.index].instance_type, ...)`.
fn count_indexed_list(text: &str) -> Option<&str> {
    let at = text.find("[count.index]")?;
    let before = &text[..at];
    let start = before.rfind("var.")? + "var.".len();
    let name = &before[start..];
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')).then_some(name)
}

/// `[1, 2, ]` after removing the last item: drop the dangling separator.
fn tidy_list_end(text: &str, at: usize) -> String {
    let before = text[..at].trim_end_matches([' ', '\t']);
    let after = text[at..].trim_start_matches([' ', '\t']);
    if before.ends_with(',') && after.starts_with(']') {
        let cut = before.len() - 1;
        return format!("{}{}", &text[..cut], &text[at..]);
    }
    text.to_string()
}

/// The value a whole input must get so that `tail` inside it changes as asked.
fn changed_value(current: Option<Value>, tail: &[Seg], change: &Change) -> Option<AttrValue> {
    if tail.is_empty() {
        return match change {
            Change::Set(v) => Some(v.clone()),
            Change::Remove => None,
        };
    }
    let mut root = current?;
    let mut slot = &mut root;
    for seg in &tail[..tail.len() - 1] {
        slot = match (seg, slot) {
            (Seg::Name(k) | Seg::Key(k), Value::Object(m)) => {
                m.entry(k.clone()).or_insert(Value::Object(Default::default()))
            }
            (Seg::Index(i), Value::Array(items)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    match (tail.last()?, slot, change) {
        (Seg::Name(k) | Seg::Key(k), Value::Object(m), Change::Set(AttrValue::Literal(v))) => {
            m.insert(k.clone(), v.clone());
        }
        (Seg::Name(k) | Seg::Key(k), Value::Object(m), Change::Remove) => {
            m.remove(k)?;
        }
        _ => return None,
    }
    if contains_symbolic(&root) {
        return None;
    }
    Some(AttrValue::Literal(root))
}

/// `var.x["a"].b` -> (`var`, `x`, [a, b]).
/// Whether an expression reads a resource, a data source or a module output (directly, or inside a
/// function call, a collection, a condition or a template). Directives and `for` expressions count
/// as reading one: they are not looked into.
pub(crate) fn refers_to_other_objects(expr: &Expression) -> bool {
    const OWN: &[&str] = &["var", "local", "each", "count", "path", "terraform", "self"];
    let template = |t: &hcl_edit::template::Template| {
        t.iter().any(|e| match e {
            hcl_edit::template::Element::Literal(_) => false,
            hcl_edit::template::Element::Interpolation(i) => refers_to_other_objects(&i.expr),
            hcl_edit::template::Element::Directive(_) => true,
        })
    };
    match expr {
        Expression::Null(_) | Expression::Bool(_) | Expression::Number(_) | Expression::String(_) => false,
        Expression::Variable(_) => false,
        Expression::Traversal(t) => {
            let root_is_other = match &t.expr {
                Expression::Variable(root) => !OWN.contains(&root.as_str()),
                other => refers_to_other_objects(other),
            };
            root_is_other
                || t.operators.iter().any(|o| match o.value() {
                    TraversalOperator::Index(i) => refers_to_other_objects(i),
                    _ => false,
                })
        }
        Expression::Array(items) => items.iter().any(refers_to_other_objects),
        Expression::Object(object) => object.iter().any(|(_, v)| refers_to_other_objects(v.expr())),
        Expression::FuncCall(call) => call.args.iter().any(refers_to_other_objects),
        Expression::Parenthesis(p) => refers_to_other_objects(p.inner()),
        Expression::Conditional(c) => {
            refers_to_other_objects(&c.cond_expr)
                || refers_to_other_objects(&c.true_expr)
                || refers_to_other_objects(&c.false_expr)
        }
        Expression::UnaryOp(op) => refers_to_other_objects(&op.expr),
        Expression::BinaryOp(op) => refers_to_other_objects(&op.lhs_expr) || refers_to_other_objects(&op.rhs_expr),
        Expression::StringTemplate(t) => template(t),
        Expression::HeredocTemplate(h) => template(&h.template),
        Expression::ForExpr(_) => true,
    }
}

/// `var.NAME.rest...` as (`var`, `NAME`, rest), with `[count.index]` read as `[count_index]` when
/// it is known; `None` for anything else.
fn split_traversal_at(
    expr: &Expression,
    count_index: Option<usize>,
    workspace: &str,
) -> Option<(String, String, Vec<Seg>)> {
    let Expression::Traversal(t) = expr else { return None };
    let Expression::Variable(root) = &t.expr else { return None };
    let mut ops = t.operators.iter().map(|o| o.value());
    let first = match ops.next() {
        Some(TraversalOperator::GetAttr(name)) => name.as_str().to_string(),
        _ => return None,
    };
    let mut rest = Vec::new();
    for op in ops {
        match op {
            TraversalOperator::GetAttr(n) => rest.push(Seg::Key(n.as_str().to_string())),
            TraversalOperator::Index(Expression::String(s)) => rest.push(Seg::Key(s.as_str().to_string())),
            TraversalOperator::Index(Expression::Number(n)) => rest.push(Seg::Index(n.as_u64()? as usize)),
            TraversalOperator::LegacyIndex(i) => rest.push(Seg::Index(*i.value() as usize)),
            TraversalOperator::Index(index) if is_count_index(index) => rest.push(Seg::Index(count_index?)),
            // `var.overrides[tostring(count.index)]`: the map entry keyed by this instance's index.
            TraversalOperator::Index(Expression::FuncCall(call))
                if call.name.name.as_str() == "tostring"
                    && call.args.iter().count() == 1
                    && call.args.iter().next().is_some_and(is_count_index) =>
            {
                rest.push(Seg::Key(count_index?.to_string()))
            }
            // `local.sizes[terraform.workspace]`: the entry of the workspace evaluated.
            TraversalOperator::Index(Expression::Traversal(t))
                if matches!(&t.expr, Expression::Variable(v) if v.as_str() == "terraform")
                    && matches!(t.operators.iter().map(|o| o.value()).collect::<Vec<_>>().as_slice(),
                        [TraversalOperator::GetAttr(n)] if n.as_str() == "workspace") =>
            {
                rest.push(Seg::Key(workspace.to_string()))
            }
            _ => return None,
        }
    }
    Some((root.as_str().to_string(), first, rest))
}

/// `count.index`.
fn is_count_index(expr: &Expression) -> bool {
    let Expression::Traversal(t) = expr else { return false };
    matches!(&t.expr, Expression::Variable(v) if v.as_str() == "count")
        && matches!(t.operators.iter().map(|o| o.value()).collect::<Vec<_>>().as_slice(),
            [TraversalOperator::GetAttr(n)] if n.as_str() == "index")
}

/// The attribute expression a path reaches inside a block body (through nested blocks), and the
/// rest of the path inside that expression. `None` when the path reaches no attribute.
pub(crate) fn attribute_at<'b>(
    body: &'b hcl_edit::structure::Body,
    segs: &[Seg],
) -> Option<(&'b Expression, Vec<Seg>, usize)> {
    let (name, rest) = match segs.split_first()? {
        (Seg::Name(n), rest) => (n, rest),
        _ => return None,
    };
    if let Some(attr) = body.get_attribute(name) {
        return Some((&attr.value, rest.to_vec(), 1));
    }
    let blocks: Vec<&'b hcl_edit::structure::Block> = body.blocks().filter(|b| b.ident.as_str() == name).collect();
    let (block, rest, used) = match rest.first() {
        Some(Seg::Index(i)) => (*blocks.get(*i)?, &rest[1..], 2),
        _ if blocks.len() == 1 => (blocks[0], rest, 1),
        _ => return None,
    };
    let (expr, tail, n) = attribute_at(&block.body, rest)?;
    Some((expr, tail, used + n))
}
/// Where an edit lands, for its note: `FILE:LINE`, and how the value gets from there to the
/// resource (`the resource's own argument`, or the trail of variables, locals and inputs).
fn place(trail: &str, file: &Path, text: &str, offset: usize) -> String {
    let line = text.get(..offset).unwrap_or(text).matches('\n').count() + 1;
    let through = trail.trim().trim_start_matches("->").trim();
    if through.is_empty() {
        format!("{}:{line}, the resource's own argument", file.display())
    } else {
        format!("{}:{line}, through {through}", file.display())
    }
}
