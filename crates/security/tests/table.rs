//! The built-in table, entry by entry: it reads, every example judges as it says (written as HCL,
//! evaluated as the effective configuration is), and it covers what the baseline promises.

use std::path::PathBuf;

use driftback_security::{Baseline, Control, Example};
use driftback_terraform::Address;
use driftback_terraform::eval::effective_config;
use driftback_terraform::{Repo, Schema};
use serde_json::Value;

/// The resource's values as the effective configuration gives them.
fn values(rtype: &str, body: &str) -> Result<Value, String> {
    let text = format!("resource \"{rtype}\" \"example\" {{\n{body}\n}}\n");
    let repo = Repo::from_files([(PathBuf::from("main.tf"), text)].into_iter().collect());
    if let Some(d) = repo.diagnostics().into_iter().next() {
        return Err(format!("does not parse: {d}"));
    }
    effective_config(&repo, &Address::resource(rtype, "example")).ok_or_else(|| "no resource".into())
}

fn run(control: &Control, example: &Example, table: &Baseline) -> Result<(), String> {
    let rtype = example.resource.clone().unwrap_or_else(|| control.resources[0].clone());
    let before = example.before.as_deref().map(|b| values(&rtype, b)).transpose()?;
    let after = example.after.as_deref().map(|a| values(&rtype, a)).transpose()?;
    let findings = table.judge(&rtype, before.as_ref(), after.as_ref());
    let mine = findings.iter().find(|f| std::ptr::eq(f.control, control));
    match (example.weakens, mine) {
        (true, Some(_)) | (false, None) => Ok(()),
        (true, None) => Err(format!("should weaken, found nothing of its own (others: {findings:?})")),
        (false, Some(f)) => Err(format!("should not weaken, found: {}", f.describe())),
    }
}

#[test]
fn every_example_judges_as_it_says() {
    let table = Baseline::read_builtin().unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for control in &table.controls {
        for (i, example) in control.examples.iter().enumerate() {
            if let Err(e) = run(control, example, &table) {
                failures.push(format!(
                    "{} {} ({}) example {}: {e}",
                    control.file,
                    control.id,
                    control.resources[0],
                    i + 1
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} examples fail:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_entry_has_an_example_each_way_on_resources_and_paths_the_provider_has() {
    let table = Baseline::read_builtin().unwrap_or_else(|e| panic!("{e}"));
    let schema = Schema::newest().expect("a bundled schema");
    let mut problems = Vec::new();
    for c in &table.controls {
        if !c.examples.iter().any(|e| e.weakens) || !c.examples.iter().any(|e| !e.weakens) {
            problems.push(format!("{} {}: needs an example that weakens and one that does not", c.file, c.id));
        }
        for r in &c.resources {
            let Some(body) = schema.resource(r) else {
                problems.push(format!("{} {}: {r} is not a resource type of the provider", c.file, c.id));
                continue;
            };
            let first = c.path.split('.').next().unwrap_or_default();
            if !first.is_empty() && body.argument(first).is_none() && body.block(first).is_none() {
                problems.push(format!("{} {}: {r} has no argument or block `{first}`", c.file, c.id));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_baseline_covers_at_least_150_controls_over_30_services() {
    let table = Baseline::read_builtin().unwrap();
    let ids = table.ids();
    let mut services: Vec<String> =
        ids.iter().filter_map(|id| id.split('.').next()).map(str::to_ascii_lowercase).collect();
    services.sort();
    services.dedup();
    assert!(ids.len() >= 150, "{} controls: {ids:?}", ids.len());
    assert!(services.len() >= 30, "{} services: {services:?}", services.len());
}

#[test]
fn docs_security_md_is_the_table() {
    let table = Baseline::read_builtin().unwrap();
    let page = driftback_security::markdown(&table);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/security.md");
    if std::env::var_os("DRIFTBACK_BLESS").is_some() {
        std::fs::write(&path, &page).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == page,
        "docs/security.md is not the table: run DRIFTBACK_BLESS=1 cargo test -p driftback-security --test table"
    );
    for id in table.ids() {
        assert!(committed.contains(&format!("| {id} ")), "docs/security.md does not list {id}");
    }
}
