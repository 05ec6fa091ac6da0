//! The repository's Terraform: every `.tf` and `.tfvars` file of the root module and its local
//! modules, held as text together with its parsed body, and an index of what each module declares.
//!
//! Every file is parsed once, when it enters the repository ([`Repo::load`], [`Repo::from_files`],
//! [`Repo::set_file`]); lookups by address are hash lookups after that, whatever the repository's
//! size. A file that does not parse is reported with its place ([`Diagnostic`]) and left out of the
//! index; the rest still indexes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use hcl_edit::Span;
use hcl_edit::expr::Expression;
use hcl_edit::structure::{Block, Body};

use crate::address::Address;
use crate::edit::{BlockSel, label_str};

/// A problem with one file: it does not parse, or it declares something twice. The line and
/// column are 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file.display(), self.line, self.column, self.message)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{0}")]
    Workspace(String),
    /// Module code given from outside the repository ([`Repo::mount_module`]) cannot be used.
    #[error("module {key}: {reason}")]
    Module { key: String, reason: String },
}

/// How a resource block becomes instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expansion {
    /// One instance, no key.
    Single,
    /// `count`: instances keyed `[0]`, `[1]`, ...
    Count,
    /// `for_each`: instances keyed by string.
    ForEach,
}

/// A `resource` or `data` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceDecl {
    pub rtype: String,
    pub name: String,
    pub data: bool,
    pub expansion: Expansion,
    pub file: PathBuf,
    pub line: usize,
}

/// A `variable` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableDecl {
    pub name: String,
    pub has_default: bool,
    pub file: PathBuf,
    pub line: usize,
}

/// One entry of a `locals` block, or an `output` block: a name and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedDecl {
    pub name: String,
    pub file: PathBuf,
    pub line: usize,
}

/// A `module` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleCallDecl {
    pub name: String,
    /// The `source` when it is a plain string.
    pub source: Option<String>,
    /// The `version` constraint when it is a plain string (registry sources only).
    pub version: Option<String>,
    /// The module's directory when the source is local (`./x`, `../x`) and stays in the repository.
    pub dir: Option<PathBuf>,
    pub file: PathBuf,
    pub line: usize,
}

/// A `provider` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderDecl {
    pub name: String,
    pub alias: Option<String>,
    /// The source text of `default_tags { tags = ... }`, when the block has one.
    pub default_tags: Option<String>,
    pub file: PathBuf,
    pub line: usize,
}

/// What one module directory (or one file) declares, in file and line order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleIndex {
    pub resources: Vec<ResourceDecl>,
    pub variables: Vec<VariableDecl>,
    pub locals: Vec<NamedDecl>,
    pub outputs: Vec<NamedDecl>,
    pub module_calls: Vec<ModuleCallDecl>,
    pub providers: Vec<ProviderDecl>,
}

impl ModuleIndex {
    fn extend(&mut self, other: &ModuleIndex) {
        self.resources.extend(other.resources.iter().cloned());
        self.variables.extend(other.variables.iter().cloned());
        self.locals.extend(other.locals.iter().cloned());
        self.outputs.extend(other.outputs.iter().cloned());
        self.module_calls.extend(other.module_calls.iter().cloned());
        self.providers.extend(other.providers.iter().cloned());
    }
}

/// Where a resource block lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockLocation {
    pub file: PathBuf,
    pub sel: BlockSel,
}

/// One file: its text, its parsed body (`None` when it does not parse) and what it declares.
#[derive(Debug, Clone)]
struct SourceFile {
    text: String,
    body: Option<Arc<Body>>,
    index: Arc<ModuleIndex>,
    error: Option<Diagnostic>,
}

/// A Terraform repository in memory. Paths are relative to its root. Cloning is cheap: parsed
/// bodies are shared.
#[derive(Debug, Clone, Default)]
pub struct Repo {
    files: BTreeMap<PathBuf, SourceFile>,
    /// Directory -> the files directly in it.
    dirs: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
    /// Module path (`""` for the root, `module.web`, `module.web.module.db`) -> its directory.
    modules: BTreeMap<String, PathBuf>,
    /// `(directory, block)` -> the file declaring it: resources, data sources, variables, outputs,
    /// module calls. The first declaration wins; later ones are diagnostics.
    blocks: HashMap<(PathBuf, BlockSel), PathBuf>,
    /// `(directory, local name)` -> the file declaring it.
    locals: HashMap<(PathBuf, String), PathBuf>,
    /// Duplicate declarations, per directory.
    duplicates: BTreeMap<PathBuf, Vec<Diagnostic>>,
    /// The Terraform workspace the configuration is evaluated for (`terraform.workspace`), and the
    /// variable files given to it (`-var-file`, in order): see [`Repo::set_workspace`].
    workspace: Option<String>,
    var_files: Vec<PathBuf>,
    /// The root module's other workspaces (name, variable files): a patch must leave what they
    /// evaluate to as it was ([`Repo::set_other_workspaces`]).
    other_workspaces: Vec<(String, Vec<PathBuf>)>,
    /// The root module's directory (`""`: the repository's top): a repository of many root modules
    /// is loaded once per stack, each rooted at its own directory, its paths still relative to the
    /// repository so that `../modules/x` sources and commits stay as they are.
    root: PathBuf,
    /// Module code from outside the repository's own files ([`Repo::mount_module`]): `(root
    /// module directory, module key)` (`web`, `web.db`) -> the module's directory, under the root
    /// module's `.terraform/modules/KEY`.
    external_calls: BTreeMap<(PathBuf, String), PathBuf>,
    /// The directories holding mounted packages: their files are read, never written.
    external_dirs: BTreeSet<PathBuf>,
    /// Module directory -> the calls of it from other root modules of the repository
    /// (`envs/prod/main.tf:3 module.web`), when this is one root module of several
    /// ([`Repo::root_module`]): an edit of that code would change them too.
    other_callers: BTreeMap<PathBuf, Vec<String>>,
}

/// A module call reachable from the root module whose code is neither in the repository nor
/// mounted ([`Repo::unresolved_module_calls`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnresolvedCall {
    /// The module key as `terraform init` records it: call names joined by `.` (`web`, `web.db`).
    pub key: String,
    pub source: String,
    pub version: Option<String>,
    /// Where the call is declared.
    pub file: PathBuf,
    pub line: usize,
}

impl Repo {
    /// Read the root module in `root` and every local module it calls, recursively.
    pub fn load(root: &Path) -> Result<Repo, RepoError> {
        Repo::load_root_module(root, Path::new(""))
    }

    /// Read the root module in `module_dir` (relative to the repository in `root`, inside it) and
    /// every local module it calls, recursively, wherever in the repository they are (`../modules/x`).
    /// Paths stay relative to the repository.
    pub fn load_root_module(root: &Path, module_dir: &Path) -> Result<Repo, RepoError> {
        let module_dir = inside(module_dir).ok_or_else(|| {
            RepoError::Workspace(format!(
                "the root module {} is not a directory inside the repository; give a path relative to its top",
                module_dir.display()
            ))
        })?;
        let mut repo = Repo { root: module_dir.clone(), ..Repo::default() };
        let files = read_modules(
            root,
            module_dir,
            |dir, path| {
                let is_tf = path.extension().is_some_and(|e| e == "tf" || e == "tfvars");
                (is_tf && path.is_file()).then(|| (path.to_path_buf(), dir.join(path.file_name().unwrap_or_default())))
            },
            |_, call| Ok(call.dir.clone().filter(|child| root.join(child).is_dir())),
        )?;
        for (path, file) in files {
            repo.insert_parsed(path, file);
        }
        repo.rebuild_all();
        Ok(repo)
    }

    /// Build from file texts (paths relative to the root).
    pub fn from_files(files: BTreeMap<PathBuf, String>) -> Repo {
        Repo::from_files_at(files, Path::new(""))
    }

    /// Build from file texts (paths relative to the repository), the root module in `module_dir`.
    pub fn from_files_at(files: BTreeMap<PathBuf, String>, module_dir: &Path) -> Repo {
        let mut repo = Repo { root: inside(module_dir).unwrap_or_default(), ..Repo::default() };
        for (path, text) in files {
            let file = SourceFile::parse(&path, text);
            repo.insert_parsed(path, file);
        }
        repo.rebuild_all();
        repo
    }

    /// The root module in `module_dir` of this repository (loaded whole, as a repository of many
    /// root modules is scanned once) with every local module it calls: the files are shared, not
    /// parsed again; the workspace settings are not carried over.
    pub fn root_module(&self, module_dir: &Path) -> Repo {
        let module_dir = inside(module_dir).unwrap_or_default();
        let mut out = Repo { root: module_dir.clone(), ..Repo::default() };
        let mut pending = vec![module_dir];
        let mut seen = BTreeSet::new();
        while let Some(dir) = pending.pop() {
            if !seen.insert(dir.clone()) {
                continue;
            }
            for path in self.dirs.get(&dir).into_iter().flatten() {
                out.insert_parsed(path.clone(), self.files[path].clone());
            }
            pending.extend(self.module_index(&dir).module_calls.into_iter().filter_map(|call| call.dir));
        }
        // The calls of the same modules from outside this root module's reach.
        for dir in seen.iter().filter(|d| **d != out.root) {
            let callers: Vec<String> = self
                .dirs
                .keys()
                .filter(|d| !seen.contains(*d))
                .flat_map(|d| self.module_index(d).module_calls)
                .filter(|call| call.dir.as_ref() == Some(dir))
                .map(|call| format!("{}:{} module.{}", call.file.display(), call.line, call.name))
                .collect();
            if !callers.is_empty() {
                out.other_callers.insert(dir.clone(), callers);
            }
        }
        let mut mounted = self.clone();
        mounted.external_calls.retain(|(root, _), _| *root == out.root);
        mounted.external_dirs.retain(|dir| dir.starts_with(out.root.join(".terraform")));
        mounted.carry_external(&mut out);
        out.rebuild_all();
        out
    }

    /// Give the code of a module call whose source is not a path in the repository (a registry,
    /// git or archive source, fetched by `terraform init` or by driftback): `key` is the call's
    /// module key (`web`, `web.db` for a call `db` inside `web`), `package` the directory on disk
    /// holding the whole package and `subdir` the module inside it (a source's `//subdir`).
    ///
    /// The package appears under the root module's `.terraform/modules/KEY`, where `terraform
    /// init` puts it, and is indexed like a local module (its resources, variables, outputs and
    /// the local modules it calls inside the package); its files are read-only. Returns the
    /// module's directory in the repository's paths.
    pub fn mount_module(&mut self, key: &str, package: &Path, subdir: &Path) -> Result<PathBuf, RepoError> {
        let fail = |reason: String| RepoError::Module { key: key.to_string(), reason };
        let valid =
            |part: &str| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !key.split('.').all(valid) {
            return Err(fail("a module key is call names joined by `.` (web, web.db)".into()));
        }
        let subdir =
            inside(subdir).ok_or_else(|| fail(format!("the subdirectory {} leaves its package", subdir.display())))?;
        let real = std::fs::canonicalize(package)
            .map_err(|source| RepoError::Io { path: package.display().to_string(), source })?;
        let mount = self.root.join(".terraform").join("modules").join(key);
        let files = read_modules(
            &real,
            subdir.clone(),
            |rel, path| {
                let is_tf = path.extension().is_some_and(|e| e == "tf" || e == "tfvars");
                // Symbolic links are followed only while they stay inside the package.
                let target = std::fs::canonicalize(path).ok().filter(|t| t.starts_with(&real) && t.is_file());
                let (true, Some(target)) = (is_tf, target) else { return None };
                Some((target, mount.join(rel).join(path.file_name().unwrap_or_default())))
            },
            |virtual_path, call| {
                let Some(child) = &call.dir else { return Ok(None) };
                match child.strip_prefix(&mount) {
                    Ok(inner) => Ok(Some(inner.to_path_buf())),
                    Err(_) => Err(fail(format!(
                        "module {:?} in {} calls {:?}, which leaves the module's package",
                        call.name,
                        virtual_path.strip_prefix(&mount).unwrap_or(virtual_path).display(),
                        call.source.as_deref().unwrap_or_default()
                    ))),
                }
            },
        )?;
        self.files.retain(|path, _| !path.starts_with(&mount));
        self.dirs.retain(|dir, _| !dir.starts_with(&mount));
        for (path, file) in files {
            self.insert_parsed(path, file);
        }
        let dir = mount.join(&subdir);
        self.external_dirs.insert(mount);
        self.external_calls.insert((self.root.clone(), key.to_string()), dir.clone());
        self.rebuild_all();
        Ok(dir)
    }

    /// The calls of the module in `dir` from the repository's other root modules (`FILE:LINE
    /// module.NAME`), when this is one root module of several ([`Repo::root_module`]).
    pub fn other_callers(&self, dir: &Path) -> &[String] {
        self.other_callers.get(dir).map(Vec::as_slice).unwrap_or_default()
    }

    /// Whether `path` is mounted module code ([`Repo::mount_module`]), which no edit may change.
    pub fn is_external(&self, path: &Path) -> bool {
        self.external_dirs.iter().any(|dir| path.starts_with(dir))
    }

    /// The module calls reachable from the root module whose code is neither in the repository
    /// nor mounted, outermost first: what a fetcher must bring before the configuration is whole.
    pub fn unresolved_module_calls(&self) -> Vec<UnresolvedCall> {
        let mut out = Vec::new();
        for (module_path, dir) in &self.modules {
            let prefix = module_key(module_path);
            for call in self.module_index(dir).module_calls {
                let key = if prefix.is_empty() { call.name.clone() } else { format!("{prefix}.{}", call.name) };
                if call.dir.is_some() || self.external_calls.contains_key(&(self.root.clone(), key.clone())) {
                    continue;
                }
                let Some(source) = call.source else { continue };
                if source.starts_with("./") || source.starts_with("../") {
                    // A local path that leaves the repository: nothing to fetch.
                    continue;
                }
                out.push(UnresolvedCall { key, source, version: call.version, file: call.file, line: call.line });
            }
        }
        out.sort_by(|a, b| (a.key.matches('.').count(), &a.key).cmp(&(b.key.matches('.').count(), &b.key)));
        out
    }

    /// The mounted packages and calls of `self` given to `out` too (files `out` does not have).
    fn carry_external(&self, out: &mut Repo) {
        for (path, file) in &self.files {
            if self.is_external(path) && !out.files.contains_key(path) {
                out.insert_parsed(path.clone(), file.clone());
            }
        }
        out.external_calls.extend(self.external_calls.iter().map(|(k, v)| (k.clone(), v.clone())));
        out.external_dirs.extend(self.external_dirs.iter().cloned());
    }

    /// This repository's files replaced by `files` (another commit's): a file whose text did not
    /// change keeps its parse, so reading a new commit costs what changed.
    pub fn with_texts(&self, files: BTreeMap<PathBuf, String>) -> Repo {
        let mut out = Repo { root: self.root.clone(), ..Repo::default() };
        for (path, text) in files {
            let file = match self.files.get(&path) {
                Some(old) if old.text == text => SourceFile { text, ..old.clone() },
                _ => SourceFile::parse(&path, text),
            };
            out.insert_parsed(path, file);
        }
        self.carry_external(&mut out);
        out.other_callers = self.other_callers.clone();
        out.rebuild_all();
        out
    }

    /// Other file texts (another commit's, an open pull request's branch) read as this repository
    /// is: the same root module and workspace. A workspace whose variable files are not among
    /// `files` is evaluated as `default`.
    pub fn with_files_like(&self, files: BTreeMap<PathBuf, String>) -> Repo {
        let mut out = Repo::from_files_at(files, &self.root);
        out.other_callers = self.other_callers.clone();
        if !self.external_dirs.is_empty() {
            self.carry_external(&mut out);
            out.rebuild_all();
        }
        if let Some(name) = &self.workspace {
            if out.set_workspace(name, self.var_files.clone()).is_ok() {
                let _ = out.set_other_workspaces(self.other_workspaces.clone());
            }
        }
        out
    }

    /// Replace (or add) one file: it is parsed once here and the index is updated. This is the
    /// only way file texts change.
    ///
    /// Mounted module code ([`Repo::mount_module`]) is never changed: setting one of its files
    /// keeps the file as it is (a patch that tried is refused by `patch::apply`).
    pub fn set_file(&mut self, path: &Path, text: String) {
        if self.is_external(path) {
            return;
        }
        let file = SourceFile::parse(path, text);
        let calls_changed = match self.files.get(path) {
            Some(old) => old.index.module_calls != file.index.module_calls,
            None => !file.index.module_calls.is_empty(),
        };
        self.insert_parsed(path.to_path_buf(), file);
        self.rebuild_dir(&parent_dir(path));
        if calls_changed {
            self.rebuild_modules();
        }
    }

    /// Evaluate the root module as Terraform does for workspace `name` run with `-var-file` for
    /// each of `var_files` (paths relative to the root, in the order given; each must already be a
    /// file of the repository, added with [`Repo::set_file`]): `terraform.workspace` is `name`,
    /// and the files' variables override `terraform.tfvars` and `*.auto.tfvars`, the last file
    /// winning. A change traced to a variable then lands in the workspace's own file.
    pub fn set_workspace(&mut self, name: &str, var_files: Vec<PathBuf>) -> Result<(), RepoError> {
        self.check_workspace(name, &var_files)?;
        self.workspace = Some(name.to_string());
        self.var_files = var_files;
        Ok(())
    }

    fn check_workspace(&self, name: &str, var_files: &[PathBuf]) -> Result<(), RepoError> {
        if name.is_empty() {
            return Err(RepoError::Workspace("a workspace name is empty".into()));
        }
        for file in var_files {
            if !self.files.contains_key(file) {
                return Err(RepoError::Workspace(format!(
                    "the variable file {} of workspace {name} is not in the repository; give a path relative to its root",
                    file.display()
                )));
            }
        }
        Ok(())
    }

    /// The root module's other workspaces, each with its variable files: a patch for this workspace
    /// must not change what any of them evaluates to, so a change that does not hold for every
    /// workspace never goes into what they share.
    pub fn set_other_workspaces(&mut self, others: Vec<(String, Vec<PathBuf>)>) -> Result<(), RepoError> {
        for (name, files) in &others {
            self.check_workspace(name, files)?;
        }
        self.other_workspaces = others;
        Ok(())
    }

    /// This repository as workspace `name` with its variable files sees it.
    pub fn as_workspace(&self, name: &str, var_files: &[PathBuf]) -> Result<Repo, RepoError> {
        let mut other = self.clone();
        other.set_workspace(name, var_files.to_vec())?;
        Ok(other)
    }

    /// The other workspaces ([`Repo::set_other_workspaces`]).
    pub fn other_workspaces(&self) -> &[(String, Vec<PathBuf>)] {
        &self.other_workspaces
    }

    /// The workspace's `-var-file`s, in order ([`Repo::set_workspace`]).
    pub fn var_files(&self) -> &[PathBuf] {
        &self.var_files
    }

    /// The Terraform workspace evaluated (`terraform.workspace`): `default` unless set.
    pub fn workspace(&self) -> &str {
        self.workspace.as_deref().unwrap_or("default")
    }

    /// Every file's path and text, in path order.
    pub fn files(&self) -> impl Iterator<Item = (&PathBuf, &str)> {
        self.files.iter().map(|(p, f)| (p, f.text.as_str()))
    }

    /// The text of one file.
    pub fn text(&self, path: &Path) -> Option<&str> {
        self.files.get(path).map(|f| f.text.as_str())
    }

    /// The parsed body of one file, when it parses.
    pub fn body(&self, path: &Path) -> Option<&Body> {
        self.files.get(path).and_then(|f| f.body.as_deref())
    }

    /// The root module's directory, relative to the repository (`""`: its top).
    pub fn root_dir(&self) -> &Path {
        &self.root
    }

    /// Module path (`""` for the root, `module.web`) -> directory, for every module reachable from the root.
    pub fn modules(&self) -> &BTreeMap<String, PathBuf> {
        &self.modules
    }

    pub fn module_dir(&self, module_path: &str) -> Option<&PathBuf> {
        self.modules.get(module_path)
    }

    /// Files that do not parse, and declarations made twice, in file order.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut out: Vec<Diagnostic> = self.files.values().filter_map(|f| f.error.clone()).collect();
        out.extend(self.duplicates.values().flatten().cloned());
        out.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        out
    }

    /// What the `.tf` files directly in `dir` declare (files that do not parse contribute nothing).
    pub fn module_index(&self, dir: &Path) -> ModuleIndex {
        let mut out = ModuleIndex::default();
        for path in self.tf_paths_in(dir) {
            out.extend(&self.files[path].index);
        }
        out
    }

    /// `(name, source)` of the module calls in a directory.
    pub fn module_calls(&self, dir: &Path) -> Vec<(String, String)> {
        self.module_index(dir).module_calls.into_iter().filter_map(|c| Some((c.name, c.source?))).collect()
    }

    /// The `.tf` files directly in `dir` that parse, with their bodies.
    pub fn parsed_tf_in<'a>(&'a self, dir: &Path) -> impl Iterator<Item = (&'a PathBuf, &'a Body)> + 'a {
        self.tf_paths_in(dir).filter_map(|p| self.files[p].body.as_deref().map(|b| (p, b)))
    }

    fn tf_paths_in<'a>(&'a self, dir: &Path) -> impl Iterator<Item = &'a PathBuf> + 'a {
        self.dirs.get(dir).into_iter().flatten().filter(|p| p.extension().is_some_and(|e| e == "tf"))
    }

    /// The file declaring a top-level block (`resource`, `data`, `variable`, `output`, `module`) in `dir`.
    pub fn find_block(&self, dir: &Path, sel: &BlockSel) -> Option<&PathBuf> {
        self.blocks.get(&(dir.to_path_buf(), sel.clone()))
    }

    /// The file declaring `local.NAME` in `dir`.
    pub fn find_local(&self, dir: &Path, name: &str) -> Option<&PathBuf> {
        self.locals.get(&(dir.to_path_buf(), name.to_string()))
    }

    /// The file holding the block of a resource address (any instance key).
    pub fn find_resource(&self, address: &Address) -> Option<BlockLocation> {
        let dir = self.module_dir(&address.module_path())?;
        let ident = if address.data { "data" } else { "resource" };
        let sel = BlockSel::new(ident, &[&address.rtype, &address.name]);
        let file = self.find_block(dir, &sel)?.clone();
        Some(BlockLocation { file, sel })
    }

    /// Resource blocks of a type in a module directory: `(file, name)`.
    pub fn resources_of_type(&self, dir: &Path, rtype: &str) -> Vec<(PathBuf, String)> {
        self.tf_paths_in(dir)
            .flat_map(|p| self.files[p].index.resources.iter())
            .filter(|r| !r.data && r.rtype == rtype)
            .map(|r| (r.file.clone(), r.name.clone()))
            .collect()
    }

    /// The variable files Terraform loads in `dir`, in the order it applies them (later ones win):
    /// `terraform.tfvars`, then `*.auto.tfvars` by name, then for the root module the workspace's
    /// `-var-file`s ([`Repo::set_workspace`]).
    pub fn tfvars_files(&self, dir: &Path) -> Vec<&PathBuf> {
        let name = |p: &PathBuf| p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        let mut files: Vec<&PathBuf> = self
            .dirs
            .get(dir)
            .into_iter()
            .flatten()
            .filter(|p| name(p) == "terraform.tfvars" || name(p).ends_with(".auto.tfvars"))
            .collect();
        files.sort_by_key(|p| (name(p) != "terraform.tfvars", (*p).clone()));
        if dir == self.root {
            // The workspace's `-var-file`s come last: they override the files Terraform loads on
            // its own.
            files.extend(self.var_files.iter());
        }
        files
    }

    /// The files in `dir` where something other than the block itself and its `import`/`moved`/
    /// `removed` companions refers to `TYPE.NAME`.
    pub fn references_to(&self, dir: &Path, rtype: &str, name: &str) -> Vec<PathBuf> {
        self.referencing_structures(dir, rtype, name)
            .into_iter()
            .map(|r| r.file)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// Every top-level block in `dir` (other than the resource's own block and its companions)
    /// that refers to `TYPE.NAME`: its file, kind (`output`, `resource`, ...) and labels.
    pub fn referencing_structures(&self, dir: &Path, rtype: &str, name: &str) -> Vec<Referrer> {
        let needle = format!("{rtype}.{name}");
        let mut out = Vec::new();
        for (file, body) in self.parsed_tf_in(dir) {
            let source = &self.files[file].text;
            for structure in body.iter() {
                let text = structure.span().map(|s| &source[s]).unwrap_or_default();
                if count_references(text, &needle) == 0 {
                    continue;
                }
                match structure.as_block() {
                    Some(b) if matches!(b.ident.as_str(), "import" | "moved" | "removed") => {}
                    Some(b) if b.ident.as_str() == "resource" && b.labels.iter().map(label_str).eq([rtype, name]) => {}
                    Some(b) => out.push(Referrer {
                        file: file.clone(),
                        sel: BlockSel {
                            ident: b.ident.as_str().to_string(),
                            labels: b.labels.iter().map(|l| label_str(l).to_string()).collect(),
                        },
                    }),
                    None => out.push(Referrer { file: file.clone(), sel: BlockSel::new("", &[]) }),
                }
            }
        }
        out
    }

    fn insert_parsed(&mut self, path: PathBuf, file: SourceFile) {
        self.dirs.entry(parent_dir(&path)).or_default().insert(path.clone());
        self.files.insert(path, file);
    }

    fn rebuild_all(&mut self) {
        let dirs: Vec<PathBuf> = self.dirs.keys().cloned().collect();
        for dir in dirs {
            self.rebuild_dir(&dir);
        }
        self.rebuild_modules();
    }

    /// Recompute the hash index of one directory from its files' declarations (no parsing).
    fn rebuild_dir(&mut self, dir: &Path) {
        self.blocks.retain(|(d, _), _| d != dir);
        self.locals.retain(|(d, _), _| d != dir);
        let mut duplicates = Vec::new();
        let paths: Vec<PathBuf> = self.tf_paths_in(dir).cloned().collect();
        for path in paths {
            let index = Arc::clone(&self.files[&path].index);
            let mut declare =
                |sel: BlockSel, line: usize, what: String| match self.blocks.entry((dir.to_path_buf(), sel)) {
                    std::collections::hash_map::Entry::Occupied(first) => duplicates.push(Diagnostic {
                        file: path.clone(),
                        line,
                        column: 1,
                        message: format!("{what} is already declared in {}", first.get().display()),
                    }),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(path.clone());
                    }
                };
            for r in &index.resources {
                let ident = if r.data { "data" } else { "resource" };
                declare(
                    BlockSel::new(ident, &[&r.rtype, &r.name]),
                    r.line,
                    format!("{ident} {:?} {:?}", r.rtype, r.name),
                );
            }
            for v in &index.variables {
                declare(BlockSel::new("variable", &[&v.name]), v.line, format!("variable {:?}", v.name));
            }
            for o in &index.outputs {
                declare(BlockSel::new("output", &[&o.name]), o.line, format!("output {:?}", o.name));
            }
            for m in &index.module_calls {
                declare(BlockSel::new("module", &[&m.name]), m.line, format!("module {:?}", m.name));
            }
            for l in &index.locals {
                match self.locals.entry((dir.to_path_buf(), l.name.clone())) {
                    std::collections::hash_map::Entry::Occupied(first) => duplicates.push(Diagnostic {
                        file: path.clone(),
                        line: l.line,
                        column: 1,
                        message: format!("local.{} is already declared in {}", l.name, first.get().display()),
                    }),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(path.clone());
                    }
                }
            }
        }
        if duplicates.is_empty() {
            self.duplicates.remove(dir);
        } else {
            self.duplicates.insert(dir.to_path_buf(), duplicates);
        }
    }

    /// Recompute module paths -> directories from the root, following local module calls.
    fn rebuild_modules(&mut self) {
        self.modules.clear();
        let mut pending = vec![(String::new(), self.root.clone())];
        while let Some((module_path, dir)) = pending.pop() {
            // A module calling itself (directly or not) would nest forever: the depth is bounded.
            if self.modules.contains_key(&module_path) || module_path.matches("module.").count() > 32 {
                continue;
            }
            for call in self.module_index(&dir).module_calls {
                let child_path = if module_path.is_empty() {
                    format!("module.{}", call.name)
                } else {
                    format!("{module_path}.module.{}", call.name)
                };
                let child = call
                    .dir
                    .or_else(|| self.external_calls.get(&(self.root.clone(), module_key(&child_path))).cloned());
                if let Some(child) = child {
                    pending.push((child_path, child));
                }
            }
            self.modules.insert(module_path, dir);
        }
    }
}

/// A top-level block that refers to something; `sel.ident` is empty for a top-level attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Referrer {
    pub file: PathBuf,
    pub sel: BlockSel,
}

impl SourceFile {
    fn parse(path: &Path, text: String) -> SourceFile {
        match hcl_edit::parser::parse_body(&text) {
            Ok(body) => {
                let index = if path.extension().is_some_and(|e| e == "tf") {
                    declarations(path, &text, &body)
                } else {
                    ModuleIndex::default()
                };
                SourceFile { text, body: Some(Arc::new(body)), index: Arc::new(index), error: None }
            }
            Err(e) => {
                let location = e.location();
                let error = Diagnostic {
                    file: path.to_path_buf(),
                    line: location.line(),
                    column: location.column(),
                    message: format!("does not parse: {}", e.message()),
                };
                SourceFile { text, body: None, index: Arc::default(), error: Some(error) }
            }
        }
    }
}

/// The module key `terraform init` records for a module path: `module.web.module.db` -> `web.db`.
fn module_key(module_path: &str) -> String {
    module_path.split('.').skip(1).step_by(2).collect::<Vec<_>>().join(".")
}

fn parent_dir(path: &Path) -> PathBuf {
    path.parent().unwrap_or(Path::new("")).to_path_buf()
}

/// What one parsed `.tf` file declares.
fn declarations(path: &Path, text: &str, body: &Body) -> ModuleIndex {
    let lines = LineIndex::new(text);
    let line_of = |b: &Block| b.span().map_or(1, |s| lines.line(s.start));
    let label = |b: &Block, i: usize| b.labels.get(i).map(|l| label_str(l).to_string());
    let string_attr = |body: &Body, name: &str| match body.get_attribute(name).map(|a| &a.value) {
        Some(Expression::String(s)) => Some(s.as_str().to_string()),
        _ => None,
    };
    let dir = parent_dir(path);
    let mut out = ModuleIndex::default();
    for block in body.blocks() {
        let line = line_of(block);
        let file = path.to_path_buf();
        match block.ident.as_str() {
            ident @ ("resource" | "data") => {
                let (Some(rtype), Some(name)) = (label(block, 0), label(block, 1)) else { continue };
                let expansion = if block.body.has_attribute("for_each") {
                    Expansion::ForEach
                } else if block.body.has_attribute("count") {
                    Expansion::Count
                } else {
                    Expansion::Single
                };
                out.resources.push(ResourceDecl { rtype, name, data: ident == "data", expansion, file, line });
            }
            "variable" => {
                let Some(name) = label(block, 0) else { continue };
                out.variables.push(VariableDecl { name, has_default: block.body.has_attribute("default"), file, line });
            }
            "output" => {
                let Some(name) = label(block, 0) else { continue };
                out.outputs.push(NamedDecl { name, file, line });
            }
            "locals" => {
                for attr in block.body.attributes() {
                    let line = attr.span().map_or(line, |s| lines.line(s.start));
                    out.locals.push(NamedDecl { name: attr.key.as_str().to_string(), file: file.clone(), line });
                }
            }
            "module" => {
                let Some(name) = label(block, 0) else { continue };
                let source = string_attr(&block.body, "source");
                let dir = source.as_deref().and_then(|s| local_module_dir(&dir, s));
                let version = string_attr(&block.body, "version");
                out.module_calls.push(ModuleCallDecl { name, source, version, dir, file, line });
            }
            "provider" => {
                let Some(name) = label(block, 0) else { continue };
                let default_tags = block
                    .body
                    .get_blocks("default_tags")
                    .find_map(|dt| dt.body.get_attribute("tags"))
                    .and_then(|a| a.value.span())
                    .map(|s| text[s].to_string());
                out.providers.push(ProviderDecl {
                    name,
                    alias: string_attr(&block.body, "alias"),
                    default_tags,
                    file,
                    line,
                });
            }
            _ => {}
        }
    }
    out
}

/// Byte offset -> 1-based line number.
struct LineIndex(Vec<usize>);

impl LineIndex {
    fn new(text: &str) -> Self {
        LineIndex(text.match_indices('\n').map(|(i, _)| i).collect())
    }
    fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|&nl| nl < offset) + 1
    }
}

/// How often `reference` (`var.x`, `aws_vpc.main`) occurs as a whole name: not preceded by an
/// identifier character or `.`, not followed by an identifier character.
pub(crate) fn count_references(text: &str, reference: &str) -> usize {
    text.match_indices(reference)
        .filter(|(i, _)| {
            let before = text[..*i].chars().next_back();
            let after = text[i + reference.len()..].chars().next();
            let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            !before.is_some_and(|c| ident(c) || c == '.') && !after.is_some_and(ident)
        })
        .count()
}

/// `path` without `.` components, when it is relative and never climbs out (`..`).
/// Read the `.tf` and `.tfvars` files of the module in the directory `start` (relative to `base`
/// on disk) and of every module it calls, each directory once, its entries in name order.
/// `entry(dir, path)`: the file to read for the entry `path` of `dir` and the path it has in the
/// repository, or `None` to skip it. `next(file, call)`: the directory (relative to `base`) a
/// module call of that file leads to, read in turn, or why the call is refused.
fn read_modules(
    base: &Path,
    start: PathBuf,
    mut entry: impl FnMut(&Path, &Path) -> Option<(PathBuf, PathBuf)>,
    mut next: impl FnMut(&Path, &ModuleCallDecl) -> Result<Option<PathBuf>, RepoError>,
) -> Result<Vec<(PathBuf, SourceFile)>, RepoError> {
    let mut files = Vec::new();
    let mut pending = vec![start];
    let mut seen = BTreeSet::new();
    while let Some(dir) = pending.pop() {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let abs = base.join(&dir);
        let entries =
            std::fs::read_dir(&abs).map_err(|source| RepoError::Io { path: abs.display().to_string(), source })?;
        let mut names: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        names.sort();
        for path in names {
            let Some((read, in_repo)) = entry(&dir, &path) else { continue };
            let text = std::fs::read_to_string(&read)
                .map_err(|source| RepoError::Io { path: path.display().to_string(), source })?;
            let file = SourceFile::parse(&in_repo, text);
            for call in &file.index.module_calls {
                pending.extend(next(&in_repo, call)?);
            }
            files.push((in_repo, file));
        }
    }
    Ok(files)
}

fn inside(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::Normal(part) => out.push(part),
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// The directory of a local module source (`./x`, `../x`), if it stays inside the repository.
fn local_module_dir(dir: &Path, source: &str) -> Option<PathBuf> {
    if !(source.starts_with("./") || source.starts_with("../")) {
        return None;
    }
    let mut out = PathBuf::new();
    for component in dir.join(source).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(files: &[(&str, &str)]) -> Repo {
        Repo::from_files(files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect())
    }

    #[test]
    fn modules_resources_and_references() {
        let r = repo(&[
            (
                "main.tf",
                "module \"web\" {\n  source = \"./modules/web\"\n}\nmodule \"reg\" {\n  source = \"hashicorp/x/aws\"\n}\nresource \"aws_vpc\" \"main\" {}\nresource \"aws_subnet\" \"a\" {\n  vpc_id = aws_vpc.main.id\n}\n",
            ),
            (
                "modules/web/main.tf",
                "resource \"aws_instance\" \"this\" {}\nmodule \"db\" {\n  source = \"../db\"\n}\n",
            ),
            ("modules/db/main.tf", "resource \"aws_db_instance\" \"main\" {}\n"),
            ("modules/evil/main.tf", "module \"up\" {\n  source = \"../../../etc\"\n}\n"),
            ("broken.tf", "variable \"ok\" {}\n\nresource \"x\" {\n"),
        ]);
        let modules: Vec<(&str, &Path)> = r.modules().iter().map(|(k, v)| (k.as_str(), v.as_path())).collect();
        assert_eq!(
            modules,
            [
                ("", Path::new("")),
                ("module.web", Path::new("modules/web")),
                ("module.web.module.db", Path::new("modules/db"))
            ]
        );
        let loc = r.find_resource(&Address::parse("module.web.module.db.aws_db_instance.main").unwrap()).unwrap();
        assert_eq!(loc.file, PathBuf::from("modules/db/main.tf"));
        assert!(r.find_resource(&Address::parse("aws_instance.this").unwrap()).is_none());
        assert_eq!(r.references_to(Path::new(""), "aws_vpc", "main"), [PathBuf::from("main.tf")]);
        assert!(r.references_to(Path::new(""), "aws_subnet", "a").is_empty());
        let diagnostics = r.diagnostics();
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].file, PathBuf::from("broken.tf"));
        assert!(diagnostics[0].line >= 3, "{}", diagnostics[0]);
        assert!(diagnostics[0].to_string().starts_with("broken.tf:"), "{}", diagnostics[0]);
        // The broken file contributes nothing; the rest still indexes.
        assert!(r.find_block(Path::new(""), &BlockSel::new("variable", &["ok"])).is_none());
        assert_eq!(local_module_dir(Path::new("modules/evil"), "../../../etc"), None);
    }

    #[test]
    fn the_index_lists_every_kind_of_declaration() {
        let r = repo(&[
            (
                "providers.tf",
                "provider \"aws\" {\n  region = \"eu-west-1\"\n  default_tags {\n    tags = { Team = \"core\" }\n  }\n}\n\nprovider \"aws\" {\n  alias  = \"us\"\n  region = \"us-east-1\"\n}\n",
            ),
            (
                "main.tf",
                "variable \"env\" {\n  default = \"dev\"\n}\nvariable \"token\" {}\nlocals {\n  name = \"app\"\n  tags = {}\n}\nresource \"aws_instance\" \"fleet\" {\n  count = 2\n}\ndata \"aws_ami\" \"base\" {}\nmodule \"db\" {\n  source = \"./db\"\n}\noutput \"ids\" {\n  value = aws_instance.fleet[*].id\n}\n",
            ),
            ("db/main.tf", "resource \"aws_db_instance\" \"this\" {\n  for_each = {}\n}\n"),
        ]);
        let root = r.module_index(Path::new(""));
        let names = |v: &[NamedDecl]| v.iter().map(|d| (d.name.clone(), d.line)).collect::<Vec<_>>();
        assert_eq!(
            root.providers.iter().map(|p| (p.alias.clone(), p.default_tags.clone(), p.line)).collect::<Vec<_>>(),
            [(None, Some("{ Team = \"core\" }".to_string()), 1), (Some("us".to_string()), None, 8)]
        );
        assert_eq!(
            root.variables.iter().map(|v| (v.name.as_str(), v.has_default)).collect::<Vec<_>>(),
            [("env", true), ("token", false)]
        );
        assert_eq!(names(&root.locals), [("name".to_string(), 6), ("tags".to_string(), 7)]);
        assert_eq!(names(&root.outputs), [("ids".to_string(), 16)]);
        assert_eq!(
            root.resources.iter().map(|r| (r.rtype.as_str(), r.data, r.expansion, r.line)).collect::<Vec<_>>(),
            [("aws_instance", false, Expansion::Count, 9), ("aws_ami", true, Expansion::Single, 12)]
        );
        assert_eq!(root.module_calls[0].dir, Some(PathBuf::from("db")));
        let db = r.module_index(Path::new("db"));
        assert_eq!(db.resources[0].expansion, Expansion::ForEach);
        assert_eq!(r.find_local(Path::new(""), "tags"), Some(&PathBuf::from("main.tf")));
    }

    #[test]
    fn set_file_updates_the_index_and_modules() {
        let mut r = repo(&[("main.tf", "resource \"aws_vpc\" \"main\" {}\n")]);
        let vpc = Address::parse("aws_vpc.main").unwrap();
        assert!(r.find_resource(&vpc).is_some());
        r.set_file(
            Path::new("main.tf"),
            "resource \"aws_vpc\" \"other\" {}\nmodule \"m\" {\n  source = \"./m\"\n}\n".into(),
        );
        r.set_file(Path::new("m/main.tf"), "resource \"aws_sqs_queue\" \"q\" {}\n".into());
        assert!(r.find_resource(&vpc).is_none());
        assert!(r.find_resource(&Address::parse("aws_vpc.other").unwrap()).is_some());
        assert!(r.find_resource(&Address::parse("module.m.aws_sqs_queue.q").unwrap()).is_some());
        r.set_file(Path::new("extra.tf"), "resource \"aws_vpc\" \"other\" {}\n".into());
        let diagnostics = r.diagnostics();
        assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
        // Files index in path order: the declaration in extra.tf comes first.
        assert_eq!(diagnostics[0].file, PathBuf::from("main.tf"));
        assert!(diagnostics[0].message.contains("already declared in extra.tf"), "{}", diagnostics[0]);
        r.set_file(Path::new("main.tf"), "resource \"aws_vpc\" {\n".into());
        // The broken file drops out; the duplicate in extra.tf is now the only declaration.
        assert_eq!(r.find_resource(&Address::parse("aws_vpc.other").unwrap()).unwrap().file, PathBuf::from("extra.tf"));
        assert!(r.find_resource(&Address::parse("module.m.aws_sqs_queue.q").unwrap()).is_none());
    }

    #[test]
    fn mounted_modules_index_like_local_ones_and_stay_read_only() {
        let package = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = package.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("main.tf", "resource \"aws_s3_bucket\" \"unused\" {}\n");
        write(
            "modules/db/main.tf",
            "variable \"class\" {}\nresource \"aws_db_instance\" \"this\" {\n  count          = 1\n  instance_class = var.class\n}\nmodule \"params\" {\n  source = \"../params\"\n}\nmodule \"remote\" {\n  source  = \"acme/x/aws\"\n  version = \"~> 1.0\"\n}\n",
        );
        write("modules/params/main.tf", "resource \"aws_db_parameter_group\" \"this\" {}\n");
        write("examples/complete/main.tf", "resource \"aws_vpc\" \"example\" {}\n");
        let mut r = Repo::from_files_at(
            [(
                PathBuf::from("envs/prod/main.tf"),
                "module \"db\" {\n  source  = \"acme/db/aws//modules/db\"\n  version = \"1.2.0\"\n  class   = \"db.t3.micro\"\n}\n".to_string(),
            )]
            .into(),
            Path::new("envs/prod"),
        );
        let unresolved = r.unresolved_module_calls();
        assert_eq!(unresolved.len(), 1);
        assert_eq!((unresolved[0].key.as_str(), unresolved[0].version.as_deref()), ("db", Some("1.2.0")));
        let dir = r.mount_module("db", package.path(), Path::new("modules/db")).unwrap();
        assert_eq!(dir, PathBuf::from("envs/prod/.terraform/modules/db/modules/db"));
        let inside = Address::parse("module.db.aws_db_instance.this[0]").unwrap();
        let location = r.find_resource(&inside).unwrap();
        assert_eq!(location.file, dir.join("main.tf"));
        // The local call inside the package resolves inside it; only the module and what it calls
        // are read (not the package's examples).
        assert!(
            r.find_resource(&Address::parse("module.db.module.params.aws_db_parameter_group.this").unwrap()).is_some()
        );
        assert!(r.files().all(|(p, _)| !p.to_string_lossy().contains("examples")));
        let nested = r.unresolved_module_calls();
        assert_eq!(nested.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(), ["db.remote"]);
        // Fetched code is read-only; the repository's own files are not.
        assert!(r.is_external(&location.file) && !r.is_external(Path::new("envs/prod/main.tf")));
        let before = r.text(&location.file).unwrap().to_string();
        r.set_file(&location.file, "# changed\n".into());
        assert_eq!(r.text(&location.file), Some(before.as_str()));
        // Another commit's texts keep the mounted code; the stack's root module carries it.
        let again = r.with_files_like(
            [(PathBuf::from("envs/prod/main.tf"), r.text(Path::new("envs/prod/main.tf")).unwrap().to_string())].into(),
        );
        assert!(again.find_resource(&inside).is_some());
        assert!(r.root_module(Path::new("envs/prod")).find_resource(&inside).is_some());
        assert!(r.root_module(Path::new("envs/stage")).find_resource(&inside).is_none());
        // A local call that leaves its package, and bad keys, are refused by name.
        write("modules/db/escape.tf", "module \"up\" {\n  source = \"../../../outside\"\n}\n");
        let err = r.mount_module("db", package.path(), Path::new("modules/db")).unwrap_err().to_string();
        assert!(err.contains("module db") && err.contains("leaves the module's package"), "{err}");
        assert!(r.mount_module("a..b", package.path(), Path::new("")).is_err());
        assert!(r.mount_module("db", package.path(), Path::new("../x")).is_err());
    }

    #[test]
    fn references_are_whole_names() {
        assert_eq!(count_references("x = aws_vpc.main.id", "aws_vpc.main"), 1);
        assert_eq!(count_references("x = [aws_vpc.main[0].id]", "aws_vpc.main"), 1);
        assert_eq!(count_references("x = aws_vpc.main_2.id", "aws_vpc.main"), 0);
        assert_eq!(count_references("x = data.aws_vpc.main.id", "aws_vpc.main"), 0);
    }
}
