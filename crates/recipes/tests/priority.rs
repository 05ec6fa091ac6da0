//! The coverage issue's priority list (`data/priority-calls.tsv`) says how each call is covered;
//! this holds it to the catalogs, so the list and the recipes cannot drift apart: a call said to be
//! curated has a hand-written recipe, a generated one only a generated recipe, and a call without
//! a recipe says why.

use driftback_recipes::Catalog;

#[test]
fn every_priority_call_is_covered_as_the_list_says() {
    let catalog = Catalog::builtin();
    let list = include_str!("../data/priority-calls.tsv");
    let mut problems = Vec::new();
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for line in list.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [source, event, status, reason] = fields[..] else {
            problems.push(format!("malformed line: {line:?}"));
            continue;
        };
        *counts.entry(status).or_default() += 1;
        let recipes: Vec<_> = catalog.for_event(source, event).collect();
        let hand_written = recipes.iter().any(|r| !r.generated);
        let ok = match status {
            "curated" => hand_written,
            "generated" => !recipes.is_empty() && !hand_written,
            "none" => recipes.is_empty() && !reason.trim().is_empty(),
            _ => false,
        };
        if !ok {
            problems.push(format!(
                "{source} {event}: listed as {status}, but {} recipes ({hand_written} hand-written)",
                recipes.len()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!("priority calls: {counts:?}");
    assert!(counts.values().sum::<usize>() >= 100, "the list lost calls: {counts:?}");
}
