//! The binary with the LLM agent on, against a scripted OpenAI-compatible server: a corpus scenario
//! no recipe covers reconciled end to end, the learned recipe taking the next one with no tokens,
//! and the same through `reconcile` and the store, listed by `kb recipes`. The call's built-in
//! recipe is switched off (`[recipes] disabled`), so it is one no recipe covers.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use driftback_agent::scripted::{Reply, ScriptedModel};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

/// The call whose recipe these tests switch off.
const CALL: &str = "ec2.amazonaws.com:ModifyNetworkInterfaceAttribute";

const MAIN_TF: &str = r#"resource "aws_network_interface" "core" {
  subnet_id         = "subnet-1"
  source_dest_check = false
}

resource "aws_network_interface" "edge" {
  subnet_id         = "subnet-1"
  source_dest_check = false
}
"#;

const STATE: &str = r#"{"version": 4, "resources": [
  {"mode": "managed", "type": "aws_network_interface", "name": "core", "instances": [{"attributes": {"id": "eni-0c0re", "source_dest_check": false}}]},
  {"mode": "managed", "type": "aws_network_interface", "name": "edge", "instances": [{"attributes": {"id": "eni-0edge", "source_dest_check": false}}]}
]}"#;

fn events(id: &str, interface: &str) -> String {
    json!({"Records": [{
        "eventVersion": "1.08",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/erin", "accountId": "123456789012", "userName": "erin"},
        "eventTime": "2024-10-28T12:15:02Z",
        "eventSource": "ec2.amazonaws.com",
        "eventName": "ModifyNetworkInterfaceAttribute",
        "awsRegion": "us-east-1",
        "sourceIPAddress": "203.0.113.87",
        "userAgent": "AWS Internal",
        "requestParameters": {"networkInterfaceId": interface, "sourceDestCheck": {"value": true}},
        "responseElements": {"requestId": "r", "_return": true},
        "eventID": id,
        "readOnly": false,
        "eventType": "AwsApiCall",
        "managementEvent": true,
        "recipientAccountId": "123456789012"
    }]})
    .to_string()
}

fn scenario(address: &str) -> String {
    format!(
        "project = \"net\"\ndescription = \"source/destination check turned back on in the console (the interface no longer routes for others)\"\ncategory = \"attribute\"\n\n[[expect.attr]]\naddress = \"{address}\"\npath = \"source_dest_check\"\nequals = true\n"
    )
}

/// What a model that gets it right says, for the network interface at `address`.
fn script(address: &str) -> Vec<Reply> {
    vec![
        Reply::call("read_hcl", json!({"address": address})),
        Reply::call("edit_hcl", json!({"address": address, "path": "source_dest_check", "value": true})),
        Reply::call("validate", json!({})),
        Reply::call(
            "finish",
            json!({"summary": "source/destination check on", "intent": "unknown", "motivation": "unknown", "confidence": 0.8}),
        ),
    ]
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn driftback(model: &ScriptedModel, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("DRIFTBACK_LLM_API_KEY", "scripted-key")
        .env("DRIFTBACK_AGENT__BASE_URL", model.base_url())
        .env("DRIFTBACK_AGENT__MODEL", "scripted")
        .env("DRIFTBACK_AGENT__TIMEOUT_SECS", "20")
        .env("DRIFTBACK_RECIPES__DISABLED", CALL)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn eval_reconciles_an_api_no_recipe_covers_and_the_learned_recipe_takes_the_next_with_zero_tokens() {
    let corpus = tempfile::tempdir().unwrap();
    let c = corpus.path();
    write(&c.join("projects/net/main.tf"), MAIN_TF);
    write(&c.join("projects/net/terraform.tfstate"), STATE);
    write(&c.join("scenarios/a-core-eni/scenario.toml"), &scenario("aws_network_interface.core"));
    write(&c.join("scenarios/a-core-eni/events.json"), &events("e-1", "eni-0c0re"));
    write(&c.join("scenarios/b-edge-eni/scenario.toml"), &scenario("aws_network_interface.edge"));
    write(&c.join("scenarios/b-edge-eni/events.json"), &events("e-2", "eni-0edge"));

    // Without a key the agent is off and the scenario is escalated with the reason, as before.
    let off = Command::new(BIN)
        .args(["eval"])
        .arg(c)
        .env("DRIFTBACK_RECIPES__DISABLED", CALL)
        .env_remove("DRIFTBACK_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(
        text(&off).contains("escalated: no recipe for ec2.amazonaws.com ModifyNetworkInterfaceAttribute"),
        "{}",
        text(&off)
    );
    assert!(text(&off).contains("0 passed, 2 failed"), "{}", text(&off));

    let model = ScriptedModel::start(script("aws_network_interface.core"));
    let json_path = c.join("results.json");
    let out = driftback(&model, &["eval", c.to_str().unwrap(), "--json", json_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("2 passed, 0 failed"), "{}", text(&out));
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let first = &results[0];
    assert_eq!(first["id"], "a-core-eni");
    assert!(first["tokens"].as_u64().unwrap() > 0, "{first}");
    assert_eq!(first["token_usage"]["rounds"], 4);
    assert_eq!(
        first["tokens"].as_u64().unwrap(),
        first["token_usage"]["prompt"].as_u64().unwrap() + first["token_usage"]["completion"].as_u64().unwrap()
    );
    let second = &results[1];
    assert_eq!(second["id"], "b-edge-eni");
    assert_eq!(second["tokens"], 0, "the learned recipe needs no LLM: {second}");
    assert_eq!(model.requests().len(), 4, "only the first scenario asked the model");
    assert!(model.authorizations().iter().all(|a| a == "Bearer scripted-key"));
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn reconcile_learns_into_the_store_and_kb_recipes_lists_the_recipe_with_its_counts() {
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    write(&r.join("main.tf"), MAIN_TF);
    write(&r.join("terraform.tfstate"), STATE);
    git(r, &["init", "-q", "-b", "main"]);
    git(r, &["add", "."]);
    git(r, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    let trail = tempfile::tempdir().unwrap();
    write(&trail.path().join("one.json"), &events("e-1", "eni-0c0re"));
    write(&trail.path().join("two.json"), &events("e-2", "eni-0edge"));

    let model = ScriptedModel::start(script("aws_network_interface.core"));
    let repo_arg = r.to_str().unwrap();
    let out = driftback(
        &model,
        &["reconcile", "--events", trail.path().join("one.json").to_str().unwrap(), "--repo", repo_arg],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("reconciled: 1"), "{}", text(&out));
    let branch = git(r, &["branch", "--list", "driftback/*", "--format=%(refname:short)"]);
    let diff = git(r, &["diff", "main", branch.trim()]);
    assert!(diff.contains("+  source_dest_check = true"), "{diff}");
    let message = git(r, &["log", "-1", "--format=%B", branch.trim()]);
    assert!(
        message.contains("learned recipe learned-ec2-modify-network-interface-attribute-aws-network-interface"),
        "{message}"
    );
    // The commit lists the edit with its proof: the member that sets it and how it was read.
    assert!(
        message.contains(
            "proof: aws_network_interface.core.source_dest_check = true <- ec2:ModifyNetworkInterfaceAttribute \
             sourceDestCheck.value = true (as recorded)"
        ),
        "{message}"
    );

    let listed = driftback(&model, &["kb", "recipes", "--repo", repo_arg]);
    assert!(listed.status.success(), "{}", text(&listed));
    let line = text(&listed)
        .lines()
        .find(|l| l.starts_with("learned-ec2-modify-network-interface-attribute-aws-network-interface"))
        .map(str::to_string);
    let line = line.unwrap_or_else(|| panic!("{}", text(&listed)));
    assert_eq!(line.split_whitespace().skip(1).take(2).collect::<Vec<_>>(), ["0", "0"], "{line}");

    // The next such change, on the other interface, is planned by the learned recipe: no request.
    let out = driftback(
        &model,
        &["reconcile", "--events", trail.path().join("two.json").to_str().unwrap(), "--repo", repo_arg],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("reconciled: 1"), "{}", text(&out));
    assert_eq!(model.requests().len(), 4);
    // The learned recipe's commit carries its proof too, checked on this use.
    let branches = git(r, &["branch", "--list", "driftback/*", "--format=%(refname:short)"]);
    let learned_commit = branches
        .lines()
        .map(|b| git(r, &["log", "-1", "--format=%B", b.trim()]))
        .find(|m| m.contains("aws_network_interface.edge"))
        .unwrap_or_else(|| panic!("no branch for the edge interface: {branches}"));
    assert!(
        learned_commit.contains(
            "proof: aws_network_interface.edge.source_dest_check = true <- ec2:ModifyNetworkInterfaceAttribute"
        ),
        "{learned_commit}"
    );
    let listed = text(&driftback(&model, &["kb", "recipes", "--repo", repo_arg]));
    let line = listed.lines().find(|l| l.starts_with("learned-ec2")).unwrap().to_string();
    assert_eq!(line.split_whitespace().skip(1).take(2).collect::<Vec<_>>(), ["1", "1"], "{line}");
    let toml = text(&driftback(&model, &["kb", "recipes", "--repo", repo_arg, "--toml"]));
    assert!(toml.contains("[[recipe]]") && toml.contains("from = \"sourceDestCheck.value\""), "{toml}");

    // What the agent stored is what `kb search --event` looks for: the same signature (resource
    // type located in the repository's state), so one entry, the learned recipe's, at similarity 1.
    for file in ["one.json", "two.json"] {
        let out = driftback(
            &model,
            &["kb", "search", "--event", trail.path().join(file).to_str().unwrap(), "--repo", repo_arg, "--json"],
        );
        assert!(out.status.success(), "{}", text(&out));
        let found: Value = serde_json::from_slice(&out.stdout).unwrap();
        let query = found[0]["query"].as_str().unwrap();
        assert!(
            query.contains("call:ec2:ModifyNetworkInterfaceAttribute") && query.contains("type:aws_network_interface"),
            "{query}"
        );
        let matches = found[0]["matches"].as_array().unwrap();
        assert_eq!(matches.len(), 1, "{found:#}");
        assert_eq!(matches[0]["entry"]["signature"], query, "{found:#}");
        assert!(matches[0]["similarity"].as_f64().unwrap() > 0.999, "{found:#}");
        assert!(matches[0]["entry"]["recipe_toml"].as_str().unwrap().contains("learned-ec2-modify-network-interface"));
    }
}

/// Every road passes through the security baseline: the model's edit turning source/destination
/// checking off on an interface that has it (EC2.180) is a claim the policy holds for a person,
/// never a branch.
#[test]
fn the_agents_weakening_is_held_for_a_person() {
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    write(&r.join("main.tf"), &MAIN_TF.replace("source_dest_check = false", "source_dest_check = true"));
    write(&r.join("terraform.tfstate"), &STATE.replace("\"source_dest_check\": false", "\"source_dest_check\": true"));
    git(r, &["init", "-q", "-b", "main"]);
    git(r, &["add", "."]);
    git(r, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    let trail = tempfile::tempdir().unwrap();
    let off = events("e-1", "eni-0c0re")
        .replace("\"sourceDestCheck\":{\"value\":true}", "\"sourceDestCheck\":{\"value\":false}");
    assert!(off.contains("\"value\":false"), "{off}");
    write(&trail.path().join("off.json"), &off);
    let mut replies = script("aws_network_interface.core");
    replies[1] = Reply::call(
        "edit_hcl",
        json!({"address": "aws_network_interface.core", "path": "source_dest_check", "value": false}),
    );
    let model = ScriptedModel::start(replies);
    let out = driftback(
        &model,
        &["reconcile", "--events", trail.path().join("off.json").to_str().unwrap(), "--repo", r.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("EC2.180"), "{}", text(&out));
    assert!(git(r, &["branch", "--list", "driftback/*"]).trim().is_empty(), "a branch was written: {}", text(&out));
}
