//! A production-style root calling four registry modules (VPC, RDS, security group, S3 bucket,
//! the bucket module twice), every resource inside a module, reconciles console changes at the
//! module calls' inputs: the instance class and backup retention, a parameter group entry (an
//! element of the `parameters` list of objects), the VPC's tags (`vpc_tags`, merged in the module),
//! a new ingress rule (a new element of `ingress_with_cidr_blocks`), and bucket versioning turned
//! on. Versioning suspended on the audit bucket weakens a control and is escalated with its id.
//!
//! Twice: from a checkout after `terraform init` (`.terraform/modules` with `modules.json`, no
//! registry reachable), through `driftback reconcile`; and from a fresh clone without `.terraform`
//! through the daemon (`driftback serve` on moto's SQS, the knowledge base on Postgres), the
//! modules fetched from a registry stand-in on loopback speaking the Module Registry Protocol,
//! named by a CLI configuration `host` block through `TF_CLI_CONFIG_FILE`.
//!
//! The serve leg runs through scripts/postgres.sh scripts/moto.sh; without them it says so and
//! passes, unless DRIFTBACK_REQUIRE_SERVICES is set.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

mod support;
use support::{
    Daemon, bare_remote_with, eventbridge, eventbridge_entries, free_port, git, moto_endpoint, queue_arn,
    queue_messages, remote_branches, route_cloudtrail_to_queue, sqs_client, wait_for,
};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");
const ACCOUNT: &str = "123456789012";
const TOKEN: &str = "registry-stand-in-token-41d2";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/registry_root")
}

/// The versions the stand-in lists for each module; the root's constraints pick the marked ones.
const LISTED: &[(&str, &[&str])] = &[
    ("vpc", &["5.0.0", "5.1.2", "6.0.0"]),     // ~> 5.1: 5.1.2
    ("rds", &["6.0.0", "6.1.0"]),              // 6.1.0
    ("security-group", &["5.1.0", "5.3.0"]),   // ~> 5.0: 5.3.0
    ("s3-bucket", &["4.1.2", "5.0.0-beta.1"]), // >= 4.0, < 5.0: 4.1.2
];

fn chosen(name: &str) -> &'static str {
    match name {
        "vpc" => "5.1.2",
        "rds" => "6.1.0",
        "security-group" => "5.3.0",
        _ => "4.1.2",
    }
}

#[derive(Clone)]
struct Shared {
    archives: Arc<Vec<(String, Vec<u8>)>>,
    requests: Arc<Mutex<Vec<String>>>,
}

/// A module registry on loopback: `versions`, `download` (204 with a relative `X-Terraform-Get`)
/// and the tar.gz packages it points at. The API wants the token; the packages do not.
struct Registry {
    requests: Arc<Mutex<Vec<String>>>,
    /// A CLI configuration whose `host` block sends `registry.test`'s modules here, with its token.
    cli_config: PathBuf,
    _dir: tempfile::TempDir,
}

fn tar_gz(dir: &Path) -> Vec<u8> {
    let out = tempfile::NamedTempFile::new().unwrap();
    let status = Command::new("tar").arg("-czf").arg(out.path()).arg("-C").arg(dir).arg(".").status().unwrap();
    assert!(status.success());
    std::fs::read(out.path()).unwrap()
}

async fn start_registry() -> Registry {
    let dir = tempfile::tempdir().unwrap();
    let mut archives = Vec::new();
    for (name, versions) in LISTED {
        for version in *versions {
            archives.push((format!("{name}-{version}.tar.gz"), tar_gz(&fixtures().join("modules").join(name))));
        }
    }
    let requests = Arc::new(Mutex::new(Vec::new()));
    let shared = Shared { archives: Arc::new(archives), requests: requests.clone() };
    let app = Router::new()
        .route("/v1/modules/{ns}/{name}/{provider}/versions", get(versions))
        .route("/v1/modules/{ns}/{name}/{provider}/{version}/download", get(download))
        .route("/archives/{file}", get(archive))
        .with_state(shared);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let cli_config = dir.path().join("terraform.rc");
    std::fs::write(
        &cli_config,
        format!(
            "host \"registry.test\" {{\n  services = {{\n    \"modules.v1\" = \"http://{addr}/v1/modules/\"\n  }}\n}}\n\ncredentials \"registry.test\" {{\n  token = \"{TOKEN}\"\n}}\n"
        ),
    )
    .unwrap();
    Registry { requests, cli_config, _dir: dir }
}

impl Registry {
    fn count(&self, prefix: &str) -> usize {
        self.requests.lock().unwrap().iter().filter(|r| r.starts_with(prefix)).count()
    }
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

fn listed(ns: &str, name: &str, provider: &str) -> Option<&'static [&'static str]> {
    LISTED.iter().find(|(n, _)| *n == name && ns == "acme" && provider == "aws").map(|(_, v)| *v)
}

async fn versions(
    State(shared): State<Shared>,
    UrlPath((ns, name, provider)): UrlPath<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    shared.requests.lock().unwrap().push(format!("versions {name}"));
    if !authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Some(list) = listed(&ns, &name, &provider) else { return StatusCode::NOT_FOUND.into_response() };
    let versions: Vec<Value> = list.iter().map(|v| json!({ "version": v })).collect();
    axum::Json(json!({ "modules": [{ "source": format!("{ns}/{name}/{provider}"), "versions": versions }] }))
        .into_response()
}

async fn download(
    State(shared): State<Shared>,
    UrlPath((ns, name, provider, version)): UrlPath<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    shared.requests.lock().unwrap().push(format!("download {name} {version}"));
    if !authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if !listed(&ns, &name, &provider).is_some_and(|l| l.contains(&version.as_str())) {
        return StatusCode::NOT_FOUND.into_response();
    }
    (StatusCode::NO_CONTENT, [("X-Terraform-Get", format!("/archives/{name}-{version}.tar.gz"))]).into_response()
}

async fn archive(State(shared): State<Shared>, UrlPath(file): UrlPath<String>) -> Response {
    shared.requests.lock().unwrap().push(format!("archive {file}"));
    match shared.archives.iter().find(|(name, _)| *name == file) {
        Some((_, bytes)) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The state after the last apply: every resource inside a module.
fn state() -> String {
    let tags = json!({"Environment": "prod", "Team": "platform"});
    let with = |extra: Value| {
        let mut t = tags.clone();
        t.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        t
    };
    let sg = "sg-0a1b2c3d4e5f60789";
    let resources = [
        (
            "module.vpc",
            "aws_vpc",
            json!({"id": "vpc-0f1e2d3c4b5a69788", "arn": format!("arn:aws:ec2:eu-west-1:{ACCOUNT}:vpc/vpc-0f1e2d3c4b5a69788"),
            "cidr_block": "10.20.0.0/16", "enable_dns_hostnames": true, "enable_dns_support": true, "instance_tenancy": "default",
            "tags": with(json!({"Name": "prod", "Tier": "network"})), "tags_all": with(json!({"Name": "prod", "Tier": "network"}))}),
        ),
        (
            "module.db",
            "aws_db_instance",
            json!({"id": "db-ABCDEFGHIJKLMNOPQRSTUVWXY1", "identifier": "orders",
            "arn": format!("arn:aws:rds:eu-west-1:{ACCOUNT}:db:orders"), "engine": "postgres", "engine_version": "16.3",
            "instance_class": "db.t3.medium", "allocated_storage": 50, "backup_retention_period": 7, "parameter_group_name": "orders",
            "storage_encrypted": true, "copy_tags_to_snapshot": true, "deletion_protection": false, "tags": tags, "tags_all": tags}),
        ),
        (
            "module.db",
            "aws_db_parameter_group",
            json!({"id": "orders", "name": "orders", "family": "postgres16",
            "arn": format!("arn:aws:rds:eu-west-1:{ACCOUNT}:pg:orders"),
            "parameter": [{"name": "log_min_duration_statement", "value": "1000", "apply_method": "immediate"},
                          {"name": "rds.force_ssl", "value": "1", "apply_method": "pending-reboot"}],
            "tags": tags, "tags_all": tags}),
        ),
        (
            "module.web_sg",
            "aws_security_group",
            json!({"id": sg, "arn": format!("arn:aws:ec2:eu-west-1:{ACCOUNT}:security-group/{sg}"),
            "name": "web", "description": "Security Group managed by Terraform", "vpc_id": "vpc-0f1e2d3c4b5a69788",
            "ingress": [{"from_port": 443, "to_port": 443, "protocol": "tcp", "cidr_blocks": ["0.0.0.0/0"], "description": "HTTPS",
                         "ipv6_cidr_blocks": [], "prefix_list_ids": [], "security_groups": [], "self": false}],
            "egress": [], "tags": {"Name": "web"}, "tags_all": {"Name": "web"}}),
        ),
        (
            "module.web_sg",
            "aws_security_group_rule",
            json!({"id": "sgrule-2611706045", "security_group_id": sg, "type": "ingress",
            "from_port": 443, "to_port": 443, "protocol": "tcp", "cidr_blocks": ["0.0.0.0/0"], "description": "HTTPS",
            "security_group_rule_id": "sgr-0aa11bb22cc33dd44"}),
        ),
        (
            "module.assets",
            "aws_s3_bucket",
            json!({"id": "acme-prod-assets", "bucket": "acme-prod-assets",
            "arn": "arn:aws:s3:::acme-prod-assets", "force_destroy": false, "tags": tags, "tags_all": tags}),
        ),
        (
            "module.assets",
            "aws_s3_bucket_versioning",
            json!({"id": "acme-prod-assets", "bucket": "acme-prod-assets",
            "versioning_configuration": [{"status": "Suspended", "mfa_delete": ""}]}),
        ),
        (
            "module.audit_logs",
            "aws_s3_bucket",
            json!({"id": "acme-prod-audit-logs", "bucket": "acme-prod-audit-logs",
            "arn": "arn:aws:s3:::acme-prod-audit-logs", "force_destroy": false, "tags": tags, "tags_all": tags}),
        ),
        (
            "module.audit_logs",
            "aws_s3_bucket_versioning",
            json!({"id": "acme-prod-audit-logs", "bucket": "acme-prod-audit-logs",
            "versioning_configuration": [{"status": "Enabled", "mfa_delete": ""}]}),
        ),
    ];
    let names = |rtype: &str| match rtype {
        "aws_security_group_rule" => "ingress_with_cidr_blocks",
        _ => "this",
    };
    let resources: Vec<Value> = resources
        .into_iter()
        .map(|(module, rtype, attrs)| {
            json!({"module": module, "mode": "managed", "type": rtype, "name": names(rtype),
                   "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                   "instances": [{"index_key": 0, "schema_version": 0, "attributes": attrs}]})
        })
        .collect();
    json!({"version": 4, "terraform_version": "1.9.5", "serial": 31, "lineage": "2b7c0f4e-registry-root",
           "outputs": {}, "resources": resources})
    .to_string()
}

fn record(n: u32, source: &str, name: &str, request: Value, response: Value) -> Value {
    json!({
        "eventVersion": "1.09",
        "userIdentity": {"type": "AssumedRole", "principalId": "AROAEXAMPLEOPS:maria@example.com",
            "arn": format!("arn:aws:sts::{ACCOUNT}:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/maria@example.com"),
            "accountId": ACCOUNT,
            "sessionContext": {"sessionIssuer": {"type": "Role", "principalId": "AROAEXAMPLEOPS",
                "arn": format!("arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Admin_0123456789abcdef"),
                "accountId": ACCOUNT, "userName": "AWSReservedSSO_Admin_0123456789abcdef"},
                "attributes": {"creationDate": "2026-11-20T09:00:00Z", "mfaAuthenticated": "false"}}},
        "eventTime": format!("2026-11-20T10:{:02}:00Z", n * 3),
        "eventSource": source,
        "eventName": name,
        "awsRegion": "eu-west-1",
        "sourceIPAddress": "203.0.113.24",
        "userAgent": "AWS Internal",
        "requestParameters": request,
        "responseElements": response,
        "requestID": format!("7e1d0c2b-0000-4000-8000-0000000001{n:02}"),
        "eventID": format!("c4a3b2a1-0000-4000-8000-0000000002{n:02}"),
        "readOnly": false,
        "eventType": "AwsApiCall",
        "managementEvent": true,
        "recipientAccountId": ACCOUNT,
        "eventCategory": "Management"
    })
}

/// The console changes: one per resource.
fn records() -> Vec<Value> {
    let sg = "sg-0a1b2c3d4e5f60789";
    vec![
        record(
            1,
            "rds.amazonaws.com",
            "ModifyDBInstance",
            json!({"dBInstanceIdentifier": "orders", "dBInstanceClass": "db.t3.large", "backupRetentionPeriod": 14, "applyImmediately": true}),
            json!({"dBInstanceIdentifier": "orders", "dBInstanceClass": "db.t3.medium"}),
        ),
        record(
            2,
            "rds.amazonaws.com",
            "ModifyDBParameterGroup",
            json!({"dBParameterGroupName": "orders", "parameters": [{"parameterName": "log_min_duration_statement", "parameterValue": "250", "applyMethod": "immediate"}]}),
            json!({"dBParameterGroupName": "orders"}),
        ),
        record(
            3,
            "ec2.amazonaws.com",
            "CreateTags",
            json!({"resourcesSet": {"items": [{"resourceId": "vpc-0f1e2d3c4b5a69788"}]}, "tagSet": {"items": [{"key": "CostCenter", "value": "cc-2044"}]}}),
            json!({"requestId": "b1", "_return": true}),
        ),
        record(
            4,
            "ec2.amazonaws.com",
            "AuthorizeSecurityGroupIngress",
            json!({"groupId": sg, "ipPermissions": {"items": [{"ipProtocol": "tcp", "fromPort": 8443, "toPort": 8443, "groups": {},
                "ipRanges": {"items": [{"cidrIp": "10.20.0.0/16", "description": "Health checks"}]}, "ipv6Ranges": {}, "prefixListIds": {}}]}}),
            json!({"requestId": "b2", "_return": true, "securityGroupRuleSet": {"items": [{"groupOwnerId": ACCOUNT, "groupId": sg,
                "securityGroupRuleId": "sgr-0ff11ee22dd33cc44", "isEgress": false, "ipProtocol": "tcp", "fromPort": 8443, "toPort": 8443,
                "cidrIpv4": "10.20.0.0/16", "description": "Health checks"}]}}),
        ),
        record(
            5,
            "s3.amazonaws.com",
            "PutBucketVersioning",
            json!({"bucketName": "acme-prod-assets", "Host": "acme-prod-assets.s3.eu-west-1.amazonaws.com", "versioning": "",
                "VersioningConfiguration": {"Status": "Enabled", "xmlns": "http://s3.amazonaws.com/doc/2006-03-01/"}}),
            Value::Null,
        ),
        record(
            6,
            "s3.amazonaws.com",
            "PutBucketVersioning",
            json!({"bucketName": "acme-prod-audit-logs", "Host": "acme-prod-audit-logs.s3.eu-west-1.amazonaws.com", "versioning": "",
                "VersioningConfiguration": {"Status": "Suspended", "xmlns": "http://s3.amazonaws.com/doc/2006-03-01/"}}),
            Value::Null,
        ),
        // Another person, later: a VPC setting the module hard-codes (it never sets it from an input).
        {
            let mut r = record(
                7,
                "ec2.amazonaws.com",
                "ModifyVpcAttribute",
                json!({"vpcId": "vpc-0f1e2d3c4b5a69788", "enableNetworkAddressUsageMetrics": {"value": true}}),
                json!({"requestId": "b3", "_return": true}),
            );
            r["userIdentity"] = json!({"type": "IAMUser", "principalId": "AIDAEXAMPLEDMITRI",
                "arn": format!("arn:aws:iam::{ACCOUNT}:user/dmitri"), "accountId": ACCOUNT, "userName": "dmitri"});
            r["eventTime"] = json!("2026-11-20T13:40:00Z");
            r
        },
    ]
}

/// The escalation of the setting no input carries names the call, its version and the resource.
fn assert_no_input_named(escalation: &str) {
    assert!(
        escalation.contains("module.vpc (source \"registry.test/acme/vpc/aws\", version \"~> 5.1\", main.tf:"),
        "{escalation}"
    );
    assert!(
        escalation.contains(
            "makes aws_vpc.this[0], and the module exposes no input for enable_network_address_usage_metrics"
        ),
        "{escalation}"
    );
}

/// The root's files: main.tf, the state, and a .gitignore that keeps `.terraform` out, as
/// repositories do.
fn root_files() -> Vec<(&'static str, String)> {
    vec![
        ("main.tf", std::fs::read_to_string(fixtures().join("root/main.tf")).unwrap()),
        ("terraform.tfstate", state()),
        (".gitignore", ".terraform/\n".to_string()),
    ]
}

/// What each branch changed, by resource: its files and diff.
fn branch_diffs(repo: &Path, base: &str) -> Vec<(String, String, String)> {
    git(repo, &["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"])
        .lines()
        .map(|b| {
            let files = git(repo, &["diff", "--name-only", base, b]);
            let diff = git(repo, &["diff", base, b]);
            (b.to_string(), files, diff)
        })
        .collect()
}

/// The edits every run must make, each on its resource's branch, in main.tf only.
fn assert_written_at_the_inputs(branches: &[(String, String, String)], log: &str) {
    let find = |part: &str| {
        branches.iter().find(|(b, _, _)| b.contains(part)).unwrap_or_else(|| {
            panic!("no branch for {part}: {:?}\n{log}", branches.iter().map(|b| &b.0).collect::<Vec<_>>())
        })
    };
    for (branch, files, diff) in branches {
        assert_eq!(files.trim(), "main.tf", "{branch} changes only the root's own file:\n{diff}");
        assert!(!diff.contains(".terraform"), "{branch}:\n{diff}");
    }
    let (_, _, db) = find("module.db.aws_db_instance.this");
    assert!(db.contains("+  instance_class          = \"db.t3.large\""), "{db}");
    assert!(db.contains("+  backup_retention_period = 14"), "{db}");
    let (_, _, pg) = find("module.db.aws_db_parameter_group.this");
    assert!(pg.contains("-      value = \"1000\"") && pg.contains("+      value = \"250\""), "{pg}");
    let (_, _, vpc) = find("module.vpc.aws_vpc.this");
    assert!(vpc.contains("CostCenter = \"cc-2044\""), "{vpc}");
    assert!(vpc.contains("vpc_tags"), "the VPC's own tags input: {vpc}");
    let (_, _, sg) = find("module.web_sg.");
    assert!(sg.contains("+      from_port   = 8443"), "a new element of the list: {sg}");
    assert!(sg.contains("+      cidr_blocks = \"10.20.0.0/16\""), "{sg}");
    assert!(sg.contains("+      description = \"Health checks\""), "{sg}");
    assert!(!sg.contains("resource \"aws_security_group_rule\""), "not a root rule beside the module's: {sg}");
    assert!(sg.contains("+  to = module.web_sg.aws_security_group_rule.ingress_with_cidr_blocks[1]"), "{sg}");
    assert!(sg.contains("+  id = \"sg-0a1b2c3d4e5f60789_ingress_tcp_8443_8443_10.20.0.0/16\""), "{sg}");
    let (_, _, assets) = find("module.assets.aws_s3_bucket_versioning.this");
    assert!(assets.contains("+  versioning = { enabled = true }"), "{assets}");
    assert!(branches.iter().all(|(b, _, _)| !b.contains("module.audit_logs")), "the weakening is not written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_after_init_reconciles_at_the_module_inputs_without_a_registry() {
    let registry = start_registry().await;
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    for (name, text) in root_files() {
        support::write_file(&repo.join(name), &text);
    }
    // .terraform/modules as terraform init leaves it: each package under its key, and the manifest.
    let mut entries = vec![json!({"Key": "", "Source": "", "Dir": "."})];
    for (key, name) in [
        ("vpc", "vpc"),
        ("db", "rds"),
        ("web_sg", "security-group"),
        ("assets", "s3-bucket"),
        ("audit_logs", "s3-bucket"),
    ] {
        let dir = repo.join(".terraform/modules").join(key);
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        let out = Command::new("cp").arg("-r").arg(fixtures().join("modules").join(name)).arg(&dir).status().unwrap();
        assert!(out.success());
        entries.push(json!({"Key": key, "Source": format!("registry.test/acme/{name}/aws"), "Version": chosen(name),
                            "Dir": format!(".terraform/modules/{key}")}));
    }
    support::write_file(&repo.join(".terraform/modules/modules.json"), &json!({"Modules": entries}).to_string());
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    assert!(git(&repo, &["ls-files"]).lines().all(|f| !f.starts_with(".terraform")));
    let events = work.path().join("events.json");
    std::fs::write(&events, json!({"Records": records()}).to_string()).unwrap();

    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let started = Instant::now();
    let out = Command::new(BIN)
        .args(["reconcile", "--events"])
        .arg(&events)
        .arg("--repo")
        .arg(&repo)
        .env("DRIFTBACK_MODULES__CACHE_DIR", work.path().join("cache"))
        .env("HOME", &home)
        // The registry is reachable, but a checkout after init must not need it.
        .env("TF_CLI_CONFIG_FILE", &registry.cli_config)
        .output()
        .unwrap();
    eprintln!("reconcile from a checkout after init: {:.2} s", started.elapsed().as_secs_f64());
    let text = support::output_text(&out);
    assert!(out.status.success(), "{text}");
    assert_eq!(registry.requests.lock().unwrap().len(), 0, "nothing fetched: {text}");

    let branches = branch_diffs(&repo, "main");
    assert_written_at_the_inputs(&branches, &text);
    let weakening = text
        .lines()
        .find(|l| l.contains("module.audit_logs.aws_s3_bucket_versioning.this"))
        .unwrap_or_else(|| panic!("the suspended versioning is escalated:\n{text}"));
    assert!(weakening.contains("S3.14"), "{weakening}");
    let hard_coded = text
        .lines()
        .find(|l| l.starts_with("  module.vpc.aws_vpc.this[0]: "))
        .unwrap_or_else(|| panic!("the hard-coded setting is escalated:\n{text}"));
    assert_no_input_named(hard_coded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_reconciles_from_a_clone_without_dot_terraform_fetching_from_the_registry() {
    let Some(endpoint) = moto_endpoint("registry root serve test") else { return };
    let Ok(database) = std::env::var("DATABASE_URL") else {
        assert!(
            std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_none(),
            "DRIFTBACK_REQUIRE_SERVICES is set but Postgres is not running: run through scripts/postgres.sh"
        );
        eprintln!("NOTICE: registry root serve test skipped: run through scripts/postgres.sh scripts/moto.sh");
        return;
    };
    let registry = start_registry().await;
    let root = tempfile::tempdir().unwrap();
    let files = root_files();
    let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let remote = bare_remote_with(root.path(), &files);
    let main_before = git(&remote, &["rev-parse", "main"]);
    let suffix = format!("{}-{}", std::process::id(), free_port());

    // A database of its own.
    use sqlx::Connection;
    let db = format!("registry_root_{}", std::process::id());
    let mut admin = sqlx::PgConnection::connect(&database).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{db}\""))).execute(&mut admin).await.unwrap();
    let store_url = format!("{}/{db}", database.rsplit_once('/').unwrap().0);

    let sqs = sqs_client(&endpoint).await;
    let queue_url =
        sqs.create_queue().queue_name(format!("registry-root-{suffix}")).send().await.unwrap().queue_url.unwrap();
    let http = reqwest::Client::new();
    route_cloudtrail_to_queue(&http, &endpoint, &format!("cloudtrail-{suffix}"), &queue_arn(&sqs, &queue_url).await)
        .await;
    let out = eventbridge(&http, &endpoint, "PutEvents", eventbridge_entries(&records())).await;
    assert_eq!(out["FailedEntryCount"].as_u64().unwrap_or(0), 0, "{out}");

    let workdir = root.path().join("work");
    let cache = root.path().join("modules-cache");
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let envs = vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", format!("127.0.0.1:{}", free_port())),
        ("DRIFTBACK_SERVE__POLL_MS", "100".to_string()),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "push".to_string()),
        ("DRIFTBACK_GROUP__QUIET_WINDOW_SECS", "1".to_string()),
        ("DRIFTBACK_STORE__URL", store_url.clone()),
        ("DRIFTBACK_MODULES__CACHE_DIR", cache.display().to_string()),
        ("TF_CLI_CONFIG_FILE", registry.cli_config.display().to_string()),
        ("HOME", home.display().to_string()),
    ];
    let started = Instant::now();
    let mut daemon = Daemon::start(root.path(), &envs, 1);
    let store_for_wait = store_url.clone();
    wait_for("seven change sets finished and an empty queue", &mut daemon, async || {
        let Ok(mut conn) = sqlx::PgConnection::connect(&store_for_wait).await else { return false };
        let finished: Result<(i64,), _> = sqlx::query_as("SELECT count(*) FROM change_sets").fetch_one(&mut conn).await;
        let _ = conn.close().await;
        let Ok(store) = driftback_store::Store::open(&store_for_wait, &Default::default()).await else { return false };
        let unfinished = store.unfinished_change_sets().await.map(|u| u.len()).unwrap_or(1);
        store.close().await;
        finished.is_ok_and(|(n,)| n >= 7) && unfinished == 0 && queue_messages(&sqs, &queue_url).await == 0
    })
    .await;
    eprintln!("serve from a clone without .terraform: seven change sets in {:.2} s", started.elapsed().as_secs_f64());
    let status = daemon.terminate();
    assert!(status.success(), "exit {status:?}:\n{}", daemon.log());
    let log = daemon.log();

    // Fetched from the registry, once per package; the clone has no .terraform.
    for name in ["vpc", "rds", "security-group", "s3-bucket"] {
        assert_eq!(registry.count(&format!("archive {name}-{}.tar.gz", chosen(name))), 1, "{name}: {log}");
    }
    assert_eq!(registry.count("archive "), 4, "one package per source and version: {log}");
    assert!(!workdir.join(".terraform").exists());
    assert!(std::fs::read_dir(&cache).unwrap().any(|_| true), "the packages are in the cache");

    assert_eq!(remote_branches(&remote).len(), 5, "{:?}\n{log}", remote_branches(&remote));
    let branches = branch_diffs(&remote, "main");
    assert_written_at_the_inputs(&branches, &log);
    assert_eq!(git(&remote, &["rev-parse", "main"]), main_before, "main is not touched");

    // The weakening is escalated with the control's id, in the store.
    let mut db_conn = sqlx::PgConnection::connect(&store_url).await.unwrap();
    let escalated: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT coalesce(address, resource_id, ''), rationale || ' ' || array_to_string(notes, ' ') FROM change_sets \
         WHERE status = 'escalated'",
    )
    .fetch_all(&mut db_conn)
    .await
    .unwrap();
    let audit = escalated
        .iter()
        .find(|(r, _)| r.contains("acme-prod-audit-logs") || r.contains("audit_logs"))
        .unwrap_or_else(|| panic!("{escalated:?}"));
    assert!(audit.1.as_deref().is_some_and(|r| r.contains("S3.14")), "{audit:?}");
    let vpc = escalated.iter().find(|(r, _)| r.contains("aws_vpc")).unwrap_or_else(|| panic!("{escalated:?}"));
    assert_no_input_named(vpc.1.as_deref().unwrap_or_default());
    db_conn.close().await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE \"{db}\" WITH (FORCE)")))
        .execute(&mut admin)
        .await
        .unwrap();
}
