//! `driftback stacks` as people run it: the listing (text and `--json`), `--read` on local
//! states and on moto's S3 (through `scripts/moto.sh`), and the errors that name the stack and
//! what to do: no such workspace, no such bucket, no credentials.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

fn write(root: &Path, files: &[(&str, String)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn state(lineage: &str, serial: u64, queues: &[&str]) -> String {
    let resources: Vec<Value> = queues
        .iter()
        .map(|q| {
            serde_json::json!({"mode": "managed", "type": "aws_sqs_queue", "name": q.replace('-', "_"),
                "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                "instances": [{"attributes": {"id": format!("https://sqs.eu-west-1.amazonaws.com/1/{q}"), "name": q}}]})
        })
        .collect();
    serde_json::json!({"version": 4, "serial": serial, "lineage": lineage, "resources": resources}).to_string()
}

/// Run `driftback stacks` with only the environment the test gives (no AWS or DRIFTBACK_ variables
/// from the caller), HOME in a scratch directory.
fn stacks(repo: &Path, config: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.arg("stacks").arg("--repo").arg(repo).args(args).env_clear();
    cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("HOME", home.path());
    cmd.env("AWS_EC2_METADATA_DISABLED", "true");
    // Empty AWS files: no profile, no credentials from the caller's machine.
    let (aws_config, aws_credentials) = (home.path().join("aws-config"), home.path().join("aws-credentials"));
    std::fs::write(&aws_config, "").unwrap();
    std::fs::write(&aws_credentials, "").unwrap();
    cmd.env("AWS_CONFIG_FILE", aws_config).env("AWS_SHARED_CREDENTIALS_FILE", aws_credentials);
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn lists_stacks_and_reads_local_states() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("svc/main.tf", "module \"q\" {\n  source = \"../modules/q\"\n}\n".into()),
            ("svc/terraform.tfstate", state("svc", 3, &["a", "b"])),
            ("svc/terraform.tfstate.d/blue/terraform.tfstate", state("svc-blue", 1, &["c"])),
            ("svc/blue.tfvars", "x = 1\n".into()),
            ("modules/q/main.tf", "resource \"aws_sqs_queue\" \"q\" {}\n".into()),
            ("modules/q/.terraform.lock.hcl", String::new()),
        ],
    );
    let out = stacks(dir.path(), None, &["--json"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = listing["stacks"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["svc"], "a module only svc calls is no stack: {listing}");
    let svc = &listing["stacks"][0];
    assert_eq!(svc["workspaces"][1]["name"], "blue");
    assert_eq!(svc["workspaces"][1]["tfvars"][0], "svc/blue.tfvars");
    assert_eq!(svc["workspaces"][1]["state"], "file svc/terraform.tfstate.d/blue/terraform.tfstate");

    let out = stacks(dir.path(), None, &["--read"], &[]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("svc  (svc, local backend; local state)"), "{shown}");
    assert!(shown.contains("2 resources, serial 3 lineage svc"), "{shown}");
    assert!(shown.contains("1 resources, serial 1 lineage svc-blue"), "{shown}");
}

#[test]
fn errors_name_the_stack_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("svc/main.tf", "resource \"aws_sqs_queue\" \"q\" {}\n".into()),
            ("svc/terraform.tfstate", state("svc", 3, &["a"])),
            (
                "net/main.tf",
                "terraform {\n  backend \"s3\" {\n    bucket = \"acme-state\"\n    key = \"net.tfstate\"\n    region = \"us-east-1\"\n  }\n}\n".into(),
            ),
            ("ops/main.tf", "terraform {\n  backend \"gcs\" {}\n}\n".into()),
            ("edge/main.tf", "terraform {\n  backend \"s3\" {\n    bucket = \"acme-state\"\n    key = \"edge.tfstate\"\n  }\n}\n".into()),
        ],
    );
    let config = dir.path().join("driftback.toml");
    std::fs::write(
        &config,
        "[[stack]]\npath = \"svc\"\n[[stack.workspace]]\nname = \"default\"\n[[stack.workspace]]\nname = \"green\"\ntfvars = [\"svc/green.tfvars\"]\n\n[[stack]]\npath = \"net\"\nsettings = { endpoints = { s3 = \"http://127.0.0.1:9\" }, use_path_style = true }\n",
    )
    .unwrap();
    let out = stacks(dir.path(), Some(&config), &["--read", "--json"], &[]);
    assert!(!out.status.success(), "a state that cannot be read fails the command");
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let stack = |name: &str| listing["stacks"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone();
    let svc = stack("svc");
    assert_eq!(svc["workspaces"][0]["resources"], 1);
    let green = svc["workspaces"][1]["error"].as_str().unwrap();
    assert!(green.contains("stack svc, workspace green") && green.contains("no such workspace"), "{green}");
    let net = stack("net")["workspaces"][0]["error"].as_str().unwrap().to_string();
    assert!(net.contains("stack net") && net.contains("no AWS credentials") && net.contains("AWS_PROFILE"), "{net}");
    let ops = stack("ops")["workspaces"][0]["error"].as_str().unwrap().to_string();
    assert!(ops.contains("stack ops") && ops.contains("\"gcs\" backend is not supported"), "{ops}");
    let edge = stack("edge")["workspaces"][0]["error"].as_str().unwrap().to_string();
    assert!(edge.contains("stack edge") && edge.contains("no region") && edge.contains("AWS_REGION"), "{edge}");
    let notes = listing["notes"].to_string();
    assert!(notes.contains("svc/green.tfvars does not exist"), "{notes}");
}

#[test]
fn reads_s3_states_through_moto() {
    let Ok(endpoint) = std::env::var("DRIFTBACK_TEST_MOTO_ENDPOINT") else {
        assert!(
            std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_none(),
            "DRIFTBACK_REQUIRE_SERVICES is set but moto is not running: run through scripts/moto.sh"
        );
        eprintln!(
            "NOTICE: S3 test of `driftback stacks` skipped: moto is not running (run `scripts/moto.sh cargo test`)"
        );
        return;
    };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let bucket = format!("cli-state-{}-{nanos}", std::process::id());
    // Create the bucket and the workspaces' objects with moto's REST API (path style).
    let put = |path: &str, body: String| {
        let status = Command::new("python3")
            .args([
                "-c",
                "import sys, urllib.request; r = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), method='PUT', headers={'Content-Type': 'application/json'}); urllib.request.urlopen(r)",
                &format!("{endpoint}/{path}"),
                &body,
            ])
            .status()
            .unwrap();
        assert!(status.success(), "PUT {path}");
    };
    put(&bucket, String::new());
    put(&format!("{bucket}/env:/prod/app.tfstate"), state("app-prod", 8, &["jobs-prod", "mail-prod"]));
    put(&format!("{bucket}/env:/staging/app.tfstate"), state("app-staging", 2, &["jobs-staging"]));
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("app/main.tf", "terraform {\n  backend \"s3\" {}\n}\n".into()),
            ("app/state.tfbackend", format!("bucket = \"{bucket}\"\nkey = \"app.tfstate\"\nregion = \"us-east-1\"\n")),
            ("app/prod.tfvars", "size = 3\n".into()),
        ],
    );
    let config = dir.path().join("driftback.toml");
    std::fs::write(
        &config,
        format!("[[stack]]\npath = \"app\"\nbackend_config = [\"app/state.tfbackend\"]\nsettings = {{ endpoints = {{ s3 = \"{endpoint}\" }}, use_path_style = true }}\n"),
    )
    .unwrap();
    let creds = [("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")];
    let out = stacks(dir.path(), Some(&config), &["--read"], &creds);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    // No workspace is configured: the bucket lists them; prod.tfvars is found by its name.
    assert!(
        shown.contains(&format!("prod         s3://{bucket}/env:/prod/app.tfstate (us-east-1) at {endpoint}")),
        "{shown}"
    );
    assert!(shown.contains("tfvars app/prod.tfvars  2 resources, etag"), "{shown}");
    assert!(shown.contains("1 resources, etag"), "{shown}");
    assert!(!shown.contains("testing"), "no credential is ever shown: {shown}");
    std::fs::write(
        dir.path().join("app/state.tfbackend"),
        "bucket = \"no-such-bucket-here\"\nkey = \"app.tfstate\"\nregion = \"us-east-1\"\n",
    )
    .unwrap();
    let out = stacks(dir.path(), Some(&config), &["--read"], &creds);
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(shown.contains("stack app") && shown.contains("\"no-such-bucket-here\" does not exist"), "{shown}");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `reconcile --stacks` on a repository of two root modules with local states: a change to the
/// staging workspace's queue lands on `driftback/app/staging/...`, in staging's variable file only.
#[test]
fn reconcile_routes_each_change_set_to_its_stack_and_workspace() {
    let out = reconcile_in_two_stacks(&["--stacks"]);
    assert!(!text(&out).contains("reading the repository as stacks, as serve does"), "{}", text(&out));
}

/// Without `--stacks`, a repository with no state file at its root is read as stacks, as `serve`
/// reads it: the same branch, in the same file.
#[test]
fn reconcile_finds_the_stacks_of_a_repository_without_a_state_file_at_its_root() {
    let out = reconcile_in_two_stacks(&[]);
    assert!(text(&out).contains("reading the repository as stacks, as serve does: there is no "), "{}", text(&out));
}

/// `reconcile` with `flags` on a repository of two root modules with local states (none at the
/// root), a change to the staging workspace's queue: checks where it lands, returns what was said.
fn reconcile_in_two_stacks(flags: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let queue_state = |lineage: &str, name: &str, region: &str| {
        let url = format!("https://sqs.{region}.amazonaws.com/111111111111/{name}");
        serde_json::json!({"version": 4, "serial": 1, "lineage": lineage, "resources": [{
            "module": "module.queue", "mode": "managed", "type": "aws_sqs_queue", "name": "this",
            "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
            "instances": [{"attributes": {"id": url, "url": url, "name": name,
                "arn": format!("arn:aws:sqs:{region}:111111111111:{name}"), "visibility_timeout_seconds": 30}}]}]})
        .to_string()
    };
    write(
        dir.path(),
        &[
            (
                "app/main.tf",
                "variable \"region\" {\n  type = string\n}\n\nvariable \"visibility_timeout\" {\n  type    = number\n  default = 30\n}\n\nprovider \"aws\" {\n  region = var.region\n}\n\nmodule \"queue\" {\n  source             = \"../modules/queue\"\n  name               = \"jobs-${terraform.workspace}\"\n  visibility_timeout = var.visibility_timeout\n}\n".into(),
            ),
            ("app/prod.tfvars", "region = \"eu-west-1\"\n".into()),
            ("app/staging.tfvars", "region = \"eu-central-1\"\n".into()),
            (
                "modules/queue/main.tf",
                "variable \"name\" {\n  type = string\n}\n\nvariable \"visibility_timeout\" {\n  type = number\n}\n\nresource \"aws_sqs_queue\" \"this\" {\n  name                       = var.name\n  visibility_timeout_seconds = var.visibility_timeout\n}\n".into(),
            ),
            ("app/terraform.tfstate.d/prod/terraform.tfstate", queue_state("p", "jobs-prod", "eu-west-1")),
            ("app/terraform.tfstate.d/staging/terraform.tfstate", queue_state("s", "jobs-staging", "eu-central-1")),
            ("network/main.tf", "resource \"aws_vpc\" \"main\" {\n  cidr_block = \"10.0.0.0/16\"\n}\n".into()),
            ("network/terraform.tfstate", state("n", 1, &[])),
        ],
    );
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "infra"]);
    let record = serde_json::json!({"Records": [{
        "eventVersion": "1.09", "eventID": "stacks-1", "eventTime": "2026-11-20T10:00:00Z",
        "eventSource": "sqs.amazonaws.com", "eventName": "SetQueueAttributes", "awsRegion": "eu-central-1",
        "recipientAccountId": "111111111111", "sourceIPAddress": "203.0.113.10", "userAgent": "aws-cli/2.15.30",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::111111111111:user/alice",
                         "accountId": "111111111111", "userName": "alice"},
        "requestParameters": {"queueUrl": "https://sqs.eu-central-1.amazonaws.com/111111111111/jobs-staging",
                              "attributes": {"VisibilityTimeout": "120"}},
        "responseElements": null, "readOnly": false, "eventType": "AwsApiCall", "managementEvent": true}]});
    let events = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(events.path(), record.to_string()).unwrap();
    let out = Command::new(BIN)
        .arg("reconcile")
        .args(flags)
        .arg("--events")
        .arg(events.path())
        .arg("--repo")
        .arg(dir.path())
        .env("DRIFTBACK_PUBLISH__MODE", "none")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("module.queue.aws_sqs_queue.this in app (staging)"), "{}", text(&out));
    let branches = git(dir.path(), &["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"]);
    let branch = branches.trim();
    assert!(branch.starts_with("driftback/app/staging/module.queue.aws_sqs_queue.this-"), "{branches}");
    assert_eq!(git(dir.path(), &["diff", "--name-only", "main", branch]).trim(), "app/staging.tfvars");
    assert!(git(dir.path(), &["diff", "main", branch]).contains("+visibility_timeout = 120"));
    out
}
