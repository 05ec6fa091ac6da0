//! Which directories of a repository are root modules (stacks), how each one's state is reached,
//! and its workspaces.
//!
//! [`scan`] is the only I/O: it walks the repository once and parses every `.tf`/`.tfvars` file
//! once (into a [`driftback_terraform::Repo`]). [`discover`] is pure over what it read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use driftback_terraform::Repo;
use hcl_edit::structure::Block;

use crate::backend;
use crate::config::StackConfig;
use crate::error::StackError;
use crate::settings::{self, Settings};
pub use crate::stack::{Stack, Tree, Workspace};
use crate::stack::{local_workspaces, normal};

/// The stacks of a repository, in directory order, with notes on what was odd or ignored.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub stacks: Vec<Stack>,
    pub notes: Vec<String>,
}

/// Settings that hold secrets: never read from the repository or the configuration file.
const SECRET_SETTINGS: &[&str] = &["access_key", "secret_key", "token", "sse_customer_key", "session_token"];

/// Read the repository under `root`: every `.tf`, `.tfvars` and partial backend file, and the
/// names of all other files. Hidden directories (`.git`, `.terraform`) are skipped.
pub fn scan(root: &Path, configured: &[StackConfig]) -> Result<Tree, StackError> {
    scan_again(root, configured, None)
}

/// [`scan`] again after the repository moved (a new commit): files whose text is what `previous`
/// read keep their parse, so only what changed is parsed.
pub fn scan_again(root: &Path, configured: &[StackConfig], previous: Option<&Tree>) -> Result<Tree, StackError> {
    let mut sources = BTreeMap::new();
    let mut tree = Tree::default();
    let mut pending = vec![PathBuf::new()];
    while let Some(dir) = pending.pop() {
        let abs = root.join(&dir);
        let entries =
            std::fs::read_dir(&abs).map_err(|source| StackError::Io { path: abs.display().to_string(), source })?;
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = dir.join(&name);
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if !name.starts_with('.') {
                    pending.push(rel);
                }
            } else if kind.is_file() {
                if name.ends_with(".tf") || name.ends_with(".tfvars") {
                    sources.insert(rel, read(root, &dir.join(&name))?);
                } else if is_backend_file(&name) {
                    tree.backend_files.insert(rel.clone(), read(root, &rel)?);
                    tree.files.insert(rel);
                } else {
                    tree.files.insert(rel);
                }
            }
        }
    }
    for stack in configured {
        let ws_files = stack.workspaces.iter().flat_map(|w| &w.backend_config);
        for file in stack.backend_config.iter().chain(ws_files) {
            let file = normal(file);
            if !tree.backend_files.contains_key(&file) && root.join(&file).is_file() {
                let text = read(root, &file)?;
                tree.backend_files.insert(file, text);
            }
        }
    }
    tree.repo = match previous {
        Some(previous) => previous.repo.with_texts(sources),
        None => Repo::from_files(sources),
    };
    Ok(tree)
}

fn read(root: &Path, rel: &Path) -> Result<String, StackError> {
    let path = root.join(rel);
    std::fs::read_to_string(&path).map_err(|source| StackError::Io { path: path.display().to_string(), source })
}

fn is_backend_file(name: &str) -> bool {
    name.ends_with(".tfbackend") || name == "backend.hcl" || name.ends_with(".backend.hcl")
}

/// A stack's name from its directory.
fn dir_name(dir: &Path) -> String {
    if dir.as_os_str().is_empty() { ".".into() } else { dir.to_string_lossy().replace('\\', "/") }
}

/// The stacks of a scanned repository: directories with a `backend` or `cloud` block, a
/// `.terraform.lock.hcl` (unless only other modules call them) or a local state, and the
/// configuration's entries, which add to a discovered stack with the same path or declare one.
pub fn discover(tree: &Tree, configured: &[StackConfig]) -> Discovery {
    let mut notes = Vec::new();
    let tf_dirs: BTreeSet<PathBuf> = tree
        .repo
        .files()
        .map(|(p, _)| p)
        .filter(|p| p.extension().is_some_and(|e| e == "tf"))
        .map(|p| parent(p))
        .collect();
    let called: BTreeSet<PathBuf> =
        tf_dirs.iter().flat_map(|d| tree.repo.module_index(d).module_calls).filter_map(|c| c.dir).collect();
    let mut found: BTreeMap<PathBuf, Stack> = BTreeMap::new();
    for dir in &tf_dirs {
        let mut found_by = Vec::new();
        let mut backend = None;
        for (file, body) in tree.repo.parsed_tf_in(dir) {
            for terraform in body.get_blocks("terraform") {
                for block in terraform.body.get_blocks("backend").chain(terraform.body.get_blocks("cloud")) {
                    let kind = match block.ident.as_str() {
                        "cloud" => "cloud".to_string(),
                        _ => block
                            .labels
                            .first()
                            .map(|l| driftback_terraform::edit::label_str(l).to_string())
                            .unwrap_or_default(),
                    };
                    let line = line_of(tree.repo.text(file).unwrap_or_default(), block);
                    let what =
                        if kind == "cloud" { "cloud block".to_string() } else { format!("backend \"{kind}\" block") };
                    found_by.push(format!("{what} ({}:{line})", file.display()));
                    if backend.is_some() {
                        notes.push(format!(
                            "{}: more than one backend or cloud block; the first is used",
                            dir_name(dir)
                        ));
                    } else {
                        backend = Some((kind, block_settings(block, &dir_name(dir), &mut notes)));
                    }
                }
            }
        }
        let lock = tree.files.contains(&dir.join(".terraform.lock.hcl"));
        let state = local_workspaces(tree, dir, "terraform.tfstate", "terraform.tfstate.d");
        if lock {
            found_by.push("lock file".into());
        }
        if !state.is_empty() {
            found_by.push("local state".into());
        }
        let stack_by_lock_only = lock && backend.is_none() && state.is_empty();
        if found_by.is_empty() || (stack_by_lock_only && called.contains(dir)) {
            continue;
        }
        let (kind, settings) = backend.unwrap_or_else(|| ("local".into(), Settings::new()));
        found.insert(
            dir.clone(),
            Stack {
                name: dir_name(dir),
                dir: dir.clone(),
                found_by,
                backend: kind,
                settings,
                state_file: None,
                workspaces: Vec::new(),
                workspaces_configured: false,
                api_endpoint: None,
            },
        );
    }
    for config in configured {
        let dir = normal(&config.path);
        let stack = found.entry(dir.clone()).or_insert_with(|| Stack {
            name: dir_name(&dir),
            dir: dir.clone(),
            found_by: Vec::new(),
            backend: "local".into(),
            settings: Settings::new(),
            state_file: None,
            workspaces: Vec::new(),
            workspaces_configured: false,
            api_endpoint: None,
        });
        stack.found_by.push("configuration".into());
        if !tf_dirs.contains(&dir) {
            notes.push(format!("{}: the configuration names it, but it holds no .tf file", stack.name));
        }
        if let Some(name) = &config.name {
            stack.name = name.clone();
        }
        if let Some(kind) = &config.backend {
            stack.backend = kind.clone();
        }
        let name = stack.name.clone();
        for file in &config.backend_config {
            let overlay = backend_file(tree, &normal(file), &name, &mut notes);
            settings::merge(&mut stack.settings, &overlay);
        }
        settings::merge(&mut stack.settings, &without_secrets(&config.settings, &name, &mut notes));
        stack.api_endpoint = settings::text(&config.settings, "endpoint").map(str::to_string);
        stack.state_file = config.state_file.as_deref().map(normal);
        if !config.workspaces.is_empty() {
            stack.workspaces_configured = true;
            stack.workspaces = config
                .workspaces
                .iter()
                .map(|w| {
                    let mut ws_settings = Settings::new();
                    for file in &w.backend_config {
                        settings::merge(&mut ws_settings, &backend_file(tree, &normal(file), &name, &mut notes));
                    }
                    for tfvars in &w.tfvars {
                        if tree.repo.text(&normal(tfvars)).is_none() {
                            notes.push(format!(
                                "{name}: workspace {:?}: tfvars file {} does not exist",
                                w.name,
                                tfvars.display()
                            ));
                        }
                    }
                    Workspace {
                        name: w.name.clone(),
                        tfvars: w.tfvars.iter().map(|p| normal(p)).collect(),
                        settings: ws_settings,
                    }
                })
                .collect();
        }
    }
    let mut names = BTreeSet::new();
    let mut stacks: Vec<Stack> = found.into_values().collect();
    for stack in &mut stacks {
        if !names.insert(stack.name.clone()) {
            notes.push(format!(
                "two stacks are named {:?}; the one in {} is renamed to its path",
                stack.name,
                dir_name(&stack.dir)
            ));
            stack.name = dir_name(&stack.dir);
        }
        if !stack.workspaces_configured {
            stack.workspaces = inferred_workspaces(tree, stack);
        }
    }
    Discovery { stacks, notes }
}

/// The workspaces a stack shows without configuration: local states on disk, the HCP workspace
/// its `cloud` block names, else `default`. Each gets `<name>.tfvars` when exactly one such file
/// is in the stack's directory or a directory right under it.
fn inferred_workspaces(tree: &Tree, stack: &Stack) -> Vec<Workspace> {
    let mut names = Vec::new();
    let mut default = true;
    if let Some(backend) = backend::find(&stack.backend) {
        names = backend.workspaces_on_disk(tree, stack);
        default = backend.has_default_workspace(stack);
    }
    if names.is_empty() && default {
        names.push("default".into());
    }
    names.into_iter().map(|name| inferred_workspace(tree, stack, name)).collect()
}

/// A workspace no configuration describes (found on disk, or listed by its backend): its tfvars
/// are `<name>.tfvars` when exactly one such file is in the stack's directory or a directory
/// right under it.
pub fn inferred_workspace(tree: &Tree, stack: &Stack, name: String) -> Workspace {
    let tfvars = workspace_tfvars(tree, &stack.dir, &name);
    Workspace { name, tfvars, settings: Settings::new() }
}

fn workspace_tfvars(tree: &Tree, dir: &Path, workspace: &str) -> Vec<PathBuf> {
    if workspace == "default" {
        return Vec::new();
    }
    let file = format!("{workspace}.tfvars");
    let matches: Vec<PathBuf> = tree
        .repo
        .files()
        .map(|(p, _)| p)
        .filter(|p| p.file_name().is_some_and(|n| n == file.as_str()))
        .filter(|p| {
            let parent = parent(p);
            parent == dir || parent.parent() == Some(dir)
        })
        .cloned()
        .collect();
    if matches.len() == 1 { matches } else { Vec::new() }
}

fn block_settings(block: &Block, stack: &str, notes: &mut Vec<String>) -> Settings {
    let (settings, not_literal) = settings::from_body(&block.body);
    for name in not_literal {
        notes.push(format!("{stack}: backend setting {name} is not a literal value and is ignored"));
    }
    without_secrets(&settings, stack, notes)
}

fn backend_file(tree: &Tree, file: &Path, stack: &str, notes: &mut Vec<String>) -> Settings {
    let Some(text) = tree.backend_files.get(file) else {
        notes.push(format!("{stack}: backend configuration file {} does not exist", file.display()));
        return Settings::new();
    };
    match hcl_edit::parser::parse_body(text) {
        Ok(body) => {
            let (settings, not_literal) = settings::from_body(&body);
            for name in not_literal {
                notes
                    .push(format!("{stack}: {}: setting {name} is not a literal value and is ignored", file.display()));
            }
            without_secrets(&settings, stack, notes)
        }
        Err(e) => {
            notes.push(format!(
                "{stack}: backend configuration file {} does not parse: {}",
                file.display(),
                e.message()
            ));
            Settings::new()
        }
    }
}

/// Credentials never come from the repository: such settings are dropped, with a note.
fn without_secrets(settings: &Settings, stack: &str, notes: &mut Vec<String>) -> Settings {
    let mut out = settings.clone();
    for name in SECRET_SETTINGS {
        if out.remove(*name).is_some() {
            notes.push(format!(
                "{stack}: the backend setting {name} is ignored: credentials come from the environment or the usual files, never from the repository"
            ));
        }
    }
    out
}

fn parent(path: &Path) -> PathBuf {
    path.parent().unwrap_or(Path::new("")).to_path_buf()
}

fn line_of(text: &str, block: &Block) -> usize {
    use hcl_edit::Span;
    block.span().map_or(1, |s| text[..s.start.min(text.len())].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WorkspaceConfig;

    fn tree(files: &[(&str, &str)]) -> Tree {
        let mut sources = BTreeMap::new();
        let mut tree = Tree::default();
        for (path, text) in files {
            let p = PathBuf::from(path);
            if path.ends_with(".tf") || path.ends_with(".tfvars") {
                sources.insert(p, text.to_string());
            } else if is_backend_file(p.file_name().unwrap().to_str().unwrap()) {
                tree.backend_files.insert(p.clone(), text.to_string());
                tree.files.insert(p);
            } else {
                tree.files.insert(p);
            }
        }
        tree.repo = Repo::from_files(sources);
        tree
    }

    #[test]
    fn root_modules_by_backend_lock_or_state_and_not_called_modules() {
        let t = tree(&[
            (
                "network/main.tf",
                "terraform {\n  backend \"s3\" {\n    bucket = \"b\"\n    key = \"network.tfstate\"\n    access_key = \"AKIA\"\n  }\n}\n",
            ),
            ("legacy/main.tf", "resource \"aws_sqs_queue\" \"q\" {}\n"),
            ("legacy/terraform.tfstate", ""),
            ("legacy/terraform.tfstate.d/blue/terraform.tfstate", ""),
            ("svc/main.tf", "module \"q\" {\n  source = \"../modules/q\"\n}\n"),
            ("svc/.terraform.lock.hcl", ""),
            ("modules/q/main.tf", "resource \"aws_sqs_queue\" \"q\" {}\n"),
            ("modules/q/.terraform.lock.hcl", ""),
            ("modules/unused/main.tf", "resource \"aws_sqs_queue\" \"q\" {}\n"),
        ]);
        let d = discover(&t, &[]);
        let names: Vec<(&str, &str, Vec<&str>)> = d
            .stacks
            .iter()
            .map(|s| (s.name.as_str(), s.backend.as_str(), s.workspaces.iter().map(|w| w.name.as_str()).collect()))
            .collect();
        assert_eq!(
            names,
            [
                ("legacy", "local", vec!["default", "blue"]),
                ("network", "s3", vec!["default"]),
                ("svc", "local", vec!["default"])
            ]
        );
        assert_eq!(d.stacks[1].found_by, ["backend \"s3\" block (network/main.tf:2)"]);
        assert_eq!(settings::text(&d.stacks[1].settings, "bucket"), Some("b"));
        assert!(settings::get(&d.stacks[1].settings, "access_key").is_none(), "never a credential from the repository");
        assert!(d.notes.iter().any(|n| n.contains("access_key is ignored")), "{:?}", d.notes);
    }

    #[test]
    fn configuration_adds_workspaces_and_partial_backend_files() {
        let t = tree(&[
            ("app/main.tf", "terraform {\n  backend \"s3\" {}\n}\n"),
            ("app/backend.hcl", "bucket = \"state\"\nregion = \"eu-west-1\"\n"),
            ("envs/prod/backend.tfbackend", "key = \"prod/app.tfstate\"\n"),
            ("envs/prod/prod.tfvars", "size = 3\n"),
            ("envs/staging/staging.tfvars", "size = 1\n"),
        ]);
        let config = StackConfig {
            path: "./app".into(),
            name: Some("app".into()),
            backend_config: vec!["app/backend.hcl".into()],
            workspaces: vec![
                WorkspaceConfig {
                    name: "prod".into(),
                    tfvars: vec!["envs/prod/prod.tfvars".into()],
                    backend_config: vec!["envs/prod/backend.tfbackend".into()],
                },
                WorkspaceConfig {
                    name: "staging".into(),
                    tfvars: vec!["envs/staging/missing.tfvars".into()],
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let d = discover(&t, &[config]);
        assert_eq!(d.stacks.len(), 1);
        let app = &d.stacks[0];
        assert_eq!((app.name.as_str(), app.dir.as_path()), ("app", Path::new("app")));
        assert_eq!(app.found_by, ["backend \"s3\" block (app/main.tf:2)", "configuration"]);
        let prod = app.settings_for("prod");
        assert_eq!(settings::text(&prod, "bucket"), Some("state"));
        assert_eq!(settings::text(&prod, "key"), Some("prod/app.tfstate"));
        assert_eq!(settings::text(&app.settings_for("staging"), "key"), None);
        assert_eq!(app.workspace("prod").unwrap().tfvars, [PathBuf::from("envs/prod/prod.tfvars")]);
        assert!(d.notes.iter().any(|n| n.contains("missing.tfvars does not exist")), "{:?}", d.notes);
    }
}
