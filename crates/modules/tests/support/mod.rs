//! A module registry stand-in on loopback speaking the Module Registry Protocol (versions,
//! download with `X-Terraform-Get` or a JSON `location`), serving the archives it points at, and
//! a bare git repository of the security group module with a version tag. The modules are the
//! fixtures in `tests/fixtures/modules`.

#![allow(dead_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

pub const TOKEN: &str = "stand-in-token-7f3a";

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[derive(Clone)]
struct Shared {
    addr: SocketAddr,
    archives: Arc<Vec<(String, Vec<u8>)>>,
    requests: Arc<Mutex<Vec<String>>>,
}

pub struct StandIn {
    pub addr: SocketAddr,
    pub requests: Arc<Mutex<Vec<String>>>,
    /// The directory holding `security-group.git`.
    pub git_dir: PathBuf,
    /// A CLI configuration whose `host` block points `registry.test` here, with its token.
    pub cli_config: PathBuf,
    pub dir: tempfile::TempDir,
}

impl StandIn {
    pub fn count(&self, prefix: &str) -> usize {
        self.requests.lock().unwrap().iter().filter(|r| r.starts_with(prefix)).count()
    }

    /// The fixture root module with this stand-in's addresses, written into a fresh repository.
    pub fn root(&self) -> tempfile::TempDir {
        let repo = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(fixtures().join("root/main.tf"))
            .unwrap()
            .replace("@ARCHIVES@", &format!("http://{}/archives", self.addr))
            .replace("@GIT@", &self.git_dir.display().to_string());
        std::fs::write(repo.path().join("main.tf"), text).unwrap();
        repo
    }
}

/// `dir`'s files as a tar.gz, each under `prefix`.
pub fn tar_gz(dir: &Path, prefix: &str) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    builder.append_dir_all(prefix, dir).unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

/// `dir`'s files as a zip.
pub fn zip(dir: &Path) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
            out.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
            out.write_all(&std::fs::read(&path).unwrap()).unwrap();
        }
    }
    out.finish().unwrap().into_inner()
}

/// A bare repository of the security group module: tag `v5.1.0`, then a later commit on `main`
/// that adds a file the tag does not have.
fn git_repository(into: &Path) -> PathBuf {
    let work = into.join("work");
    let repo = git2::Repository::init(&work).unwrap();
    let sig = git2::Signature::now("fixture", "fixture@example.test").unwrap();
    let commit = |message: &str, parent: Option<git2::Oid>| {
        let mut index = repo.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let parents: Vec<git2::Commit> = parent.map(|p| repo.find_commit(p).unwrap()).into_iter().collect();
        let refs: Vec<&git2::Commit> = parents.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &refs).unwrap()
    };
    for entry in std::fs::read_dir(fixtures().join("modules/security-group")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, work.join(path.file_name().unwrap())).unwrap();
    }
    let tagged = commit("security group module", None);
    repo.tag_lightweight("v5.1.0", &repo.find_object(tagged, None).unwrap(), false).unwrap();
    std::fs::write(work.join("unreleased.tf"), "resource \"aws_security_group\" \"unreleased\" {}\n").unwrap();
    commit("unreleased work", Some(tagged));
    let bare = into.join("security-group.git");
    git2::build::RepoBuilder::new().bare(true).clone(&format!("file://{}", work.display()), &bare).unwrap();
    into.to_path_buf()
}

pub async fn start() -> StandIn {
    let dir = tempfile::tempdir().unwrap();
    let git_dir = git_repository(dir.path());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let modules = fixtures().join("modules");
    let mut archives = Vec::new();
    for version in ["3.15.0", "4.0.0", "4.1.2", "5.0.0-beta.1"] {
        archives.push((format!("s3-bucket-{version}.tar.gz"), tar_gz(&modules.join("s3-bucket"), ".")));
    }
    for version in ["6.0.0", "6.1.0"] {
        archives.push((format!("rds-{version}.zip"), zip(&modules.join("rds"))));
    }
    archives.push(("vpc-5.0.0.tar.gz".into(), tar_gz(&modules.join("vpc"), "modules/vpc")));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let shared = Shared { addr, archives: Arc::new(archives), requests: requests.clone() };
    let app = Router::new()
        .route("/v1/modules/{ns}/{name}/{provider}/versions", get(versions))
        .route("/v1/modules/{ns}/{name}/{provider}/{version}/download", get(download))
        .route("/archives/{file}", get(archive))
        .with_state(shared);
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    let cli_config = dir.path().join("terraform.rc");
    std::fs::write(
        &cli_config,
        format!(
            "host \"registry.test\" {{\n  services = {{\n    \"modules.v1\" = \"http://{addr}/v1/modules/\"\n  }}\n}}\n\ncredentials \"registry.test\" {{\n  token = \"{TOKEN}\"\n}}\n"
        ),
    )
    .unwrap();
    StandIn { addr, requests, git_dir, cli_config, dir }
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

fn listed(name: &str) -> Option<&'static [&'static str]> {
    match name {
        "s3-bucket" => Some(&["3.15.0", "4.0.0", "4.1.2", "5.0.0-beta.1"]),
        "rds" => Some(&["6.0.0", "6.1.0"]),
        _ => None,
    }
}

async fn versions(
    State(shared): State<Shared>,
    UrlPath((ns, name, provider)): UrlPath<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    shared.requests.lock().unwrap().push(format!("versions {ns}/{name}/{provider}"));
    if !authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if name == "slow" {
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    }
    let Some(list) = listed(&name).filter(|_| ns == "acme" && provider == "aws") else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let versions: Vec<serde_json::Value> = list.iter().map(|v| serde_json::json!({ "version": v })).collect();
    axum::Json(
        serde_json::json!({ "modules": [{ "source": format!("{ns}/{name}/{provider}"), "versions": versions }] }),
    )
    .into_response()
}

async fn download(
    State(shared): State<Shared>,
    UrlPath((ns, name, provider, version)): UrlPath<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    shared.requests.lock().unwrap().push(format!("download {ns}/{name}/{provider}/{version}"));
    if !authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if !listed(&name).is_some_and(|l| l.contains(&version.as_str())) {
        return StatusCode::NOT_FOUND.into_response();
    }
    match name.as_str() {
        // The bucket module: 204 with a relative X-Terraform-Get.
        "s3-bucket" => (StatusCode::NO_CONTENT, [("X-Terraform-Get", format!("/archives/s3-bucket-{version}.tar.gz"))])
            .into_response(),
        // The database module: the JSON form, an absolute URL.
        _ => axum::Json(
            serde_json::json!({ "location": format!("http://{}/archives/{name}-{version}.zip", shared.addr) }),
        )
        .into_response(),
    }
}

async fn archive(State(shared): State<Shared>, UrlPath(file): UrlPath<String>, headers: HeaderMap) -> Response {
    shared.requests.lock().unwrap().push(format!("archive {file}"));
    if headers.contains_key(header::AUTHORIZATION) {
        // The registry's token is for the registry's API, not for wherever its packages are.
        return StatusCode::BAD_REQUEST.into_response();
    }
    match shared.archives.iter().find(|(name, _)| *name == file) {
        Some((_, bytes)) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
