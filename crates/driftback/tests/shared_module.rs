//! `driftback reconcile` on a repository of two root modules sharing a local module (`envs/stage`
//! and `envs/prod` both call `modules/web`, each with its own state): an ingress rule added in the
//! console to stage's load balancer group is written in `envs/stage`, as a rule resource of the
//! style the repository already uses on the module's `alb_security_group_id` output, with an
//! import block; `modules/` and `envs/prod` are untouched, so prod's next apply changes nothing.

use std::process::Command;

use serde_json::{Value, json};

mod support;
use support::{git, output_text, write_file};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");
const ACCOUNT: &str = "111111111111";

const MODULE: &str = r#"variable "name" {
  type = string
}

variable "vpc_id" {
  type = string
}

resource "aws_security_group" "alb" {
  name   = "${var.name}-alb"
  vpc_id = var.vpc_id
}

resource "aws_vpc_security_group_ingress_rule" "https" {
  security_group_id = aws_security_group.alb.id
  cidr_ipv4         = "0.0.0.0/0"
  from_port         = 443
  to_port           = 443
  ip_protocol       = "tcp"
}

output "alb_security_group_id" {
  value = aws_security_group.alb.id
}
"#;

fn root(env: &str) -> String {
    format!(
        "provider \"aws\" {{\n  region = \"eu-west-1\"\n}}\n\nmodule \"web\" {{\n  source = \"../../modules/web\"\n\n  name   = \"{env}\"\n  vpc_id = \"vpc-0{env}\"\n}}\n"
    )
}

fn state(env: &str, sg: &str) -> String {
    let resource = |rtype: &str, name: &str, attrs: Value| {
        json!({"module": "module.web", "mode": "managed", "type": rtype, "name": name,
               "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
               "instances": [{"schema_version": 0, "attributes": attrs}]})
    };
    json!({"version": 4, "serial": 3, "lineage": format!("web-{env}"), "resources": [
        resource("aws_security_group", "alb", json!({"id": sg, "name": format!("{env}-alb"), "vpc_id": format!("vpc-0{env}"),
            "arn": format!("arn:aws:ec2:eu-west-1:{ACCOUNT}:security-group/{sg}"), "tags": {}, "tags_all": {}})),
        resource("aws_vpc_security_group_ingress_rule", "https", json!({"id": format!("sgr-{env}443"),
            "security_group_id": sg, "cidr_ipv4": "0.0.0.0/0", "from_port": 443, "to_port": 443, "ip_protocol": "tcp"})),
    ]})
    .to_string()
}

#[test]
fn a_console_rule_on_stages_group_lands_in_envs_stage_on_the_modules_output() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let (stage_sg, prod_sg) = ("sg-0aaaa1111bbbb2222", "sg-0cccc3333dddd4444");
    for (path, text) in [
        ("modules/web/main.tf", MODULE.to_string()),
        ("envs/stage/main.tf", root("stage")),
        ("envs/stage/terraform.tfstate", state("stage", stage_sg)),
        ("envs/prod/main.tf", root("prod")),
        ("envs/prod/terraform.tfstate", state("prod", prod_sg)),
    ] {
        write_file(&repo.join(path), &text);
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "infra"]);
    let events = dir.path().join("events.json");
    let record = json!({
        "eventVersion": "1.09", "eventID": "0b5e2d8c-0000-4000-8000-000000000001", "eventTime": "2026-11-20T10:00:00Z",
        "eventSource": "ec2.amazonaws.com", "eventName": "AuthorizeSecurityGroupIngress", "awsRegion": "eu-west-1",
        "recipientAccountId": ACCOUNT, "sourceIPAddress": "203.0.113.10", "userAgent": "AWS Internal",
        "eventType": "AwsApiCall", "managementEvent": true, "readOnly": false, "requestID": "r-1",
        "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::{ACCOUNT}:user/alice"),
                         "accountId": ACCOUNT, "userName": "alice", "principalId": "AIDAALICE"},
        "requestParameters": {"groupId": stage_sg, "ipPermissions": {"items": [{"ipProtocol": "tcp", "fromPort": 8443,
            "toPort": 8443, "groups": {}, "ipRanges": {"items": [{"cidrIp": "10.30.0.0/16", "description": "Health checks"}]},
            "ipv6Ranges": {}, "prefixListIds": {}}]}},
        "responseElements": {"requestId": "r-1", "_return": true, "securityGroupRuleSet": {"items": [{
            "groupOwnerId": ACCOUNT, "groupId": stage_sg, "securityGroupRuleId": "sgr-0e1f2a3b4c5d6e7f8", "isEgress": false,
            "ipProtocol": "tcp", "fromPort": 8443, "toPort": 8443, "cidrIpv4": "10.30.0.0/16", "description": "Health checks"}]}}
    });
    std::fs::write(&events, json!({"Records": [record]}).to_string()).unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(BIN)
        .args(["reconcile", "--stacks", "--events"])
        .arg(&events)
        .arg("--repo")
        .arg(&repo)
        .env("HOME", &home)
        .env_remove("TF_CLI_CONFIG_FILE")
        .output()
        .unwrap();
    let text = output_text(&out);
    assert!(out.status.success(), "{text}");
    let branches = git(&repo, &["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"]);
    let branch = branches.lines().next().unwrap_or_else(|| panic!("no branch:\n{text}"));
    assert_eq!(branches.lines().count(), 1, "{branches}");
    assert!(branch.contains("stage"), "{branch}");
    let files = git(&repo, &["diff", "--name-only", "main", branch]);
    assert_eq!(files.trim(), "envs/stage/main.tf", "modules/ and envs/prod are untouched:\n{text}");
    let diff = git(&repo, &["diff", "main", branch]);
    assert!(diff.contains("+resource \"aws_vpc_security_group_ingress_rule\" "), "{diff}");
    assert!(diff.contains("+  security_group_id = module.web.alb_security_group_id"), "{diff}");
    assert!(diff.contains("+  cidr_ipv4         = \"10.30.0.0/16\""), "{diff}");
    assert!(diff.contains("+  id = \"sgr-0e1f2a3b4c5d6e7f8\""), "{diff}");
}
