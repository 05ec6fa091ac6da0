//! A hostile model on loopback, speaking the real chat-completions wire format, on a Route 53 TTL
//! change no recipe covers: every edit it tries that the calls do not prove is refused, and nothing
//! unproven reaches a plan (the commit) or a learned recipe.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use driftback_agent::scripted::{Reply, ScriptedModel};
use driftback_agent::{
    AgentOutcome, AgentResult, Footprint, InMemoryKnowledgeBase, KnowledgeBase, Learned, Settings, learn,
    learned_catalog, reconcile, validate,
};
use driftback_events::{ChangeSet, GroupConfig, group, normalize};
use driftback_recipes::{Catalog, Plan, PlanError, ResourceChange};
use driftback_terraform::{Address, AttrPath, AttrValue, BlockSpec, Op, Repo, Schema, State};

const ZONE: &str = "Z0123456789ABCDEFGHIJ";

const DNS_TF: &str = r#"resource "aws_route53_zone" "main" {
  name = "example.com"
}

resource "aws_route53_record" "www" {
  zone_id = aws_route53_zone.main.zone_id
  name    = "www.example.com"
  type    = "CNAME"
  ttl     = 300
  records = ["lb.example.com"]
}

resource "aws_route53_record" "api" {
  zone_id = aws_route53_zone.main.zone_id
  name    = "api.example.com"
  type    = "CNAME"
  ttl     = 300
  records = ["api-lb.example.com"]
}

resource "aws_kms_key" "logs" {
  description = "logs"
}

resource "aws_ecs_service" "web" {
  name          = "web"
  cluster       = "main"
  desired_count = 2
}

resource "aws_sns_topic" "alerts" {
  name = "alerts"
}
"#;

fn state() -> State {
    let record = |name: &str, host: &str| {
        json!({"mode": "managed", "type": "aws_route53_record", "name": name, "instances": [{"attributes": {
            "id": format!("{ZONE}_{host}.example.com_CNAME"), "zone_id": ZONE, "name": format!("{host}.example.com"),
            "type": "CNAME", "ttl": 300, "records": [format!("{host}-lb.example.com")], "set_identifier": ""}}]})
    };
    let text = json!({"version": 4, "resources": [
        {"mode": "managed", "type": "aws_route53_zone", "name": "main", "instances": [{"attributes": {"id": ZONE, "zone_id": ZONE, "name": "example.com"}}]},
        record("www", "www"),
        record("api", "api"),
        {"mode": "managed", "type": "aws_kms_key", "name": "logs", "instances": [{"attributes": {"id": "1234abcd-12ab-34cd-56ef-1234567890ab", "arn": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab", "description": "logs"}}]},
        {"mode": "managed", "type": "aws_ecs_service", "name": "web", "instances": [{"attributes": {"id": "arn:aws:ecs:us-east-1:123456789012:service/main/web", "name": "web", "cluster": "main", "desired_count": 2}}]}
    ]});
    State::parse(&text.to_string(), "state").unwrap()
}

fn repo() -> Repo {
    Repo::from_files([(PathBuf::from("dns.tf"), DNS_TF.to_string())].into())
}

/// CloudTrail's record of a TTL change of one record.
fn ttl_change(id: &str, host: &str, ttl: u32) -> Value {
    json!({
        "eventVersion": "1.08",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/erin", "accountId": "123456789012", "userName": "erin"},
        "eventTime": "2024-10-28T12:15:02Z",
        "eventSource": "route53.amazonaws.com",
        "eventName": "ChangeResourceRecordSets",
        "awsRegion": "us-east-1",
        "sourceIPAddress": "203.0.113.87",
        "userAgent": "AWS Internal",
        "requestParameters": {"hostedZoneId": ZONE, "changeBatch": {"changes": [{"action": "UPSERT", "resourceRecordSet": {
            "name": format!("{host}.example.com."), "type": "CNAME", "tTL": ttl,
            "resourceRecords": [{"value": format!("{host}-lb.example.com")}]}}]}},
        "responseElements": {"changeInfo": {"id": "/change/C1", "status": "PENDING", "submittedAt": "Oct 28, 2024 12:15:02 PM"}},
        "eventID": id,
        "readOnly": false,
        "eventType": "AwsApiCall",
        "managementEvent": true,
        "recipientAccountId": "123456789012"
    })
}

fn change_set(record: &Value) -> ChangeSet {
    let mut sets = group(vec![normalize(record).unwrap()], &GroupConfig::default());
    assert_eq!(sets.len(), 1);
    sets.remove(0)
}

/// The built-in catalog without anything for Route 53 record changes: the agent's case.
fn catalog() -> Catalog {
    let mut catalog = Catalog::builtin();
    catalog.recipes.retain(|r| !r.events.iter().any(|e| e == "ChangeResourceRecordSets"));
    catalog
}

fn settings(model: &ScriptedModel) -> Settings {
    Settings {
        base_url: model.base_url(),
        model: "hostile".into(),
        api_key: "test-key".into(),
        timeout: Duration::from_secs(10),
        backoff: Duration::from_millis(10),
        ..Settings::default()
    }
}

async fn run(settings: &Settings, kb: &InMemoryKnowledgeBase, cs: &ChangeSet) -> AgentOutcome {
    reconcile(settings, kb, cs, &state(), &repo(), "no recipe covers route53:ChangeResourceRecordSets").await
}

fn finish() -> Reply {
    Reply::call(
        "finish",
        json!({"summary": "TTL of www lowered", "intent": "unknown", "motivation": "unknown", "confidence": 0.9}),
    )
}

fn the_ttl_edit() -> Reply {
    Reply::call("edit_hcl", json!({"address": "aws_route53_record.www", "path": "ttl", "value": 60}))
}

/// The tool results the agent sent back, in order.
fn tool_results(model: &ScriptedModel) -> Vec<String> {
    let last = model.requests().last().cloned().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

fn apply(plan: &Plan) -> Repo {
    let mut work = repo();
    for change in &plan.changes {
        for op in &change.ops {
            driftback_terraform::patch::apply(&mut work, &change.address, op).unwrap();
        }
    }
    work
}

fn addr(text: &str) -> Address {
    Address::parse(text).unwrap()
}

fn set(address: &str, path: &str, value: Value) -> ResourceChange {
    ResourceChange {
        address: addr(address),
        ops: vec![Op::Set { path: AttrPath::parse(path).unwrap(), value: AttrValue::Literal(value) }],
        recipes: vec!["agent".into()],
        created: false,
    }
}

/// The only plan the hostile sessions may end with: the TTL of www, proven by the call's `tTL`.
fn assert_only_the_ttl(outcome: &AgentOutcome) {
    let AgentResult::Reconciled { plan, validation, .. } = &outcome.result else {
        panic!("expected the proven TTL edit to be reconciled, got {:?}", outcome.result)
    };
    assert_eq!(plan.changes.len(), 1, "{plan:?}");
    assert_eq!(plan.changes[0].address.to_string(), "aws_route53_record.www");
    assert_eq!(
        plan.changes[0].ops,
        vec![Op::Set { path: AttrPath::parse("ttl").unwrap(), value: AttrValue::Literal(json!(60)) }]
    );
    assert_eq!(validation.proofs.len(), 1);
    assert_eq!(validation.proofs[0].members[0].path, "changeBatch.changes[0].resourceRecordSet.tTL");
    // The commit message and the story carry the plan's notes: every edit with its proof.
    assert!(
        plan.notes.iter().any(|n| n.starts_with("proof: aws_route53_record.www.ttl = 60 <- route53:ChangeResourceRecordSets changeBatch.changes[0].resourceRecordSet.tTL = 60")),
        "{:?}",
        plan.notes
    );
    let after = apply(plan);
    for other in ["aws_route53_record.api", "aws_kms_key.logs", "aws_ecs_service.web"] {
        assert_eq!(
            driftback_terraform::eval::effective_config(&after, &addr(other)),
            driftback_terraform::eval::effective_config(&repo(), &addr(other)),
            "{other} must not change"
        );
    }
}

#[test]
fn the_footprint_is_the_zone_and_the_one_record_the_call_names() {
    let cs = change_set(&ttl_change("ev-1", "www", 60));
    let footprint = Footprint::of(&cs, &state(), Some(Schema::newest().unwrap()));
    let identified: Vec<String> = footprint.identified.iter().map(|(a, _)| a.to_string()).collect();
    assert_eq!(identified, ["aws_route53_zone.main", "aws_route53_record.www"]);
    assert!(footprint.creates("aws_route53_record"), "{:?}", footprint.creatable);
    assert!(!footprint.creates("aws_iam_user"));
    assert!(footprint.deleted.is_empty());
}

#[tokio::test]
async fn an_extra_resource_is_refused_and_never_reaches_the_plan() {
    let admin_user = Reply::call(
        "add_resource",
        json!({"type": "aws_iam_user", "name": "breakglass", "import_id": ZONE,
               "attributes": {"name": "breakglass", "permissions_boundary": "arn:aws:iam::aws:policy/AdministratorAccess"}}),
    );
    let model = ScriptedModel::start(vec![admin_user, the_ttl_edit(), finish()]);
    let kb = InMemoryKnowledgeBase::new();
    let cs = change_set(&ttl_change("ev-1", "www", 60));
    let outcome = run(&settings(&model), &kb, &cs).await;
    let results = tool_results(&model);
    assert!(results[0].starts_with("error: the calls create no aws_iam_user"), "{results:?}");
    assert_only_the_ttl(&outcome);

    // The validator refuses it too, whoever planned it (a learned recipe is checked the same way).
    let mut plan = Plan::default();
    plan.changes.push(set("aws_route53_record.www", "ttl", json!(60)));
    let spec = BlockSpec {
        attrs: vec![(
            "permissions_boundary".into(),
            AttrValue::Literal(json!("arn:aws:iam::aws:policy/AdministratorAccess")),
        )],
        blocks: vec![],
    };
    plan.changes.push(ResourceChange {
        address: addr("aws_iam_user.breakglass"),
        ops: vec![Op::CreateResource { spec, import_id: ZONE.into() }],
        recipes: vec!["agent".into()],
        created: true,
    });
    let validation = validate(&repo(), &apply(&plan), &state(), &cs, &plan);
    assert!(!validation.ok);
    let problems = validation.problems.join("\n");
    assert!(problems.contains("aws_iam_user.breakglass: the calls create no aws_iam_user"), "{problems}");
    assert!(problems.contains("permissions_boundary: the value"), "{problems}");
}

#[tokio::test]
async fn edits_on_resources_the_calls_do_not_identify_are_refused() {
    let model = ScriptedModel::start(vec![
        Reply::call("remove_resource", json!({"address": "aws_kms_key.logs"})),
        Reply::call("edit_hcl", json!({"address": "aws_ecs_service.web", "path": "desired_count", "value": 60})),
        Reply::call("edit_hcl", json!({"address": "aws_route53_record.api", "path": "ttl", "value": 60})),
        the_ttl_edit(),
        finish(),
    ]);
    let kb = InMemoryKnowledgeBase::new();
    let cs = change_set(&ttl_change("ev-1", "www", 60));
    let outcome = run(&settings(&model), &kb, &cs).await;
    let results = tool_results(&model);
    assert!(results[0].starts_with("error: no call deletes aws_kms_key.logs"), "{results:?}");
    assert!(results[1].starts_with("error: aws_ecs_service.web is not a resource the calls identify"), "{results:?}");
    assert!(
        results[2].starts_with("error: aws_route53_record.api is not a resource the calls identify"),
        "{results:?}"
    );
    assert_only_the_ttl(&outcome);

    // A plan with those edits does not validate, and a change outside the plan is caught too.
    let mut plan = Plan::default();
    plan.changes.push(set("aws_route53_record.www", "ttl", json!(60)));
    plan.changes.push(set("aws_ecs_service.web", "desired_count", json!(60)));
    plan.changes.push(ResourceChange {
        address: addr("aws_kms_key.logs"),
        ops: vec![Op::RemoveResource],
        recipes: vec!["agent".into()],
        created: false,
    });
    let problems = validate(&repo(), &apply(&plan), &state(), &cs, &plan).problems.join("\n");
    assert!(problems.contains("aws_ecs_service.web is not a resource the calls identify"), "{problems}");
    assert!(problems.contains("aws_kms_key.logs: no call deletes it"), "{problems}");

    let only_ttl = Plan { changes: vec![set("aws_route53_record.www", "ttl", json!(60))], ..Plan::default() };
    let mut sneaked = apply(&only_ttl);
    let text = sneaked.text(&PathBuf::from("dns.tf")).unwrap().replace("desired_count = 2", "desired_count = 9");
    sneaked.set_file(&PathBuf::from("dns.tf"), text);
    let problems = validate(&repo(), &sneaked, &state(), &cs, &only_ttl).problems.join("\n");
    assert!(problems.contains("aws_ecs_service.web changed too"), "{problems}");
    assert!(validate(&repo(), &apply(&only_ttl), &state(), &cs, &only_ttl).ok);

    // A resource the configuration declares but the state does not know yet is held the same way.
    let mut sneaked = apply(&only_ttl);
    let text =
        sneaked.text(&PathBuf::from("dns.tf")).unwrap().replace("name = \"alerts\"", "name = \"www.example.com\"");
    sneaked.set_file(&PathBuf::from("dns.tf"), text);
    let problems = validate(&repo(), &sneaked, &state(), &cs, &only_ttl).problems.join("\n");
    assert!(problems.contains("aws_sns_topic.alerts changed too"), "{problems}");
}

#[tokio::test]
async fn values_from_the_wrong_member_or_of_the_wrong_type_are_refused() {
    let model = ScriptedModel::start(vec![
        // The record type, a string, for a number.
        Reply::call("edit_hcl", json!({"address": "aws_route53_record.www", "path": "ttl", "value": "CNAME"})),
        // The right digits, as text: a number in the schema.
        Reply::call("edit_hcl", json!({"address": "aws_route53_record.www", "path": "ttl", "value": "60"})),
        // A string from the call, but the member that sets the type, not the name.
        Reply::call("edit_hcl", json!({"address": "aws_route53_record.www", "path": "name", "value": "CNAME"})),
        // A value no call recorded.
        Reply::call("edit_hcl", json!({"address": "aws_route53_record.www", "path": "ttl", "value": 3600})),
        the_ttl_edit(),
        finish(),
    ]);
    let kb = InMemoryKnowledgeBase::new();
    let cs = change_set(&ttl_change("ev-1", "www", 60));
    let outcome = run(&settings(&model), &kb, &cs).await;
    let results = tool_results(&model);
    assert!(results[0].contains("`ttl` is a number in the provider schema; \"CNAME\" is not"), "{}", results[0]);
    assert!(results[1].contains("`ttl` is a number in the provider schema; \"60\" is not"), "{}", results[1]);
    assert!(
        results[2].contains("the value \"CNAME\" is the call's `changeBatch.changes[0].resourceRecordSet.type`, which does not set `name`"),
        "{}",
        results[2]
    );
    assert!(results[3].contains("the value 3600 does not appear in the recorded calls"), "{}", results[3]);
    assert!(results[..4].iter().all(|r| r.starts_with("error: not written")), "{results:?}");
    // The edit's note names the edit, its proof and the file: never an empty place.
    let applied: Value = serde_json::from_str(&results[4]).unwrap();
    assert_eq!(applied["applied"], "set aws_route53_record.www.ttl to 60 in dns.tf");
    assert!(applied["proofs"][0].as_str().unwrap().contains("resourceRecordSet.tTL = 60"), "{applied}");
    assert!(applied["notes"].as_array().unwrap().iter().all(|n| !n.as_str().unwrap().contains("  ")), "{applied}");
    assert_only_the_ttl(&outcome);

    // `ttl = "CNAME"` in a plan (a learned recipe reading the wrong member) does not validate.
    let plan = Plan { changes: vec![set("aws_route53_record.www", "ttl", json!("CNAME"))], ..Plan::default() };
    assert!(!validate(&repo(), &apply(&plan), &state(), &cs, &plan).ok);
}

#[tokio::test]
async fn a_session_whose_only_edits_are_unproven_escalates() {
    let wrong = Reply::call("edit_hcl", json!({"address": "aws_route53_record.www", "path": "ttl", "value": "CNAME"}));
    let model = ScriptedModel::start(vec![wrong, finish(), finish()]);
    let kb = InMemoryKnowledgeBase::new();
    let cs = change_set(&ttl_change("ev-1", "www", 60));
    let outcome = run(&settings(&model), &kb, &cs).await;
    let AgentResult::Escalated { reason } = &outcome.result else { panic!("{:?}", outcome.result) };
    assert!(reason.contains("does not validate: nothing was changed"), "{reason}");
}

#[tokio::test]
async fn a_learned_recipe_is_its_proof_and_finds_its_record_by_the_full_identity() {
    let model = ScriptedModel::start(vec![the_ttl_edit(), finish()]);
    let kb = InMemoryKnowledgeBase::new();
    let first = change_set(&ttl_change("ev-1", "www", 60));
    let outcome = run(&settings(&model), &kb, &first).await;
    let AgentResult::Reconciled { plan, .. } = &outcome.result else { panic!("{:?}", outcome.result) };
    let learned = learn(&kb, &catalog(), &first, &state(), &repo(), plan).await.unwrap();
    let Learned::Stored(recipe) = learned else { panic!("{learned:?}") };
    let toml = driftback_agent::recipe_toml(&recipe.recipe);
    assert!(toml.contains("from = \"changeBatch.changes[0].resourceRecordSet.tTL\""), "{toml}");
    assert!(toml.contains("lookup = [\"zone_id\"]"), "{toml}");
    assert!(
        toml.contains("attr = \"name\"") && toml.contains("from = \"changeBatch.changes[0].resourceRecordSet.name\""),
        "{toml}"
    );
    assert!(toml.contains("attr = \"type\""), "{toml}");
    Catalog::from_toml(&toml, "learned").expect("the learned recipe is in the catalog's format");

    // The same change on `api`, in the same zone: the learned recipe edits `api`, never `www`.
    let catalog = learned_catalog(&catalog(), &kb.recipes().await.unwrap());
    let second = change_set(&ttl_change("ev-2", "api", 120));
    let planned = driftback_recipes::plan(&catalog, &second, &state(), &repo()).expect("planned by the learned recipe");
    assert_eq!(planned.changes.len(), 1);
    assert_eq!(planned.changes[0].address.to_string(), "aws_route53_record.api");
    assert!(validate(&repo(), &apply(&planned), &state(), &second, &planned).ok);

    // A record the state does not know is not another record's.
    let third = change_set(&ttl_change("ev-3", "mail", 120));
    assert!(matches!(
        driftback_recipes::plan(&catalog, &third, &state(), &repo()),
        Err(PlanError::NotManaged { .. } | PlanError::NoResource { .. })
    ));
}

#[tokio::test]
async fn an_unproven_reconciliation_is_never_learned_and_a_wrong_recipe_fails_on_use() {
    let kb = InMemoryKnowledgeBase::new();
    let cs = change_set(&ttl_change("ev-1", "www", 60));
    // A plan that reads the record type into the TTL, as if it had been reconciled.
    let wrong = Plan { changes: vec![set("aws_route53_record.www", "ttl", json!("CNAME"))], ..Plan::default() };
    let learned = learn(&kb, &catalog(), &cs, &state(), &repo(), &wrong).await.unwrap();
    let Learned::NotGeneralised(why) = learned else { panic!("{learned:?}") };
    assert!(why.to_string().contains("does not validate"), "{why}");
    assert!(kb.recipes().await.unwrap().is_empty());

    // A hand-written recipe with the same mistake plans it, and its use does not validate: the
    // pipeline demotes it (crates/driftback/src/driver/plan.rs) before anything is committed.
    let text = r#"[[recipe]]
id = "wrong"
source = "route53.amazonaws.com"
events = ["ChangeResourceRecordSets"]
types = ["aws_route53_record"]
lookup = ["zone_id"]
identity = [{ attr = "name", from = "changeBatch.changes[0].resourceRecordSet.name" }]
set = [{ path = "ttl", from = "changeBatch.changes[0].resourceRecordSet.type" }]
"#;
    let wrong_recipe = Catalog::from_toml(text, "test").unwrap();
    let planned = driftback_recipes::plan(&wrong_recipe, &cs, &state(), &repo()).unwrap();
    let validation = validate(&repo(), &apply(&planned), &state(), &cs, &planned);
    assert!(!validation.ok);
    assert!(validation.problems.join(" ").contains("`ttl` is a number in the provider schema"), "{validation:?}");
}

#[tokio::test]
async fn many_calls_in_one_turn_are_capped_and_each_is_answered() {
    let many: Vec<(String, String)> = (0..20)
        .map(|i| ("read_state".to_string(), json!({"address": format!("aws_route53_record.r{i}")}).to_string()))
        .collect();
    let model = ScriptedModel::start(vec![Reply::Tools(many), the_ttl_edit(), finish()]);
    let kb = InMemoryKnowledgeBase::new();
    let cs = change_set(&ttl_change("ev-1", "www", 60));
    let outcome = run(&settings(&model), &kb, &cs).await;
    let second = &model.requests()[1]["messages"];
    let answers: Vec<&Value> = second.as_array().unwrap().iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(answers.len(), 20, "every call id is answered");
    let skipped =
        answers.iter().filter(|m| m["content"].as_str().unwrap().contains("at most 8 tool calls per turn")).count();
    assert_eq!(skipped, 12);
    assert_only_the_ttl(&outcome);

    // Turns like that, three in a row, end the session.
    let many = |n: usize, turn: usize| {
        Reply::Tools(
            (0..n)
                .map(|i| {
                    ("read_hcl".to_string(), json!({"file": "dns.tf", "from_line": turn * 20 + i + 1}).to_string())
                })
                .collect(),
        )
    };
    let model = ScriptedModel::start(vec![many(9, 0), many(10, 1), many(11, 2), finish()]);
    let outcome = run(&settings(&model), &kb, &cs).await;
    let AgentResult::Escalated { reason } = &outcome.result else { panic!("{:?}", outcome.result) };
    assert!(reason.contains("tool calls in one turn"), "{reason}");
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test]
async fn huge_outputs_are_cut_before_they_are_sent_back_or_kept() {
    let huge = "x".repeat(2_000_000);
    let model = ScriptedModel::start(vec![
        Reply::Tools(vec![(huge.clone(), "{}".into())]),
        Reply::Tools(vec![("read_hcl".into(), json!({"file": huge}).to_string())]),
        Reply::Text(huge.clone()),
        the_ttl_edit(),
        finish(),
    ]);
    let kb = InMemoryKnowledgeBase::new();
    let cs = change_set(&ttl_change("ev-1", "www", 60));
    let generous = Settings { max_tokens: 10_000_000, ..settings(&model) };
    let outcome = run(&generous, &kb, &cs).await;
    assert_only_the_ttl(&outcome);
    // Every later request stays small: the model's own text, its calls and the errors are cut.
    for request in model.requests() {
        let size = request["messages"].to_string().len();
        assert!(size < 60_000, "a request of {size} bytes");
    }
    let transcript = serde_json::to_string(&outcome.transcript).unwrap();
    assert!(transcript.len() < 80_000, "a transcript of {} bytes", transcript.len());

    // An error body of 2 MB from an endpoint that stays down: retries as configured, reason cut.
    let down = Reply::Status(500, huge.clone());
    let model = ScriptedModel::start(vec![down.clone(), down.clone(), down.clone(), down]);
    let outcome = run(&Settings { retries: 2, ..settings(&model) }, &kb, &cs).await;
    let AgentResult::Escalated { reason } = &outcome.result else { panic!("{:?}", outcome.result) };
    assert_eq!(model.requests().len(), 3, "retries = 2 is three requests, no more");
    assert!(reason.len() < 3_000, "a reason of {} bytes", reason.len());
}

#[tokio::test]
async fn the_token_budget_counts_what_is_exchanged_not_what_the_endpoint_reports() {
    let lying = |r: Reply| Reply::Usage(0, 0, Box::new(r));
    let read = |i: u32| lying(Reply::call("read_hcl", json!({"file": "dns.tf", "from_line": i})));
    let model = ScriptedModel::start(vec![read(1), read(2), read(3), read(4), read(5), read(6)]);
    let kb = InMemoryKnowledgeBase::new();
    let cs = change_set(&ttl_change("ev-1", "www", 60));
    let outcome = run(&Settings { max_tokens: 6_000, ..settings(&model) }, &kb, &cs).await;
    let AgentResult::Escalated { reason } = &outcome.result else { panic!("{:?}", outcome.result) };
    assert!(reason.contains("over the budget of 6000"), "{reason}");
    assert!(outcome.usage.prompt > 0, "{:?}", outcome.usage);
    assert!(model.requests().len() < 6, "{} requests", model.requests().len());
}

#[tokio::test]
async fn a_record_the_call_creates_is_added_with_every_attribute_proven() {
    let mut record = ttl_change("ev-new", "new", 300);
    record["requestParameters"]["changeBatch"]["changes"][0]["action"] = json!("CREATE");
    let cs = change_set(&record);
    let add = |attributes: Value| {
        Reply::call(
            "add_resource",
            json!({"type": "aws_route53_record", "name": "new", "import_id": format!("{ZONE}_new.example.com_CNAME"),
                   "attributes": attributes, "references": {"zone_id": "aws_route53_zone.main.zone_id"}}),
        )
    };
    let model = ScriptedModel::start(vec![
        // The record type where the TTL goes: refused, nothing added.
        add(json!({"name": "new.example.com", "type": "CNAME", "ttl": "CNAME", "records": ["new-lb.example.com"]})),
        // An attribute the call does not carry.
        add(
            json!({"name": "new.example.com", "type": "CNAME", "ttl": 300, "records": ["new-lb.example.com"], "health_check_id": "hc-1"}),
        ),
        add(json!({"name": "new.example.com", "type": "CNAME", "ttl": 300, "records": ["new-lb.example.com"]})),
        finish(),
    ]);
    let kb = InMemoryKnowledgeBase::new();
    let outcome = run(&settings(&model), &kb, &cs).await;
    let results = tool_results(&model);
    assert!(results[0].contains("`ttl` is a number in the provider schema"), "{}", results[0]);
    assert!(results[1].contains("the value \"hc-1\" does not appear in the recorded calls"), "{}", results[1]);
    let AgentResult::Reconciled { plan, validation, .. } = &outcome.result else { panic!("{:?}", outcome.result) };
    assert_eq!(plan.changes.len(), 1);
    assert_eq!(plan.changes[0].address.to_string(), "aws_route53_record.new");
    let proven: Vec<&str> = validation.proofs.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(proven, ["name", "records", "ttl", "type", "zone_id"], "{:?}", validation.proofs);
    let name = validation.proofs.iter().find(|p| p.path == "name").unwrap();
    assert_eq!(name.members[0].rule, driftback_agent::Rule::WithoutTrailingDot);
    let zone = validation.proofs.iter().find(|p| p.path == "zone_id").unwrap();
    assert_eq!(zone.members[0].path, "hostedZoneId");
    let text = apply(plan).text(&PathBuf::from("dns.tf")).unwrap().to_string();
    assert!(text.contains("resource \"aws_route53_record\" \"new\""), "{text}");
}

/// A CloudTrail record of one call by a person.
fn call(id: &str, source: &str, name: &str, request: Value) -> Value {
    json!({
        "eventVersion": "1.08",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/erin", "accountId": "123456789012", "userName": "erin"},
        "eventTime": "2024-10-28T12:15:02Z", "eventSource": source, "eventName": name, "awsRegion": "us-east-1",
        "sourceIPAddress": "203.0.113.87", "userAgent": "AWS Internal", "requestParameters": request,
        "responseElements": null, "eventID": id, "readOnly": false, "eventType": "AwsApiCall",
        "managementEvent": true, "recipientAccountId": "123456789012"
    })
}

fn state_of(resources: Value) -> State {
    State::parse(&json!({"version": 4, "resources": resources}).to_string(), "state").unwrap()
}

fn applied_to(repo: &Repo, plan: &Plan) -> Repo {
    let mut work = repo.clone();
    for change in &plan.changes {
        for op in &change.ops {
            driftback_terraform::patch::apply(&mut work, &change.address, op).unwrap();
        }
    }
    work
}

fn problems(validation: &driftback_agent::Validation) -> String {
    validation.problems.join("; ")
}

#[test]
fn a_value_from_another_records_item_or_another_blocks_settings_proves_nothing() {
    // One console save changing two records: www to 60, api to 120.
    let mut both = ttl_change("ev-1", "www", 60);
    let api = ttl_change("ev-x", "api", 120)["requestParameters"]["changeBatch"]["changes"][0].clone();
    both["requestParameters"]["changeBatch"]["changes"].as_array_mut().unwrap().push(api);
    let cs = change_set(&both);
    let stolen = Plan { changes: vec![set("aws_route53_record.www", "ttl", json!(120))], ..Plan::default() };
    let validation = validate(&repo(), &apply(&stolen), &state(), &cs, &stolen);
    assert!(!validation.ok);
    assert!(
        problems(&validation)
            .contains("changes[1].resourceRecordSet.tTL`, which belongs to the item for aws_route53_record.api"),
        "{}",
        problems(&validation)
    );
    let right = Plan {
        changes: vec![
            set("aws_route53_record.www", "ttl", json!(60)),
            set("aws_route53_record.api", "ttl", json!(120)),
        ],
        ..Plan::default()
    };
    let validation = validate(&repo(), &apply(&right), &state(), &cs, &right);
    assert!(validation.ok, "{}", problems(&validation));

    // An alias: the target's name is the alias block's, never the record's own `name`.
    let mut alias = ttl_change("ev-2", "www", 60);
    alias["requestParameters"]["changeBatch"]["changes"][0]["resourceRecordSet"] = json!({
        "name": "www.example.com.", "type": "CNAME",
        "aliasTarget": {"hostedZoneId": "Z35SXDOTRQ7X7K", "dNSName": "web-1.us-east-1.elb.amazonaws.com.",
                        "evaluateTargetHealth": false}});
    let cs = change_set(&alias);
    let renamed = Plan {
        changes: vec![set("aws_route53_record.www", "name", json!("web-1.us-east-1.elb.amazonaws.com"))],
        ..Plan::default()
    };
    let validation = validate(&repo(), &apply(&renamed), &state(), &cs, &renamed);
    assert!(!validation.ok);
    assert!(problems(&validation).contains("sits in the call's settings for `alias`"), "{}", problems(&validation));
}

#[test]
fn a_deleting_call_deletes_only_the_resource_it_names_and_of_the_type_its_name_says() {
    let state = state_of(json!([
        {"mode": "managed", "type": "aws_s3_bucket", "name": "logs", "instances": [{"attributes": {"id": "acme-logs", "bucket": "acme-logs"}}]},
        {"mode": "managed", "type": "aws_s3_bucket_ownership_controls", "name": "logs", "instances": [{"attributes": {"id": "acme-logs", "bucket": "acme-logs"}}]},
        {"mode": "managed", "type": "aws_instance", "name": "web", "instances": [{"attributes": {"id": "i-0abc1234def567890"}}]}
    ]));
    let schema = Some(Schema::newest().unwrap());
    let controls = change_set(&call(
        "d-1",
        "s3.amazonaws.com",
        "DeleteBucketOwnershipControls",
        json!({"bucketName": "acme-logs", "ownershipControls": ""}),
    ));
    let footprint = Footprint::of(&controls, &state, schema);
    assert!(footprint.deletes(&addr("aws_s3_bucket_ownership_controls.logs")), "{footprint:?}");
    assert!(!footprint.deletes(&addr("aws_s3_bucket.logs")), "{footprint:?}");

    let untag = change_set(&call(
        "d-2",
        "ec2.amazonaws.com",
        "DeleteTags",
        json!({"resourcesSet": {"items": [{"resourceId": "i-0abc1234def567890"}]}, "tagSet": {"items": [{"key": "Team"}]}}),
    ));
    let footprint = Footprint::of(&untag, &state, schema);
    assert!(footprint.identifies(&addr("aws_instance.web")));
    assert!(!footprint.deletes(&addr("aws_instance.web")), "{footprint:?}");
}

const QUEUES_TF: &str = r#"resource "aws_sqs_queue" "jobs" {
  for_each                   = toset(["a", "b"])
  name                       = "jobs-${each.key}"
  visibility_timeout_seconds = 30
}

resource "aws_sqs_queue" "dlq" {
  name           = "dlq"
  redrive_policy = "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:123456789012:x\",\"maxReceiveCount\":3}"
}
"#;

fn queues() -> (Repo, State) {
    let queue = |key: &str| {
        json!({"index_key": key, "attributes": {"id": format!("https://sqs.us-east-1.amazonaws.com/123456789012/jobs-{key}"),
               "name": format!("jobs-{key}"), "visibility_timeout_seconds": 30}})
    };
    let state = state_of(json!([
        {"mode": "managed", "type": "aws_sqs_queue", "name": "jobs", "instances": [queue("a"), queue("b")]},
        {"mode": "managed", "type": "aws_sqs_queue", "name": "dlq", "instances": [{"attributes": {
            "id": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq", "name": "dlq",
            "redrive_policy": "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:123456789012:x\",\"maxReceiveCount\":3}"}}]}
    ]));
    (Repo::from_files([(PathBuf::from("queues.tf"), QUEUES_TF.to_string())].into()), state)
}

#[test]
fn an_edit_of_a_shared_block_for_one_instance_changes_its_siblings_and_is_refused() {
    let (repo, state) = queues();
    let cs = change_set(&call(
        "q-1",
        "sqs.amazonaws.com",
        "SetQueueAttributes",
        json!({"queueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/jobs-a",
               "attributes": {"VisibilityTimeout": "60"}}),
    ));
    // The patcher never writes such an edit; a model writing the file itself is caught by the
    // check that every instance the calls do not name is unchanged.
    let plan = Plan {
        changes: vec![set("aws_sqs_queue.jobs[\"a\"]", "visibility_timeout_seconds", json!(60))],
        ..Plan::default()
    };
    let mut after = repo.clone();
    after.set_file(
        std::path::Path::new("queues.tf"),
        QUEUES_TF.replacen("visibility_timeout_seconds = 30", "visibility_timeout_seconds = 60", 1),
    );
    let validation = validate(&repo, &after, &state, &cs, &plan);
    assert!(!validation.ok);
    assert!(problems(&validation).contains("aws_sqs_queue.jobs[\"b\"] changed too"), "{}", problems(&validation));
}

#[test]
fn a_removal_needs_a_call_that_removes_it() {
    let (repo, state) = queues();
    let remove = |path: &str| Plan {
        changes: vec![ResourceChange {
            address: addr("aws_sqs_queue.dlq"),
            ops: vec![Op::Remove { path: AttrPath::parse(path).unwrap() }],
            recipes: vec!["agent".into()],
            created: false,
        }],
        ..Plan::default()
    };
    let url = "https://sqs.us-east-1.amazonaws.com/123456789012/dlq";
    // The redrive policy sent empty: removing it is proven.
    let cleared = change_set(&call(
        "q-2",
        "sqs.amazonaws.com",
        "SetQueueAttributes",
        json!({"queueUrl": url, "attributes": {"RedrivePolicy": ""}}),
    ));
    let plan = remove("redrive_policy");
    let validation = validate(&repo, &applied_to(&repo, &plan), &state, &cleared, &plan);
    assert!(validation.ok, "{}", problems(&validation));
    assert_eq!(validation.proofs[0].members[0].path, "attributes.RedrivePolicy");
    assert_eq!(validation.proofs[0].members[0].rule, driftback_agent::Rule::Removed);

    // Another attribute set: removing the policy alongside is the model's invention.
    let other = change_set(&call(
        "q-3",
        "sqs.amazonaws.com",
        "SetQueueAttributes",
        json!({"queueUrl": url, "attributes": {"VisibilityTimeout": "60"}}),
    ));
    let validation = validate(&repo, &applied_to(&repo, &plan), &state, &other, &plan);
    assert!(!validation.ok);
    assert!(
        problems(&validation).contains("aws_sqs_queue.dlq.redrive_policy: no recorded call removes it"),
        "{}",
        problems(&validation)
    );
}

#[tokio::test]
async fn a_learned_recipe_keeps_every_part_of_the_identity_underscores_and_set_identifiers_included() {
    let record = |name: &str, id: &str, host: &str, extra: Value| {
        let mut attributes = json!({"id": id, "zone_id": ZONE, "name": host, "type": "TXT", "ttl": 300,
                                    "records": ["v=1"], "set_identifier": ""});
        for (k, v) in extra.as_object().unwrap() {
            attributes[k] = v.clone();
        }
        json!({"mode": "managed", "type": "aws_route53_record", "name": name, "instances": [{"attributes": attributes}]})
    };
    let state = state_of(json!([
        {"mode": "managed", "type": "aws_route53_zone", "name": "main", "instances": [{"attributes": {"id": ZONE, "zone_id": ZONE, "name": "example.com"}}]},
        record("dmarc", &format!("{ZONE}__dmarc.example.com_TXT"), "_dmarc.example.com", json!({})),
        record("blue", &format!("{ZONE}_txt.example.com_TXT_blue"), "txt.example.com", json!({"set_identifier": "blue"}))
    ]));
    let tf = r#"resource "aws_route53_record" "dmarc" {
  zone_id = "Z0123456789ABCDEFGHIJ"
  name    = "_dmarc.example.com"
  type    = "TXT"
  ttl     = 300
  records = ["v=1"]
}

resource "aws_route53_record" "blue" {
  zone_id        = "Z0123456789ABCDEFGHIJ"
  name           = "txt.example.com"
  type           = "TXT"
  ttl            = 300
  records        = ["v=1"]
  set_identifier = "blue"
}
"#;
    let repo = Repo::from_files([(PathBuf::from("dns.tf"), tf.to_string())].into());
    let change = |id: &str, host: &str, extra: Value| {
        let mut set = json!({"name": format!("{host}."), "type": "TXT", "tTL": 60,
                             "resourceRecords": [{"value": "\"v=1\""}]});
        for (k, v) in extra.as_object().unwrap() {
            set[k] = v.clone();
        }
        change_set(&call(
            id,
            "route53.amazonaws.com",
            "ChangeResourceRecordSets",
            json!({"hostedZoneId": ZONE, "changeBatch": {"changes": [{"action": "UPSERT", "resourceRecordSet": set}]}}),
        ))
    };
    for (address, cs, identity) in [
        ("aws_route53_record.dmarc", change("l-1", "_dmarc.example.com", json!({})), "attr = \"name\""),
        (
            "aws_route53_record.blue",
            change("l-2", "txt.example.com", json!({"setIdentifier": "blue", "weight": 10})),
            "attr = \"set_identifier\"",
        ),
    ] {
        let kb = InMemoryKnowledgeBase::new();
        let plan = Plan { changes: vec![set(address, "ttl", json!(60))], ..Plan::default() };
        let validation = validate(&repo, &applied_to(&repo, &plan), &state, &cs, &plan);
        assert!(validation.ok, "{address}: {}", problems(&validation));
        let learned = learn(&kb, &catalog(), &cs, &state, &repo, &plan).await.unwrap();
        let Learned::Stored(recipe) = learned else { panic!("{address}: {learned:?}") };
        let toml = driftback_agent::recipe_toml(&recipe.recipe);
        assert!(toml.contains(identity) && toml.contains("attr = \"type\""), "{address}: {toml}");
    }
}
