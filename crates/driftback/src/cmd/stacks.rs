//! `driftback stacks`: the root modules of the repository, their workspaces, and how each
//! workspace's state is reached; with `--read`, each state is read and its resources counted.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args as ClapArgs;
use serde_json::{Value, json};

use driftback_stacks::discover::inferred_workspace;
use driftback_stacks::{Readers, Stack, StateReader, discover, locate, scan};

use crate::config::Config;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The Terraform repository.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Read every workspace's state (S3, HCP Terraform, files) and count its resources; the
    /// backends that can list workspaces (S3, HCP tags or prefix) are asked for them first.
    #[arg(long)]
    pub read: bool,
    /// One JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(config: &Config, args: &Args) -> anyhow::Result<ExitCode> {
    let tree = scan(&args.repo, &config.stack)?;
    let mut found = discover(&tree, &config.stack);
    let readers = Readers::new(&args.repo);
    let mut failed = false;
    let mut stacks = Vec::new();
    for stack in &mut found.stacks {
        if args.read && !stack.workspaces_configured {
            match readers.list_workspaces(stack).await {
                Ok(Some(names)) if !names.is_empty() => {
                    let listed = names.into_iter().map(|name| inferred_workspace(&tree, stack, name)).collect();
                    stack.workspaces = listed;
                }
                Ok(_) => {}
                Err(e) => {
                    failed = true;
                    found.notes.push(format!("error: stack {}: cannot list its workspaces: {e}", stack.name));
                }
            }
        }
        let mut workspaces = Vec::new();
        for ws in &stack.workspaces {
            let mut entry = json!({
                "name": ws.name,
                "tfvars": ws.tfvars.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            });
            match locate(stack, &ws.name) {
                Err(e) => {
                    failed = true;
                    entry["error"] = json!(e.to_string());
                }
                Ok(location) => {
                    entry["state"] = json!(location.to_string());
                    if args.read {
                        match readers.read(&location).await {
                            Ok(read) => {
                                let managed = read.state.instances.iter().filter(|i| !i.address.data).count();
                                entry["resources"] = json!(managed);
                                entry["version"] = json!(read.version.to_string());
                                entry["bytes"] = json!(read.bytes);
                            }
                            Err(e) => {
                                failed = true;
                                entry["error"] = json!(format!("stack {}, workspace {}: {e}", stack.name, ws.name));
                            }
                        }
                    }
                }
            }
            workspaces.push(entry);
        }
        stacks.push(describe(stack, workspaces));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json!({"stacks": stacks, "notes": found.notes}))?);
    } else {
        print_text(&stacks, &found.notes);
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn describe(stack: &Stack, workspaces: Vec<Value>) -> Value {
    json!({
        "name": stack.name,
        "dir": if stack.dir.as_os_str().is_empty() { ".".to_string() } else { stack.dir.display().to_string() },
        "backend": stack.backend,
        "found_by": stack.found_by,
        "workspaces": workspaces,
    })
}

fn print_text(stacks: &[Value], notes: &[String]) {
    if stacks.is_empty() {
        println!(
            "No stacks: no directory has a backend or cloud block, a .terraform.lock.hcl or a local state, and the configuration names none ([[stack]])."
        );
    }
    for stack in stacks {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let found_by: Vec<String> = stack["found_by"].as_array().into_iter().flatten().map(text).collect();
        println!(
            "{}  ({}, {} backend; {})",
            text(&stack["name"]),
            text(&stack["dir"]),
            text(&stack["backend"]),
            found_by.join(", ")
        );
        let workspaces = stack["workspaces"].as_array().cloned().unwrap_or_default();
        if workspaces.is_empty() {
            println!("  no workspace known yet: --read asks the backend (HCP Terraform tags or prefix)");
        }
        for ws in &workspaces {
            let mut line = format!("  {:<12} {}", text(&ws["name"]), ws["state"].as_str().unwrap_or("-"));
            let tfvars: Vec<String> = ws["tfvars"].as_array().into_iter().flatten().map(text).collect();
            if !tfvars.is_empty() {
                line.push_str(&format!("  tfvars {}", tfvars.join(", ")));
            }
            if let Some(n) = ws["resources"].as_u64() {
                line.push_str(&format!("  {n} resources, {}", text(&ws["version"])));
            }
            println!("{line}");
            if let Some(error) = ws["error"].as_str() {
                println!("    error: {error}");
            }
        }
    }
    for note in notes {
        if note.starts_with("error: ") {
            println!("{note}");
        } else {
            println!("note: {note}");
        }
    }
}
