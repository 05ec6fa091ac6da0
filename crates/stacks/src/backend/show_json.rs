//! `show-json`: a `terraform show -json` export the configuration names (driftback's own name, not
//! a Terraform backend).

use super::{Backend, missing};
use crate::error::StackError;
use crate::location::Location;
use crate::stack::Stack;

pub(super) const BACKEND: ShowJson = ShowJson;

pub(super) struct ShowJson;

impl Backend for ShowJson {
    fn names(&self) -> &'static [&'static str] {
        &["show-json"]
    }

    fn listed(&self) -> bool {
        false
    }

    fn locate(&self, stack: &Stack, _workspace: &str) -> Result<Location, StackError> {
        match &stack.state_file {
            Some(path) => Ok(Location::ShowJson { path: path.clone() }),
            None => Err(missing(stack, "state_file", "set state_file in its [[stack]] entry")),
        }
    }
}
