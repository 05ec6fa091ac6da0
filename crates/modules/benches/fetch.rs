//! Module code for a root calling four modules (VPC from an archive URL, RDS and S3 bucket from
//! the registry, the RDS module calling the bucket module again, a security group from git),
//! served by the loopback registry stand-in of the tests:
//!
//! - cold: an empty cache, every package discovered, listed, downloaded, unpacked and parsed;
//! - warm: the cache filled (the daemon at a new base commit): versions listed again, packages
//!   read from the cache and parsed;
//! - manifest: a checkout after `terraform init`, read from `.terraform/modules/modules.json`.
//!
//! `cargo bench -p driftback-modules --bench fetch` prints the median of each, with the time to
//! load the root module alone for comparison.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use driftback_modules::{CliConfig, Fetcher, Settings, load};
use driftback_terraform::Repo;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let stand_in = support::start().await;
        let root = stand_in.root();
        let cli = || CliConfig::load(Some(&stand_in.cli_config), None, []).unwrap();

        let mut root_only = Vec::new();
        for _ in 0..20 {
            let started = Instant::now();
            let repo = Repo::load(root.path()).unwrap();
            root_only.push(started.elapsed());
            assert_eq!(repo.unresolved_module_calls().len(), 4);
        }

        let mut cold = Vec::new();
        let mut mounted = 0;
        for _ in 0..7 {
            let cache = tempfile::tempdir().unwrap();
            let fetcher = Fetcher::new(Settings::new(cache.path()), cli()).unwrap();
            let started = Instant::now();
            let mut repo = Repo::load(root.path()).unwrap();
            let loaded = load(Some(&fetcher), root.path(), &mut repo).await;
            cold.push(started.elapsed());
            assert!(loaded.failed.is_empty(), "{:?}", loaded.failed);
            mounted = loaded.mounted.len();
        }

        let cache = tempfile::tempdir().unwrap();
        let fetcher = Fetcher::new(Settings::new(cache.path()), cli()).unwrap();
        let mut repo = Repo::load(root.path()).unwrap();
        let first = load(Some(&fetcher), root.path(), &mut repo).await;
        assert!(first.failed.is_empty());
        let mut warm = Vec::new();
        let mut files = 0;
        for _ in 0..30 {
            // A new Fetcher per base commit, as a restarted daemon has: nothing in memory.
            let fetcher = Fetcher::new(Settings::new(cache.path()), cli()).unwrap();
            let started = Instant::now();
            let mut repo = Repo::load(root.path()).unwrap();
            let loaded = load(Some(&fetcher), root.path(), &mut repo).await;
            warm.push(started.elapsed());
            assert!(loaded.failed.is_empty());
            files = repo.files().count();
        }

        // Lay the packages out as terraform init does and read them from the manifest.
        let modules_dir = root.path().join(".terraform/modules");
        let mut entries = vec![serde_json::json!({ "Key": "", "Source": "", "Dir": "." })];
        for m in &first.mounted {
            copy_dir(&m.package, &modules_dir.join(&m.key));
            let dir = std::path::Path::new(".terraform/modules").join(&m.key).join(&m.subdir);
            let version = m.version.as_ref().filter(|_| m.source.starts_with("registry."));
            entries.push(serde_json::json!({ "Key": m.key, "Source": m.source, "Version": version, "Dir": dir }));
        }
        std::fs::write(modules_dir.join("modules.json"), serde_json::json!({ "Modules": entries }).to_string())
            .unwrap();
        let mut manifest = Vec::new();
        for _ in 0..30 {
            let started = Instant::now();
            let mut repo = Repo::load(root.path()).unwrap();
            let loaded = load(None, root.path(), &mut repo).await;
            manifest.push(started.elapsed());
            assert!(loaded.failed.is_empty() && loaded.from_manifest);
        }

        println!("module calls mounted: {mounted} (4 in the root, 1 nested); files indexed: {files}");
        println!("root module alone (Repo::load):            median {}", ms(median(root_only)));
        println!("cold: fetch + unpack + parse, empty cache: median {} (7 runs)", ms(median(cold)));
        println!("warm: versions listed, packages cached:    median {} (30 runs)", ms(median(warm)));
        println!("manifest: .terraform/modules/modules.json: median {} (30 runs)", ms(median(manifest)));
        println!(
            "registry requests: {} versions, {} downloads, {} archives",
            stand_in.count("versions"),
            stand_in.count("download"),
            stand_in.count("archive")
        );
    });
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}
