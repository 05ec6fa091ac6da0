//! The stacks layer on a generated monorepo: 20 stacks, 2,000 `.tf` files, 50,000 resources in
//! local states of about 100 MB in all.
//!
//! Run: `cargo bench -p driftback-stacks --bench monorepo` (release profile). Reports the time to
//! scan and discover the repository, to read and parse every state, to index every resource, the
//! time per lookup, and the process's peak memory.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use driftback_stacks::{Index, Query, Readers, StateReader, discover, locate, provider_placements, scan};

const STACKS: usize = 20;
const FILES_PER_STACK: usize = 100;
const RESOURCES_PER_STACK: usize = 2_500;

fn write(root: &Path) -> usize {
    let mut bytes = 0;
    for s in 0..STACKS {
        let dir = root.join(format!("stacks/s{s:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("backend.tf"),
            format!("terraform {{\n  backend \"local\" {{}}\n}}\n\nprovider \"aws\" {{\n  region = \"eu-west-1\"\n  allowed_account_ids = [\"{:012}\"]\n}}\n", 100 + s),
        )
        .unwrap();
        for f in 0..FILES_PER_STACK - 1 {
            let mut text = String::new();
            for r in 0..RESOURCES_PER_STACK / FILES_PER_STACK {
                text.push_str(&format!(
                    "resource \"aws_sqs_queue\" \"q{f}_{r}\" {{\n  name                       = \"s{s}-q{f}-{r}\"\n  visibility_timeout_seconds = 30\n  tags = {{\n    Team = \"platform\"\n  }}\n}}\n\n"
                ));
            }
            std::fs::write(dir.join(format!("f{f:03}.tf")), text).unwrap();
        }
        let mut resources = Vec::with_capacity(RESOURCES_PER_STACK);
        for r in 0..RESOURCES_PER_STACK {
            let name = format!("s{s}-q{}-{}", r / 25, r % 25);
            let account = format!("{:012}", 100 + s);
            resources.push(serde_json::json!({
                "mode": "managed", "type": "aws_sqs_queue", "name": format!("q{}_{}", r / 25, r % 25),
                "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                "instances": [{"schema_version": 0, "attributes": {
                    "id": format!("https://sqs.eu-west-1.amazonaws.com/{account}/{name}"),
                    "arn": format!("arn:aws:sqs:eu-west-1:{account}:{name}"),
                    "name": name, "url": format!("https://sqs.eu-west-1.amazonaws.com/{account}/{name}"),
                    "visibility_timeout_seconds": 30, "message_retention_seconds": 345600,
                    "policy": "x".repeat(1_500),
                    "tags": {"Team": "platform"}, "tags_all": {"Team": "platform"}}}]
            }));
        }
        let state = serde_json::json!({"version": 4, "terraform_version": "1.9.5", "serial": 1,
            "lineage": format!("s{s}"), "outputs": {}, "resources": resources});
        let text = serde_json::to_string(&state).unwrap();
        bytes += text.len();
        std::fs::write(dir.join("terraform.tfstate"), text).unwrap();
    }
    bytes
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = write(dir.path());
    println!(
        "generated: {STACKS} stacks, {} files, {} resources, states {:.1} MB",
        STACKS * FILES_PER_STACK,
        STACKS * RESOURCES_PER_STACK,
        bytes as f64 / 1e6
    );

    let start = Instant::now();
    let tree = scan(dir.path(), &[]).unwrap();
    let found = discover(&tree, &[]);
    println!("scan + discover: {:.0} ms ({} stacks)", start.elapsed().as_secs_f64() * 1e3, found.stacks.len());
    assert_eq!(found.stacks.len(), STACKS);

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let readers = Readers::new(dir.path());
    let start = Instant::now();
    let mut reads = Vec::new();
    for stack in &found.stacks {
        let location = locate(stack, "default").unwrap();
        reads.push((stack, runtime.block_on(readers.read(&location)).unwrap()));
    }
    let read_secs = start.elapsed().as_secs_f64();
    println!("read + parse states: {:.0} ms ({:.0} MB/s)", read_secs * 1e3, bytes as f64 / 1e6 / read_secs);

    let start = Instant::now();
    let mut index = Index::new();
    for (stack, read) in &reads {
        index.add(&stack.name, "default", read, &provider_placements(&tree.repo, stack, "default"));
    }
    println!("index: {:.0} ms ({} resources)", start.elapsed().as_secs_f64() * 1e3, index.len());

    let start = Instant::now();
    let n = 10_000;
    for i in 0..n {
        let name = format!("s{}-q{}-{}", i % STACKS, (i / 7) % 100, i % 25);
        black_box(index.lookup(&Query { id: &name, types: &["aws_sqs_queue"], ..Query::default() }));
    }
    println!("lookup: {:.2} µs each", start.elapsed().as_secs_f64() * 1e6 / n as f64);

    let start = Instant::now();
    let (stack, read) = &reads[3];
    index.add(&stack.name, "default", read, &provider_placements(&tree.repo, stack, "default"));
    println!("re-index one changed state (2,500 resources): {:.0} ms", start.elapsed().as_secs_f64() * 1e3);
    println!("peak memory: {:.0} MB", peak_rss_mb());
}
