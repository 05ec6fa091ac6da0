//! Where one workspace's state lives, worked out from a stack's backend settings (pure).

use std::fmt;
use std::path::PathBuf;

use crate::StackError;
use crate::discover::Stack;
use crate::settings;

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

/// Where `workspace`'s state of `stack` lives.
pub fn locate(stack: &Stack, workspace: &str) -> Result<Location, StackError> {
    let settings = stack.settings_for(workspace);
    let missing = |setting: &str, hint: &str| StackError::Backend {
        stack: stack.name.clone(),
        message: format!("the {} backend has no {setting}: {hint}", stack.backend),
    };
    match stack.backend.as_str() {
        "local" => {
            if let Some(file) = &stack.state_file {
                return Ok(Location::Local { path: file.clone() });
            }
            let path = settings::text(&settings, "path").unwrap_or("terraform.tfstate");
            let dir = settings::text(&settings, "workspace_dir").unwrap_or("terraform.tfstate.d");
            let path = if workspace == "default" {
                stack.dir.join(path)
            } else {
                stack.dir.join(dir).join(workspace).join("terraform.tfstate")
            };
            Ok(Location::Local { path })
        }
        "show-json" => match &stack.state_file {
            Some(path) => Ok(Location::ShowJson { path: path.clone() }),
            None => Err(missing("state_file", "set state_file in its [[stack]] entry")),
        },
        "s3" => {
            let hint = "set it in the backend block, a backend_config file or the [[stack]] entry's settings";
            let bucket = settings::text(&settings, "bucket").ok_or_else(|| missing("bucket", hint))?;
            let key = settings::text(&settings, "key").ok_or_else(|| missing("key", hint))?;
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
        "cloud" | "remote" => {
            let hostname = settings::text(&settings, "hostname").unwrap_or("app.terraform.io").to_string();
            let organization = settings::text(&settings, "organization")
                .ok_or_else(|| {
                    missing("organization", "set organization in the block or the [[stack]] entry's settings")
                })?
                .to_string();
            let name = settings::text(&settings, "workspaces.name");
            let prefix = settings::text(&settings, "workspaces.prefix");
            let hcp_workspace = match (stack.backend.as_str(), name, prefix) {
                ("cloud", Some(name), _) if workspace == name || workspace == "default" => name.to_string(),
                ("remote", Some(name), _) if workspace == "default" || workspace == name => name.to_string(),
                (_, Some(name), _) => {
                    return Err(StackError::Backend {
                        stack: stack.name.clone(),
                        message: format!(
                            "no such workspace {workspace:?}: the block names only the workspace {name:?}"
                        ),
                    });
                }
                ("remote", None, Some(prefix)) => format!("{prefix}{workspace}"),
                _ => workspace.to_string(),
            };
            let base_url = stack
                .api_endpoint
                .as_deref()
                .map(|e| e.trim_end_matches('/').to_string())
                .unwrap_or_else(|| format!("https://{hostname}"));
            Ok(Location::Hcp(HcpLocation { hostname, base_url, organization, workspace: hcp_workspace }))
        }
        other => Err(StackError::Backend {
            stack: stack.name.clone(),
            message: format!(
                "the {other:?} backend is not supported (local, s3, remote, cloud); export its state with `terraform show -json` and name the file as a show-json stack"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::Workspace;
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
