//! Version constraints as Terraform reads a module call's `version`: the one implementation is
//! the terraform crate's ([`driftback_terraform::version`]), which provider requirements are read
//! with too.

pub use driftback_terraform::version::{Constraints, Version, VersionError, newest_release};
