//! Module code fetched from a registry stand-in on loopback (discovery overridden by a CLI
//! configuration `host` block), an archive URL and a git repository, or read from
//! `.terraform/modules/modules.json`, and indexed like local modules.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use driftback_modules::{CliConfig, Fetcher, ModuleError, Settings, load};
use driftback_terraform::patch::{self, Op};
use driftback_terraform::{Address, AttrPath, AttrValue, Repo, Seg};
use serde_json::json;

const INSIDE: &[&str] = &[
    "module.vpc.aws_vpc.this[0]",
    "module.vpc.aws_subnet.private[1]",
    "module.db.module.db_instance.aws_db_instance.this[0]",
    "module.db.module.logs.aws_s3_bucket.this[0]",
    "module.web_sg.aws_security_group.this[0]",
    "module.web_sg.aws_security_group_rule.ingress_with_cidr_blocks[0]",
    "module.assets.aws_s3_bucket.this[0]",
    "module.assets.aws_s3_bucket_versioning.this[0]",
];

fn fetcher(stand_in: &support::StandIn, cache: &Path) -> Fetcher {
    let cli = CliConfig::load(Some(&stand_in.cli_config), None, []).unwrap();
    Fetcher::new(Settings::new(cache), cli).unwrap()
}

fn config(repo: &Repo, address: &str) -> serde_json::Value {
    driftback_terraform::eval::effective_config(repo, &Address::parse(address).unwrap())
        .unwrap_or_else(|| panic!("{address} is not in the configuration"))
}

fn assert_indexed(repo: &Repo) {
    for address in INSIDE {
        let parsed = Address::parse(address).unwrap();
        let location = repo.find_resource(&parsed).unwrap_or_else(|| panic!("{address} has no block"));
        assert!(repo.is_external(&location.file), "{address} is in {}", location.file.display());
    }
    // The module inputs flow in as for a local module, through nested calls.
    let db = config(repo, "module.db.module.db_instance.aws_db_instance.this[0]");
    assert_eq!(db["instance_class"], json!("db.t3.micro"));
    assert_eq!(db["backup_retention_period"], json!(7));
    assert_eq!(db["tags"], json!({ "Environment": "prod" }));
    let vpc = config(repo, "module.vpc.aws_vpc.this[0]");
    assert_eq!(vpc["tags"], json!({ "Name": "prod", "Environment": "prod", "Tier": "network" }));
    let rule = config(repo, "module.web_sg.aws_security_group_rule.ingress_with_cidr_blocks[0]");
    assert_eq!((rule["from_port"].clone(), rule["cidr_blocks"].clone()), (json!(443), json!(["0.0.0.0/0"])));
    let versioning = config(repo, "module.assets.aws_s3_bucket_versioning.this[0]");
    assert_eq!(versioning["versioning_configuration"][0]["status"], json!("Enabled"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clone_without_dot_terraform_fetches_registry_git_and_archive_modules() {
    let stand_in = support::start().await;
    let repo_dir = stand_in.root();
    let cache = tempfile::tempdir().unwrap();
    let mut repo = Repo::load(repo_dir.path()).unwrap();
    assert_eq!(repo.unresolved_module_calls().len(), 4);
    let loaded = load(Some(&fetcher(&stand_in, cache.path())), repo_dir.path(), &mut repo).await;
    assert!(loaded.failed.is_empty(), "{:?}", loaded.failed.iter().map(ToString::to_string).collect::<Vec<_>>());
    assert!(!loaded.from_manifest);
    let versions: Vec<(&str, Option<&str>)> =
        loaded.mounted.iter().map(|m| (m.key.as_str(), m.version.as_deref())).collect();
    // `>= 3.0, < 5.0` and `~> 4.0` pick 4.1.2; the prerelease 5.0.0-beta.1 is never picked.
    assert!(versions.contains(&("assets", Some("4.1.2"))), "{versions:?}");
    assert!(versions.contains(&("db.logs", Some("4.1.2"))), "{versions:?}");
    assert!(versions.contains(&("db", Some("6.1.0"))), "{versions:?}");
    assert!(repo.unresolved_module_calls().is_empty());
    assert_indexed(&repo);
    // The git source is checked out at its tag, not at the branch's later commit.
    assert!(repo.files().all(|(p, _)| !p.ends_with("unreleased.tf")));
    assert_eq!(
        repo.module_dir("module.vpc"),
        Some(&PathBuf::from(".terraform/modules/vpc/modules/vpc")),
        "an archive's //subdir"
    );
    assert_eq!(stand_in.count("archive s3-bucket-4.1.2"), 1, "one package per source and version");

    // A second load (a new process, the same cache) downloads nothing: the registry is asked for
    // its versions only, and the git tag is not fetched again (the repository is gone).
    std::fs::remove_dir_all(stand_in.git_dir.join("security-group.git")).unwrap();
    let downloads = stand_in.count("download") + stand_in.count("archive");
    let mut again = Repo::load(repo_dir.path()).unwrap();
    let loaded = load(Some(&fetcher(&stand_in, cache.path())), repo_dir.path(), &mut again).await;
    assert!(loaded.failed.is_empty(), "{:?}", loaded.failed.iter().map(ToString::to_string).collect::<Vec<_>>());
    assert_eq!(stand_in.count("download") + stand_in.count("archive"), downloads);
    assert_indexed(&again);
    let leftovers: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".partial-"))
        .collect();
    assert!(leftovers.is_empty(), "staging directories are removed: {leftovers:?}");

    // An edit inside fetched code is refused; the repository's files are what patches write.
    let hard_coded = Address::parse("module.db.module.db_instance.aws_db_instance.this[0]").unwrap();
    let op = Op::Set {
        path: AttrPath(vec![Seg::Name("copy_tags_to_snapshot".into())]),
        value: AttrValue::Literal(json!(false)),
    };
    let err = patch::apply(&mut again, &hard_coded, &op).unwrap_err().to_string();
    assert!(err.contains("module code from outside the repository"), "{err}");
    // Said in the module's terms: the root's call, its version, the resource inside it, and that
    // no input carries the value (the module hard-codes it).
    assert!(err.contains("module.db (source \"registry.test/acme/rds/aws\", version \"6.1.0\", main.tf:16)"), "{err}");
    assert!(
        err.contains("makes module.db_instance.aws_db_instance.this[0], and the module exposes no input for copy_tags_to_snapshot"),
        "{err}"
    );
    // A value the module takes from an input is not said to have none, even where the edit
    // fails: the bucket inside the nested call reads var.force_destroy.
    let logs = Address::parse("module.db.module.logs.aws_s3_bucket.this[0]").unwrap();
    let op =
        Op::Set { path: AttrPath(vec![Seg::Name("force_destroy".into())]), value: AttrValue::Literal(json!(true)) };
    let err = patch::apply(&mut again, &logs, &op).unwrap_err().to_string();
    assert!(err.contains("module.db (source"), "{err}");
    assert!(!err.contains("exposes no input"), "force_destroy reads var.force_destroy: {err}");
    // A value the module takes from its inputs is written at the root's module call, through
    // both module layers.
    let op = Op::Set {
        path: AttrPath(vec![Seg::Name("instance_class".into())]),
        value: AttrValue::Literal(json!("db.t3.large")),
    };
    let applied = patch::apply(&mut again, &hard_coded, &op).unwrap();
    assert_eq!(applied.files, [PathBuf::from("main.tf")]);
    assert!(again.text(Path::new("main.tf")).unwrap().contains("instance_class          = \"db.t3.large\""));
    assert_eq!(
        config(&again, "module.db.module.db_instance.aws_db_instance.this[0]")["instance_class"],
        json!("db.t3.large")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_after_init_uses_modules_json_and_fetches_nothing() {
    let stand_in = support::start().await;
    let repo_dir = stand_in.root();
    // Lay out .terraform/modules as terraform init does, from a first fetch.
    let cache = tempfile::tempdir().unwrap();
    let mut fetched = Repo::load(repo_dir.path()).unwrap();
    let loaded = load(Some(&fetcher(&stand_in, cache.path())), repo_dir.path(), &mut fetched).await;
    assert!(loaded.failed.is_empty());
    let modules_dir = repo_dir.path().join(".terraform/modules");
    let mut entries = vec![json!({ "Key": "", "Source": "", "Dir": "." })];
    for m in &loaded.mounted {
        copy_dir(&m.package, &modules_dir.join(&m.key));
        let dir = Path::new(".terraform/modules").join(&m.key).join(&m.subdir);
        let version = m.version.as_ref().filter(|_| m.source.starts_with("registry."));
        entries.push(json!({ "Key": m.key, "Source": m.source, "Version": version, "Dir": dir }));
    }
    std::fs::write(modules_dir.join("modules.json"), json!({ "Modules": entries }).to_string()).unwrap();

    // No registry, no git: a CLI configuration pointing nowhere, the git repository gone.
    std::fs::remove_dir_all(stand_in.git_dir.join("security-group.git")).unwrap();
    let before = stand_in.requests.lock().unwrap().len();
    let nowhere = tempfile::tempdir().unwrap();
    let rc = nowhere.path().join("terraform.rc");
    std::fs::write(
        &rc,
        "host \"registry.test\" {\n  services = { \"modules.v1\" = \"http://127.0.0.1:9/v1/modules/\" }\n}\n",
    )
    .unwrap();
    let offline =
        Fetcher::new(Settings::new(nowhere.path().join("cache")), CliConfig::load(Some(&rc), None, []).unwrap())
            .unwrap();
    let mut repo = Repo::load(repo_dir.path()).unwrap();
    let loaded = load(Some(&offline), repo_dir.path(), &mut repo).await;
    assert!(loaded.from_manifest);
    assert!(loaded.failed.is_empty(), "{:?}", loaded.failed.iter().map(ToString::to_string).collect::<Vec<_>>());
    assert_indexed(&repo);
    assert_eq!(stand_in.requests.lock().unwrap().len(), before, "nothing fetched");
    assert!(!nowhere.path().join("cache").read_dir().unwrap().any(|_| true));

    // A call the manifest does not record is named, with what to do; its siblings still load.
    let main = repo_dir.path().join("main.tf");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(
        &main,
        format!(
            "{text}\nmodule \"extra\" {{\n  source  = \"registry.test/acme/rds/aws\"\n  version = \"~> 6.0\"\n}}\n"
        ),
    )
    .unwrap();
    let mut repo = Repo::load(repo_dir.path()).unwrap();
    let loaded = load(Some(&offline), repo_dir.path(), &mut repo).await;
    let failed: Vec<String> = loaded.failed.iter().map(ToString::to_string).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].starts_with("module.extra (main.tf:"), "{}", failed[0]);
    assert!(failed[0].contains("\"registry.test/acme/rds/aws\", version \"~> 6.0\""), "{}", failed[0]);
    assert!(failed[0].contains("run terraform init again"), "{}", failed[0]);
    assert_eq!(loaded.failed[0].key(), Some("extra"));
    assert_indexed(&repo);
}

fn copy_dir(from: &Path, to: &Path) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_that_cannot_be_fetched_names_the_call_its_source_and_version() {
    let stand_in = support::start().await;
    let repo_dir = tempfile::tempdir().unwrap();
    std::fs::write(
        repo_dir.path().join("main.tf"),
        "module \"old\" {\n  source  = \"registry.test/acme/s3-bucket/aws\"\n  version = \"~> 2.0\"\n}\n\nmodule \"missing\" {\n  source = \"registry.test/acme/nothing/aws\"\n}\n\nmodule \"slow\" {\n  source = \"registry.test/acme/slow/aws\"\n}\n\nmodule \"ok\" {\n  source  = \"registry.test/acme/s3-bucket/aws\"\n  version = \"4.0.0\"\n}\n",
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let cli = CliConfig::load(Some(&stand_in.cli_config), None, []).unwrap();
    let mut settings = Settings::new(cache.path());
    settings.fetch_timeout = Duration::from_secs(1);
    let fetcher = Fetcher::new(settings, cli).unwrap();
    let mut repo = Repo::load(repo_dir.path()).unwrap();
    let loaded = load(Some(&fetcher), repo_dir.path(), &mut repo).await;
    let failed: Vec<String> = loaded.failed.iter().map(ToString::to_string).collect();
    assert_eq!(failed.len(), 3, "{failed:?}");
    let by_key = |key: &str| failed.iter().find(|f| f.starts_with(&format!("module.{key} "))).unwrap().as_str();
    assert_eq!(
        by_key("old"),
        "module.old (main.tf:1), source \"registry.test/acme/s3-bucket/aws\", version \"~> 2.0\": the registry lists no version that the constraint \"~> 2.0\" allows (it lists 5.0.0-beta.1, 4.1.2, 4.0.0, 3.15.0)"
    );
    assert!(by_key("missing").contains("answered 404"), "{}", by_key("missing"));
    assert!(by_key("slow").contains("took longer than 1 s"), "{}", by_key("slow"));
    assert!(matches!(loaded.failed[0], ModuleError::Call { .. }));
    assert_eq!(loaded.mounted.len(), 1, "the call that can be fetched still is");

    // Without the token, the registry refuses and the error says where tokens come from, never
    // showing one.
    let anonymous =
        Fetcher::new(Settings::new(cache.path().join("other")), CliConfig::load(None, None, []).unwrap()).unwrap();
    let rc = cache.path().join("no-token.rc");
    let with_host = std::fs::read_to_string(&stand_in.cli_config).unwrap();
    std::fs::write(&rc, with_host.split("credentials").next().unwrap()).unwrap();
    let no_token =
        Fetcher::new(Settings::new(cache.path().join("third")), CliConfig::load(Some(&rc), None, []).unwrap()).unwrap();
    let err = no_token.fetch("registry.test/acme/s3-bucket/aws", Some("4.0.0")).await.unwrap_err().to_string();
    assert!(err.contains("401") && err.contains("TF_TOKEN_<host>"), "{err}");
    assert!(!err.contains(support::TOKEN));
    // With no host block, the registry is found by service discovery over HTTPS
    // (`/.well-known/terraform.json`); nothing answers on this loopback port.
    let err = anonymous.fetch("localhost:1/acme/s3-bucket/aws", None).await.unwrap_err().to_string();
    assert!(err.starts_with("https://localhost:1/.well-known/terraform.json: "), "{err}");

    // A package larger than the bound is refused.
    let mut small = Settings::new(cache.path().join("small"));
    small.max_package_bytes = 512;
    let bounded = Fetcher::new(small, CliConfig::load(Some(&stand_in.cli_config), None, []).unwrap()).unwrap();
    let err = bounded.fetch("registry.test/acme/rds/aws", Some("6.1.0")).await.unwrap_err().to_string();
    assert!(err.contains("larger than 512 bytes"), "{err}");
}
