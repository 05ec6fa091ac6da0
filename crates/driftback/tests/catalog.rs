//! `driftback catalog`: the coverage table and one JSON object per (eventSource, eventName) pair,
//! built-in and generated recipes together.

use std::collections::BTreeSet;
use std::process::Command;

use driftback_recipes::{Calls, Catalog};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

#[test]
fn catalog_json_lists_every_pair_the_recipes_handle() {
    let out = Command::new(BIN).args(["catalog", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let catalog = Catalog::builtin();
    let want: BTreeSet<(String, String)> =
        catalog.recipes.iter().flat_map(|r| r.events.iter().map(|e| (r.source.clone(), e.clone()))).collect();
    let got: BTreeSet<(String, String)> = lines
        .iter()
        .map(|l| (l["source"].as_str().unwrap().to_string(), l["event"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(lines.len(), want.len(), "one line per pair");
    // The coverage the issue asks for, every pair a call CloudTrail logs, and what each does.
    assert!(lines.len() >= 400, "{} pairs", lines.len());
    let calls = Calls::builtin();
    for line in &lines {
        let (source, event) = (line["source"].as_str().unwrap(), line["event"].as_str().unwrap());
        calls.check_event(source, event).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(!line["actions"].as_array().unwrap().is_empty(), "{line}");
        assert!(matches!(line["origin"].as_str(), Some("built-in" | "generated")), "{line}");
        let recipe = catalog.for_event(source, event).next().unwrap();
        assert_eq!(line["origin"] == "generated", recipe.generated, "{line}");
        let ids: Vec<&str> = catalog.for_event(source, event).map(|r| r.id.as_str()).collect();
        assert_eq!(line["recipes"], serde_json::json!(ids), "{line}");
        for t in line["resource_types"].as_array().unwrap() {
            assert!(catalog.for_event(source, event).any(|r| r.types.iter().any(|rt| rt == t)), "{line}");
        }
    }
    let generated = lines.iter().filter(|l| l["origin"] == "generated").count();
    assert!(generated > 0 && generated < lines.len(), "{generated}");
}

#[test]
fn catalog_table_totals_add_up() {
    let out = Command::new(BIN).arg("catalog").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let numbers = |line: &str| -> Vec<usize> { line.split_whitespace().skip(1).map(|n| n.parse().unwrap()).collect() };
    let rows: Vec<Vec<usize>> = text.lines().skip(1).take_while(|l| !l.starts_with("total")).map(numbers).collect();
    let total = numbers(text.lines().find(|l| l.starts_with("total")).unwrap());
    for column in 0..4 {
        assert_eq!(rows.iter().map(|r| r[column]).sum::<usize>(), total[column], "column {column}\n{text}");
    }
    let pairs = total[0] + total[1];
    assert!(text.contains(&format!("{pairs} (eventSource, eventName) pairs have a recipe")), "{text}");
    let sqs = text.lines().find(|l| l.starts_with("sqs ")).unwrap();
    assert!(numbers(sqs)[0] > 0, "{sqs}");
}

#[test]
fn a_disabled_call_goes_without_its_recipe_and_a_misspelt_entry_stops_the_run() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let eval = |disabled: &str| {
        Command::new(BIN)
            .arg("eval")
            .arg(&corpus)
            .args(["--filter", "flat-001"])
            .env("DRIFTBACK_RECIPES__DISABLED", disabled)
            .env_remove("DRIFTBACK_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap()
    };
    let text = |out: &std::process::Output| {
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let off = eval("ec2.amazonaws.com:ModifyInstanceAttribute");
    assert!(text(&off).contains("no recipe for ec2.amazonaws.com ModifyInstanceAttribute"), "{}", text(&off));
    // Another call's recipe switched off leaves this one alone.
    let other = eval("ec2.amazonaws.com:ModifyVolume");
    assert!(other.status.success() && text(&other).contains("1 passed, 0 failed"), "{}", text(&other));

    let wrong = eval("ec2.amazonaws.com:ModifyInstanceAttributes");
    assert!(!wrong.status.success());
    assert!(
        text(&wrong).contains("\"ec2.amazonaws.com:ModifyInstanceAttributes\" names no recipe id"),
        "{}",
        text(&wrong)
    );
}
