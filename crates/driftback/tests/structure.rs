//! The shape of the binary, checked on its source: its files import each other in no loop, none
//! of them does git itself (that is driftback-publish's), and a change set is planned in one place
//! (the driver's planner), which the driver calls once per change set.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn sources() -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = module_of(path.strip_prefix(&root).unwrap());
                out.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    out
}

/// `cmd/serve.rs` -> `cmd::serve`, `driver/mod.rs` -> `driver`, `main.rs` -> `crate`.
fn module_of(relative: &Path) -> String {
    let text = relative.with_extension("").display().to_string().replace('/', "::");
    match text.as_str() {
        "main" => "crate".into(),
        t => t.strip_suffix("::mod").unwrap_or(t).to_string(),
    }
}

/// The code of a file without its test module (tests may reach anywhere).
fn without_tests(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

/// The modules of this crate that `module`'s code names: `crate::a::b` paths and `super::x` paths,
/// resolved to the longest known module.
fn imports(module: &str, text: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let parent = module.rsplit_once("::").map(|(p, _)| p.to_string()).unwrap_or_else(|| "crate".into());
    let mut out = BTreeSet::new();
    for (prefix, base) in [("crate::", String::new()), ("super::", format!("{parent}::"))] {
        for (i, _) in without_tests(text).match_indices(prefix) {
            let rest = &text[i + prefix.len()..];
            let path: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            let mut candidate = format!("{base}{path}").trim_start_matches("crate::").to_string();
            if base == "crate::" {
                candidate = path.clone();
            }
            loop {
                if known.contains(&candidate) && candidate != module {
                    out.insert(candidate);
                    break;
                }
                match candidate.rsplit_once("::") {
                    Some((head, _)) => candidate = head.to_string(),
                    None => break,
                }
            }
        }
    }
    // A module root's own children, named by relative paths (`pub use outcome::Outcome`, `mod plan`).
    let code = without_tests(text);
    for child in known.iter().filter(|k| k.rsplit_once("::").map(|(p, _)| p).unwrap_or("crate") == module) {
        let name = child.rsplit("::").next().unwrap_or(child);
        if code.contains(&format!("{name}::")) || code.contains(&format!("mod {name};")) {
            out.insert(child.clone());
        }
    }
    // `use cmd::{a, b}` and `use super::{a, b}` groups in the crate root and module roots.
    for line in without_tests(text).lines() {
        let line = line.trim();
        let group = line.strip_prefix("use super::{").or_else(|| line.strip_prefix("use cmd::{"));
        if let Some(group) = group {
            let base = if line.starts_with("use cmd::") { "cmd".to_string() } else { parent.clone() };
            for name in group.trim_end_matches("};").split(',') {
                let candidate = format!("{base}::{}", name.trim()).trim_start_matches("crate::").to_string();
                if known.contains(&candidate) {
                    out.insert(candidate);
                }
            }
        }
    }
    out
}

#[test]
fn the_binarys_files_import_each_other_in_no_loop() {
    let sources = sources();
    let known: BTreeSet<String> = sources.keys().cloned().collect();
    let graph: BTreeMap<&str, BTreeSet<String>> =
        sources.iter().map(|(m, text)| (m.as_str(), imports(m, text, &known))).collect();
    assert!(graph["cmd::serve"].contains("driver"), "the import reader reads nothing: {graph:?}");
    assert!(graph["driver::deliver"].contains("driver::story"), "super:: paths are read: {graph:?}");
    // Depth-first search for a back edge.
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<&str, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if done.contains(node) {
            return;
        }
        if let Some(at) = path.iter().position(|n| *n == node) {
            panic!("import loop: {} -> {node}", path[at..].join(" -> "));
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
        done.insert(node);
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn no_file_of_the_binary_does_git_itself() {
    for (module, text) in sources() {
        assert!(!text.contains("git2::"), "{module} calls git2 directly; git belongs to driftback-publish");
    }
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    assert!(!manifest.contains("git2"), "the binary depends on git2");
}

#[test]
fn a_change_set_is_planned_in_one_place_once() {
    let sources = sources();
    let planners: Vec<&String> = sources
        .iter()
        .filter(|(_, text)| {
            without_tests(text).contains("driftback_recipes::plan(")
                || without_tests(text).contains("agent::reconcile(")
        })
        .map(|(m, _)| m)
        .collect();
    assert_eq!(planners, vec!["driver::plan"], "change sets are planned outside the planner");
    let driver = &sources["driver"];
    assert_eq!(without_tests(driver).matches(".plan(change_set").count(), 1, "the driver plans once per change set");
}
