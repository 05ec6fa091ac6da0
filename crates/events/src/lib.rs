//! CloudTrail records in, change sets out: the pure front of the pipeline.
//!
//! `read` decodes the containers CloudTrail records arrive in, `normalize` turns one record into an
//! [`ApiEvent`], `filter` decides what is noise (with a reason for every drop), and `group` gathers the
//! remaining events into [`ChangeSet`]s per resource and actor session with the one incremental
//! [`Grouper`] (which the daemon also uses, seeded with the change sets it has pending). Nothing here touches the
//! network, a database or the clock.

mod event;
mod filter;
mod group;
mod input_error;
mod normalize;
mod read;
mod record;
mod resource;
mod scan;
mod sources;

pub use event::{Actor, ApiEvent, CallVia, IacTool, IdentityType, TouchedResource, is_transport_key};
pub use filter::{Disposition, DropReason, FilterConfig, NO_CONFIGURATION, NoConfiguration, When, classify};
pub use group::{
    ChangeSet, Group, GroupConfig, Grouper, JoinWindow, Placement, ResourceKey, change_set_id, group, time_order,
};
pub use input_error::{BadRecord, ReadError};
pub use normalize::{NormalizeError, normalize_api_name};
pub use read::{RecordBatch, decode, read_file, read_text, text_of};
pub use record::normalize;
pub use resource::{is_identifier_key, resource_ids};
pub use scan::{Entry, Record, read_record, scan};
