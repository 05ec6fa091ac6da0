//! The stacks of an infrastructure repository: which directories are root modules, how each
//! workspace's state is reached (local files, `terraform show -json` exports, the S3 backend, HCP
//! Terraform / Terraform Enterprise), and an index from cloud identities to the stack, workspace
//! and address that manage them.
//!
//! Discovery ([`discover`]), locations ([`locate`]), placements and the [`Index`] are pure. I/O
//! is at the edges: [`scan`] reads the repository once, and the [`read`] module reads states.
//! Credentials and tokens come from the environment or the usual files, never from the repository.

pub mod backend;
pub mod config;
pub mod discover;
pub mod error;
pub mod index;
pub mod location;
pub mod placement;
pub mod read;
pub mod settings;
pub mod stack;

pub use backend::{Backend, locate};
pub use config::{StackConfig, WorkspaceConfig};
pub use discover::{Discovery, Stack, Tree, Workspace, discover, scan, scan_again};
pub use error::StackError;
pub use index::{Index, Lookup, Managed, Query, usual_account};
pub use location::{HcpLocation, Location, S3Location};
pub use placement::{Placement, provider_placements};
pub use read::{ReadError, Readers, StateRead, StateReader, StateVersion};
