//! `driftback catalog`: what the recipes cover, by service, or one JSON object per
//! (eventSource, eventName) pair.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;

use clap::Args as ClapArgs;
use serde_json::json;

use driftback_recipes::{Calls, Catalog};

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// One JSON object per (eventSource, eventName) pair a recipe handles: source, event,
    /// resource_types, actions (set, create, delete, ...), origin (built-in or generated) and
    /// recipes (their ids, as `[recipes] disabled` takes them).
    #[arg(long)]
    pub json: bool,
}

/// One pair, with what its recipes do.
struct Pair {
    recipes: Vec<String>,
    resource_types: Vec<String>,
    actions: Vec<&'static str>,
    origin: &'static str,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let catalog = Catalog::builtin();
    let mut pairs: BTreeMap<(String, String), Pair> = BTreeMap::new();
    for recipe in &catalog.recipes {
        let origin = if recipe.generated { "generated" } else { "built-in" };
        for event in &recipe.events {
            let pair = pairs.entry((recipe.source.clone(), event.clone())).or_insert(Pair {
                recipes: Vec::new(),
                resource_types: Vec::new(),
                actions: Vec::new(),
                origin,
            });
            pair.recipes.push(recipe.id.clone());
            for t in &recipe.types {
                if !pair.resource_types.contains(t) {
                    pair.resource_types.push(t.clone());
                }
            }
            for a in recipe.actions() {
                if !pair.actions.contains(&a) {
                    pair.actions.push(a);
                }
            }
        }
    }
    let mut out = String::new();
    if args.json {
        for ((source, event), pair) in &pairs {
            let line = json!({"source": source, "event": event, "resource_types": pair.resource_types,
                              "actions": pair.actions, "origin": pair.origin, "recipes": pair.recipes});
            writeln!(out, "{line}")?;
        }
        return print(&out);
    }
    // By service: pairs built in and generated, resource types, and the calls that change something
    // (in the table of calls) that no recipe handles: those go to the agent or a person.
    #[derive(Default)]
    struct Row {
        built_in: usize,
        generated: usize,
        types: std::collections::BTreeSet<String>,
        unhandled: usize,
    }
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let service = |source: &str| source.trim_end_matches(".amazonaws.com").to_string();
    for ((source, _), pair) in &pairs {
        let row = rows.entry(service(source)).or_default();
        match pair.origin {
            "generated" => row.generated += 1,
            _ => row.built_in += 1,
        }
        row.types.extend(pair.resource_types.iter().filter(|t| *t != "*").cloned());
    }
    for call in Calls::builtin().iter().filter(|c| !c.read_only) {
        if !pairs.contains_key(&(call.source.to_string(), call.event.to_string())) {
            if let Some(row) = rows.get_mut(&service(call.source)) {
                row.unhandled += 1;
            }
        }
    }
    writeln!(out, "{:<32} {:>8} {:>9} {:>6} {:>14}", "service", "built-in", "generated", "types", "not handled")?;
    let (mut b, mut g, mut t, mut u) = (0, 0, 0, 0);
    for (name, row) in &rows {
        let (built_in, generated, types, unhandled) = (row.built_in, row.generated, row.types.len(), row.unhandled);
        writeln!(out, "{name:<32} {built_in:>8} {generated:>9} {types:>6} {unhandled:>14}")?;
        (b, g, t, u) = (b + row.built_in, g + row.generated, t + row.types.len(), u + row.unhandled);
    }
    writeln!(out, "{:<32} {b:>8} {g:>9} {t:>6} {u:>14}", "total")?;
    writeln!(
        out,
        "\n{} (eventSource, eventName) pairs have a recipe ({b} built in, {g} generated from the AWS API models); \
         calls that change something and have none go to the agent, or to a person without one.",
        b + g
    )?;
    print(&out)
}

/// Standard output, where a reader that stops early (`| head`) is not an error.
fn print(text: &str) -> anyhow::Result<()> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
