//! Module source addresses, read as `terraform init` reads them: local paths, registry addresses,
//! and the go-getter addresses it hands to its getters (git, HTTP archives, HTTP redirections).

use std::fmt;

/// The public registry's host, for registry addresses that name none.
pub const PUBLIC_REGISTRY: &str = "registry.terraform.io";

/// A module's `source`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `./x`, `../x`: a directory beside the calling module.
    Local(String),
    /// `[HOST/]NAMESPACE/NAME/PROVIDER[//SUBDIR]`: a module registry; the `version` argument applies.
    Registry(RegistryAddress),
    /// A go-getter address of a package: git or an HTTP URL, with a subdirectory of the package.
    Remote(Remote),
}

/// `HOST/NAMESPACE/NAME/PROVIDER` with an optional subdirectory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryAddress {
    pub host: String,
    pub namespace: String,
    pub name: String,
    pub provider: String,
    pub subdir: Option<String>,
}

impl RegistryAddress {
    /// `HOST/NAMESPACE/NAME/PROVIDER`, without the subdirectory: one package.
    pub fn package(&self) -> String {
        format!("{}/{}/{}/{}", self.host, self.namespace, self.name, self.provider)
    }
}

/// How a remote package is fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Getter {
    /// A git repository: `url` is what git clones (`https://`, `ssh://`, `file://`, `user@host:path`),
    /// `reference` the `?ref=` (a branch, tag or commit), `depth` the `?depth=`.
    Git { url: String, reference: Option<String>, depth: Option<u32> },
    /// An archive over HTTP(S) (`.zip`, `.tar.gz`, `.tgz`, or `?archive=`).
    Archive { url: String, kind: ArchiveKind },
    /// An HTTP(S) URL that is not an archive: its `X-Terraform-Get` response header names the package.
    Http { url: String },
}

/// The archive formats read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveKind {
    Zip,
    TarGz,
}

/// A remote package and the module's subdirectory in it (`//subdir`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub getter: Getter,
    pub subdir: Option<String>,
}

/// A source that is not a module address driftback can read, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("module source {address:?} {reason}")]
pub struct SourceError {
    pub address: String,
    pub reason: String,
}

impl Source {
    /// Parse a module call's `source` as `terraform init` does: a local path first, then a
    /// registry address, then a go-getter address.
    pub fn parse(text: &str) -> Result<Source, SourceError> {
        let fail = |reason: &str| SourceError { address: text.to_string(), reason: reason.to_string() };
        if text.is_empty() || text.trim() != text {
            return Err(fail("is empty or has spaces around it"));
        }
        if text.starts_with("./") || text.starts_with("../") || text == "." || text == ".." {
            return Ok(Source::Local(text.to_string()));
        }
        if text.starts_with('/') || text.starts_with('\\') || text.get(1..3) == Some(":\\") {
            return Err(fail(
                "is an absolute path: a module in the repository is called by ./ or ../ relative to the calling module",
            ));
        }
        if let Some(address) = parse_registry(text)? {
            return Ok(Source::Registry(address));
        }
        parse_remote(text).map(Source::Remote)
    }
}

/// Parse a go-getter address (a source that is neither local nor a registry address, or a
/// registry's `X-Terraform-Get`).
pub fn parse_remote(text: &str) -> Result<Remote, SourceError> {
    let fail = |reason: String| SourceError { address: text.to_string(), reason };
    let (forced, rest) = match text.split_once("::") {
        Some((f, rest)) if !f.is_empty() && f.chars().all(|c| c.is_ascii_alphanumeric()) => (Some(f), rest),
        _ => (None, text),
    };
    // The query belongs to the package URL, wherever the `//subdir` is written.
    let (package, subdir) = split_subdir(rest);
    let (subdir, sub_query) = match subdir {
        Some(sub) => match sub.split_once('?') {
            Some((s, q)) => {
                ((!s.trim_matches('/').is_empty()).then(|| s.trim_matches('/').to_string()), Some(q.to_string()))
            }
            None => (Some(sub), None),
        },
        None => (None, None),
    };
    let (package, query) = match package.split_once('?') {
        Some((p, q)) => (
            p,
            Some(match &sub_query {
                Some(sq) => format!("{q}&{sq}"),
                None => q.to_string(),
            }),
        ),
        None => (package, sub_query),
    };
    let query = query.as_deref();
    if let Some(sub) = &subdir {
        if sub.split('/').any(|part| part == "..") {
            return Err(fail(format!("has a subdirectory {sub:?} that leaves its package")));
        }
    }
    let params: Vec<(&str, &str)> = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    let param = |name: &str| params.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
    let rest_query = |skip: &[&str]| {
        let kept: Vec<String> =
            params.iter().filter(|(k, _)| !skip.contains(k)).map(|(k, v)| format!("{k}={v}")).collect();
        if kept.is_empty() { String::new() } else { format!("?{}", kept.join("&")) }
    };
    let git = |url: String| -> Result<Remote, SourceError> {
        let depth = match param("depth") {
            Some(d) => Some(d.parse::<u32>().map_err(|_| fail(format!("has a depth {d:?} that is not a number")))?),
            None => None,
        };
        Ok(Remote {
            getter: Getter::Git { url, reference: param("ref").filter(|r| !r.is_empty()), depth },
            subdir: subdir.clone(),
        })
    };
    match forced {
        Some("git") => {
            if !(package.contains("://") || is_scp_like(package)) {
                return Err(fail("is a git address without a URL: write git::https://HOST/PATH, git::ssh://, git::file:// or git::USER@HOST:PATH".into()));
            }
            return git(package.to_string());
        }
        Some(kind @ ("http" | "https")) => {
            let url = format!("{}{}", package, rest_query(&[]));
            if !url.starts_with(&format!("{kind}://")) {
                return Err(fail(format!("is forced to {kind} but is not an {kind}:// URL")));
            }
            return Ok(http_remote(url, package, param("archive").as_deref(), subdir.clone()));
        }
        Some(other) => {
            return Err(fail(format!(
                "uses the {other}:: getter, which driftback does not fetch (it fetches registry, git and HTTP sources); run terraform init in the checkout so that .terraform/modules holds it"
            )));
        }
        None => {}
    }
    // go-getter's detectors, in its order: GitHub and Bitbucket shorthands, scp-like git, then URLs.
    if let Some(path) = package.strip_prefix("github.com/") {
        let parts: Vec<&str> = path.split('/').collect();
        if parts.len() < 2 || parts.iter().take(2).any(|p| p.is_empty()) {
            return Err(fail(
                "is a GitHub address without an owner and a repository: write github.com/OWNER/REPO".into(),
            ));
        }
        let repo = parts[1].trim_end_matches(".git");
        let mut sub = parts[2..].join("/");
        if let Some(s) = &subdir {
            sub = if sub.is_empty() { s.clone() } else { format!("{sub}/{s}") };
        }
        let url = format!("https://github.com/{}/{repo}.git", parts[0]);
        let mut remote = git(url)?;
        remote.subdir = (!sub.is_empty()).then_some(sub);
        return Ok(remote);
    }
    if package.starts_with("bitbucket.org/") {
        return Err(fail("is a Bitbucket shorthand, which needs Bitbucket's API to tell git from mercurial: write git::https://bitbucket.org/OWNER/REPO.git".into()));
    }
    if is_scp_like(package) {
        return git(package.to_string());
    }
    if let Some(scheme) = package.split_once("://").map(|(s, _)| s) {
        return match scheme {
            "http" | "https" => {
                let url = format!("{}{}", package, rest_query(&[]));
                Ok(http_remote(url, package, param("archive").as_deref(), subdir.clone()))
            }
            "git" | "ssh" | "file" if scheme != "file" || package.ends_with(".git") => git(package.to_string()),
            "s3" | "gcs" | "hg" => Err(fail(format!(
                "is a {scheme} address, which driftback does not fetch; run terraform init in the checkout so that .terraform/modules holds it"
            ))),
            _ => Err(fail(format!("has the scheme {scheme}://, which is no module source: write git::{package}"))),
        };
    }
    Err(fail(
        "is not a module source: expected ./PATH or ../PATH, NAMESPACE/NAME/PROVIDER or HOST/NAMESPACE/NAME/PROVIDER (a registry), git::URL, github.com/OWNER/REPO, or an https:// URL of an archive".into(),
    ))
}

fn http_remote(url: String, path: &str, archive: Option<&str>, subdir: Option<String>) -> Remote {
    let lower = path.to_ascii_lowercase();
    let kind = match archive {
        Some("zip") => Some(ArchiveKind::Zip),
        Some("tar.gz" | "tgz") => Some(ArchiveKind::TarGz),
        _ if lower.ends_with(".zip") => Some(ArchiveKind::Zip),
        _ if lower.ends_with(".tar.gz") || lower.ends_with(".tgz") => Some(ArchiveKind::TarGz),
        _ => None,
    };
    let getter = match kind {
        Some(kind) => Getter::Archive { url: strip_param(&url, "archive"), kind },
        None => Getter::Http { url },
    };
    Remote { getter, subdir }
}

fn strip_param(url: &str, name: &str) -> String {
    let Some((base, query)) = url.split_once('?') else { return url.to_string() };
    let kept: Vec<&str> = query.split('&').filter(|p| p.split('=').next() != Some(name)).collect();
    if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) }
}

/// `user@host:path` (git's scp-like SSH syntax).
fn is_scp_like(text: &str) -> bool {
    let Some((user_host, path)) = text.split_once(':') else { return false };
    !text.contains("://") && user_host.contains('@') && !user_host.contains('/') && !path.is_empty()
}

/// `address` split at go-getter's `//` subdirectory marker (the first `//` after any `scheme://`).
pub fn split_subdir(address: &str) -> (&str, Option<String>) {
    let start = address.find("://").map_or(0, |i| i + 3);
    // `file:///abs/path`: the path's leading slash is not a marker.
    let start = if address[start..].starts_with('/') { start + 1 } else { start };
    match address[start..].find("//") {
        Some(i) => {
            let sub = address[start + i + 2..].trim_matches('/');
            (&address[..start + i], (!sub.is_empty()).then(|| sub.to_string()))
        }
        None => (address, None),
    }
}

fn parse_registry(text: &str) -> Result<Option<RegistryAddress>, SourceError> {
    if text.contains("::") || text.contains("://") || text.contains('?') {
        return Ok(None);
    }
    let (address, subdir) = split_subdir(text);
    let parts: Vec<&str> = address.split('/').collect();
    let (host, rest) = match parts.len() {
        3 => (PUBLIC_REGISTRY.to_string(), &parts[..]),
        4 if is_hostname(parts[0]) => (parts[0].to_ascii_lowercase(), &parts[1..]),
        _ => return Ok(None),
    };
    let name_ok = |s: &str| {
        let b = s.as_bytes();
        !s.is_empty()
            && s.len() <= 64
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    let provider_ok =
        |s: &str| !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(name_ok(rest[0]) && name_ok(rest[1]) && provider_ok(rest[2])) {
        return Ok(None);
    }
    if matches!(host.as_str(), "github.com" | "bitbucket.org") {
        return Ok(None);
    }
    if let Some(sub) = &subdir {
        if sub.split('/').any(|part| part == "..") {
            return Err(SourceError {
                address: text.to_string(),
                reason: format!("has a subdirectory {sub:?} that leaves its package"),
            });
        }
    }
    Ok(Some(RegistryAddress {
        host,
        namespace: rest[0].to_string(),
        name: rest[1].to_string(),
        provider: rest[2].to_string(),
        subdir,
    }))
}

/// A host name (with an optional port), as registry addresses allow: it has a dot, or is `localhost`.
fn is_hostname(text: &str) -> bool {
    let (host, port) = match text.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (text, None),
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    let label_ok = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    port_ok && (host.contains('.') || host == "localhost") && host.split('.').all(label_ok)
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Local(path) => f.write_str(path),
            Source::Registry(r) => {
                write!(f, "{}", r.package())?;
                if let Some(sub) = &r.subdir {
                    write!(f, "//{sub}")?;
                }
                Ok(())
            }
            Source::Remote(r) => {
                match &r.getter {
                    Getter::Git { url, reference, .. } => {
                        write!(f, "git::{url}")?;
                        if let Some(sub) = &r.subdir {
                            write!(f, "//{sub}")?;
                        }
                        if let Some(reference) = reference {
                            write!(f, "?ref={reference}")?;
                        }
                    }
                    Getter::Archive { url, .. } | Getter::Http { url } => {
                        write!(f, "{url}")?;
                        if let Some(sub) = &r.subdir {
                            write!(f, "//{sub}")?;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(host: &str, ns: &str, name: &str, provider: &str, subdir: Option<&str>) -> Source {
        Source::Registry(RegistryAddress {
            host: host.into(),
            namespace: ns.into(),
            name: name.into(),
            provider: provider.into(),
            subdir: subdir.map(str::to_string),
        })
    }

    fn git(url: &str, reference: Option<&str>, subdir: Option<&str>) -> Source {
        Source::Remote(Remote {
            getter: Getter::Git { url: url.into(), reference: reference.map(str::to_string), depth: None },
            subdir: subdir.map(str::to_string),
        })
    }

    #[test]
    fn local_and_registry_addresses() {
        assert_eq!(Source::parse("./modules/web").unwrap(), Source::Local("./modules/web".into()));
        assert_eq!(Source::parse("../shared").unwrap(), Source::Local("../shared".into()));
        assert_eq!(
            Source::parse("terraform-aws-modules/rds/aws").unwrap(),
            registry(PUBLIC_REGISTRY, "terraform-aws-modules", "rds", "aws", None)
        );
        assert_eq!(
            Source::parse("terraform-aws-modules/rds/aws//modules/db_instance").unwrap(),
            registry(PUBLIC_REGISTRY, "terraform-aws-modules", "rds", "aws", Some("modules/db_instance"))
        );
        assert_eq!(
            Source::parse("app.terraform.io/Acme/vpc/aws").unwrap(),
            registry("app.terraform.io", "Acme", "vpc", "aws", None)
        );
        assert_eq!(
            Source::parse("Registry.Example.Test:8443/acme/s3-bucket/aws").unwrap(),
            registry("registry.example.test:8443", "acme", "s3-bucket", "aws", None)
        );
        assert_eq!(Source::parse("localhost/acme/sg/aws").unwrap(), registry("localhost", "acme", "sg", "aws", None));
        assert_eq!(
            Source::parse("terraform-aws-modules/rds/aws//modules/db_instance").unwrap().to_string(),
            "registry.terraform.io/terraform-aws-modules/rds/aws//modules/db_instance"
        );
    }

    #[test]
    fn git_addresses() {
        assert_eq!(
            Source::parse("git::https://example.com/infra/modules.git//vpc?ref=v1.2.0").unwrap(),
            git("https://example.com/infra/modules.git", Some("v1.2.0"), Some("vpc"))
        );
        // The query may come before or after the subdirectory; it belongs to the URL either way.
        assert_eq!(
            Source::parse("git::https://example.com/infra/modules.git?ref=main//vpc").unwrap(),
            git("https://example.com/infra/modules.git", Some("main"), Some("vpc"))
        );
        assert_eq!(
            Source::parse("git::ssh://git@example.com/infra/modules.git?ref=abc123").unwrap(),
            git("ssh://git@example.com/infra/modules.git", Some("abc123"), None)
        );
        assert_eq!(
            Source::parse("git::git@example.com:infra/modules.git//rds").unwrap(),
            git("git@example.com:infra/modules.git", None, Some("rds"))
        );
        assert_eq!(
            Source::parse("git@github.com:acme/modules.git").unwrap(),
            git("git@github.com:acme/modules.git", None, None)
        );
        assert_eq!(
            Source::parse("git::file:///srv/git/modules.git//modules/sg?ref=v2&depth=1").unwrap(),
            Source::Remote(Remote {
                getter: Getter::Git {
                    url: "file:///srv/git/modules.git".into(),
                    reference: Some("v2".into()),
                    depth: Some(1)
                },
                subdir: Some("modules/sg".into()),
            })
        );
        assert_eq!(
            Source::parse("github.com/acme/terraform-modules//sg?ref=v3.1.0").unwrap(),
            git("https://github.com/acme/terraform-modules.git", Some("v3.1.0"), Some("sg"))
        );
        assert_eq!(
            Source::parse("github.com/acme/terraform-modules.git").unwrap(),
            git("https://github.com/acme/terraform-modules.git", None, None)
        );
        // Four parts on github.com are a repository's subdirectory, never a registry.
        assert_eq!(
            Source::parse("github.com/acme/modules/vpc").unwrap(),
            git("https://github.com/acme/modules.git", None, Some("vpc"))
        );
    }

    #[test]
    fn archive_and_http_addresses() {
        assert_eq!(
            Source::parse("https://example.com/modules/vpc-1.0.0.zip//vpc").unwrap(),
            Source::Remote(Remote {
                getter: Getter::Archive {
                    url: "https://example.com/modules/vpc-1.0.0.zip".into(),
                    kind: ArchiveKind::Zip
                },
                subdir: Some("vpc".into()),
            })
        );
        assert_eq!(
            Source::parse("https://example.com/vpc.tgz?sig=abc").unwrap(),
            Source::Remote(Remote {
                getter: Getter::Archive { url: "https://example.com/vpc.tgz?sig=abc".into(), kind: ArchiveKind::TarGz },
                subdir: None,
            })
        );
        assert_eq!(
            Source::parse("https://example.com/get/vpc?archive=tar.gz").unwrap(),
            Source::Remote(Remote {
                getter: Getter::Archive { url: "https://example.com/get/vpc".into(), kind: ArchiveKind::TarGz },
                subdir: None,
            })
        );
        assert_eq!(
            Source::parse("https://example.com/modules/vpc").unwrap(),
            Source::Remote(Remote {
                getter: Getter::Http { url: "https://example.com/modules/vpc".into() },
                subdir: None
            })
        );
    }

    #[test]
    fn bad_sources_say_why() {
        let reason = |s: &str| Source::parse(s).unwrap_err().to_string();
        assert!(reason("").contains("empty"), "{}", reason(""));
        assert!(reason("/abs/path").contains("absolute path"));
        assert!(reason("s3::https://s3.amazonaws.com/bucket/vpc.zip").contains("s3:: getter"));
        assert!(reason("hg::https://example.com/repo").contains("hg:: getter"));
        assert!(reason("gcs://bucket/x").contains("gcs address"));
        assert!(reason("git::modules").contains("without a URL"));
        assert!(reason("github.com/acme").contains("without an owner and a repository"));
        assert!(reason("bitbucket.org/acme/repo").contains("Bitbucket"));
        assert!(reason("acme/rds").contains("is not a module source"));
        assert!(reason("acme/rds/AWS").contains("is not a module source"), "provider names are lower case");
        assert!(reason("terraform-aws-modules/rds/aws//../../etc").contains("leaves its package"));
        assert!(reason("git::https://example.com/x.git//../y").contains("leaves its package"));
        assert!(reason("git::https://example.com/x.git?depth=deep").contains("not a number"));
        assert!(reason("ftp://example.com/x").contains("ftp://"));
        assert!(reason(" ./x").contains("spaces"));
    }
}
