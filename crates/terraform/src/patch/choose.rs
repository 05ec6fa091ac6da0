//! Choosing among candidate edits: the first that gives the target its value and changes nothing
//! else (no other argument of the target, no other instance in any workspace), and what an edit can reach.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hcl_edit::Span;
use serde_json::{Map, Value};

use super::op::Op;
use crate::address::Address;
use crate::edit;
use crate::eval::{effective_config, value_at_path};
use crate::origin::Candidate;
use crate::path::{AttrPath, Seg};
use crate::render::AttrValue;
use crate::repo::Repo;
use crate::values::values_equal;

/// Why [`choose`] kept no candidate edit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum NoEdit {
    #[error("no edit of the configuration expresses this change")]
    NoCandidate,
    /// Each candidate's note with what it would have changed besides.
    #[error("every edit considered would change something else: {}", .0.join("; "))]
    EveryOneLeaks(Vec<String>),
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
) -> Result<Candidate, NoEdit> {
    if candidates.is_empty() {
        return Err(NoEdit::NoCandidate);
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
    Err(NoEdit::EveryOneLeaks(leaks))
}

/// `repo` with `candidate`'s files written.
pub(super) fn with_candidate(repo: &Repo, candidate: &Candidate) -> Repo {
    let mut scratch = repo.clone();
    scratch.set_file(&candidate.file, candidate.text.clone());
    for (file, text) in &candidate.also {
        scratch.set_file(file, text.clone());
    }
    scratch
}

/// Whether the same calls delete `address` too (`alongside`).
pub(super) fn removed_alongside(alongside: &[(Address, Op)], address: &Address) -> bool {
    alongside.iter().any(|(other, op)| other == address && *op == Op::RemoveResource)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::count_references;

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
    fn references_are_counted_whole() {
        assert_eq!(count_references("a = var.x\nb = var.x_y\nc = [var.x]\nd = local.var.x", "var.x"), 2);
    }
}
