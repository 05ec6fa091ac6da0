//! The security baseline table (crates/security/data/controls/*.toml, format in ../FORMAT.md)
//! checked against checkov: for every entry that names checkov checks, every example that weakens
//! (with both `before` and `after`) is written as `resource "<type>" "example" { ... }`, once per
//! resource type the entry judges, and one checkov run scans them all. Each listed check that
//! checkov evaluates on the type must pass on `before` and fail on `after`, and each listed check
//! must be evaluated on at least one of the entry's types; an entry whose `checkov_note` says where
//! it and checkov differ on purpose is skipped and counted. The test reads the table itself, so it
//! does not depend on the judge's code.
//!
//! Needs checkov: run through `scripts/checkov.sh`. Without it the test says so and passes, unless
//! DRIFTBACK_REQUIRE_SERVICES is set (CI), where it fails.

#[path = "support/checkov.rs"]
mod checkov;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn controls_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../security/data/controls")
}

/// One table entry that names checkov checks.
struct Entry {
    /// `file.toml: ID (entry N)`, for messages.
    name: String,
    resources: Vec<String>,
    checks: Vec<String>,
    note: String,
    /// The weakening examples' (before, after) bodies.
    pairs: Vec<(String, String)>,
}

fn strings(value: Option<&toml::Value>, what: &str) -> Vec<String> {
    match value {
        None => vec![],
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().unwrap_or_else(|| panic!("{what}: {v} is not a string")).to_string())
            .collect(),
        Some(other) => panic!("{what}: expected a list of strings, found {other}"),
    }
}

/// The entries of every table file that name checkov checks.
fn entries() -> (Vec<Entry>, usize) {
    let dir = controls_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the control table {} cannot be read: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut entries = Vec::new();
    let mut all = 0;
    for file in files {
        let label = file.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{label} does not parse: {e}"));
        let Some(controls) = table.get("control") else { continue };
        let controls = controls.as_array().unwrap_or_else(|| panic!("{label}: `control` is not a list of [[control]]"));
        for (index, control) in controls.iter().enumerate() {
            all += 1;
            let control = control.as_table().unwrap_or_else(|| panic!("{label}: control {index} is not a table"));
            let id = control.get("id").and_then(|v| v.as_str()).unwrap_or("(no id)");
            let name = format!("{label}: {id} (entry {})", index + 1);
            let checks = strings(control.get("checkov"), &format!("{name} checkov"));
            if checks.is_empty() {
                continue;
            }
            let resources = strings(control.get("resources"), &format!("{name} resources"));
            assert!(!resources.is_empty(), "{name} names checkov checks but no resources");
            let note = control.get("checkov_note").and_then(|v| v.as_str()).unwrap_or_default().trim().to_string();
            let mut pairs = Vec::new();
            let examples = control.get("example").and_then(|v| v.as_array()).cloned().unwrap_or_default();
            for example in &examples {
                let weakens = example.get("weakens").and_then(|v| v.as_bool());
                let side = |key: &str| example.get(key).and_then(|v| v.as_str()).map(str::to_string);
                if let (Some(true), Some(before), Some(after)) = (weakens, side("before"), side("after")) {
                    pairs.push((before, after));
                }
            }
            entries.push(Entry { name, resources, checks, note, pairs });
        }
    }
    (entries, all)
}

/// One fixture: an entry's example written as one resource type, under `dir/before` and `dir/after`.
struct Fixture {
    entry: usize,
    rtype: String,
    dir: String,
}

#[test]
fn every_weakening_example_fails_the_checkov_checks_its_entry_names() {
    let Some(checkov) = checkov::executable("checkov_pairs") else { return };
    let (entries, all) = entries();
    assert!(all > 0, "the control table {} holds no [[control]] entries", controls_dir().display());
    let tmp = tempfile::tempdir().unwrap();
    let mut fixtures = Vec::new();
    let mut checks = BTreeSet::new();
    for (e, entry) in entries.iter().enumerate() {
        if !entry.note.is_empty() {
            continue;
        }
        for (before, after) in &entry.pairs {
            for rtype in &entry.resources {
                // One directory per fixture: each is its own root module, so every resource can be
                // named `example`.
                let dir = format!("{:05}", fixtures.len());
                for (side, body) in [("before", before), ("after", after)] {
                    let path = tmp.path().join(&dir).join(side).join("main.tf");
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, format!("resource \"{rtype}\" \"example\" {{\n{body}\n}}\n")).unwrap();
                }
                fixtures.push(Fixture { entry: e, rtype: rtype.clone(), dir });
                checks.extend(entry.checks.iter().cloned());
            }
        }
    }
    let checks: Vec<String> = checks.into_iter().collect();
    let findings = if fixtures.is_empty() { vec![] } else { checkov::scan(&checkov, tmp.path(), &checks) };

    // (fixture dir, side, check id) -> passed (false when any finding there failed).
    let mut results: BTreeMap<(String, String, String), bool> = BTreeMap::new();
    for finding in &findings {
        let mut parts = finding.file.components().map(|c| c.as_os_str().to_string_lossy().to_string());
        let (Some(dir), Some(side)) = (parts.next(), parts.next()) else { continue };
        let passed = results.entry((dir, side, finding.check_id.clone())).or_insert(true);
        *passed &= finding.passed;
    }

    let (mut compared, mut agreed) = (0, 0);
    let mut not_evaluated = Vec::new();
    let mut problems = Vec::new();
    // (entry, check) pairs checkov evaluated on at least one fixture.
    let mut evaluated: BTreeSet<(usize, String)> = BTreeSet::new();
    for fixture in &fixtures {
        let entry = &entries[fixture.entry];
        for check in &entry.checks {
            let result = |side: &str| results.get(&(fixture.dir.clone(), side.to_string(), check.clone())).copied();
            let say = |r: Option<bool>| match r {
                Some(true) => "passes",
                Some(false) => "fails",
                None => "is not evaluated",
            };
            match (result("before"), result("after")) {
                (None, None) => not_evaluated.push(format!("{} {check} on {}", entry.name, fixture.rtype)),
                (Some(true), Some(false)) => {
                    compared += 1;
                    agreed += 1;
                    evaluated.insert((fixture.entry, check.clone()));
                }
                (before, after) => {
                    compared += 1;
                    evaluated.insert((fixture.entry, check.clone()));
                    problems.push(format!(
                        "{} on {}: checkov {check} {} before and {} after (expected passes, then fails; \
                         fixture {})",
                        entry.name,
                        fixture.rtype,
                        say(before),
                        say(after),
                        fixture.dir
                    ));
                }
            }
        }
    }
    for (e, entry) in entries.iter().enumerate() {
        if !entry.note.is_empty() || entry.pairs.is_empty() {
            continue;
        }
        for check in &entry.checks {
            if !evaluated.contains(&(e, check.clone())) {
                problems.push(format!(
                    "{}: checkov never evaluates {check} on {}: a wrong id or type, or a difference for \
                     checkov_note",
                    entry.name,
                    entry.resources.join(", ")
                ));
            }
        }
    }
    let noted: Vec<&Entry> = entries.iter().filter(|e| !e.note.is_empty()).collect();
    let noted_pairs: usize = noted.iter().map(|e| e.pairs.len() * e.resources.len()).sum();
    let without_pairs: Vec<&str> =
        entries.iter().filter(|e| e.note.is_empty() && e.pairs.is_empty()).map(|e| e.name.as_str()).collect();
    println!(
        "checkov pairs: {} entries with checkov ids ({all} in the table), {} pairs checked: {compared} checks \
         compared, {agreed} agreed, {} disagreed, {} not evaluated by checkov on that type; {noted_pairs} \
         pairs of {} entries skipped with notes; {} entries without a weakening before/after example",
        entries.len(),
        fixtures.len(),
        compared - agreed,
        not_evaluated.len(),
        noted.len(),
        without_pairs.len(),
    );
    if !not_evaluated.is_empty() {
        println!("  not evaluated: {}", not_evaluated.join("; "));
    }
    if !noted.is_empty() {
        println!("  skipped with notes: {}", noted.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join("; "));
    }
    if !without_pairs.is_empty() {
        println!("  without a weakening example: {}", without_pairs.join("; "));
    }
    assert!(
        compared > 0,
        "no weakening example was compared with checkov: {} entries name checkov checks",
        entries.len()
    );
    assert!(problems.is_empty(), "{} disagreements with checkov:\n{}", problems.len(), problems.join("\n"));
}
