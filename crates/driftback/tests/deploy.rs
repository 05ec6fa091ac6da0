//! The deployment kit (deploy/) against the code it deploys: the daemon's IAM policy grants exactly
//! the AWS calls the source makes, the Terraform module reads and fits the provider schema, and the
//! Kubernetes manifests agree with the daemon's configuration (the configuration loads, ports and
//! probe paths match). scripts/check-deploy.sh validates the compose file and the manifests against
//! their published JSON schemas.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use driftback_terraform::edit::{expr_text, label_str};
use driftback_terraform::patch::literal_value;
use driftback_terraform::{Repo, Schema, gate};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `DeleteMessageBatch` -> `delete_message_batch`, as the Rust SDK names its operation methods.
fn snake(op: &str) -> String {
    let mut out = String::new();
    for (i, c) in op.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Operations of one service in the call table (crates/recipes/data/aws-calls.tsv, from the AWS API models).
fn operations(table: &str, endpoint: &str) -> Vec<String> {
    let mut ops = Vec::new();
    let mut inside = false;
    for line in table.lines() {
        if let Some(section) = line.strip_prefix('@') {
            inside = section == endpoint;
        } else if inside && !line.starts_with('#') {
            if let Some(op) = line.split('\t').next().filter(|op| !op.is_empty()) {
                ops.push(op.to_string());
            }
        }
    }
    ops
}

/// S3 operations whose IAM action has another name (the Service Authorization Reference):
/// listing a bucket's objects is `s3:ListBucket`, reading an object's metadata `s3:GetObject`.
const S3_ACTIONS: &[(&str, &str)] =
    &[("ListObjectsV2", "ListBucket"), ("ListObjects", "ListBucket"), ("HeadObject", "GetObject")];

/// The IAM actions the source calls: every operation of the SQS, CloudTrail and S3 models whose
/// method the product's code (crates/*/src, in files that use that SDK) calls. Batch operations
/// are authorised by the action of the single call (SQS documents `DeleteMessageBatch` under
/// `sqs:DeleteMessage`).
fn actions_the_code_calls() -> BTreeSet<String> {
    let table = std::fs::read_to_string(root().join("crates/recipes/data/aws-calls.tsv")).unwrap();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            rust_sources(&src, &mut files);
        }
    }
    let sources: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
    let mut actions = BTreeSet::new();
    // Every AWS SDK client the workspace depends on, so a new one (S3 for remote state, say) cannot
    // be used without its grant: the SDK crate `aws-sdk-X` calls endpoint `X.amazonaws.com`, whose
    // IAM actions are `X:...`.
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let services: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("aws-sdk-"))
        .filter_map(|l| l.split(['=', ' ', '.']).next())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(services.contains(&"sqs") && services.contains(&"cloudtrail"), "{services:?}");
    for service in services {
        let (endpoint, sdk, prefix) = (format!("{service}.amazonaws.com"), format!("aws_sdk_{service}"), service);
        let ops = operations(&table, &endpoint);
        assert!(
            ops.len() > 10,
            "the call table has no operations for {endpoint} (aws-sdk-{service}): name its endpoint and IAM prefix here"
        );
        for op in ops {
            let call = format!(".{}()", snake(&op));
            if sources.iter().any(|s| s.contains(&sdk) && s.contains(&call)) {
                let action = op.strip_suffix("Batch").unwrap_or(&op);
                let action = match S3_ACTIONS.iter().find(|(o, _)| prefix == "s3" && *o == action) {
                    Some((_, renamed)) => renamed,
                    None => action,
                };
                actions.insert(format!("{prefix}:{action}"));
            }
        }
    }
    actions
}

/// Each statement of `data "aws_iam_policy_document" NAME` in FILE (plain and `dynamic` ones):
/// (actions, resources as written).
fn statements(repo: &Repo, file: &str, name: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let path = Path::new(file);
    let text = repo.text(path).unwrap();
    let body = repo.body(path).unwrap();
    let document = body
        .get_blocks("data")
        .find(|b| b.labels.iter().map(label_str).collect::<Vec<_>>() == ["aws_iam_policy_document", name])
        .unwrap_or_else(|| panic!("{file} has no aws_iam_policy_document.{name}"));
    let mut out = Vec::new();
    let plain = document.body.get_blocks("statement").map(|s| &s.body);
    let dynamic = document
        .body
        .get_blocks("dynamic")
        .filter(|d| d.labels.first().map(label_str) == Some("statement"))
        .flat_map(|d| d.body.get_blocks("content").map(|c| &c.body));
    for statement in plain.chain(dynamic) {
        let list = |key: &str| -> Vec<String> {
            let Some(attr) = statement.get_attribute(key) else { return vec![] };
            match literal_value(text, &attr.value) {
                Some(Value::Array(items)) => items.iter().map(|v| v.as_str().unwrap().to_string()).collect(),
                // An expression (a reference, a function): kept as written.
                _ => vec![expr_text(text, &attr.value).trim().to_string()],
            }
        };
        out.push((list("actions"), list("resources")));
    }
    out
}

/// Actions AWS authorises on `"*"` only (no resource-level permissions, per the Service
/// Authorization Reference): the one place a wildcard resource is right.
const WITHOUT_RESOURCE_LEVEL_PERMISSIONS: &[&str] = &["cloudtrail:LookupEvents"];

#[test]
fn the_daemon_role_grants_exactly_the_calls_the_code_makes() {
    let called = actions_the_code_calls();
    // What the daemon is known to call; if this changes, deploy/terraform/iam.tf must too.
    assert!(called.contains("sqs:ReceiveMessage") && called.contains("cloudtrail:LookupEvents"), "{called:?}");
    // The organisation trail's log files and the S3 backend's states.
    assert!(called.contains("s3:GetObject") && called.contains("s3:ListBucket"), "{called:?}");

    let repo = Repo::load(&root().join("deploy/terraform")).unwrap();
    let statements = statements(&repo, "iam.tf", "daemon");
    let mut granted = BTreeSet::new();
    for (actions, resources) in &statements {
        assert!(!resources.is_empty(), "a statement without resources: {actions:?}");
        for action in actions {
            assert!(!action.contains('*'), "wildcard action {action}");
            granted.insert(action.clone());
        }
        // A `*` ending an S3 object ARN under a named bucket (`s3:::BUCKET/PREFIX*`) limits the
        // grant to that bucket's objects: a named resource, not a wildcard.
        let objects_of_a_named_bucket = |r: &str| {
            r.strip_suffix("*\"]")
                .or_else(|| r.strip_suffix("*\""))
                .and_then(|head| head.rsplit_once(":s3:::"))
                .is_some_and(|(_, path)| {
                    path.contains('/') && !path.starts_with('*') && !path[..path.find('/').unwrap()].contains('*')
                })
        };
        if resources.iter().any(|r| r.contains('*') && !objects_of_a_named_bucket(r)) {
            assert!(
                actions.iter().all(|a| WITHOUT_RESOURCE_LEVEL_PERMISSIONS.contains(&a.as_str())),
                "{actions:?} granted on {resources:?}: these actions can be limited to named resources"
            );
        }
    }
    // Decrypting the queue's messages (or the trail's log files) when they are encrypted with a
    // customer key is SQS (or S3) calling KMS for the daemon: the one grant beyond the SDK calls,
    // and only on that key.
    let kms: Vec<_> = statements.iter().filter(|(a, _)| a.iter().any(|a| a.starts_with("kms:"))).collect();
    assert!(kms.iter().all(|(a, r)| a == &["kms:Decrypt"] && r == &["[statement.value]"]), "{kms:?}");
    granted.remove("kms:Decrypt");
    // The trail's log files are read under the trail's prefix of its bucket, and nowhere else.
    let trail: Vec<_> = statements.iter().filter(|(_, r)| r.iter().any(|r| r.contains("var.trail_prefix"))).collect();
    assert!(
        trail.len() == 1 && trail[0].0 == ["s3:GetObject"] && trail[0].1[0].contains(":s3:::${statement.value}/"),
        "{trail:?}"
    );
    // A backend's `assume_role` is assumed through aws-config's AssumeRoleProvider (STS on the
    // daemon's behalf, no STS client of ours): `sts:AssumeRole`, on the roles the operator lists.
    let assumes =
        std::fs::read_to_string(root().join("crates/stacks/src/read/s3.rs")).unwrap().contains("AssumeRoleProvider");
    let sts: Vec<_> = statements.iter().filter(|(a, _)| a.iter().any(|a| a.starts_with("sts:"))).collect();
    assert_eq!(
        sts.iter().map(|(a, r)| (a.clone(), r.clone())).collect::<Vec<_>>(),
        if assumes {
            vec![(vec!["sts:AssumeRole".to_string()], vec!["var.state_role_arns".to_string()])]
        } else {
            vec![]
        },
        "sts:AssumeRole is granted exactly when the state reader assumes roles, and only on var.state_role_arns"
    );
    granted.remove("sts:AssumeRole");
    assert_eq!(granted, called, "deploy/terraform/iam.tf grants differ from what the code calls");
}

#[test]
fn the_deploy_module_reads_and_fits_every_bundled_provider_schema() {
    // Each module, with the fewest resources it has (so a file not read is noticed).
    let modules = [
        ("deploy/terraform", 4),
        ("deploy/terraform/modules/forwarder", 4),
        ("deploy/terraform/modules/trail-notification", 1),
    ];
    for (dir, least) in modules {
        let repo = Repo::load(&root().join(dir)).unwrap();
        let files: Vec<PathBuf> = repo.files().map(|(p, _)| p.clone()).collect();
        assert!(files.iter().any(|f| f.ends_with("main.tf")), "{dir}: {files:?}");
        let resources: usize = files.iter().map(|f| repo.body(f).unwrap().get_blocks("resource").count()).sum();
        assert!(resources >= least, "{dir}: {resources} resources");
        for version in Schema::bundled_versions() {
            let schema = Schema::version(version).unwrap();
            let empty = Repo::from_files(BTreeMap::new());
            let problems = gate::check(schema, &empty, &repo, &files);
            assert!(problems.is_empty(), "{dir} against the AWS provider {version}: {problems:#?}");
        }
    }
}

/// The TOML inside the ConfigMap's `driftback.toml: |` literal block.
fn configmap_toml(yaml: &str) -> String {
    let mut lines = yaml.lines().skip_while(|l| !l.trim_start().starts_with("driftback.toml: |")).skip(1);
    let first = lines.clone().find(|l| !l.trim().is_empty()).unwrap();
    let indent = first.len() - first.trim_start().len();
    let mut out = String::new();
    for line in lines.by_ref() {
        if !line.trim().is_empty() && line.len() - line.trim_start().len() < indent {
            break;
        }
        out.push_str(line.get(indent..).unwrap_or(""));
        out.push('\n');
    }
    out
}

#[test]
fn the_kubernetes_manifests_agree_with_the_daemon() {
    let dir = root().join("deploy/kubernetes");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let deployment = read("deployment.yaml");

    // The configuration loads (unknown keys fail), with every DRIFTBACK_ variable the Deployment sets.
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("driftback.toml");
    std::fs::write(&config, configmap_toml(&read("configmap.yaml"))).unwrap();
    let mut command = Command::new(BIN);
    command.arg("--config").arg(&config).arg("config").env_remove("DRIFTBACK_CONFIG");
    let vars: Vec<&str> = deployment
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- name: "))
        .filter(|n| n.starts_with("DRIFTBACK_") && *n != "DRIFTBACK_CONFIG")
        .collect();
    assert!(vars.contains(&"DRIFTBACK_STORE__URL"), "{vars:?}");
    for var in &vars {
        let value = if *var == "DRIFTBACK_STORE__URL" { "postgres://kb:pw-4711@db/kb" } else { "json" };
        command.env(var, value);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "the ConfigMap's configuration: {}", String::from_utf8_lossy(&out.stderr));
    let effective = String::from_utf8(out.stdout).unwrap();
    assert!(!effective.contains("pw-4711"), "a password printed: {effective}");
    let effective: toml::Table = toml::from_str(&effective).unwrap();
    let listen = effective["serve"]["listen"].as_str().unwrap();
    let port = listen.rsplit(':').next().unwrap();
    assert!(deployment.contains(&format!("containerPort: {port}")), "the container port is not {port}");
    assert!(deployment.contains(&format!("prometheus.io/port: \"{port}\"")));
    assert!(read("service.yaml").contains(&format!("port: {port}")), "the Service does not expose {port}");
    // The probes ask paths the daemon serves.
    let ops = std::fs::read_to_string(root().join("crates/feed/src/ops.rs")).unwrap();
    for probe in ["livenessProbe", "readinessProbe"] {
        let at = deployment.find(probe).unwrap_or_else(|| panic!("no {probe}"));
        let path = deployment[at..].lines().find_map(|l| l.trim().strip_prefix("path: ")).unwrap();
        assert!(ops.contains(&format!(".route(\"{path}\"")), "{probe} asks {path}, which the daemon does not serve");
    }
    // Every file the kustomization lists exists, and every manifest but the example secret is listed.
    let kustomization = read("kustomization.yaml");
    let listed: BTreeSet<String> = kustomization
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter(|f| f.ends_with(".yaml"))
        .map(str::to_string)
        .collect();
    let present: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".yaml") && f != "kustomization.yaml" && f != "secret.example.yaml")
        .collect();
    assert_eq!(listed, present);
}

#[test]
fn the_image_health_check_probes_the_default_listen_address() {
    let dockerfile = std::fs::read_to_string(root().join("deploy/Dockerfile")).unwrap();
    let out = Command::new(BIN).arg("config").env_remove("DRIFTBACK_CONFIG").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let effective: toml::Table = toml::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let port = effective["serve"]["listen"].as_str().unwrap().rsplit(':').next().unwrap().to_string();
    assert!(dockerfile.contains(&format!("http://127.0.0.1:{port}/healthz")), "HEALTHCHECK does not probe {port}");
    assert!(dockerfile.contains(&format!("EXPOSE {port}")));
    assert!(dockerfile.contains("USER 65532"), "the image must not run as root");
}

/// A one-connection HTTP server answering STATUS; returns its URL.
fn answering(status: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/healthz", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut request = Vec::new();
        let mut chunk = [0u8; 256];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => request.extend_from_slice(&chunk[..n]),
            }
        }
        let _ = write!(stream, "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    });
    url
}

#[test]
fn probe_passes_on_2xx_and_fails_otherwise() {
    let out = Command::new(BIN).args(["probe", "--url", &answering("200 OK")]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = Command::new(BIN).args(["probe", "--url", &answering("503 Service Unavailable")]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("answered 503"), "{out:?}");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let out = Command::new(BIN).args(["probe", "--url", &format!("http://127.0.0.1:{port}/healthz")]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("connecting to 127.0.0.1"), "{out:?}");
}

#[test]
fn version_names_the_package_version_and_the_revision() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    let version = String::from_utf8(out.stdout).unwrap();
    assert!(version.starts_with(&format!("driftback {}", env!("CARGO_PKG_VERSION"))), "{version}");
    // Built from a git checkout (as CI's clone is): the revision follows, `(1a2b3c4)` or `(1a2b3c4-dirty)`.
    if root().join(".git").exists() {
        let revision = version.trim().rsplit_once(" (").and_then(|(_, r)| r.strip_suffix(')')).unwrap_or_default();
        let hash = revision.strip_suffix("-dirty").unwrap_or(revision);
        assert!(hash.len() >= 7 && hash.chars().all(|c| c.is_ascii_hexdigit()), "{version}");
    }
    // The image's version label is the package's.
    let dockerfile = std::fs::read_to_string(root().join("deploy/Dockerfile")).unwrap();
    assert!(
        dockerfile.contains(&format!("org.opencontainers.image.version=\"{}\"", env!("CARGO_PKG_VERSION"))),
        "deploy/Dockerfile's version label must be {}",
        env!("CARGO_PKG_VERSION")
    );
}

#[test]
fn the_rule_admits_only_aws_sources_and_the_queue_only_that_rule() {
    let repo = Repo::load(&root().join("deploy/terraform")).unwrap();
    let rule = driftback_terraform::Address::parse("aws_cloudwatch_event_rule.cloudtrail").unwrap();
    let config = driftback_terraform::eval::effective_config(&repo, &rule).unwrap();
    let pattern: Value = serde_json::from_str(config["event_pattern"].as_str().unwrap()).unwrap();
    // `events:PutEvents` callers cannot send a source beginning with `aws.`: nobody can forge a
    // console change into the queue through the bus.
    assert_eq!(pattern["source"], serde_json::json!([{"prefix": "aws."}]), "{pattern}");
    assert_eq!(pattern["detail-type"], serde_json::json!(["AWS API Call via CloudTrail"]), "{pattern}");

    // The queue accepts sends from that rule only (and from the trail bucket when one is given).
    let text = repo.text(Path::new("main.tf")).unwrap();
    let document = &text[text.find("data \"aws_iam_policy_document\" \"queue\"").unwrap()..];
    let document = &document[..document.find("\n}\n").unwrap()];
    assert_eq!(document.matches("variable = \"aws:SourceArn\"").count(), 2, "{document}");
    assert!(document.contains("values   = [aws_cloudwatch_event_rule.cloudtrail.arn]"), "{document}");
}

/// The files of the module in `dir` (relative to the repository), not those of its subdirectories.
fn module_files<'r>(repo: &'r Repo, dir: &Path) -> Vec<&'r PathBuf> {
    repo.files().map(|(p, _)| p).filter(|p| p.parent() == Some(dir)).collect()
}

/// The variables of the module in `dir`: name -> its default as a literal (`None`: required).
fn variables(repo: &Repo, dir: &Path) -> BTreeMap<String, Option<Value>> {
    let mut out = BTreeMap::new();
    for file in module_files(repo, dir) {
        let text = repo.text(file).unwrap();
        for block in repo.body(file).unwrap().get_blocks("variable") {
            let default = block.body.get_attribute("default").map(|a| literal_value(text, &a.value).unwrap());
            out.insert(label_str(&block.labels[0]).to_string(), default);
        }
    }
    out
}

/// The outputs the module in `dir` declares.
fn outputs(repo: &Repo, dir: &Path) -> BTreeSet<String> {
    module_files(repo, dir)
        .into_iter()
        .flat_map(|f| repo.body(f).unwrap().get_blocks("output").map(|b| label_str(&b.labels[0]).to_string()))
        .collect()
}

/// A module call: its name, the directory of the module it calls (relative to the repository)
/// and its arguments as written.
struct Call {
    name: String,
    dir: PathBuf,
    args: BTreeMap<String, String>,
}

/// The local module calls of the module in `dir`.
fn module_calls(repo: &Repo, dir: &Path) -> Vec<Call> {
    let mut out = Vec::new();
    for file in module_files(repo, dir) {
        let text = repo.text(file).unwrap();
        for block in repo.body(file).unwrap().get_blocks("module") {
            let mut args: BTreeMap<String, String> = block
                .body
                .attributes()
                .map(|a| (a.key.as_str().to_string(), expr_text(text, &a.value).trim().to_string()))
                .collect();
            let source = args.remove("source").unwrap();
            // `../..` resolved against the caller's directory, as Terraform resolves a local source.
            let mut called = dir.to_path_buf();
            for part in source.trim_matches('"').split('/') {
                match part {
                    ".." => assert!(called.pop() || called.as_os_str().is_empty(), "{source} leaves the kit"),
                    "." | "" => {}
                    part => called.push(part),
                }
            }
            for meta in ["providers", "count", "for_each", "depends_on", "version"] {
                args.remove(meta);
            }
            out.push(Call { name: label_str(&block.labels[0]).to_string(), dir: called, args });
        }
    }
    out
}

/// The `queue` block of `resource "aws_s3_bucket_notification" "trail"` in `file`: its `events`
/// (a literal) and its `filter_prefix` (as written); and the resource's `count`, as written.
fn trail_notification(repo: &Repo, file: &Path) -> (Value, String, Option<String>) {
    let text = repo.text(file).unwrap();
    let resource = repo
        .body(file)
        .unwrap()
        .get_blocks("resource")
        .find(|b| b.labels.iter().map(label_str).collect::<Vec<_>>() == ["aws_s3_bucket_notification", "trail"])
        .unwrap_or_else(|| panic!("{} has no aws_s3_bucket_notification.trail", file.display()));
    let count = resource.body.get_attribute("count").map(|a| expr_text(text, &a.value).trim().to_string());
    let queue = resource.body.get_blocks("queue").next().unwrap();
    let events = literal_value(text, &queue.body.get_attribute("events").unwrap().value).unwrap();
    let prefix = expr_text(text, &queue.body.get_attribute("filter_prefix").unwrap().value).trim().to_string();
    (events, prefix, count)
}

#[test]
fn every_example_calls_its_modules_with_their_variables_and_outputs() {
    let kit = root().join("deploy/terraform");
    let mut calls = 0;
    for entry in std::fs::read_dir(kit.join("examples")).unwrap() {
        let dir = Path::new("examples").join(entry.unwrap().file_name());
        let repo = Repo::load_root_module(&kit, &dir).unwrap();
        for call in module_calls(&repo, &dir) {
            calls += 1;
            let (name, called) = (&call.name, call.dir.display());
            let declared = variables(&repo, &call.dir);
            assert!(!declared.is_empty(), "{}: module {name} calls {called}, which was not read", dir.display());
            for arg in call.args.keys() {
                assert!(
                    declared.contains_key(arg),
                    "{}: module {name} sets {arg}, which {called} does not declare",
                    dir.display()
                );
            }
            for (variable, default) in &declared {
                assert!(
                    default.is_some() || call.args.contains_key(variable),
                    "{}: module {name} does not set {variable}, which {called} requires",
                    dir.display()
                );
            }
            // `module.OTHER.OUTPUT` in an argument: OTHER's module declares OUTPUT.
            let others = module_calls(&repo, &dir);
            for value in call.args.values() {
                for reference in value.split("module.").skip(1) {
                    let mut parts = reference.split(|c: char| !(c.is_alphanumeric() || c == '_'));
                    let (other, output) = (parts.next().unwrap(), parts.next().unwrap());
                    let other = others.iter().find(|c| c.name == other).unwrap_or_else(|| panic!("no module {other}"));
                    assert!(
                        outputs(&repo, &other.dir).contains(output),
                        "{}: module {name} reads module.{}.{output}, which {} does not output",
                        dir.display(),
                        other.name,
                        other.dir.display()
                    );
                }
            }
        }
    }
    assert!(calls >= 3, "{calls} module calls in the examples");
}

#[test]
fn the_trail_notification_module_notifies_the_main_modules_queue_from_another_account() {
    let kit = root().join("deploy/terraform");
    let example = Path::new("examples/organisation");
    let repo = Repo::load_root_module(&kit, example).unwrap();
    let module = Path::new("modules/trail-notification");

    // The same notification the main module makes for a bucket of its own account: new objects
    // under the trail's prefix, which the feed reads (it ignores other S3 events).
    let (events, prefix, count) = trail_notification(&repo, &module.join("main.tf"));
    let (main_events, main_prefix, main_count) = trail_notification(&repo, Path::new("main.tf"));
    assert_eq!(events, main_events);
    let events: Vec<&str> = events.as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert!(!events.is_empty() && events.iter().all(|e| e.starts_with("s3:ObjectCreated:")), "{events:?}");
    let feed = std::fs::read_to_string(root().join("crates/feed/src/trail.rs")).unwrap();
    assert!(feed.contains("starts_with(\"ObjectCreated:\")"), "the feed no longer reads ObjectCreated events only");
    assert_eq!((prefix.as_str(), main_prefix.as_str()), ("var.prefix", "var.trail_prefix"));
    let (ours, main) = (variables(&repo, module), variables(&repo, Path::new("")));
    assert_eq!(ours["prefix"], main["trail_prefix"], "the prefixes' defaults differ");
    assert_eq!(count, None, "the module always notifies");
    // The main module leaves the bucket's notification to this module when the bucket is in
    // another account (S3 keeps one configuration per bucket: two writers would undo each other).
    let main_count = main_count.unwrap();
    assert!(main_count.contains("var.trail_bucket_account_id == null"), "{main_count}");

    // The organisation example wires them: the module gets the main module's queue and bucket,
    // and the main module knows the bucket's account (its queue accepts that account's bucket).
    let calls = module_calls(&repo, example);
    let notify = calls.iter().find(|c| c.dir == module).expect("the example calls modules/trail-notification");
    let driftback = calls.iter().find(|c| c.dir.as_os_str().is_empty()).expect("the example calls the main module");
    assert_eq!(notify.args["queue_arn"], format!("module.{}.queue_arn", driftback.name));
    assert_eq!(notify.args["bucket_name"], driftback.args["trail_bucket_name"]);
    assert!(driftback.args.contains_key("trail_bucket_account_id"), "{:?}", driftback.args);
    assert!(notify.args.get("prefix").is_none_or(|p| driftback.args.get("trail_prefix") == Some(p)));
}
