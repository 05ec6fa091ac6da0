//! The `s3` backend: a state object in an S3 bucket (or another S3-compatible server).

use futures::future::BoxFuture;

use super::{Backend, missing};
use crate::error::StackError;
use crate::location::{DEFAULT_WORKSPACE_KEY_PREFIX, Location, S3Location};
use crate::read::{ReadError, Readers};
use crate::settings;
use crate::stack::Stack;

pub(super) const BACKEND: S3 = S3;

pub(super) struct S3;

impl Backend for S3 {
    fn names(&self) -> &'static [&'static str] {
        &["s3"]
    }

    fn locate(&self, stack: &Stack, workspace: &str) -> Result<Location, StackError> {
        let settings = stack.settings_for(workspace);
        let hint = "set it in the backend block, a backend_config file or the [[stack]] entry's settings";
        let bucket = settings::text(&settings, "bucket").ok_or_else(|| missing(stack, "bucket", hint))?;
        let key = settings::text(&settings, "key").ok_or_else(|| missing(stack, "key", hint))?;
        let prefix = settings::text(&settings, "workspace_key_prefix").unwrap_or(DEFAULT_WORKSPACE_KEY_PREFIX);
        let key = if workspace == "default" { key.to_string() } else { format!("{prefix}/{workspace}/{key}") };
        let endpoint = settings::text(&settings, "endpoints.s3").or_else(|| settings::text(&settings, "endpoint"));
        Ok(Location::S3(S3Location {
            bucket: bucket.to_string(),
            key,
            region: settings::text(&settings, "region").map(str::to_string),
            endpoint: endpoint.map(str::to_string),
            path_style: settings::flag(&settings, "use_path_style")
                .or_else(|| settings::flag(&settings, "force_path_style"))
                .unwrap_or(false),
            sts_endpoint: settings::text(&settings, "endpoints.sts").map(str::to_string),
            profile: settings::text(&settings, "profile").map(str::to_string),
            role_arn: settings::text(&settings, "assume_role.role_arn")
                .or_else(|| settings::text(&settings, "role_arn"))
                .map(str::to_string),
            session_name: settings::text(&settings, "assume_role.session_name")
                .or_else(|| settings::text(&settings, "session_name"))
                .map(str::to_string),
            external_id: settings::text(&settings, "assume_role.external_id")
                .or_else(|| settings::text(&settings, "external_id"))
                .map(str::to_string),
        }))
    }

    fn list_workspaces<'a>(
        &'a self,
        readers: &'a Readers,
        stack: &'a Stack,
    ) -> BoxFuture<'a, Result<Option<Vec<String>>, ReadError>> {
        Box::pin(async move {
            let location = self
                .locate(stack, "default")
                .map_err(|e| ReadError::Malformed { location: stack.name.clone(), message: e.to_string() })?;
            readers.s3.list_workspaces(stack, &location).await.map(Some)
        })
    }
}
