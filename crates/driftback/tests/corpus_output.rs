//! What the corpora's branches write, checked as a reviewer would: every file a branch changes is
//! laid out as `terraform fmt` lays out what the change touched (the formatter's rules,
//! docs/terraform-style.md), and every patch fits the AWS provider schema (the schema gate, on all
//! it adds). Runs `driftback eval` on tests/corpus and tests/corpus-wild, whatever their pass rate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use driftback_terraform::{Repo, Schema, fmt, gate};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The project files a scenario starts from (path relative to the project -> text).
fn project_files(dir: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(base, &path, out);
            } else if path.extension().is_some_and(|e| e == "tf" || e == "tfvars") {
                out.insert(path.strip_prefix(base).unwrap().to_path_buf(), std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn project_of(corpus: &Path, scenario: &str) -> String {
    let text = std::fs::read_to_string(corpus.join("scenarios").join(scenario).join("scenario.toml")).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    table["project"].as_str().unwrap().to_string()
}

#[test]
fn every_corpus_branch_is_fmt_clean_where_it_changed_and_fits_the_provider_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let mut branches = 0;
    let mut problems = Vec::new();
    for name in ["tests/corpus", "tests/corpus-wild"] {
        let corpus = root().join(name);
        let results = tmp.path().join(format!("{}.json", name.replace('/', "-")));
        let out = Command::new(BIN).arg("eval").arg(&corpus).arg("--json").arg(&results).output().unwrap();
        // Failing scenarios make eval exit non-zero; the results are what is judged here.
        assert!(results.exists(), "eval wrote no results: {}", String::from_utf8_lossy(&out.stderr));
        let results: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
        for scenario in &results {
            let id = scenario["id"].as_str().unwrap();
            let project = corpus.join("projects").join(project_of(&corpus, id));
            // Change sets apply one after the other to the scenario's scratch copy.
            let mut scratch = project_files(&project);
            for set in scenario["change_sets"].as_array().unwrap() {
                let Some(files) = set["files"].as_object().filter(|f| !f.is_empty()) else { continue };
                branches += 1;
                let before = Repo::from_files(scratch.clone());
                let mut changed = Vec::new();
                for (file, text) in files {
                    let (file, text) = (PathBuf::from(file), text.as_str().unwrap().to_string());
                    let old = scratch.get(&file).cloned().unwrap_or_default();
                    let tidied = fmt::tidy(&old, &text);
                    if tidied != text {
                        let line = text.lines().zip(tidied.lines()).position(|(a, b)| a != b).unwrap_or(0);
                        problems.push(format!(
                            "{id} {}: not laid out as terraform fmt at line {}: {:?} (should be {:?})",
                            file.display(),
                            line + 1,
                            text.lines().nth(line).unwrap_or_default(),
                            tidied.lines().nth(line).unwrap_or_default()
                        ));
                    }
                    scratch.insert(file.clone(), text);
                    changed.push(file);
                }
                let after = Repo::from_files(scratch.clone());
                let refusals: Vec<Vec<String>> = Schema::bundled_versions()
                    .map(|v| gate::check(Schema::version(v).unwrap(), &before, &after, &changed))
                    .collect();
                if refusals.iter().all(|r| !r.is_empty()) {
                    problems.push(format!("{id}: the schema gate refuses the branch: {:?}", refusals[0]));
                }
            }
        }
    }
    assert!(branches > 150, "only {branches} branches");
    assert!(problems.is_empty(), "{} of {branches} branches:\n{}", problems.len(), problems.join("\n"));
}
