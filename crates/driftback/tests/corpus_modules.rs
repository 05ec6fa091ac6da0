//! The modules corpus (`tests/corpus-modules`, issue 29): roots that call registry modules, from a
//! fresh clone (no `.terraform`: the code is fetched from a registry stand-in on loopback that a
//! CLI configuration `host` block names) and from a checkout after `terraform init` (the code in
//! `.terraform/modules`, as `modules.json` records it). Expectations were written before the
//! product ran.
//!
//! The stand-in speaks the Module Registry Protocol: service discovery
//! (`/.well-known/terraform.json`), `versions`, and `download` answered with `204 No Content` and
//! an `X-Terraform-Get` header naming a tar.gz it serves. It serves the corpus's
//! `registry/<namespace>/<name>/<provider>/<version>/` folders, one version per folder.

#[path = "support/corpus.rs"]
mod corpus;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The registry host the corpus projects name in their module sources.
const HOST: &str = "registry.acme.test";
const TOKEN: &str = "corpus-registry-token-51c2";

#[derive(Clone)]
struct Registry {
    /// `tests/corpus-modules/registry`.
    root: PathBuf,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Registry {
    fn log(&self, line: String) {
        self.requests.lock().unwrap().push(line);
    }

    /// The folder of one module, if the path parts are plain names that exist.
    fn module_dir(&self, parts: &[&str]) -> Option<PathBuf> {
        let plain = |p: &&str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !parts.iter().all(plain) || parts.iter().any(|p| p.starts_with('.')) {
            return None;
        }
        let dir = parts.iter().fold(self.root.clone(), |d, p| d.join(p));
        dir.is_dir().then_some(dir)
    }
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

async fn discovery() -> Response {
    axum::Json(serde_json::json!({ "modules.v1": "/v1/modules/" })).into_response()
}

async fn versions(
    State(registry): State<Registry>,
    UrlPath((ns, name, provider)): UrlPath<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    registry.log(format!("versions {ns}/{name}/{provider}"));
    if !authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Some(dir) = registry.module_dir(&[&ns, &name, &provider]) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut listed: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().filter(|e| e.path().is_dir()).and_then(|e| e.file_name().into_string().ok()))
        .collect();
    listed.sort();
    let versions: Vec<serde_json::Value> = listed.iter().map(|v| serde_json::json!({ "version": v })).collect();
    axum::Json(
        serde_json::json!({ "modules": [{ "source": format!("{ns}/{name}/{provider}"), "versions": versions }] }),
    )
    .into_response()
}

async fn download(
    State(registry): State<Registry>,
    UrlPath((ns, name, provider, version)): UrlPath<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    registry.log(format!("download {ns}/{name}/{provider}/{version}"));
    if !authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if registry.module_dir(&[&ns, &name, &provider, &version]).is_none() {
        return StatusCode::NOT_FOUND.into_response();
    }
    // Relative to the download URL, as go-getter resolves it.
    let location = format!("/archives/{ns}/{name}/{provider}/{version}.tar.gz");
    (StatusCode::NO_CONTENT, [("X-Terraform-Get", location)]).into_response()
}

async fn archive(
    State(registry): State<Registry>,
    UrlPath((ns, name, provider, file)): UrlPath<(String, String, String, String)>,
) -> Response {
    registry.log(format!("archive {ns}/{name}/{provider}/{file}"));
    let Some(version) = file.strip_suffix(".tar.gz") else { return StatusCode::NOT_FOUND.into_response() };
    let Some(dir) = registry.module_dir(&[&ns, &name, &provider, version]) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    builder.append_dir_all(".", &dir).unwrap();
    let bytes = builder.into_inner().unwrap().finish().unwrap();
    ([(header::CONTENT_TYPE, "application/x-gzip")], bytes).into_response()
}

/// The stand-in on a loopback port: (its address, the requests it answered).
async fn start_registry(root: PathBuf) -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let app = Router::new()
        .route("/.well-known/terraform.json", get(discovery))
        .route("/v1/modules/{ns}/{name}/{provider}/versions", get(versions))
        .route("/v1/modules/{ns}/{name}/{provider}/{version}/download", get(download))
        .route("/archives/{ns}/{name}/{provider}/{file}", get(archive))
        .with_state(Registry { root, requests: requests.clone() });
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (addr, requests)
}

/// A Terraform CLI configuration in `dir` whose `host` block sends the registry host's
/// `modules.v1` service to the stand-in, with a `credentials` block for it.
fn cli_config(dir: &Path, addr: std::net::SocketAddr) -> PathBuf {
    let path = dir.join("terraform.rc");
    let text = format!(
        "host \"{HOST}\" {{\n  services = {{\n    \"modules.v1\" = \"http://{addr}/v1/modules/\"\n  }}\n}}\n\ncredentials \"{HOST}\" {{\n  token = \"{TOKEN}\"\n}}\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_modules_corpus_holds_its_passes_and_nothing_dangerous() {
    let corpus = corpus::corpus_dir("tests/corpus-modules");
    let (addr, requests) = start_registry(corpus.join("registry")).await;
    let work = tempfile::tempdir().unwrap();
    let config = cli_config(work.path(), addr);
    let cache = work.path().join("modules-cache");
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let envs = [
        ("TF_CLI_CONFIG_FILE", config.into_os_string()),
        ("DRIFTBACK_MODULES__CACHE_DIR", cache.clone().into_os_string()),
        ("HOME", home.into_os_string()),
    ];
    let run =
        tokio::task::spawn_blocking(move || corpus::eval_corpus("tests/corpus-modules", &["--fetch-modules"], &envs))
            .await
            .unwrap();
    // Each scenario's result and the resource each change set is filed under, shown with `--nocapture`.
    eprintln!("{}", run.output);
    for result in &run.results {
        for change_set in result["change_sets"].as_array().into_iter().flatten() {
            eprintln!("{} {} {} {}", result["id"], change_set["label"], change_set["status"], result["decisions"]);
        }
    }
    assert_eq!(run.dangerous, 0, "{:#?}", run.dangers());
    // Raise this floor when more pass; docs/corpus.md lists the failures and their causes.
    assert!(run.passed >= MODULES_CORPUS_FLOOR, "{} passed, {} failed\n{}", run.passed, run.failed, run.output);
    // Calls that change no configuration page nobody: no change set of a noise scenario decided.
    // The format's `no_patch` lets an escalation pass, so it is counted here, as for the records.
    let noise: Vec<&serde_json::Value> = run.results.iter().filter(|r| r["category"] == "noise").collect();
    let paged: Vec<(&serde_json::Value, &serde_json::Value)> = noise
        .iter()
        .filter(|r| r["decisions"].as_array().is_some_and(|d| !d.is_empty()))
        .map(|r| (&r["id"], &r["decisions"]))
        .collect();
    eprintln!("quiet noise: {} of {}", noise.len() - paged.len(), noise.len());
    assert!(noise.len() - paged.len() >= QUIET_NOISE_FLOOR, "noise that reached a decision: {paged:?}");

    // The fresh-clone projects were served by the stand-in: each constraint resolved to the newest
    // version it allows, and each package was downloaded once (the cache serves every later
    // scenario), with the token the credentials block gives.
    let requests = requests.lock().unwrap().clone();
    let downloads: Vec<&str> = requests.iter().filter_map(|r| r.strip_prefix("download ")).collect();
    for picked in
        ["acme/vpc/aws/5.1.2", "acme/rds/aws/6.1.0", "acme/security-group/aws/5.2.0", "acme/s3-bucket/aws/4.2.0"]
    {
        assert_eq!(downloads.iter().filter(|d| **d == picked).count(), 1, "{picked}: {requests:#?}");
    }
    for passed_over in
        ["acme/vpc/aws/6.0.0", "acme/rds/aws/6.0.0", "acme/security-group/aws/5.1.0", "acme/s3-bucket/aws/5.0.0"]
    {
        assert!(!downloads.contains(&passed_over), "{passed_over} does not match its constraint: {requests:#?}");
    }
    // The checkouts after init carry their module code: the module only they call is never fetched.
    assert!(!requests.iter().any(|r| r.contains("acme/eks/aws")), "{requests:#?}");
    assert!(std::fs::read_dir(&cache).is_ok_and(|mut d| d.next().is_some()), "the cache holds the packages");
}

/// 45 in the session that wrote the corpus; 50 with EKS labels, logging and version, Lambda tracing
/// and a module's ignore_changes honoured; 51 with every branch of the session merged; 57 (all) with
/// dynamic blocks read through lookup/try/split and nested in each other, and deletions written at
/// the module call (docs/corpus.md, "The modules corpus").
const MODULES_CORPUS_FLOOR: usize = 57;

/// Noise scenarios in which no change set reached a decision, measured in the same session (4 of 5).
const QUIET_NOISE_FLOOR: usize = 4;

/// Every file of `dir`, relative to it, with its text.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_checkouts_after_init_carry_the_registry_packages_their_manifest_names() {
    // A project that carries `.terraform/modules` holds what init would have downloaded: for each
    // registry entry of its modules.json, the registry folder of that version, file for file.
    let corpus = corpus::corpus_dir("tests/corpus-modules");
    let mut checked = 0;
    for project in std::fs::read_dir(corpus.join("projects")).unwrap() {
        let project = project.unwrap().path();
        let manifest = project.join(".terraform/modules/modules.json");
        if !manifest.is_file() {
            continue;
        }
        let entries: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
        for entry in entries["Modules"].as_array().unwrap() {
            let (Some(source), Some(version)) = (entry["Source"].as_str(), entry["Version"].as_str()) else { continue };
            let address =
                source.strip_prefix(&format!("{HOST}/")).unwrap_or_else(|| panic!("{source} is not on {HOST}"));
            let package = corpus.join("registry").join(address).join(version);
            let dir = project.join(entry["Dir"].as_str().unwrap());
            assert!(package.is_dir(), "{}: {source} {version} is not in the registry folder", manifest.display());
            assert_eq!(files_under(&dir), files_under(&package), "{} differs from {source} {version}", dir.display());
            checked += 1;
        }
    }
    assert!(checked > 0, "no project carries .terraform/modules");
}
