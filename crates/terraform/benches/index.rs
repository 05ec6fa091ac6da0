//! Indexing and lookup speed of `Repo` on a synthetic repository.
//!
//! Run: `cargo bench -p driftback-terraform --bench index` (release profile, one thread).
//! Builds repositories of 200 files / 2,000 resources and 2,000 files / 20,000 resources (ten
//! resources of mixed types per file, plus variables, locals and outputs), then reports the time
//! to index them from memory and from disk, and the time per address lookup at both sizes: the
//! lookup is a hash lookup, so it must not grow with the repository.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use driftback_terraform::{Address, ModuleStep, Repo};

const TYPES: [&str; 5] = ["aws_instance", "aws_s3_bucket", "aws_sqs_queue", "aws_security_group", "aws_iam_role"];

fn file_text(file: usize, per_file: usize) -> String {
    let mut text = format!(
        "# Generated file {file}\nvariable \"v{file}\" {{\n  type    = string\n  default = \"value-{file}\"\n}}\n\nlocals {{\n  name_{file} = \"svc-${{var.v{file}}}\"\n}}\n\n"
    );
    for r in 0..per_file {
        let rtype = TYPES[r % TYPES.len()];
        text.push_str(&format!(
            "resource \"{rtype}\" \"r{file}_{r}\" {{\n  name          = \"${{local.name_{file}}}-{r}\"\n  instance_type = \"t3.micro\" # sized for tests\n  count         = 1\n\n  tags = {{\n    Team = \"platform\"\n    File = \"{file}\"\n  }}\n\n  lifecycle {{\n    ignore_changes = [tags[\"Owner\"]]\n  }}\n}}\n\n"
        ));
    }
    text.push_str(&format!("output \"o{file}\" {{\n  value = {}.r{file}_0.id\n}}\n", TYPES[0]));
    text
}

/// The root module calls the generated directory as a local module.
const ROOT: &str = "module \"stack\" {\n  source = \"./stack\"\n}\n";

fn files(count: usize, per_file: usize) -> BTreeMap<PathBuf, String> {
    let mut out: BTreeMap<PathBuf, String> =
        (0..count).map(|f| (PathBuf::from(format!("stack/f{f:04}.tf")), file_text(f, per_file))).collect();
    out.insert(PathBuf::from("main.tf"), ROOT.to_string());
    out
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn lookup_ns(repo: &Repo, files: usize, per_file: usize) -> f64 {
    let addresses: Vec<Address> = (0..10_000)
        .map(|i| {
            let f = (i * 7919) % files;
            let r = (i * 104_729) % per_file;
            let step = ModuleStep { name: "stack".into(), key: None };
            Address { module: vec![step], ..Address::resource(TYPES[r % TYPES.len()], &format!("r{f}_{r}")) }
        })
        .collect();
    let started = Instant::now();
    let mut found = 0;
    for _ in 0..10 {
        for a in &addresses {
            found += black_box(repo.find_resource(a)).is_some() as usize;
        }
    }
    assert_eq!(found, addresses.len() * 10, "every generated address resolves");
    started.elapsed().as_nanos() as f64 / (addresses.len() * 10) as f64
}

fn write_tree(root: &Path, files: &BTreeMap<PathBuf, String>) {
    std::fs::create_dir_all(root.join("stack")).unwrap();
    for (path, text) in files {
        std::fs::write(root.join(path), text).unwrap();
    }
}

fn main() {
    println!(
        "{:>6} {:>9} {:>10} {:>12} {:>12} {:>10}",
        "files", "resources", "MB", "index mem", "index disk", "lookup"
    );
    for (count, per_file) in [(200, 10), (2_000, 10)] {
        let files = files(count, per_file);
        let bytes: usize = files.values().map(String::len).sum();
        let in_memory = median(
            (0..5)
                .map(|_| {
                    let input = files.clone();
                    let started = Instant::now();
                    let repo = Repo::from_files(input);
                    let took = started.elapsed();
                    assert!(repo.diagnostics().is_empty());
                    black_box(repo);
                    took
                })
                .collect(),
        );
        let root = std::env::temp_dir().join(format!("driftback-index-bench-{}-{count}", std::process::id()));
        write_tree(&root, &files);
        let from_disk = median(
            (0..5)
                .map(|_| {
                    let started = Instant::now();
                    let repo = Repo::load(&root).unwrap();
                    let took = started.elapsed();
                    assert_eq!(repo.module_index(Path::new("stack")).resources.len(), count * per_file);
                    took
                })
                .collect(),
        );
        std::fs::remove_dir_all(&root).unwrap();
        let repo = Repo::from_files(files);
        let ns = lookup_ns(&repo, count, per_file);
        println!(
            "{count:>6} {:>9} {:>10.1} {:>10.0}ms {:>10.0}ms {:>8.0}ns",
            count * per_file,
            bytes as f64 / 1e6,
            in_memory.as_secs_f64() * 1e3,
            from_disk.as_secs_f64() * 1e3,
            ns
        );
    }
}
