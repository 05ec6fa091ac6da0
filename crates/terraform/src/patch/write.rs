//! Writing what a patch changed: files laid out as `terraform fmt` would, and `import` blocks in the root module.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::op::Applied;
use crate::address::Address;
use crate::edit::{self, BlockSel, EditError};
use crate::origin::Candidate;
use crate::render::{AttrValue, BlockSpec};
use crate::repo::Repo;

/// Write a file the patch changed, with what the change touched laid out as `terraform fmt` would
/// ([`crate::fmt::tidy`]).
pub(crate) fn write_candidate(repo: &mut Repo, chosen: Candidate, applied: &mut Applied) {
    write(repo, &chosen.file, chosen.text, applied);
    for (file, text) in chosen.also {
        write(repo, &file, text, applied);
    }
}

pub(crate) fn write(repo: &mut Repo, file: &Path, text: String, applied: &mut Applied) {
    let text = match repo.text(file) {
        Some(before) => crate::fmt::tidy(before, &text),
        None => crate::fmt::format(&text),
    };
    repo.set_file(file, text);
    if !applied.files.iter().any(|f| f == file) {
        applied.files.push(file.to_path_buf());
    }
}

/// An import block naming `to` for the cloud object `import_id`, where Terraform reads it, in the
/// root module: in `file` for a resource of the root module, beside its module's call (else in
/// `imports.tf`) for one in a child module. Returns the file it went to.
pub(crate) fn append_import(
    repo: &mut Repo,
    address: &Address,
    to: String,
    file: &Path,
    import_id: &str,
    applied: &mut Applied,
) -> Result<PathBuf, EditError> {
    let target = match address.module.first() {
        None => file.to_path_buf(),
        Some(call) => {
            let root = repo.module_dir("").cloned().unwrap_or_default();
            repo.find_block(&root, &BlockSel::new("module", &[&call.name]))
                .cloned()
                .unwrap_or_else(|| root.join("imports.tf"))
        }
    };
    let text = repo.text(&target).unwrap_or_default().to_string();
    let text = edit::append_block(&text, "import", &[], &import_spec(to, import_id))?;
    write(repo, &target, text, applied);
    Ok(target)
}

/// `import { to = ..., id = ... }`.
pub(super) fn import_spec(to: String, import_id: &str) -> BlockSpec {
    BlockSpec {
        attrs: vec![
            ("to".into(), AttrValue::Reference(to)),
            ("id".into(), AttrValue::Literal(Value::String(import_id.to_string()))),
        ],
        blocks: vec![],
    }
}
