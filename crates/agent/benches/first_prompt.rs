//! First-prompt size over a drift-scenario corpus, in o200k_base tokens, against a naive prompt
//! (the whole raw trace and every file of the project, whole).
//!
//! `cargo bench -p driftback-agent --bench first_prompt [-- CORPUS]` (default: the repository's
//! tests/corpus). Prints one line per scenario and the mean, maximum and ratios.

use std::path::{Path, PathBuf};

use driftback_agent::context::{count_tokens, first_prompt, locate, naive_prompt};
use driftback_agent::tool_definitions;
use driftback_events::{Disposition, FilterConfig, GroupConfig, classify, group, read_file};
use driftback_terraform::{Repo, State};

fn main() {
    let corpus = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus"));
    let tools = count_tokens(&serde_json::to_string(&tool_definitions()).unwrap());
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus.join("scenarios"))
        .unwrap_or_else(|e| panic!("{}: {e}", corpus.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("scenario.toml").is_file())
        .collect();
    dirs.sort();
    let (mut firsts, mut naives) = (Vec::new(), Vec::new());
    let mut worst_ratio: (f64, String) = (0.0, String::new());
    for dir in &dirs {
        let id = dir.file_name().unwrap().to_string_lossy().to_string();
        let scenario: toml::Value =
            toml::from_str(&std::fs::read_to_string(dir.join("scenario.toml")).unwrap()).unwrap();
        let project = corpus.join("projects").join(scenario["project"].as_str().unwrap());
        let state_path = project.join("terraform.tfstate");
        let state = State::parse(&std::fs::read_to_string(&state_path).unwrap(), "state").unwrap();
        let repo = Repo::load(&project).unwrap();
        let raw = std::fs::read_to_string(dir.join("events.json")).unwrap();
        let kept: Vec<_> = read_file(&dir.join("events.json"))
            .unwrap()
            .events
            .into_iter()
            .map(|(e, _)| e)
            .filter(|e| classify(e, &FilterConfig::default()) == Disposition::Keep)
            .collect();
        let first = group(kept, &GroupConfig::default())
            .iter()
            .map(|cs| {
                let located = locate(cs, &state, &repo);
                first_prompt(cs, "no recipe for this call", &located, &[]).tokens()
            })
            .max();
        let Some(first) = first else { continue };
        let naive = count_tokens(&naive_prompt(&raw, &repo));
        let ratio = first as f64 / naive as f64;
        if ratio > worst_ratio.0 {
            worst_ratio = (ratio, id.clone());
        }
        println!("{id}: first prompt {first} tokens, naive {naive} tokens ({:.2})", ratio);
        firsts.push(first);
        naives.push(naive);
    }
    let n = firsts.len().max(1) as f64;
    let sum = |v: &[usize]| v.iter().sum::<usize>() as f64;
    println!();
    println!("scenarios with a change set: {}", firsts.len());
    println!(
        "first prompt (messages): mean {:.0}, max {} tokens; tool definitions add {tools} to every request",
        sum(&firsts) / n,
        firsts.iter().max().unwrap_or(&0)
    );
    println!("naive prompt: mean {:.0}, max {} tokens", sum(&naives) / n, naives.iter().max().unwrap_or(&0));
    println!("ratio of the means: {:.3} (goal <= 0.333)", sum(&firsts) / sum(&naives));
    println!(
        "ratio with the tool definitions added to both: {:.3}",
        (sum(&firsts) + tools as f64 * n) / (sum(&naives) + tools as f64 * n)
    );
    println!("worst scenario: {} at {:.3}", worst_ratio.1, worst_ratio.0);
}
