//! Changes to a resource, applied where the value comes from.
//!
//! A value written as a literal in the resource block is changed in place. A value that comes from
//! a variable is changed in `terraform.tfvars` (when it sets the variable) or in the variable's
//! default; from a local, in the local; from a module input, in the module call; from a `for_each`
//! map, in that map's entry. When the origin is shared with other resources or instances, the
//! narrowest correct edit is made instead (a literal on the one resource, or a condition on the one
//! instance), and a note says which and why.

use std::path::{Path, PathBuf};

use hcl_edit::expr::{Expression, TraversalOperator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::address::{Address, InstanceKey};
use crate::edit::{self, BlockSel, EditError};
use crate::path::{AttrPath, Seg};
use crate::render::{AttrValue, BlockSpec, render_key};
use crate::repo::{Repo, count_references};

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
        Op::Set { path, value } => {
            let ctx = Ctx { repo, address, block_file: &file, block: &location.sel };
            let edits = ctx.plan_set(path, value, &mut applied.notes).map_err(|e| err(&file, e))?;
            for (f, new_text) in edits {
                write(repo, &f, new_text, &mut applied);
            }
        }
        Op::Remove { path } => {
            let new = edit::remove(&text, Some(&location.sel), path).map_err(|e| err(&file, e))?;
            write(repo, &file, new, &mut applied);
        }
        Op::AddBlock { block_type, spec } => {
            let new = edit::add_nested_block(&text, &location.sel, block_type, spec).map_err(|e| err(&file, e))?;
            write(repo, &file, new, &mut applied);
        }
        Op::RemoveBlocks { block_type, matching } => {
            let mut current = text.clone();
            let mut removed = 0;
            loop {
                let body = edit::parse(&current).map_err(|e| err(&file, e))?;
                let block = edit::find_block(&body, &location.sel)
                    .ok_or_else(|| PatchError::NoBlock { address: address.to_string() })?;
                let index = block.body.get_blocks(block_type).position(|b| {
                    matching.iter().all(|(k, want)| {
                        b.body
                            .get_attribute(k)
                            .and_then(|a| literal_value(&current, &a.value))
                            .is_some_and(|v| values_equal(&v, want))
                    })
                });
                let Some(index) = index else { break };
                let path = AttrPath(vec![Seg::Name(block_type.clone()), Seg::Index(index)]);
                current = edit::remove(&current, Some(&location.sel), &path).map_err(|e| err(&file, e))?;
                removed += 1;
            }
            if removed == 0 {
                return Err(PatchError::Refused {
                    address: address.to_string(),
                    reason: format!("no `{block_type}` block matches {}", describe_matching(matching)),
                });
            }
            write(repo, &file, current, &mut applied);
        }
        Op::IgnoreChanges { attr } => {
            let new = edit::add_ignore_changes(&text, &location.sel, attr).map_err(|e| err(&file, e))?;
            write(repo, &file, new, &mut applied);
        }
        Op::RemoveResource => {
            let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
            let referencing = repo.references_to(&dir, &address.rtype, &address.name);
            if !referencing.is_empty() {
                let files: Vec<String> = referencing.iter().map(|p| p.display().to_string()).collect();
                return Err(PatchError::Refused {
                    address: address.to_string(),
                    reason: format!(
                        "other configuration refers to {} ({}); a person must remove those references first",
                        address.block_name(),
                        files.join(", ")
                    ),
                });
            }
            if has_count_or_for_each(&text, &location.sel) && address.key.is_some() {
                return Err(PatchError::Refused {
                    address: address.to_string(),
                    reason: "one instance of a count/for_each resource was deleted; shrink its list or map by hand"
                        .into(),
                });
            }
            let index = edit::block_index(&text, &location.sel).map_err(|e| err(&file, e))?;
            let new = edit::remove_block(&text, index).map_err(|e| err(&file, e))?;
            write(repo, &file, new, &mut applied);
            remove_companions(repo, &dir, address, &mut applied).map_err(|e| err(&dir, e))?;
        }
        Op::CreateResource { .. } => unreachable!("handled above"),
    }
    Ok(applied)
}

fn write(repo: &mut Repo, file: &Path, text: String, applied: &mut Applied) {
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

fn create_resource(
    repo: &mut Repo,
    address: &Address,
    spec: &BlockSpec,
    import_id: &str,
    applied: &mut Applied,
) -> Result<(), EditError> {
    let dir = repo.module_dir(&address.module_path()).cloned().unwrap_or_default();
    // Where resources of this type live; else a new file named for them.
    let existing = repo.resources_of_type(&dir, &address.rtype);
    let mut counts: std::collections::BTreeMap<&PathBuf, usize> = std::collections::BTreeMap::new();
    for (file, _) in &existing {
        *counts.entry(file).or_default() += 1;
    }
    let file = counts
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(f, _)| (*f).clone())
        .unwrap_or_else(|| dir.join(format!("{}.tf", address.rtype.trim_start_matches("aws_"))));
    let text = repo.text(&file).unwrap_or_default().to_string();
    let text = edit::append_block(&text, "resource", &[&address.rtype, &address.name], spec)?;
    let import = BlockSpec {
        attrs: vec![
            ("to".into(), AttrValue::Reference(address.block_name())),
            ("id".into(), AttrValue::Literal(Value::String(import_id.to_string()))),
        ],
        blocks: vec![],
    };
    let text = edit::append_block(&text, "import", &[], &import)?;
    applied.notes.push(format!("added {} to {} with an import block for {import_id:?}", address, file.display()));
    write(repo, &file, text, applied);
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

// ---------------------------------------------------------------------------------------------
// Origin tracing for `Op::Set`

struct Ctx<'a> {
    repo: &'a Repo,
    address: &'a Address,
    block_file: &'a Path,
    block: &'a BlockSel,
}

/// Where an expression takes its value from.
enum Origin {
    Var(String, Vec<Seg>),
    Local(String, Vec<Seg>),
    EachValue(Vec<Seg>),
    /// `merge(a, b, { ... })`: the last literal object argument, by its span.
    MergeObject(std::ops::Range<usize>),
    Other,
}

impl Ctx<'_> {
    fn dir(&self) -> PathBuf {
        self.block_file.parent().unwrap_or(Path::new("")).to_path_buf()
    }

    fn plan_set(
        &self,
        path: &AttrPath,
        value: &AttrValue,
        notes: &mut Vec<String>,
    ) -> Result<Vec<(PathBuf, String)>, EditError> {
        let text = self.repo.text(self.block_file).unwrap_or_default();
        match edit::set(text, Some(self.block), path, value) {
            Ok(new) => {
                let instance_shared = self.address.key.is_some() && has_count_or_for_each(text, self.block);
                if instance_shared && edit::find(text, Some(self.block), path)?.is_some() {
                    // A literal in a count/for_each block is every instance's value.
                    return self.instance_override(text, path, value, notes);
                }
                Ok(vec![(self.block_file.to_path_buf(), new)])
            }
            Err(EditError::NotLiteral { .. }) => self.trace(text, path, value, notes),
            Err(e) => Err(e),
        }
    }

    /// The value at `path` (or a prefix of it) is an expression: follow it to its origin.
    fn trace(
        &self,
        text: &str,
        path: &AttrPath,
        value: &AttrValue,
        notes: &mut Vec<String>,
    ) -> Result<Vec<(PathBuf, String)>, EditError> {
        // Find the longest prefix of the path that is an expression in the block.
        let (prefix_len, span) = (1..=path.0.len())
            .rev()
            .find_map(|n| {
                let prefix = AttrPath(path.0[..n].to_vec());
                edit::find(text, Some(self.block), &prefix).ok().flatten().map(|s| (n, s))
            })
            .ok_or_else(|| EditError::PathNotFound { path: path.to_string() })?;
        let tail: Vec<Seg> = path.0[prefix_len..].to_vec();
        let expr_src = &text[span.clone()];
        let origin = origin_of(expr_src, span.start);
        let dir = self.dir();
        match origin {
            Origin::Var(name, sub) => {
                let full_tail = [sub, tail.clone()].concat();
                if self.address.module.is_empty() {
                    if self.shared(&dir, &format!("var.{name}")) {
                        return self.override_here(
                            text,
                            path,
                            prefix_len,
                            value,
                            notes,
                            &format!("var.{name} is used elsewhere"),
                        );
                    }
                    self.set_variable(&dir, &name, &full_tail, value, notes)
                } else {
                    // A module input: change it in the module call, in the parent module. The module's
                    // own files are shared by every call of it, so they are not the place.
                    self.set_module_input(&name, &full_tail, value, notes)
                }
            }
            Origin::Local(name, sub) => {
                if self.shared(&dir, &format!("local.{name}")) {
                    return self.override_here(
                        text,
                        path,
                        prefix_len,
                        value,
                        notes,
                        &format!("local.{name} is used elsewhere"),
                    );
                }
                let full_tail = [sub, tail].concat();
                let (file, sel) = self
                    .find_local(&dir, &name)
                    .ok_or_else(|| EditError::PathNotFound { path: format!("local.{name}") })?;
                let local_text = self.repo.text(&file).unwrap_or_default();
                let mut segs = vec![Seg::Name(name.clone())];
                segs.extend(full_tail);
                let local_path = AttrPath(segs);
                match edit::set(local_text, Some(&sel), &local_path, value) {
                    Ok(new) => {
                        notes.push(format!("changed local.{name} in {}", file.display()));
                        Ok(vec![(file, new)])
                    }
                    Err(EditError::NotLiteral { .. }) => {
                        self.override_here(text, path, prefix_len, value, notes, &format!("local.{name} is computed"))
                    }
                    Err(e) => Err(e),
                }
            }
            Origin::EachValue(sub) => {
                let Some(InstanceKey::Str(key)) = &self.address.key else {
                    return self.override_here(
                        text,
                        path,
                        prefix_len,
                        value,
                        notes,
                        "each.value without a for_each key",
                    );
                };
                let for_each = AttrPath(vec![Seg::Name("for_each".into())]);
                let Some(fe_span) = edit::find(text, Some(self.block), &for_each)? else {
                    return self.override_here(text, path, prefix_len, value, notes, "no for_each");
                };
                let mut segs = vec![Seg::Key(key.clone())];
                segs.extend(sub);
                segs.extend(tail);
                self.set_in_expression(text, self.block_file, fe_span, &segs, value, notes).or_else(|_| {
                    self.override_here(text, path, prefix_len, value, notes, "the for_each map is computed")
                })
            }
            Origin::MergeObject(object_span) => {
                if tail.is_empty() {
                    return self.override_here(
                        text,
                        path,
                        prefix_len,
                        value,
                        notes,
                        "the value is a merge() of several maps",
                    );
                }
                self.set_in_expression(text, self.block_file, object_span, &tail, value, notes)
            }
            Origin::Other => {
                let reason = format!("the value comes from the expression `{}`", expr_src.trim());
                self.override_here(text, path, prefix_len, value, notes, &reason)
            }
        }
    }

    /// Set `segs` inside the expression at `span` of `file` (a literal object, or a var/local holding one).
    fn set_in_expression(
        &self,
        text: &str,
        file: &Path,
        span: std::ops::Range<usize>,
        segs: &[Seg],
        value: &AttrValue,
        notes: &mut Vec<String>,
    ) -> Result<Vec<(PathBuf, String)>, EditError> {
        let expr_src = &text[span.clone()];
        match origin_of(expr_src, span.start) {
            Origin::Var(name, sub) if self.address.module.is_empty() => {
                let tail = [sub, segs.to_vec()].concat();
                self.set_variable(&self.dir(), &name, &tail, value, notes)
            }
            Origin::Local(name, sub) => {
                let (lfile, sel) = self
                    .find_local(&self.dir(), &name)
                    .ok_or_else(|| EditError::PathNotFound { path: format!("local.{name}") })?;
                let mut path = vec![Seg::Name(name.clone())];
                path.extend(sub);
                path.extend(segs.iter().cloned());
                let new = edit::set(self.repo.text(&lfile).unwrap_or_default(), Some(&sel), &AttrPath(path), value)?;
                notes.push(format!("changed local.{name} in {}", lfile.display()));
                Ok(vec![(lfile, new)])
            }
            _ => {
                // A literal object written in place: wrap it as a tiny document and edit it there.
                let wrapper = format!("x = {expr_src}\n");
                let mut path = vec![Seg::Name("x".into())];
                path.extend(segs.iter().cloned());
                let edited = edit::set(&wrapper, None, &AttrPath(path), value)?;
                let inner = edited.strip_prefix("x = ").and_then(|s| s.strip_suffix('\n')).unwrap_or(&edited);
                let new = format!("{}{}{}", &text[..span.start], inner, &text[span.end..]);
                edit::parse(&new).map_err(|e| EditError::Reparse(e.to_string()))?;
                notes.push(format!("changed the map entry in {}", file.display()));
                Ok(vec![(file.to_path_buf(), new)])
            }
        }
    }

    /// Is `reference` used more than once in the module (or by several instances of this block)?
    fn shared(&self, dir: &Path, reference: &str) -> bool {
        let uses: usize = self
            .repo
            .parsed_tf_in(dir)
            .map(|(p, _)| count_references(self.repo.text(p).unwrap_or_default(), reference))
            .sum();
        let text = self.repo.text(self.block_file).unwrap_or_default();
        uses > 1
            || (self.address.key.is_some()
                && has_count_or_for_each(text, self.block)
                && !reference.starts_with("each."))
    }

    fn set_variable(
        &self,
        dir: &Path,
        name: &str,
        tail: &[Seg],
        value: &AttrValue,
        notes: &mut Vec<String>,
    ) -> Result<Vec<(PathBuf, String)>, EditError> {
        let mut tfvars_path = vec![Seg::Name(name.to_string())];
        tfvars_path.extend(tail.iter().cloned());
        let tfvars_path = AttrPath(tfvars_path);
        // The last tfvars file that sets it wins, as in Terraform: *.auto.tfvars after terraform.tfvars.
        let candidates = self.repo.tfvars_files(dir);
        for file in candidates.into_iter().rev() {
            let text = self.repo.text(file).unwrap_or_default();
            if edit::find(text, None, &AttrPath(vec![Seg::Name(name.to_string())])).ok().flatten().is_some() {
                let new = edit::set(text, None, &tfvars_path, value)?;
                notes.push(format!("changed var.{name} in {}, where it is set", file.display()));
                return Ok(vec![(file.clone(), new)]);
            }
        }
        let sel = BlockSel::new("variable", &[name]);
        let file = self
            .repo
            .find_block(dir, &sel)
            .cloned()
            .ok_or_else(|| EditError::BlockNotFound(format!("variable {name:?}")))?;
        let mut default_path = vec![Seg::Name("default".into())];
        default_path.extend(tail.iter().cloned());
        let new = edit::set(self.repo.text(&file).unwrap_or_default(), Some(&sel), &AttrPath(default_path), value)?;
        notes.push(format!("changed the default of var.{name} in {}", file.display()));
        Ok(vec![(file, new)])
    }

    fn set_module_input(
        &self,
        name: &str,
        tail: &[Seg],
        value: &AttrValue,
        notes: &mut Vec<String>,
    ) -> Result<Vec<(PathBuf, String)>, EditError> {
        let call = self.address.module.last().map(|m| m.name.clone()).unwrap_or_default();
        let parent_path = self.address.module[..self.address.module.len() - 1]
            .iter()
            .map(|m| format!("module.{}", m.name))
            .collect::<Vec<_>>()
            .join(".");
        let parent_dir = self.repo.module_dir(&parent_path).cloned().unwrap_or_default();
        let sel = BlockSel::new("module", &[&call]);
        let file = self
            .repo
            .find_block(&parent_dir, &sel)
            .cloned()
            .ok_or_else(|| EditError::BlockNotFound(format!("module {call:?}")))?;
        let text = self.repo.text(&file).unwrap_or_default();
        let mut input = vec![Seg::Name(name.to_string())];
        input.extend(tail.iter().cloned());
        let input = AttrPath(input);
        let parent_addr =
            Address { module: self.address.module[..self.address.module.len() - 1].to_vec(), ..self.address.clone() };
        let parent = Ctx { repo: self.repo, address: &parent_addr, block_file: &file, block: &sel };
        let new = match edit::set(text, Some(&sel), &input, value) {
            Ok(new) => new,
            Err(EditError::NotLiteral { .. }) => {
                // The input is itself an expression in the parent: follow it there.
                return parent.trace(text, &input, value, notes);
            }
            Err(e) => return Err(e),
        };
        notes.push(format!("changed the input {name} of module.{call} in {}", file.display()));
        Ok(vec![(file, new)])
    }

    fn find_local(&self, dir: &Path, name: &str) -> Option<(PathBuf, BlockSel)> {
        let file = self.repo.find_local(dir, name)?;
        // Several `locals` blocks in one file: the edit finds the first; make sure it is this one.
        let first = self.repo.body(file)?.blocks().find(|b| b.ident.as_str() == "locals")?;
        first.body.has_attribute(name).then(|| (file.clone(), BlockSel::new("locals", &[])))
    }

    /// Write the value as a literal on this resource (or this instance) instead of at a shared origin.
    fn override_here(
        &self,
        text: &str,
        path: &AttrPath,
        prefix_len: usize,
        value: &AttrValue,
        notes: &mut Vec<String>,
        why: &str,
    ) -> Result<Vec<(PathBuf, String)>, EditError> {
        let instance_shared = self.address.key.is_some() && has_count_or_for_each(text, self.block);
        if instance_shared {
            return self.instance_override(text, path, value, notes);
        }
        if prefix_len < path.0.len() {
            // A map built elsewhere: overlay the one entry with merge().
            let prefix = AttrPath(path.0[..prefix_len].to_vec());
            let span = edit::find(text, Some(self.block), &prefix)?
                .ok_or_else(|| EditError::PathNotFound { path: prefix.to_string() })?;
            let mut overlay = value.render("").map_err(EditError::Value)?;
            for seg in path.0[prefix_len..].iter().rev() {
                let key = match seg {
                    Seg::Name(n) | Seg::Key(n) => render_key(n),
                    Seg::Index(_) => return Err(EditError::PathNotFound { path: path.to_string() }),
                };
                overlay = format!("{{ {key} = {overlay} }}");
            }
            let new = format!("{}merge({}, {overlay}){}", &text[..span.start], &text[span.clone()], &text[span.end..]);
            edit::parse(&new).map_err(|e| EditError::Reparse(e.to_string()))?;
            notes.push(format!("overlaid {path} on {} with merge(): {why}", self.address));
            return Ok(vec![(self.block_file.to_path_buf(), new)]);
        }
        let span = edit::find(text, Some(self.block), path)?
            .ok_or_else(|| EditError::PathNotFound { path: path.to_string() })?;
        let rendered = value.render(&indent_at(text, span.start)).map_err(EditError::Value)?;
        let new = format!("{}{}{}", &text[..span.start], rendered, &text[span.end..]);
        edit::parse(&new).map_err(|e| EditError::Reparse(e.to_string()))?;
        notes.push(format!("set {path} as a literal on {} instead of at its origin: {why}", self.address));
        Ok(vec![(self.block_file.to_path_buf(), new)])
    }

    /// One instance of a count/for_each block differs: a condition on its index or key.
    fn instance_override(
        &self,
        text: &str,
        path: &AttrPath,
        value: &AttrValue,
        notes: &mut Vec<String>,
    ) -> Result<Vec<(PathBuf, String)>, EditError> {
        let condition = match &self.address.key {
            Some(InstanceKey::Int(i)) => format!("count.index == {i}"),
            Some(InstanceKey::Str(k)) => format!("each.key == {}", crate::render::quote(k)),
            None => return Err(EditError::PathNotFound { path: path.to_string() }),
        };
        let top = AttrPath(path.0[..1].to_vec());
        let span = edit::find(text, Some(self.block), &top)?
            .ok_or_else(|| EditError::PathNotFound { path: top.to_string() })?;
        if path.0.len() > 1 {
            return Err(EditError::NotLiteral { path: path.to_string(), expr: text[span].to_string() });
        }
        let rendered = value.render("").map_err(EditError::Value)?;
        let old = &text[span.clone()];
        let new = format!("{}{condition} ? {rendered} : {old}{}", &text[..span.start], &text[span.end..]);
        edit::parse(&new).map_err(|e| EditError::Reparse(e.to_string()))?;
        notes.push(format!("{path} differs for {} only: written as a condition on that instance", self.address));
        Ok(vec![(self.block_file.to_path_buf(), new)])
    }
}

fn indent_at(text: &str, pos: usize) -> String {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    text[start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect()
}

/// Classify an expression's source text by where its value comes from.
fn origin_of(source: &str, offset: usize) -> Origin {
    let Ok(expr) = hcl_edit::parser::parse_expr(source) else { return Origin::Other };
    match &expr {
        Expression::Traversal(t) => {
            let Expression::Variable(root) = &t.expr else { return Origin::Other };
            let mut ops = t.operators.iter().map(|o| o.value());
            let first = match ops.next() {
                Some(TraversalOperator::GetAttr(name)) => name.as_str().to_string(),
                _ => return Origin::Other,
            };
            let mut rest = Vec::new();
            for op in ops {
                match op {
                    TraversalOperator::GetAttr(n) => rest.push(Seg::Name(n.as_str().to_string())),
                    TraversalOperator::Index(Expression::String(s)) => rest.push(Seg::Key(s.as_str().to_string())),
                    TraversalOperator::Index(Expression::Number(n)) => match n.as_u64() {
                        Some(i) => rest.push(Seg::Index(i as usize)),
                        None => return Origin::Other,
                    },
                    TraversalOperator::LegacyIndex(i) => rest.push(Seg::Index(*i.value() as usize)),
                    _ => return Origin::Other,
                }
            }
            match root.as_str() {
                "var" => Origin::Var(first, rest),
                "local" => Origin::Local(first, rest),
                "each" if first == "value" => Origin::EachValue(rest),
                _ => Origin::Other,
            }
        }
        Expression::FuncCall(call) if call.name.name.as_str() == "merge" => {
            use hcl_edit::Span;
            call.args
                .iter()
                .filter_map(|a| match a {
                    Expression::Object(o) => o.span(),
                    _ => None,
                })
                .last()
                .map(|s| Origin::MergeObject(offset + s.start..offset + s.end))
                .unwrap_or(Origin::Other)
        }
        _ => Origin::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
