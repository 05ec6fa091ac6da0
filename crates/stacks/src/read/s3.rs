//! The S3 backend: the state object read with the AWS SDK for Rust, credentials from the
//! environment and the usual files (and `assume_role` on top of them), never from the repository.

use std::collections::HashMap;

use aws_config::BehaviorVersion;
use aws_config::sts::AssumeRoleProvider;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::Region;
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use futures::future::BoxFuture;
use tokio::sync::Mutex;

use super::parse::parse_state;
use super::reader::{ReadError, StateRead, StateReader, StateVersion};
use crate::location::{DEFAULT_WORKSPACE_KEY_PREFIX, Location, S3Location};
use crate::settings;
use crate::stack::Stack;

/// Reads S3 objects; one client per region, endpoint, profile and role, made on first use.
#[derive(Default)]
pub struct S3Reader {
    clients: Mutex<HashMap<ClientKey, Client>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ClientKey {
    region: Option<String>,
    endpoint: Option<String>,
    sts_endpoint: Option<String>,
    path_style: bool,
    profile: Option<String>,
    role_arn: Option<String>,
    session_name: Option<String>,
    external_id: Option<String>,
}

impl ClientKey {
    fn of(loc: &S3Location) -> ClientKey {
        ClientKey {
            region: loc.region.clone(),
            endpoint: loc.endpoint.clone(),
            sts_endpoint: loc.sts_endpoint.clone(),
            path_style: loc.path_style,
            profile: loc.profile.clone(),
            role_arn: loc.role_arn.clone(),
            session_name: loc.session_name.clone(),
            external_id: loc.external_id.clone(),
        }
    }
}

impl S3Reader {
    async fn client(&self, loc: &S3Location) -> Client {
        let key = ClientKey::of(loc);
        let mut clients = self.clients.lock().await;
        if let Some(client) = clients.get(&key) {
            return client.clone();
        }
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
        if let Some(region) = &loc.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let Some(profile) = &loc.profile {
            loader = loader.profile_name(profile);
        }
        let sdk = loader.load().await;
        let mut builder = aws_sdk_s3::config::Builder::from(&sdk).force_path_style(loc.path_style);
        if let Some(endpoint) = &loc.endpoint {
            builder = builder.endpoint_url(endpoint);
        }
        if let Some(role) = &loc.role_arn {
            let sts = match &loc.sts_endpoint {
                Some(endpoint) => sdk.to_builder().endpoint_url(endpoint).build(),
                None => sdk.clone(),
            };
            let mut provider = AssumeRoleProvider::builder(role)
                .configure(&sts)
                .session_name(loc.session_name.clone().unwrap_or_else(|| "driftback".into()));
            if let Some(id) = &loc.external_id {
                provider = provider.external_id(id);
            }
            builder = builder.credentials_provider(provider.build().await);
        }
        let client = Client::from_conf(builder.build());
        clients.insert(key, client.clone());
        client
    }

    /// The workspaces whose state is in the bucket: `default` when the key itself is there, and
    /// each `<workspace_key_prefix>/<name>/<key>`.
    /// `location` is where the default workspace's state is.
    pub async fn list_workspaces(&self, stack: &Stack, location: &Location) -> Result<Vec<String>, ReadError> {
        let Location::S3(loc) = location else { return Ok(Vec::new()) };
        let prefix = settings::text(&stack.settings, "workspace_key_prefix").unwrap_or(DEFAULT_WORKSPACE_KEY_PREFIX);
        let client = self.client(loc).await;
        let mut out = Vec::new();
        let shown = location.to_string();
        for list_prefix in [loc.key.clone(), format!("{prefix}/")] {
            let mut pages = client.list_objects_v2().bucket(&loc.bucket).prefix(&list_prefix).into_paginator().send();
            while let Some(page) = pages.next().await {
                let page = page.map_err(|e| classify(e, loc, &shown))?;
                for object in page.contents() {
                    let Some(key) = object.key() else { continue };
                    if key == loc.key {
                        out.push("default".to_string());
                    } else if let Some((name, rest)) = key.strip_prefix(&list_prefix).and_then(|r| r.split_once('/')) {
                        if rest == loc.key && list_prefix != loc.key {
                            out.push(name.to_string());
                        }
                    }
                }
            }
        }
        out.dedup();
        Ok(out)
    }
}

impl StateReader for S3Reader {
    fn read<'a>(&'a self, location: &'a Location) -> BoxFuture<'a, Result<StateRead, ReadError>> {
        Box::pin(async move {
            let Location::S3(loc) = location else {
                return Err(ReadError::Malformed {
                    location: location.to_string(),
                    message: "not an S3 location".into(),
                });
            };
            let shown = location.to_string();
            let client = self.client(loc).await;
            if client.config().region().is_none() {
                return Err(ReadError::Configuration {
                    location: shown,
                    message: "no region: set region in the backend (or its partial configuration), or AWS_REGION"
                        .into(),
                });
            }
            let out = client
                .get_object()
                .bucket(&loc.bucket)
                .key(&loc.key)
                .send()
                .await
                .map_err(|e| classify(e, loc, &shown))?;
            let etag = out.e_tag().unwrap_or_default().trim_matches('"').to_string();
            let version_id = out.version_id().map(str::to_string);
            let bytes = out
                .body
                .collect()
                .await
                .map_err(|e| ReadError::Unavailable { location: shown.clone(), message: e.to_string() })?
                .into_bytes();
            let read = parse_state(&bytes, &shown)?;
            Ok(StateRead { version: StateVersion::S3 { etag, version_id }, ..read })
        })
    }

    /// The object's ETag (and version id), from a HEAD request: the same text [`StateVersion`]
    /// shows for the object a read returns.
    fn probe<'a>(&'a self, location: &'a Location) -> BoxFuture<'a, Result<Option<String>, ReadError>> {
        Box::pin(async move {
            let Location::S3(loc) = location else { return Ok(None) };
            let shown = location.to_string();
            let client = self.client(loc).await;
            if client.config().region().is_none() {
                return Ok(None);
            }
            let head = client
                .head_object()
                .bucket(&loc.bucket)
                .key(&loc.key)
                .send()
                .await
                .map_err(|e| classify(e, loc, &shown))?;
            let version = StateVersion::S3 {
                etag: head.e_tag().unwrap_or_default().trim_matches('"').to_string(),
                version_id: head.version_id().map(str::to_string),
            };
            Ok(Some(version.to_string()))
        })
    }
}

/// An SDK error as what the caller does about it.
fn classify<E>(err: SdkError<E, aws_sdk_s3::config::http::HttpResponse>, loc: &S3Location, shown: &str) -> ReadError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let text = DisplayErrorContext(&err).to_string();
    let location = shown.to_string();
    match &err {
        SdkError::ServiceError(service) => {
            let status = service.raw().status().as_u16();
            match service.err().code().unwrap_or_default() {
                "NoSuchBucket" => ReadError::NoBucket { bucket: loc.bucket.clone() },
                "NoSuchKey" => ReadError::Missing {
                    location,
                    hint: "no such workspace, or a wrong key or workspace_key_prefix".into(),
                },
                "AccessDenied" | "InvalidAccessKeyId" | "SignatureDoesNotMatch" | "ExpiredToken" | "InvalidToken" => {
                    ReadError::Denied { location, message: service.err().message().unwrap_or(&text).to_string() }
                }
                _ if status == 404 => ReadError::Missing { location, hint: "nothing at this key".into() },
                _ if status == 403 => ReadError::Denied { location, message: text },
                _ if status >= 500 || status == 429 => ReadError::Unavailable { location, message: text },
                _ => ReadError::Malformed { location, message: text },
            }
        }
        _ if text.contains("credentials") => ReadError::NoCredentials { message: credentials_cause(&text) },
        _ => ReadError::Unavailable { location, message: text },
    }
}

/// What the credential chain tried, on one line, without the SDK's debug dump.
fn credentials_cause(text: &str) -> String {
    let head = text.split(" (DispatchFailure").next().unwrap_or(text);
    let head = head.trim_start_matches("dispatch failure: ").trim_start_matches("other: ");
    head.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}
