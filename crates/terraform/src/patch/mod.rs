//! Changes to a resource, applied where the value comes from.
//!
//! A value written as a literal in the resource block is changed in place. A value that comes from
//! a variable is changed in the tfvars file that sets it or in the variable's default; from a
//! local, in the local; from a module input, at the module call; from a `for_each` map, in that
//! map's entry; from `merge()`, in the argument that supplies the key.
//!
//! Every candidate edit ([`crate::origin`]) is checked by evaluation before it is kept: the changed
//! instance must have the new value, and every other resource instance's effective configuration
//! must stay as it was. When the origin is shared, the narrowest edit that passes is made instead
//! (a literal on the one resource, or a condition on the one instance), and a note says which and
//! why. When no edit passes, the change is refused with the reason.
//!
//! The patcher's files, one kind of action each: `set` (a value set or removed at its origin),
//! `dynamic` (blocks that `dynamic` blocks make), `module_overlay` (a new input of a shared module),
//! `remove` (resources and instances), `create` (new resources, fleets and imports), over `choose`
//! (which candidate edit is kept), `write` (files and import blocks) and `op` (the values).

mod choose;
mod create;
mod dynamic;
mod module_overlay;
mod op;
mod remove;
mod set;
mod write;

use std::path::Path;

use serde_json::Value;

use crate::address::Address;
use crate::edit::{self, EditError};
use crate::eval::effective_config;
use crate::path::{AttrPath, Seg};
use crate::repo::{BlockLocation, Repo};

pub use crate::values::{literal_value, values_equal};
pub(crate) use choose::choose;
pub use choose::{Reach, without_lifecycle};
pub use create::{count_fleet_addresses, fleet_address};
pub use dynamic::grouped_for_dynamic_blocks;
pub(crate) use op::Refusal;
pub use op::{Applied, Op, PatchError};
pub(crate) use write::{append_import, write, write_candidate};

use create::create_resource;
use dynamic::{add_through_dynamic, has_dynamic, remove_through_dynamic};
use op::{Target, has_count_or_for_each};
use remove::remove_resource;
use set::{remove_value, set_value};

/// Apply one operation to the repository in memory.
pub fn apply(repo: &mut Repo, address: &Address, op: &Op) -> Result<Applied, PatchError> {
    apply_alongside(repo, address, op, &[])
}

/// As [`apply`], where the same calls change other resources too (`alongside`: one `CreateTags` on
/// two subnets): an edit that also makes exactly those changes to them (a shared input both read)
/// is not a leak.
pub fn apply_alongside(
    repo: &mut Repo,
    address: &Address,
    op: &Op,
    alongside: &[(Address, Op)],
) -> Result<Applied, PatchError> {
    // A refusal inside fetched or shared module code names the call, its version and the input.
    let in_module_terms = |repo: &Repo, e| crate::module_refusal::in_module_terms(repo, address, op, e);
    let applied = apply_in_place(repo, address, op, alongside).map_err(|e| in_module_terms(repo, e))?;
    // Module code fetched from outside the repository is read, never written (`Repo::set_file`
    // keeps it as it was): an edit that chose such a file is refused.
    if let Some(file) = applied.files.iter().find(|f| repo.is_external(f)) {
        return Err(in_module_terms(
            repo,
            PatchError::Refused {
                address: address.to_string(),
                reason: format!(
                    "the edit would change {}, module code from outside the repository; it must be written in the repository's own files (the module call's inputs)",
                    file.display()
                ),
            },
        ));
    }
    Ok(applied)
}

fn apply_in_place(
    repo: &mut Repo,
    address: &Address,
    op: &Op,
    alongside: &[(Address, Op)],
) -> Result<Applied, PatchError> {
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
    let target = Target { address, location: &location, alongside };
    match op {
        Op::Set { path, value } => set_value(repo, &target, path, value, &mut applied)?,
        Op::Remove { path } => remove_value(repo, &target, path, &mut applied)?,
        Op::AddBlock { block_type, spec } => {
            if has_dynamic(repo, &location, block_type) {
                add_through_dynamic(repo, &target, block_type, spec, &mut applied)?;
            } else {
                if let Some(other) = sharing_block(repo, address, &location) {
                    return Err(PatchError::Refused {
                        address: address.to_string(),
                        reason: format!(
                            "a `{block_type}` block written here would be {other}'s too: they share this resource block"
                        ),
                    });
                }
                let new = edit::add_nested_block(&text, &location.sel, block_type, spec).map_err(|e| err(&file, e))?;
                write(repo, &file, new, &mut applied);
            }
        }
        Op::RemoveBlocks { block_type, matching } => {
            // Compare with the blocks' effective values, so `cidr_blocks = var.allowed` matches too.
            let config = effective_config(repo, address).unwrap_or(Value::Null);
            let blocks = config.get(block_type).and_then(Value::as_array).cloned().unwrap_or_default();
            let indices: Vec<usize> = blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| matching.iter().all(|(k, want)| b.get(k).is_some_and(|v| values_equal(v, want))))
                .map(|(i, _)| i)
                .collect();
            if indices.is_empty() {
                return Err(PatchError::Refused {
                    address: address.to_string(),
                    reason: format!("no `{block_type}` block matches {}", describe_matching(matching)),
                });
            }
            if has_dynamic(repo, &location, block_type) {
                return remove_through_dynamic(repo, &target, block_type, matching, indices, &mut applied)
                    .map(|()| applied);
            }
            if has_count_or_for_each(&text, &location.sel) && address.key.is_some() {
                return Err(PatchError::Refused {
                    address: address.to_string(),
                    reason: format!(
                        "the `{block_type}` blocks are shared by every instance of {}",
                        address.block_name()
                    ),
                });
            }
            let mut current = text.clone();
            for index in indices.into_iter().rev() {
                let path = AttrPath(vec![Seg::Name(block_type.clone()), Seg::Index(index)]);
                current = edit::remove(&current, Some(&location.sel), &path).map_err(|e| err(&file, e))?;
            }
            write(repo, &file, current, &mut applied);
        }
        Op::IgnoreChanges { attr } => {
            // An argument the configuration leaves out and the provider computes is not managed by
            // Terraform at all: `ignore_changes` on it would change nothing.
            let unset =
                effective_config(repo, address).is_some_and(|c| c.get(attr.as_str()).is_none_or(Value::is_null));
            let computed = crate::schema::Schema::newest()
                .ok()
                .and_then(|s| s.resource(&address.rtype))
                .and_then(|r| r.argument(attr))
                .is_some_and(|a| a.is_computed());
            if unset && computed {
                applied.notes.push(format!(
                    "{address}: `{attr}` is not set by the configuration and the provider computes it: Terraform \
                     already leaves it alone, so no ignore_changes is written"
                ));
                return Ok(applied);
            }
            let new = edit::add_ignore_changes(&text, &location.sel, attr).map_err(|e| err(&file, e))?;
            write(repo, &file, new, &mut applied);
        }
        Op::RemoveResource => remove_resource(repo, &target, &mut applied)?,
        Op::CreateResource { .. } => unreachable!("handled above"),
    }
    Ok(applied)
}

/// Another instance the configuration makes from the same resource block as `address` (another
/// `count`/`for_each` instance, or the same resource of another call of its module).
fn sharing_block(repo: &Repo, address: &Address, location: &BlockLocation) -> Option<Address> {
    crate::eval::instances(repo).into_iter().find(|a| {
        a != address
            && a.rtype == address.rtype
            && a.name == address.name
            && a.data == address.data
            && repo.find_resource(a).is_some_and(|l| l.file == location.file && l.sel == location.sel)
    })
}

fn describe_matching(matching: &[(String, Value)]) -> String {
    matching.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
}
