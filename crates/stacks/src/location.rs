//! Where one workspace's state lives (pure): the places a backend ([`crate::backend`]) locates.

use std::fmt;
use std::path::PathBuf;

/// Where one workspace of a stack keeps its state. Holds no secret: it may be printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A state file in the repository's working tree (relative to its root).
    Local {
        path: PathBuf,
    },
    /// A `terraform show -json` export (relative to the repository's root).
    ShowJson {
        path: PathBuf,
    },
    S3(S3Location),
    Hcp(HcpLocation),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    pub bucket: String,
    /// The object key, workspace prefix applied.
    pub key: String,
    pub region: Option<String>,
    /// `endpoints.s3` (or the older `endpoint`): another S3-compatible server.
    pub endpoint: Option<String>,
    pub path_style: bool,
    /// `endpoints.sts`: where `assume_role` is asked (another STS-compatible server).
    pub sts_endpoint: Option<String>,
    /// A named profile of the usual AWS files.
    pub profile: Option<String>,
    /// `assume_role.role_arn` (or the older `role_arn`): the role assumed with the ambient
    /// credentials before reading.
    pub role_arn: Option<String>,
    pub session_name: Option<String>,
    pub external_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HcpLocation {
    /// `app.terraform.io` or a Terraform Enterprise host: the token is looked up for it.
    pub hostname: String,
    /// The API's base URL: `https://<hostname>`, unless the configuration's `endpoint` says
    /// otherwise (tests).
    pub base_url: String,
    pub organization: String,
    /// The HCP Terraform workspace's name.
    pub workspace: String,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Local { path } => write!(f, "file {}", path.display()),
            Location::ShowJson { path } => write!(f, "terraform show -json export {}", path.display()),
            Location::S3(s3) => {
                write!(f, "s3://{}/{}", s3.bucket, s3.key)?;
                if let Some(region) = &s3.region {
                    write!(f, " ({region})")?;
                }
                if let Some(endpoint) = &s3.endpoint {
                    write!(f, " at {endpoint}")?;
                }
                if let Some(role) = &s3.role_arn {
                    write!(f, " as {role}")?;
                }
                Ok(())
            }
            Location::Hcp(h) => write!(f, "{}/{}/{}", h.hostname, h.organization, h.workspace),
        }
    }
}

/// The default `workspace_key_prefix` of the S3 backend.
pub const DEFAULT_WORKSPACE_KEY_PREFIX: &str = "env:";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::locate;
    use crate::stack::{Stack, Workspace};
    use serde_json::json;

    fn stack(backend: &str, settings: serde_json::Value) -> Stack {
        Stack {
            name: "app".into(),
            dir: "stacks/app".into(),
            found_by: vec![],
            backend: backend.into(),
            settings: settings.as_object().unwrap().clone(),
            state_file: None,
            workspaces: vec![Workspace { name: "prod".into(), tfvars: vec![], settings: Default::default() }],
            workspaces_configured: true,
            api_endpoint: None,
        }
    }

    #[test]
    fn workspace_keys_and_paths() {
        let s3 =
            stack("s3", json!({"bucket": "b", "key": "app.tfstate", "region": "eu-west-1", "use_path_style": true}));
        let Location::S3(default) = locate(&s3, "default").unwrap() else { panic!() };
        assert_eq!(default.key, "app.tfstate");
        assert!(default.path_style);
        let Location::S3(prod) = locate(&s3, "prod").unwrap() else { panic!() };
        assert_eq!(prod.key, "env:/prod/app.tfstate");
        let prefixed = stack("s3", json!({"bucket": "b", "key": "app.tfstate", "workspace_key_prefix": "ws"}));
        assert_eq!(locate(&prefixed, "prod").unwrap().to_string(), "s3://b/ws/prod/app.tfstate");
        let err = locate(&stack("s3", json!({"key": "k"})), "default").unwrap_err().to_string();
        assert!(err.contains("app") && err.contains("no bucket"), "{err}");
        let local = stack("local", json!({}));
        assert_eq!(
            locate(&local, "prod").unwrap().to_string(),
            "file stacks/app/terraform.tfstate.d/prod/terraform.tfstate"
        );
        assert_eq!(locate(&local, "default").unwrap().to_string(), "file stacks/app/terraform.tfstate");
    }

    #[test]
    fn hcp_workspaces_by_name_prefix_and_tags() {
        let cloud = stack("cloud", json!({"organization": "acme", "workspaces": {"name": "net"}}));
        assert_eq!(locate(&cloud, "net").unwrap().to_string(), "app.terraform.io/acme/net");
        assert!(locate(&cloud, "other").unwrap_err().to_string().contains("no such workspace \"other\""));
        let remote = stack(
            "remote",
            json!({"hostname": "tfe.example.com", "organization": "acme", "workspaces": {"prefix": "app-"}}),
        );
        let Location::Hcp(h) = locate(&remote, "prod").unwrap() else { panic!() };
        assert_eq!((h.workspace.as_str(), h.base_url.as_str()), ("app-prod", "https://tfe.example.com"));
        assert!(locate(&stack("cloud", json!({})), "x").unwrap_err().to_string().contains("no organization"));
        // The repository cannot send the token elsewhere: only the configuration moves the API.
        let moved = stack("cloud", json!({"organization": "acme", "endpoint": "https://evil.example"}));
        let Location::Hcp(h) = locate(&moved, "x").unwrap() else { panic!() };
        assert_eq!(h.base_url, "https://app.terraform.io");
        assert!(locate(&stack("gcs", json!({})), "x").unwrap_err().to_string().contains("not supported"));
    }
}
