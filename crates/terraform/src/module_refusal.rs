//! A refused change to a resource inside a module whose code is not the repository's to write,
//! said in the module's terms: which call of which module at which version makes the resource,
//! and, when the module's code sets the value without reading any of its inputs, that the module
//! exposes no input for it. A person reading the escalation then knows where the change would
//! have to go (a new release of the module with an input, or the module's own repository).

use hcl_edit::Span;

use crate::address::Address;
use crate::edit;
use crate::module_list::module_is_not_ours;
use crate::origin::attribute_at;
use crate::patch::{Op, PatchError};
use crate::path::Seg;
use crate::repo::Repo;

/// `err`, for `op` on `address`, said in the module's terms when `address` is inside a module
/// whose code is fetched or shared; any other error as it is.
pub(crate) fn in_module_terms(repo: &Repo, address: &Address, op: &Op, err: PatchError) -> PatchError {
    let PatchError::Refused { reason, .. } = &err else { return err };
    if !module_is_not_ours(repo, address) {
        return err;
    }
    let Some(call) = describe_call(repo, address) else { return err };
    let inside = {
        let mut inner = address.clone();
        inner.module.remove(0);
        inner.to_string()
    };
    let what = match op {
        Op::Set { path, .. } | Op::Remove { path } => Some(path.clone()),
        _ => None,
    };
    let reason = match what {
        Some(path) if !reads_an_input(repo, address, &path.0) => format!(
            "{call} makes {inside}, and the module exposes no input for {path}: its code sets it whatever the call \
             passes ({reason})"
        ),
        _ => format!("{call} makes {inside}: {reason}"),
    };
    PatchError::Refused { address: address.to_string(), reason }
}

/// `module.db (source "registry.test/acme/rds/aws", version "6.1.0", main.tf:31)`: the root's
/// call that `address` is inside.
fn describe_call(repo: &Repo, address: &Address) -> Option<String> {
    let step = address.module.first()?;
    let root = repo.module_dir("")?;
    let call = repo.module_index(root).module_calls.into_iter().find(|c| c.name == step.name)?;
    let mut out = format!("module.{}", step.name);
    let mut parts = Vec::new();
    if let Some(source) = &call.source {
        parts.push(format!("source {source:?}"));
    }
    if let Some(version) = &call.version {
        parts.push(format!("version {version:?}"));
    }
    parts.push(format!("{}:{}", call.file.display(), call.line));
    out.push_str(&format!(" ({})", parts.join(", ")));
    Some(out)
}

/// Whether the module's code computes the value at `path` of `address` from any input: the
/// argument's expression (or a local it reads) reads `var.`. An argument the block does not set
/// reads none.
fn reads_an_input(repo: &Repo, address: &Address, path: &[Seg]) -> bool {
    let Some(location) = repo.find_resource(address) else { return false };
    let (Some(text), Some(body)) = (repo.text(&location.file), repo.body(&location.file)) else { return false };
    let Some(block) = edit::find_block(body, &location.sel) else { return false };
    let Some((expr, _, _)) = attribute_at(&block.body, path) else {
        // Blocks made by `dynamic` read their content from the for_each collection.
        return path.first().is_some_and(|first| {
            let name = match first {
                Seg::Name(n) => n.as_str(),
                _ => return false,
            };
            block.body.blocks().any(|b| {
                b.ident.as_str() == "dynamic"
                    && b.labels.first().is_some_and(|l| edit::label_str(l) == name)
                    && b.span().is_some_and(|s| text[s].contains("var."))
            })
        });
    };
    let source = edit::expr_text(text, expr);
    if source.contains("var.") {
        return true;
    }
    // One level of locals: `local.name` whose value reads an input.
    let dir = repo.module_dir(&address.module_path()).cloned().unwrap_or_default();
    source.split("local.").skip(1).any(|rest| {
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(rest.len());
        let name = &rest[..end];
        let Some(file) = repo.find_local(&dir, name) else { return false };
        let (Some(text), Some(body)) = (repo.text(file), repo.body(file)) else { return false };
        body.blocks()
            .filter(|b| b.ident.as_str() == "locals")
            .filter_map(|b| b.body.get_attribute(name))
            .any(|attr| edit::expr_text(text, &attr.value).contains("var."))
    })
}
