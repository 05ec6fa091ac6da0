//! The repository's Terraform: every `.tf` and `.tfvars` file of the root module and its local
//! modules, held as text, with an index from resource blocks to files.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use hcl_edit::Span;
use hcl_edit::expr::Expression;
use hcl_edit::structure::Body;

use crate::address::Address;
use crate::edit::{self, BlockSel, label_str};

/// A file that does not parse: reported with its place, and left out of the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// A Terraform repository in memory. Paths are relative to its root.
#[derive(Debug, Clone, Default)]
pub struct Repo {
    /// `.tf` and `.tfvars` files, by path relative to the root.
    pub files: BTreeMap<PathBuf, String>,
    /// Module path (`""` for the root, `module.web`, `module.web.module.db`) to its directory.
    pub modules: BTreeMap<String, PathBuf>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Where a resource block lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockLocation {
    pub file: PathBuf,
    pub sel: BlockSel,
}

impl Repo {
    /// Read the root module in `root` and every local module it calls, recursively.
    pub fn load(root: &Path) -> Result<Repo, RepoError> {
        let mut files = BTreeMap::new();
        let mut pending = vec![PathBuf::new()];
        let mut seen = std::collections::BTreeSet::new();
        while let Some(dir) = pending.pop() {
            if !seen.insert(dir.clone()) {
                continue;
            }
            let abs = root.join(&dir);
            let entries =
                std::fs::read_dir(&abs).map_err(|source| RepoError::Io { path: abs.display().to_string(), source })?;
            let mut names: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            names.sort();
            for path in names {
                let is_tf = path.extension().is_some_and(|e| e == "tf" || e == "tfvars");
                if !is_tf || !path.is_file() {
                    continue;
                }
                let text = std::fs::read_to_string(&path)
                    .map_err(|source| RepoError::Io { path: path.display().to_string(), source })?;
                let rel = dir.join(path.file_name().unwrap_or_default());
                if rel.extension().is_some_and(|e| e == "tf") {
                    for source in module_sources(&text) {
                        if let Some(child) = local_module_dir(&dir, &source) {
                            if root.join(&child).is_dir() {
                                pending.push(child);
                            }
                        }
                    }
                }
                files.insert(rel, text);
            }
        }
        Ok(Repo::from_files(files))
    }

    /// Build from file texts (paths relative to the root).
    pub fn from_files(files: BTreeMap<PathBuf, String>) -> Repo {
        let mut repo = Repo { files, ..Repo::default() };
        repo.reindex();
        repo
    }

    /// Recompute module directories and diagnostics after files changed.
    pub fn reindex(&mut self) {
        self.diagnostics.clear();
        for (path, text) in &self.files {
            if let Err(e) = edit::parse(text) {
                self.diagnostics.push(Diagnostic { file: path.clone(), message: first_line_of_error(&e.to_string()) });
            }
        }
        self.modules.clear();
        let mut pending = vec![(String::new(), PathBuf::new())];
        while let Some((module_path, dir)) = pending.pop() {
            if self.modules.contains_key(&module_path) || self.modules.len() > 10_000 {
                continue;
            }
            for (name, source) in self.module_calls(&dir) {
                if let Some(child) = local_module_dir(&dir, &source) {
                    let child_path = if module_path.is_empty() {
                        format!("module.{name}")
                    } else {
                        format!("{module_path}.module.{name}")
                    };
                    pending.push((child_path, child));
                }
            }
            self.modules.insert(module_path, dir);
        }
    }

    /// `(name, source)` of the module calls in a directory.
    pub fn module_calls(&self, dir: &Path) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (_, body) in self.parsed_tf_in(dir) {
            for block in body.blocks().filter(|b| b.ident.as_str() == "module") {
                let Some(name) = block.labels.first().map(label_str) else { continue };
                if let Some(Expression::String(s)) = block.body.get_attribute("source").map(|a| &a.value) {
                    out.push((name.to_string(), s.as_str().to_string()));
                }
            }
        }
        out
    }

    /// The `.tf` files directly in `dir` that parse, with their bodies.
    pub fn parsed_tf_in<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = (&'a PathBuf, Body)> + 'a {
        self.files
            .iter()
            .filter(move |(p, _)| {
                p.parent().unwrap_or(Path::new("")) == dir && p.extension().is_some_and(|e| e == "tf")
            })
            .filter_map(|(p, t)| edit::parse(t).ok().map(|b| (p, b)))
    }

    pub fn module_dir(&self, module_path: &str) -> Option<&PathBuf> {
        self.modules.get(module_path)
    }

    /// The file holding the block of a resource address (any instance key).
    pub fn find_resource(&self, address: &Address) -> Option<BlockLocation> {
        let dir = self.module_dir(&address.module_path())?;
        let ident = if address.data { "data" } else { "resource" };
        let sel = BlockSel::new(ident, &[&address.rtype, &address.name]);
        self.parsed_tf_in(dir)
            .find(|(_, body)| edit::find_block(body, &sel).is_some())
            .map(|(file, _)| BlockLocation { file: file.clone(), sel })
    }

    /// Resource blocks of a type in a module directory: `(file, name)`.
    pub fn resources_of_type(&self, dir: &Path, rtype: &str) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        for (file, body) in self.parsed_tf_in(dir) {
            for block in body.blocks().filter(|b| b.ident.as_str() == "resource") {
                if block.labels.first().map(label_str) == Some(rtype) {
                    if let Some(name) = block.labels.get(1).map(label_str) {
                        out.push((file.clone(), name.to_string()));
                    }
                }
            }
        }
        out
    }

    /// The variable files Terraform loads automatically in `dir`, in the order it applies them
    /// (later ones win): `terraform.tfvars`, then `*.auto.tfvars` by name.
    pub fn tfvars_files(&self, dir: &Path) -> Vec<&PathBuf> {
        let name = |p: &PathBuf| p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        let mut files: Vec<&PathBuf> = self
            .files
            .keys()
            .filter(|p| p.parent().unwrap_or(Path::new("")) == dir)
            .filter(|p| name(p) == "terraform.tfvars" || name(p).ends_with(".auto.tfvars"))
            .collect();
        files.sort_by_key(|p| (name(p) != "terraform.tfvars", (*p).clone()));
        files
    }

    /// Whether any file in `dir` other than the block itself refers to `TYPE.NAME`.
    pub fn references_to(&self, dir: &Path, rtype: &str, name: &str) -> Vec<PathBuf> {
        let needle = format!("{rtype}.{name}");
        let own = BlockSel::resource(rtype, name);
        let mut out = Vec::new();
        for (file, body) in self.parsed_tf_in(dir) {
            let source = &self.files[file];
            for structure in body.iter() {
                let text = structure.span().map(|s| &source[s]).unwrap_or_default();
                let is_own = structure.as_block().is_some_and(|b| {
                    b.ident.as_str() == "resource"
                        && b.labels.iter().map(label_str).eq(own.labels.iter().map(String::as_str))
                });
                let companion =
                    structure.as_block().is_some_and(|b| matches!(b.ident.as_str(), "import" | "moved" | "removed"));
                if !is_own && !companion && count_references(text, &needle) > 0 {
                    out.push(file.clone());
                    break;
                }
            }
        }
        out
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

fn module_sources(text: &str) -> Vec<String> {
    let Ok(body) = edit::parse(text) else { return Vec::new() };
    body.blocks()
        .filter(|b| b.ident.as_str() == "module")
        .filter_map(|b| match b.body.get_attribute("source").map(|a| &a.value) {
            Some(Expression::String(s)) => Some(s.as_str().to_string()),
            _ => None,
        })
        .collect()
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

fn first_line_of_error(message: &str) -> String {
    // hcl-edit's message spans several lines with a caret; keep the location and the reason.
    let lines: Vec<&str> = message.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let location = lines.iter().find(|l| l.contains("line")).copied().unwrap_or_default();
    let reason = lines.last().copied().unwrap_or_default();
    format!("{} {}", location.trim_start_matches("-->").trim(), reason).trim().to_string()
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
            ("broken.tf", "resource \"x\" {\n"),
        ]);
        let modules: Vec<(&str, &Path)> = r.modules.iter().map(|(k, v)| (k.as_str(), v.as_path())).collect();
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
        assert_eq!(r.diagnostics.len(), 1);
        assert_eq!(r.diagnostics[0].file, PathBuf::from("broken.tf"));
        assert!(r.diagnostics[0].message.contains("line"), "{}", r.diagnostics[0].message);
        assert_eq!(local_module_dir(Path::new("modules/evil"), "../../../etc"), None);
    }

    #[test]
    fn references_are_whole_names() {
        assert_eq!(count_references("x = aws_vpc.main.id", "aws_vpc.main"), 1);
        assert_eq!(count_references("x = [aws_vpc.main[0].id]", "aws_vpc.main"), 1);
        assert_eq!(count_references("x = aws_vpc.main_2.id", "aws_vpc.main"), 0);
        assert_eq!(count_references("x = data.aws_vpc.main.id", "aws_vpc.main"), 0);
    }
}
