//! The formatter against `terraform fmt` itself: every Terraform file of the corpora, the demo and
//! the deployment module is kept `terraform fmt`-clean (checked with `terraform fmt -check` when
//! they are written), so formatting any of them must change nothing; and a file with its layout
//! undone must come back to it.

use std::path::{Path, PathBuf};

use driftback_terraform::fmt::format;

fn terraform_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            terraform_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "tf" || e == "tfvars") {
            out.push(path);
        }
    }
}

fn all_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["tests/corpus/projects", "tests/corpus-wild/projects", "deploy/terraform", "crates/driftback/demo"] {
        terraform_files(&root.join(dir), &mut files);
    }
    files
}

#[test]
fn formatting_terraform_fmt_clean_files_changes_nothing() {
    let files = all_files();
    assert!(files.len() > 50, "{} files", files.len());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let formatted = format(&text);
        if formatted != text {
            let line = text.lines().zip(formatted.lines()).position(|(a, b)| a != b).unwrap_or(0);
            panic!(
                "{}: line {} changed:\n  was: {:?}\n  now: {:?}",
                file.display(),
                line + 1,
                text.lines().nth(line),
                formatted.lines().nth(line)
            );
        }
    }
}

#[test]
fn a_file_whose_layout_was_undone_is_laid_out_again() {
    // Every line's indentation and the spaces before `=` taken away: formatting gives the file back.
    let mut checked = 0;
    for file in all_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        if text.contains("<<") || text.contains("/*") {
            continue; // heredoc bodies and block comments keep their own layout
        }
        let undone: String = text
            .lines()
            .map(|l| {
                let l = l.trim_start();
                match l.find(" = ") {
                    Some(at) if !l.starts_with('#') && !l[..at].contains('"') => {
                        format!("{} = {}", l[..at].trim_end(), l[at + 3..].trim_start())
                    }
                    _ => l.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + if text.ends_with('\n') { "\n" } else { "" };
        assert_eq!(format(&undone), text, "{}", file.display());
        checked += 1;
    }
    assert!(checked > 50, "{checked}");
}
