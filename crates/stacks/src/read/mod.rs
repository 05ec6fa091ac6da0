//! Reading a workspace's state from where it lives, behind one trait ([`StateReader`]): local
//! files and `terraform show -json` exports ([`local`]), the S3 backend ([`s3`]), HCP Terraform and
//! Terraform Enterprise ([`hcp`]). [`Readers`] routes a [`Location`] to the right one.
//!
//! Every read returns the parsed state and its version identity, so callers can cache: the S3
//! ETag, the HCP state version id, or the serial and lineage a state file records.

pub mod hcp;
pub mod local;
mod parse;
mod reader;
pub mod s3;

use std::path::PathBuf;

use futures::future::BoxFuture;

use crate::location::Location;

pub use parse::parse_state;
pub use reader::{ReadError, StateRead, StateReader, StateVersion};

/// The reader for every kind of location: files under the repository's root, S3 and HCP.
pub struct Readers {
    pub local: local::LocalReader,
    pub s3: s3::S3Reader,
    pub hcp: hcp::HcpReader,
}

impl Readers {
    /// Files relative to `root`; S3 and HCP credentials from the environment and the usual files.
    pub fn new(root: impl Into<PathBuf>) -> Readers {
        Readers { local: local::LocalReader::new(root), s3: s3::S3Reader::default(), hcp: hcp::HcpReader::default() }
    }
}

impl StateReader for Readers {
    fn read<'a>(&'a self, location: &'a Location) -> BoxFuture<'a, Result<StateRead, ReadError>> {
        match location {
            Location::Local { .. } | Location::ShowJson { .. } => self.local.read(location),
            Location::S3(_) => self.s3.read(location),
            Location::Hcp(_) => self.hcp.read(location),
        }
    }

    fn probe<'a>(&'a self, location: &'a Location) -> BoxFuture<'a, Result<Option<String>, ReadError>> {
        match location {
            Location::Local { .. } | Location::ShowJson { .. } => self.local.probe(location),
            Location::S3(_) => self.s3.probe(location),
            Location::Hcp(_) => self.hcp.probe(location),
        }
    }
}
