//! `driftback eval CORPUS`: run drift scenarios and judge them against their expectations.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use driftback_events::group;
use driftback_feed::Intake;
use driftback_terraform::eval::{Evaluator, effective_config, effective_config_in_state, value_at_path};
use driftback_terraform::patch::{values_equal, without_lifecycle};
use driftback_terraform::{Address, AttrPath, Repo, State};

use crate::config::Config;
use crate::driver::{Delivery, Driver, Modules, Status, Workspace, load_catalog};

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The corpus folder: projects/<name>/ and scenarios/<id>/.
    pub corpus: PathBuf,
    /// Write per-scenario results (pass, reason, edits, tokens, milliseconds) to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run only scenarios whose id contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Fetch the code of registry, git and archive module calls a project's checkout lacks, as
    /// `[modules]` says (a CLI configuration's `host` blocks may point at a loopback registry).
    /// Without it, eval reads only what `.terraform/modules/modules.json` records and stays
    /// offline.
    #[arg(long)]
    pub fetch_modules: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    project: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    category: String,
    #[serde(default)]
    expect: Expect,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(default)]
    no_patch: bool,
    #[serde(default = "yes")]
    unchanged_others: bool,
    #[serde(default)]
    decision: Option<String>,
    #[serde(default)]
    attr: Vec<ExpectAttr>,
    #[serde(default)]
    absent: Vec<ExpectAbsent>,
    #[serde(default)]
    import: Vec<ExpectImport>,
}

impl Default for Expect {
    fn default() -> Self {
        Expect { no_patch: false, unchanged_others: true, decision: None, attr: vec![], absent: vec![], import: vec![] }
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectAttr {
    address: String,
    path: String,
    #[serde(default)]
    equals: Option<toml::Value>,
    #[serde(default)]
    absent: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectAbsent {
    address: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectImport {
    #[serde(rename = "type")]
    rtype: String,
    id: String,
    #[serde(default)]
    address: Option<String>,
}

#[derive(Debug, Serialize)]
struct ScenarioResult {
    id: String,
    category: String,
    pass: bool,
    reason: String,
    edits: usize,
    tokens: u64,
    /// LLM tokens and rounds, when the agent ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    token_usage: Option<driftback_agent::TokenUsage>,
    milliseconds: u128,
    decisions: Vec<String>,
    /// What the branches would do that no reviewer may merge, whatever the scenario expects:
    /// remove a resource that did not drift, fail the provider schema, claim a reconciliation that
    /// leaves the drift. Any makes the scenario fail.
    dangerous: Vec<String>,
    /// What became of each change set, in order.
    change_sets: Vec<ChangeSetResult>,
}

/// One change set of a scenario, as the driver left it.
#[derive(Debug, Serialize)]
struct ChangeSetResult {
    id: String,
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<String>,
    label: String,
    /// The branch `reconcile` and `serve` commit a reconciled change set to.
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<String>,
    /// The files the change set changed, with their new text.
    files: std::collections::BTreeMap<String, String>,
}

pub async fn run(config: &Config, args: &Args) -> anyhow::Result<ExitCode> {
    let scenarios_dir = args.corpus.join("scenarios");
    let mut ids: Vec<PathBuf> = std::fs::read_dir(&scenarios_dir)
        .with_context(|| {
            format!("{} has no scenarios/ folder; expected CORPUS/projects and CORPUS/scenarios", args.corpus.display())
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("scenario.toml").is_file())
        .collect();
    ids.sort();
    // One driver, and so one knowledge base, for the run: a recipe learned in one scenario serves
    // the next. The scratch copy is each scenario's project held in memory; nothing is written.
    let mut driver = Driver::new(config, load_catalog(config, Path::new("."))?, None, Delivery::Scratch)?;
    let modules = if args.fetch_modules {
        Modules::new(config)?
    } else {
        let mut offline = config.clone();
        offline.modules.fetch = false;
        Modules::new(&offline)?
    };
    if let Some(reason) = driver.agent_off_reason() {
        tracing::info!("{reason}; change sets no recipe covers are escalated");
    }
    let mut results = Vec::new();
    for dir in ids {
        let id = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if args.filter.as_ref().is_some_and(|f| !id.contains(f.as_str())) {
            continue;
        }
        let started = Instant::now();
        driver.new_run();
        let mut result = match run_scenario(config, &args.corpus, &dir, &mut driver, &modules).await {
            Ok(r) => r,
            Err(e) => ScenarioResult {
                id: id.clone(),
                category: String::new(),
                pass: false,
                reason: format!("{e:#}"),
                edits: 0,
                tokens: 0,
                token_usage: None,
                milliseconds: 0,
                decisions: vec![],
                dangerous: vec![],
                change_sets: vec![],
            },
        };
        result.id = id;
        result.milliseconds = started.elapsed().as_millis();
        let verdict = if result.pass { "PASS" } else { "FAIL" };
        if result.pass && result.tokens > 0 {
            println!("{verdict} {} ({} ms, {} LLM tokens)", result.id, result.milliseconds, result.tokens);
        } else if result.pass {
            println!("{verdict} {} ({} ms)", result.id, result.milliseconds);
        } else {
            println!("{verdict} {}: {}", result.id, result.reason);
        }
        for danger in &result.dangerous {
            println!("DANGER {}: {danger}", result.id);
        }
        results.push(result);
    }
    let passed = results.iter().filter(|r| r.pass).count();
    let failed = results.len() - passed;
    let dangerous = results.iter().filter(|r| !r.dangerous.is_empty()).count();
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&results)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{passed} passed, {failed} failed, {dangerous} dangerous");
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn run_scenario(
    config: &Config,
    corpus: &Path,
    dir: &Path,
    driver: &mut Driver,
    modules: &Modules,
) -> anyhow::Result<ScenarioResult> {
    let toml_path = dir.join("scenario.toml");
    let scenario: Scenario =
        toml::from_str(&std::fs::read_to_string(&toml_path)?).with_context(|| format!("{}", toml_path.display()))?;
    let project = corpus.join("projects").join(&scenario.project);
    anyhow::ensure!(
        project.is_dir(),
        "project {:?} not found under {}",
        scenario.project,
        corpus.join("projects").display()
    );
    // The project folder is the infrastructure repository: its state locates, its policy decides.
    let mut workspace = Workspace::load(config, &project, None)?;
    modules.attach(&mut workspace, &project).await;
    let before = workspace.repo.clone();
    let kept: Vec<_> = Intake::read_file(&dir.join("events.json"), &config.filter)?.kept().cloned().collect();
    let mut edits = 0;
    let mut decisions = Vec::new();
    let mut escalations = Vec::new();
    let mut change_sets = Vec::new();
    let mut usage: Option<driftback_agent::TokenUsage> = None;
    // What the change sets name: their resources and the fields they set.
    let mut identified: Vec<String> = Vec::new();
    let mut claimed: Vec<(String, String, Value)> = Vec::new();
    let grouped = group(kept, &config.group);
    driver.set_batch(grouped.clone());
    for change_set in grouped {
        let driven = driver.drive(&mut workspace, &change_set).await?;
        let outcome = &driven.outcome;
        identified.push(driven.label.clone());
        identified.extend(outcome.addresses.iter().cloned());
        for change in &outcome.field_changes {
            identified.push(change.address.clone());
            if let (Status::Reconciled, Some(driftback_terraform::AttrValue::Literal(v))) =
                (&outcome.status, &change.after)
            {
                claimed.push((change.address.clone(), change.path.clone(), v.clone()));
            }
        }
        if let Some(agent) = &outcome.agent {
            let total = usage.get_or_insert_with(Default::default);
            total.prompt += agent.usage.prompt;
            total.completion += agent.usage.completion;
            total.rounds += agent.usage.rounds;
        }
        if let Some(d) = &outcome.decision {
            // An escalation from the patch step (a gate refused what the policy would write) is
            // the change set's final outcome: it counts as escalate (DESIGN.md, the corpus format).
            let held_at_patch = matches!(outcome.status, Status::Escalated(_))
                && matches!(
                    d.kind,
                    driftback_policy::DecisionKind::Reconcile | driftback_policy::DecisionKind::IgnoreChanges
                );
            decisions.push(if held_at_patch { "escalate".to_string() } else { d.kind.as_str().to_string() });
        }
        match &outcome.status {
            Status::Escalated(reason) | Status::Revert(reason) => escalations.push(reason.clone()),
            Status::Reconciled => edits += outcome.edits,
            Status::NoChange => {}
        }
        let reconciled = outcome.status == Status::Reconciled;
        change_sets.push(ChangeSetResult {
            id: change_set.id.clone(),
            status: driven.record.status.clone(),
            decision: outcome.decision.as_ref().map(|d| d.kind.as_str().to_string()),
            branch: reconciled
                .then(|| driftback_publish::branch_name(&config.publish.branch_prefix, &driven.label, &change_set.id)),
            label: driven.label,
            files: outcome.files.iter().map(|(p, t)| (p.display().to_string(), t.clone())).collect(),
        });
    }
    let reason = judge(&scenario.expect, &before, &workspace.repo, &workspace.state, &decisions, &escalations);
    let mut dangerous = codified_weakenings(&before, &workspace);
    dangerous.extend(dangers(&before, &workspace, &identified, &claimed));
    let reason = reason.or_else(|| (!dangerous.is_empty()).then(|| format!("dangerous: {}", dangerous.join("; "))));
    Ok(ScenarioResult {
        id: String::new(),
        category: scenario.category.clone(),
        pass: reason.is_none(),
        reason: reason.unwrap_or_else(|| scenario.description.clone()),
        dangerous,
        edits,
        tokens: usage.map(|u| u.total()).unwrap_or(0),
        token_usage: usage,
        milliseconds: 0,
        decisions,
        change_sets,
    })
}

/// `None` when every expectation holds, else the first that does not.
fn judge(
    expect: &Expect,
    before: &Repo,
    after: &Repo,
    state: &State,
    decisions: &[String],
    escalations: &[String],
) -> Option<String> {
    let why_not =
        || if escalations.is_empty() { String::new() } else { format!(" (escalated: {})", escalations.join("; ")) };
    let before_diagnostics = before.diagnostics();
    if let Some(d) = after.diagnostics().into_iter().find(|d| !before_diagnostics.iter().any(|b| b.file == d.file)) {
        return Some(format!("the patched project does not parse: {d}"));
    }
    if let Some((file, _)) = after.files().find(|(_, t)| t.contains("HIDDEN_DUE_TO_SECURITY_REASONS")) {
        return Some(format!("{} contains a redacted value", file.display()));
    }
    let changed: Vec<&PathBuf> = after.files().filter(|(p, t)| before.text(p) != Some(*t)).map(|(p, _)| p).collect();
    if expect.no_patch && !changed.is_empty() {
        return Some(format!(
            "expected no patch, but changed {}",
            changed.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(want) = &expect.decision {
        if !decisions.iter().any(|d| d == want) {
            return Some(format!("expected decision {want}, got [{}]{}", decisions.join(", "), why_not()));
        }
    }
    let mut named: Vec<String> = Vec::new();
    for a in &expect.attr {
        let address = match Address::parse(&a.address) {
            Ok(x) => x,
            Err(e) => return Some(e.to_string()),
        };
        named.push(address.to_string());
        let path = match AttrPath::parse(&a.path) {
            Ok(p) => p,
            Err(e) => return Some(e.to_string()),
        };
        // References to other resources compare by what the state says they are, as in `terraform plan`.
        let Some(config) = effective_config_in_state(after, &address, state) else {
            return Some(format!("{} is not in the configuration{}", a.address, why_not()));
        };
        let got = value_at_path(&config, &path);
        if a.absent {
            if let Some(v) = got {
                return Some(format!("{}.{} should be absent, is {v}{}", a.address, a.path, why_not()));
            }
            continue;
        }
        let Some(want) = a.equals.as_ref().and_then(|v| serde_json::to_value(v).ok()) else {
            return Some(format!("expectation on {}.{} has neither equals nor absent", a.address, a.path));
        };
        match got {
            Some(v) if values_equal(&v, &want) => {}
            Some(v) => return Some(format!("{}.{} is {v}, expected {want}{}", a.address, a.path, why_not())),
            None => return Some(format!("{}.{} is not set, expected {want}{}", a.address, a.path, why_not())),
        }
    }
    for a in &expect.absent {
        let Ok(address) = Address::parse(&a.address) else { return Some(format!("bad address {}", a.address)) };
        named.push(address.to_string());
        // A keyed instance is gone when its block is, or when count/for_each no longer produce it.
        if effective_config(after, &address).is_some() {
            return Some(format!("{} is still in the configuration{}", a.address, why_not()));
        }
    }
    for i in &expect.import {
        let found = imports(after).into_iter().find(|(to, id)| {
            id == &i.id
                && to.split('.').next_back().is_some()
                && Address::parse(to).is_ok_and(|a| a.rtype == i.rtype)
                && i.address.as_ref().is_none_or(|want| want == to)
        });
        match found {
            Some((to, _)) => named.push(to),
            None => return Some(format!("no import block of a {} with id {:?}{}", i.rtype, i.id, why_not())),
        }
    }
    if expect.unchanged_others {
        // One evaluator per version: each module instance's scope is computed once.
        let (was_ev, now_ev) = (Evaluator::new(before), Evaluator::new(after));
        for instance in &state.instances {
            let address = instance.address.to_string();
            if named.contains(&address) || instance.address.data {
                continue;
            }
            let was = without_lifecycle(was_ev.config(&instance.address));
            if was.is_none() {
                continue;
            }
            let now = without_lifecycle(now_ev.config(&instance.address));
            if was != now {
                return Some(format!("{address} changed too, but only the drifted resource should"));
            }
        }
    }
    None
}

/// What the scenario's branches, taken together, would do that must never be merged (besides a
/// codified security weakening, [`codified_weakenings`]):
/// - remove a managed resource none of the change sets names (it did not drift), or add a resource
///   instance none of them creates;
/// - add what the AWS provider's schema refuses, or an inline block beside the separate resources
///   that manage the same things (the next apply would revoke them) — the schema gate's checks;
/// - claim a field reconciled while the code, evaluated, still does not give it the calls' value.
fn dangers(
    before: &Repo,
    workspace: &Workspace,
    identified: &[String],
    claimed: &[(String, String, Value)],
) -> Vec<String> {
    let after = &workspace.repo;
    let (was_ev, now_ev) = (Evaluator::new(before), Evaluator::new(after));
    let mut out = Vec::new();
    for instance in &workspace.state.instances {
        let address = instance.address.to_string();
        let block = instance.address.without_key().to_string();
        // A change set names an instance, or a whole block without instances.
        let named = identified.iter().any(|i| *i == address || (*i == block && instance.address.key.is_none()));
        if instance.address.data || named {
            continue;
        }
        let Some(was) = was_ev.config(&instance.address) else { continue };
        if let Some(now) = now_ev.config(&instance.address) {
            // Blast radius: an instance no change set names (another key or index of the same
            // block, another module instance) keeps its configuration.
            if without_lifecycle(Some(was)) != without_lifecycle(Some(now)) {
                out.push(format!("changes {address}, which did not drift"));
            }
            continue;
        }
        // What cannot outlive a removed resource goes with it (a bucket's split resources).
        let text = was.to_string();
        let depends_on_removed = identified.iter().any(|i| {
            let block = Address::parse(i).map(|a| a.without_key().block_name()).unwrap_or_default();
            !block.is_empty() && text.contains(&format!("{block}.")) || text.contains(&format!("{block}["))
        });
        if !depends_on_removed {
            out.push(format!("removes {address}, which did not drift"));
        }
    }
    // A resource instance the code gains that no change set names: a block written in a module
    // that several calls share makes one in every call (a rule that opens the other cluster too).
    let existed = driftback_terraform::eval::instances(before);
    let imported: Vec<String> = imports(after).into_iter().map(|(to, _)| to).collect();
    for address in driftback_terraform::eval::instances(after) {
        let (text, block) = (address.to_string(), address.without_key().to_string());
        let named = identified.iter().chain(&imported).any(|i| *i == text || *i == block);
        if !existed.contains(&address) && !named {
            out.push(format!("adds {text}, which no change set creates"));
        }
    }
    let changed: Vec<PathBuf> =
        after.files().filter(|(p, t)| before.text(p) != Some(*t)).map(|(p, _)| p.clone()).collect();
    // Module code `terraform init` or the fetcher put under `.terraform/` is not the repository's:
    // git does not carry it, so an edit there is lost, and the next init undoes it.
    for path in changed.iter().filter(|p| p.components().any(|c| c.as_os_str() == ".terraform")) {
        out.push(format!("edits {}, module code under .terraform/ that git does not carry", path.display()));
    }
    for problem in driftback_terraform::gate::check(workspace.schema, before, after, &changed) {
        out.push(format!("fails the schema gate: {problem}"));
    }
    // The last value each change set claims for a field (a later change set may set it again).
    let mut last: Vec<&(String, String, Value)> = Vec::new();
    for claim in claimed.iter().rev() {
        if !last.iter().any(|l| l.0 == claim.0 && l.1 == claim.1) {
            last.push(claim);
        }
    }
    for (address, path, want) in last {
        // Plain values only: blocks and Terraform's own `lifecycle` are judged by the scenario.
        if want.is_object() || want.is_array() || path.starts_with("lifecycle") {
            continue;
        }
        let (Ok(parsed), Ok(attr)) = (Address::parse(address), AttrPath::parse(path)) else { continue };
        let config = effective_config_in_state(after, &parsed, &workspace.state);
        let got = config.as_ref().and_then(|c| value_at_path(c, &attr).or_else(|| through_documents(c, &attr)));
        if !got.as_ref().is_some_and(|g| values_equal(g, want)) {
            let shown = got.map(|g| g.to_string()).unwrap_or_else(|| "nothing".into());
            out.push(format!("claims {address}.{path} = {want}, but the code gives {shown}"));
        }
    }
    out
}

/// The value at `path`, entering JSON documents the code writes as text on the way (a member of
/// `redrive_policy`, a container definition's `image` inside `container_definitions`).
fn through_documents(config: &Value, path: &AttrPath) -> Option<Value> {
    let mut current = config.clone();
    for seg in &path.0 {
        if let Value::String(text) = &current {
            current = serde_json::from_str(text).ok()?;
        }
        current = match (seg, current) {
            (driftback_terraform::Seg::Key(k) | driftback_terraform::Seg::Name(k), Value::Object(map)) => {
                map.get(k)?.clone()
            }
            (driftback_terraform::Seg::Key(k) | driftback_terraform::Seg::Name(k), Value::Array(items))
                if items.len() == 1 =>
            {
                items[0].get(k)?.clone()
            }
            (driftback_terraform::Seg::Index(i), Value::Array(items)) => items.get(*i)?.clone(),
            _ => return None,
        };
    }
    (!current.is_null()).then_some(current)
}

/// The security controls the scenario's branches weaken (a value that fails a control the base
/// passed, judged by the same baseline the driver gates every patch with, on every instance): a
/// person decides that, so a branch that writes it is dangerous whatever the scenario expects.
fn codified_weakenings(before: &Repo, workspace: &Workspace) -> Vec<String> {
    crate::driver::security::weakenings(
        before,
        &workspace.repo,
        &workspace.state,
        workspace.schema,
        &workspace.policy.accepts,
    )
    .into_iter()
    .map(|w| format!("codifies a security weakening: {w}"))
    .collect()
}

/// `(to, id)` of every import block in the repository.
fn imports(repo: &Repo) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (path, text) in repo.files() {
        if path.extension().is_none_or(|e| e != "tf") {
            continue;
        }
        let Some(body) = repo.body(path) else { continue };
        for block in body.blocks().filter(|b| b.ident.as_str() == "import") {
            let to = block
                .body
                .get_attribute("to")
                .map(|a| driftback_terraform::edit::expr_text(text, &a.value).trim().to_string());
            let id =
                block.body.get_attribute("id").and_then(|a| driftback_terraform::patch::literal_value(text, &a.value));
            if let (Some(to), Some(Value::String(id))) = (to, id) {
                out.push((to, id));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const MAIN: &str = r#"resource "aws_security_group" "web" {
  name = "web"
}

resource "aws_security_group_rule" "https" {
  type              = "ingress"
  security_group_id = aws_security_group.web.id
  protocol          = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_blocks       = ["0.0.0.0/0"]
}

resource "aws_instance" "app" {
  ami           = "ami-1"
  instance_type = "t3.micro"
}
"#;

    fn workspace(dir: &Path) -> Workspace {
        let resource = |rtype: &str, name: &str, id: &str| {
            json!({"mode": "managed", "type": rtype, "name": name,
                   "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                   "instances": [{"schema_version": 0, "attributes": {"id": id}}]})
        };
        let state = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
            "resources": [resource("aws_security_group", "web", "sg-1"), resource("aws_security_group_rule", "https", "sgrule-1"),
                          resource("aws_instance", "app", "i-1")]});
        std::fs::write(dir.join("main.tf"), MAIN).unwrap();
        std::fs::write(dir.join("terraform.tfstate"), state.to_string()).unwrap();
        Workspace::load(&Config::default(), dir, None).unwrap()
    }

    #[test]
    fn a_branch_that_weakens_a_control_is_dangerous_an_ordinary_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = workspace(dir.path());
        let before = ws.repo.clone();
        // Opening SSH to the world on the group's rule: a control the base passed now fails.
        let open = MAIN.replace(
            "from_port         = 443\n  to_port           = 443",
            "from_port         = 22\n  to_port           = 22",
        );
        ws.repo.set_file(Path::new("main.tf"), open);
        let harms = codified_weakenings(&before, &ws);
        assert!(!harms.is_empty() && harms.iter().all(|h| h.contains("aws_security_group_rule.https")), "{harms:?}");
        // A bigger instance weakens nothing.
        ws.repo.set_file(Path::new("main.tf"), MAIN.replace("t3.micro", "t3.large"));
        assert!(codified_weakenings(&before, &ws).is_empty());
    }

    #[test]
    fn removals_revoking_inline_blocks_and_claims_the_code_does_not_keep_are_dangerous() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = workspace(dir.path());
        let before = ws.repo.clone();
        // Nothing changed: nothing dangerous.
        assert!(dangers(&before, &ws, &["aws_instance.app".into()], &[]).is_empty());

        // A branch that removes the instance nobody named, adds an inline rule beside the rule
        // resource (the next apply revokes it) and claims an instance type the code does not give.
        let patched = MAIN
            .replace("resource \"aws_instance\" \"app\" {\n  ami           = \"ami-1\"\n  instance_type = \"t3.micro\"\n}\n", "")
            .replace(
                "  name = \"web\"\n}",
                "  name = \"web\"\n\n  ingress {\n    from_port   = 22\n    to_port     = 22\n    protocol    = \"tcp\"\n    cidr_blocks = [\"10.0.0.0/8\"]\n  }\n}",
            );
        ws.repo.set_file(Path::new("main.tf"), patched);
        let found = dangers(
            &before,
            &ws,
            &["aws_security_group.web".into()],
            &[("aws_security_group.web".into(), "name".into(), json!("web-2"))],
        );
        let text = found.join("\n");
        assert!(text.contains("removes aws_instance.app, which did not drift"), "{text}");
        assert!(text.contains("fails the schema gate") && text.contains("aws_security_group_rule"), "{text}");
        assert!(text.contains("claims aws_security_group.web.name = \"web-2\", but the code gives \"web\""), "{text}");
        // The rule resource removed with its deleted group is not dangerous: it cannot outlive it.
        let only_instance =
            format!("resource \"aws_instance\"{}", MAIN.split("resource \"aws_instance\"").nth(1).unwrap());
        ws.repo.set_file(Path::new("main.tf"), only_instance);
        let found = dangers(&before, &ws, &["aws_security_group.web".into()], &[]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_resource_no_change_set_creates_is_dangerous_and_an_imported_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = workspace(dir.path());
        let before = ws.repo.clone();
        let rule = "\nresource \"aws_vpc_security_group_ingress_rule\" \"extra\" {\n  security_group_id = aws_security_group.web.id\n  cidr_ipv4         = \"10.40.0.0/16\"\n  ip_protocol       = \"tcp\"\n  from_port         = 5432\n  to_port           = 5432\n}\n";
        ws.repo.set_file(Path::new("main.tf"), format!("{MAIN}{rule}"));
        let found = dangers(&before, &ws, &["aws_security_group.web".into()], &[]).join("\n");
        assert!(
            found.contains("adds aws_vpc_security_group_ingress_rule.extra, which no change set creates"),
            "{found}"
        );
        // Named by a change set, or adopted with an import block: what the branch is for.
        assert!(dangers(&before, &ws, &["aws_vpc_security_group_ingress_rule.extra".into()], &[]).is_empty());
        let import = "\nimport {\n  to = aws_vpc_security_group_ingress_rule.extra\n  id = \"sgr-1\"\n}\n";
        ws.repo.set_file(Path::new("main.tf"), format!("{MAIN}{rule}{import}"));
        assert!(dangers(&before, &ws, &[], &[]).is_empty());
    }

    #[test]
    fn an_edit_of_module_code_under_dot_terraform_is_dangerous() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = workspace(dir.path());
        let module = Path::new(".terraform/modules/web/main.tf");
        ws.repo.set_file(module, "resource \"aws_instance\" \"this\" {\n  instance_type = \"t3.micro\"\n}\n".into());
        let before = ws.repo.clone();
        assert!(dangers(&before, &ws, &[], &[]).is_empty());
        ws.repo.set_file(module, "resource \"aws_instance\" \"this\" {\n  instance_type = \"t3.large\"\n}\n".into());
        let found = dangers(&before, &ws, &[], &[]).join("\n");
        assert!(found.contains("edits .terraform/modules/web/main.tf, module code under .terraform/"), "{found}");
    }

    #[test]
    fn a_branch_that_changes_an_instance_that_did_not_drift_is_dangerous() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = workspace(dir.path());
        let before = ws.repo.clone();
        // The group drifted; the branch also changes the instance nobody named.
        ws.repo.set_file(Path::new("main.tf"), MAIN.replace("t3.micro", "t3.large"));
        let found = dangers(&before, &ws, &["aws_security_group.web".into()], &[]).join("\n");
        assert!(found.contains("changes aws_instance.app, which did not drift"), "{found}");
        // Named by the change set: what the branch is for.
        assert!(dangers(&before, &ws, &["aws_instance.app".into()], &[]).is_empty());
    }
}
