//! checkov as an independent oracle of what the corpora's branches write: `driftback eval` runs on
//! tests/corpus, tests/corpus-wild and tests/corpus-security (when present), each scenario's branch
//! is rebuilt from its project and the files of its change sets (applied one after the other), and
//! checkov scans every base project and every branch (one run per core, each over a share of them:
//! a run costs seconds to start and about a second of one core per project copy). A check that
//! passed on a resource before a change set and fails after it is a security weakening the branch
//! would codify: the test fails and names it, unless that change set was escalated. Checks whose
//! result the branch does not change, and checks that already fail on the base, are not judged.
//!
//! Needs checkov: run through `scripts/checkov.sh`. Without it the test says so and passes, unless
//! DRIFTBACK_REQUIRE_SERVICES is set (CI), where it fails.

#[path = "support/checkov.rs"]
mod checkov;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Copies the project at `from` to `to`: everything but Terraform state, which checkov does not read.
fn copy_project(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (path, name) = (entry.path(), entry.file_name());
        if path.is_dir() {
            copy_project(&path, &to.join(&name));
        } else if !name.to_string_lossy().contains(".tfstate") {
            std::fs::copy(&path, to.join(&name)).unwrap();
        }
    }
}

fn project_of(corpus: &Path, scenario: &str) -> String {
    let path = corpus.join("scenarios").join(scenario).join("scenario.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    table["project"].as_str().unwrap_or_else(|| panic!("{}: no project", path.display())).to_string()
}

/// A file a change set wrote, as a path inside the project; panics when it would leave it.
fn inside(file: &str, scenario: &str) -> PathBuf {
    let path = PathBuf::from(file);
    assert!(
        path.components().all(|c| matches!(c, Component::Normal(_))),
        "{scenario}: a change set writes {file:?}, outside its project"
    );
    path
}

/// One change set that wrote files: the project as it stands after it, under `dir` in the tree.
struct Step {
    change_set: String,
    status: String,
    dir: PathBuf,
}

struct Scenario {
    id: String,
    /// The base project's directory in the tree.
    base: PathBuf,
    steps: Vec<Step>,
}

/// (directory of the declaring file inside the project, resource address, check id).
type Key = (PathBuf, String, String);

/// How many checkov runs scan the tree side by side: checkov spends about a second of one core on
/// each project copy (parsing and rendering its variables), and a run uses one core.
fn shards() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4)
}

#[test]
fn no_corpus_branch_makes_a_checkov_check_fail_that_passed_before() {
    let Some(checkov) = checkov::executable("checkov_oracle") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let mut corpora = Vec::new();
    for name in ["tests/corpus", "tests/corpus-wild", "tests/corpus-security"] {
        if root().join(name).join("scenarios").is_dir() {
            corpora.push(name);
        } else {
            println!("checkov oracle: {name} has no scenarios/, skipped");
        }
    }
    // The corpora's evals, side by side.
    let started = std::time::Instant::now();
    let evals: Vec<Vec<Value>> = std::thread::scope(|scope| {
        let runs: Vec<_> = corpora
            .iter()
            .map(|name| {
                let results = tmp.path().join(format!("{}.json", name.trim_start_matches("tests/")));
                scope.spawn(move || {
                    let out = Command::new(BIN)
                        .arg("eval")
                        .arg(root().join(name))
                        .arg("--json")
                        .arg(&results)
                        .output()
                        .unwrap();
                    // Failing scenarios make eval exit non-zero; what the branches write is judged here.
                    let text = std::fs::read_to_string(&results).unwrap_or_else(|_| {
                        panic!("eval wrote no results for {name}: {}", String::from_utf8_lossy(&out.stderr))
                    });
                    serde_json::from_str(&text).unwrap()
                })
            })
            .collect();
        runs.into_iter().map(|run| run.join().unwrap()).collect()
    });
    let eval_seconds = started.elapsed().as_secs_f64();

    // The tree: SHARD/CORPUS/projects/PROJECT for the base projects, SHARD/CORPUS/branches/SCENARIO/STEP
    // for the branches, one checkov run per shard.
    let shards = shards();
    let mut scenarios = Vec::new();
    let mut bases: BTreeMap<(String, String), PathBuf> = BTreeMap::new();
    let mut ran = 0;
    let mut next_shard = 0;
    let mut shard = || {
        next_shard += 1;
        ((next_shard - 1) % shards).to_string()
    };
    for (name, results) in corpora.iter().zip(&evals) {
        let corpus = root().join(name);
        let label = name.trim_start_matches("tests/");
        ran += results.len();
        for result in results {
            let id = result["id"].as_str().unwrap().to_string();
            let sets = result["change_sets"].as_array().unwrap();
            if !sets.iter().any(|s| s["files"].as_object().is_some_and(|f| !f.is_empty())) {
                continue;
            }
            let project_name = project_of(&corpus, &id);
            let project = corpus.join("projects").join(&project_name);
            let base = bases
                .entry((label.to_string(), project_name.clone()))
                .or_insert_with(|| {
                    let base = PathBuf::from(shard()).join(label).join("projects").join(&project_name);
                    copy_project(&project, &tree.join(&base));
                    base
                })
                .clone();
            // Change sets apply one after the other; each that writes is a step of the branch.
            let mut files: BTreeMap<PathBuf, String> = BTreeMap::new();
            let mut steps = Vec::new();
            let branch = PathBuf::from(shard()).join(label).join("branches").join(&id);
            for set in sets {
                let Some(written) = set["files"].as_object().filter(|f| !f.is_empty()) else { continue };
                for (file, text) in written {
                    files.insert(inside(file, &id), text.as_str().unwrap().to_string());
                }
                let dir = branch.join((steps.len() + 1).to_string());
                copy_project(&project, &tree.join(&dir));
                for (file, text) in &files {
                    let path = tree.join(&dir).join(file);
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(path, text).unwrap();
                }
                steps.push(Step {
                    change_set: set["id"].as_str().unwrap_or_default().to_string(),
                    status: set["status"].as_str().unwrap_or_default().to_string(),
                    dir,
                });
            }
            scenarios.push(Scenario { id, base, steps });
        }
    }
    assert!(!scenarios.is_empty(), "no scenario of {} wrote anything: nothing to compare", corpora.join(", "));

    let started = std::time::Instant::now();
    let findings: Vec<checkov::Finding> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..shards)
            .map(|k| k.to_string())
            .filter(|k| tree.join(k).is_dir())
            .map(|k| {
                let (checkov, tree) = (&checkov, &tree);
                scope.spawn(move || {
                    let mut findings = checkov::scan(checkov, &tree.join(&k), &[]);
                    for finding in &mut findings {
                        finding.file = Path::new(&k).join(&finding.file);
                    }
                    findings
                })
            })
            .collect();
        runs.into_iter().flat_map(|run| run.join().unwrap()).collect()
    });
    let scan_seconds = started.elapsed().as_secs_f64();

    // Each root in the tree (a base project or a branch step) -> key -> passed (false when any
    // finding there failed).
    let roots: BTreeSet<PathBuf> = scenarios
        .iter()
        .flat_map(|s| std::iter::once(s.base.clone()).chain(s.steps.iter().map(|t| t.dir.clone())))
        .collect();
    let mut results: BTreeMap<PathBuf, BTreeMap<Key, bool>> = BTreeMap::new();
    let mut unplaced = Vec::new();
    for finding in &findings {
        // SHARD/CORPUS/projects/PROJECT/... or SHARD/CORPUS/branches/SCENARIO/STEP/...
        let depth = if finding.file.components().nth(2).is_some_and(|c| c.as_os_str() == "branches") { 5 } else { 4 };
        let root: PathBuf = finding.file.components().take(depth).collect();
        let Some(root) = roots.get(&root) else {
            unplaced.push(finding.file.display().to_string());
            continue;
        };
        let file = finding.file.strip_prefix(root).unwrap();
        let key =
            (file.parent().unwrap_or(Path::new("")).to_path_buf(), finding.resource.clone(), finding.check_id.clone());
        let passed = results.entry(root.clone()).or_default().entry(key).or_insert(true);
        *passed &= finding.passed;
    }
    assert!(unplaced.is_empty(), "checkov reported files outside every base and branch: {unplaced:?}");
    for scenario in &scenarios {
        assert!(
            results.get(&scenario.base).is_some_and(|r| !r.is_empty()),
            "{}: checkov reported nothing on its base project {}",
            scenario.id,
            scenario.base.display()
        );
    }

    // Checks the baseline disagrees with on purpose, each with its reason.
    let disagreements: toml::Table = toml::from_str(
        &std::fs::read_to_string(root().join("crates/security/data/checkov-disagreements.toml")).unwrap(),
    )
    .unwrap();
    let known: BTreeMap<String, String> = disagreements["disagreement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["check"].as_str().unwrap().to_string(), d["reason"].as_str().unwrap().to_string()))
        .collect();
    let mut disagreed = Vec::new();
    let empty = BTreeMap::new();
    let (mut compared, mut excused) = (0, 0);
    let mut regressions = Vec::new();
    for scenario in &scenarios {
        // The last result each key had, from the base on.
        let mut last: BTreeMap<&Key, bool> =
            results.get(&scenario.base).unwrap_or(&empty).iter().map(|(k, v)| (k, *v)).collect();
        for step in &scenario.steps {
            let now = results.get(&step.dir).unwrap_or(&empty);
            for (key, &passed) in now {
                if let Some(&before) = last.get(key) {
                    compared += 1;
                    if before && !passed {
                        if step.status == "escalated" {
                            excused += 1;
                        } else if let Some(reason) = known.get(&key.2) {
                            disagreed.push(format!("{} {} on {}: {reason}", scenario.id, key.2, key.1));
                        } else {
                            let (dir, resource, check) = key;
                            regressions.push(format!(
                                "{} change set {} ({}): {check} on {resource}{} passed before it and fails after",
                                scenario.id,
                                step.change_set,
                                step.status,
                                if dir.as_os_str().is_empty() {
                                    String::new()
                                } else {
                                    format!(" (in {})", dir.display())
                                },
                            ));
                        }
                    }
                }
                last.insert(key, passed);
            }
        }
    }
    let branches: usize = scenarios.iter().map(|s| s.steps.len()).sum();
    println!(
        "checkov oracle: {ran} scenarios of {} evaluated in {eval_seconds:.0} s; {} wrote branches ({branches} \
         change sets); {} results from {shards} checkov run(s) over {} project copies in {scan_seconds:.0} s; \
         {compared} checks compared; {} regressions{}",
        corpora.join(", "),
        scenarios.len(),
        findings.len(),
        roots.len(),
        regressions.len(),
        if excused > 0 { format!(" ({excused} more in escalated change sets)") } else { String::new() },
    );
    for d in &disagreed {
        println!("checkov oracle: known disagreement: {d}");
    }
    assert!(compared > 0, "no check was compared between a base and a branch");
    assert!(
        regressions.is_empty(),
        "{} checks pass before a change set and fail after it:\n{}",
        regressions.len(),
        regressions.join("\n")
    );
}
