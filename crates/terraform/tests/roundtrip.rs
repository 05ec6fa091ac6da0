//! Round-trip properties of the format-preserving edits, checked exhaustively over every file of
//! every corpus project: printing a parsed file gives its bytes back; an edit followed by its
//! inverse restores the bytes; an edit changes nothing outside its span; every result re-parses.

use driftback_terraform::edit::{self, BlockSel};
use driftback_terraform::patch::literal_value;
use driftback_terraform::{AttrPath, AttrValue, Repo};
use hcl_edit::Span;
use hcl_edit::expr::Expression;
use serde_json::{Value, json};

/// Every `.tf` file of every corpus project (with its modules), as (name, text).
mod support;
use support::corpus_projects;

fn corpus_files() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for project in corpus_projects() {
        let repo = Repo::load(&project).unwrap();
        assert!(repo.diagnostics().is_empty(), "{}: {:?}", project.display(), repo.diagnostics());
        for (path, text) in repo.files() {
            out.push((format!("{}/{}", project.display(), path.display()), text.to_string()));
        }
    }
    out
}

/// Top-level blocks with labels (resources, variables, ...) and the literal attributes in them.
fn literal_attributes(text: &str) -> Vec<(BlockSel, String, Value)> {
    let body = edit::parse(text).unwrap();
    let mut out = Vec::new();
    for block in body.blocks() {
        let sel = BlockSel {
            ident: block.ident.as_str().to_string(),
            labels: block.labels.iter().map(|l| edit::label_str(l).to_string()).collect(),
        };
        for attr in block.body.attributes() {
            if let Some(v) = literal_value(text, &attr.value) {
                if matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
                    out.push((sel.clone(), attr.key.as_str().to_string(), v));
                }
            }
        }
    }
    out
}

/// `after` differs from `before` only inside `before[span]`.
fn assert_confined(name: &str, before: &str, after: &str, start: usize, end: usize) {
    assert_eq!(&after[..start], &before[..start], "{name}: bytes before the edit changed");
    let tail = &before[end..];
    assert!(after.ends_with(tail), "{name}: bytes after the edit changed");
}

#[test]
fn printing_a_parsed_file_gives_its_bytes_back() {
    for (name, text) in corpus_files() {
        let body = hcl_edit::parser::parse_body(&text).unwrap();
        assert_eq!(body.to_string(), text, "{name}");
    }
}

#[test]
fn replacing_a_literal_changes_only_its_span_and_the_inverse_restores_the_file() {
    let mut checked = 0;
    for (name, text) in corpus_files().into_iter().filter(|(n, _)| n.ends_with(".tf")) {
        for (sel, attr, original) in literal_attributes(&text) {
            let path = AttrPath::parse(&attr).unwrap();
            let span = edit::find(&text, Some(&sel), &path).unwrap().unwrap();
            let other = match &original {
                Value::String(s) => json!(format!("{s}-changed")),
                Value::Number(n) => json!(n.as_f64().unwrap() + 1.0),
                Value::Bool(b) => json!(!b),
                _ => unreachable!(),
            };
            let case = format!("{name}: {} {attr}", sel.labels.join("."));
            let changed = edit::set(&text, Some(&sel), &path, &AttrValue::Literal(other)).unwrap();
            edit::parse(&changed).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_confined(&case, &text, &changed, span.start, span.end);
            // Only values that print as written can come back byte for byte.
            let original_text = &text[span.clone()];
            if AttrValue::Literal(original.clone()).render("").unwrap() == original_text {
                let back = edit::set(&changed, Some(&sel), &path, &AttrValue::Literal(original)).unwrap();
                assert_eq!(back, text, "{case}: the inverse edit did not restore the file");
                checked += 1;
            }
        }
    }
    assert!(checked > 200, "only {checked} literals were checked");
}

#[test]
fn adding_then_removing_an_attribute_or_a_map_entry_restores_the_file() {
    let mut checked = 0;
    for (name, text) in corpus_files().into_iter().filter(|(n, _)| n.ends_with(".tf")) {
        let body = edit::parse(&text).unwrap();
        for block in body.blocks().filter(|b| b.ident.as_str() == "resource") {
            let sel = BlockSel {
                ident: "resource".into(),
                labels: block.labels.iter().map(|l| edit::label_str(l).to_string()).collect(),
            };
            let case = format!("{name}: {}", sel.labels.join("."));
            let probe = AttrPath::parse("driftback_probe").unwrap();
            let added = edit::set(&text, Some(&sel), &probe, &AttrValue::Literal(json!("x"))).unwrap();
            edit::parse(&added).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(edit::remove(&added, Some(&sel), &probe).unwrap(), text, "{case}: attribute");
            checked += 1;
            // A literal tags map: a new entry and its removal.
            if let Some(Expression::Object(_)) = block.body.get_attribute("tags").map(|a| &a.value) {
                let entry = AttrPath::parse("tags.DriftbackProbe").unwrap();
                let span = block.body.get_attribute("tags").and_then(|a| a.value.span()).unwrap();
                let added = edit::set(&text, Some(&sel), &entry, &AttrValue::Literal(json!("y"))).unwrap();
                edit::parse(&added).unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(&added[..span.start], &text[..span.start], "{case}: bytes before the map changed");
                assert!(added.ends_with(&text[span.end..]), "{case}: bytes after the map changed");
                assert_eq!(edit::remove(&added, Some(&sel), &entry).unwrap(), text, "{case}: map entry");
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} edits were checked");
}

#[test]
fn removing_a_block_keeps_every_other_block_byte_for_byte() {
    for (name, text) in corpus_files().into_iter().filter(|(n, _)| n.ends_with(".tf")) {
        let body = edit::parse(&text).unwrap();
        let blocks: Vec<String> = body.blocks().filter_map(|b| b.span()).map(|s| text[s].to_string()).collect();
        for index in 0..blocks.len() {
            let out = edit::remove_block(&text, index).unwrap();
            let after = edit::parse(&out).unwrap_or_else(|e| panic!("{name} #{index}: {e}"));
            let kept: Vec<String> = after.blocks().filter_map(|b| b.span()).map(|s| out[s].to_string()).collect();
            let mut expected = blocks.clone();
            expected.remove(index);
            assert_eq!(kept, expected, "{name}: removing block #{index}");
        }
    }
}
