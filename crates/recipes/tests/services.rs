//! Listener rules, subscriptions, CORS, time to live and task definition revisions: each call
//! planned on a request as CloudTrail logs it, the plan applied to the code, and the effective
//! configuration judged; what cannot be written whole (a weighted forward, a subscription still
//! pending, a secret in a container's environment) is refused, never written in part.

mod support;

use std::path::{Path, PathBuf};
use support::{change_set, resource};

use driftback_recipes::{Catalog, PlanError, plan};
use driftback_terraform::eval::effective_config;
use driftback_terraform::{Address, Op, Repo, State};
use serde_json::{Value, json};

const MAIN: &str = r#"resource "aws_lb_listener_rule" "api" {
  listener_arn = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2"
  priority     = 10

  action {
    type             = "forward"
    target_group_arn = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api/73e2d6bc24d8a067"
  }

  condition {
    path_pattern {
      values = ["/api/*"]
    }
  }
}

resource "aws_sns_topic" "alerts" {
  name = "alerts"
}

resource "aws_s3_bucket" "site" {
  bucket = "site"
}

resource "aws_s3_bucket_cors_configuration" "site" {
  bucket = aws_s3_bucket.site.id

  cors_rule {
    allowed_methods = ["GET"]
    allowed_origins = ["https://example.com"]
  }
}

resource "aws_dynamodb_table" "sessions" {
  name         = "sessions"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "id"

  attribute {
    name = "id"
    type = "S"
  }
}

resource "aws_ecs_task_definition" "api" {
  family                   = "api"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = "256"
  memory                   = "512"
  container_definitions = jsonencode([
    {
      name      = "api"
      image     = "registry.example.com/api:1.4.0"
      essential = true
      portMappings = [
        { containerPort = 8080, protocol = "tcp" }
      ]
    }
  ])
}
"#;

const RULE: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee";
const LISTENER: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2";
const TOPIC: &str = "arn:aws:sns:us-east-1:123456789012:alerts";

fn state() -> State {
    let containers = json!([{"name": "api", "image": "registry.example.com/api:1.4.0", "essential": true,
        "portMappings": [{"containerPort": 8080, "hostPort": 8080, "protocol": "tcp"}]}]);
    let resources = vec![
        resource(
            "aws_lb_listener_rule",
            "api",
            json!({"id": RULE, "arn": RULE, "listener_arn": LISTENER, "priority": 10,
                   "action": [{"type": "forward", "target_group_arn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api/73e2d6bc24d8a067"}],
                   "condition": [{"path_pattern": [{"values": ["/api/*"]}]}]}),
        ),
        resource("aws_sns_topic", "alerts", json!({"id": TOPIC, "arn": TOPIC, "name": "alerts"})),
        resource("aws_s3_bucket", "site", json!({"id": "site", "bucket": "site", "arn": "arn:aws:s3:::site"})),
        resource(
            "aws_s3_bucket_cors_configuration",
            "site",
            json!({"id": "site", "bucket": "site",
                   "cors_rule": [{"allowed_methods": ["GET"], "allowed_origins": ["https://example.com"]}]}),
        ),
        resource(
            "aws_dynamodb_table",
            "sessions",
            json!({"id": "sessions", "name": "sessions", "arn": "arn:aws:dynamodb:us-east-1:123456789012:table/sessions",
                   "billing_mode": "PAY_PER_REQUEST", "hash_key": "id", "attribute": [{"name": "id", "type": "S"}],
                   "ttl": [{"enabled": false, "attribute_name": ""}]}),
        ),
        resource(
            "aws_ecs_task_definition",
            "api",
            json!({"id": "api", "family": "api", "revision": 7,
                   "arn": "arn:aws:ecs:us-east-1:123456789012:task-definition/api:7",
                   "requires_compatibilities": ["FARGATE"], "network_mode": "awsvpc", "cpu": "256", "memory": "512",
                   "container_definitions": containers.to_string()}),
        ),
    ];
    support::state_of(resources)
}

fn repo() -> Repo {
    Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect())
}

/// Each changed resource and its operations.
type Changes = Vec<(Address, Vec<Op>)>;

/// The call planned and applied: the patched code and the changes with operations.
fn applied(source: &str, name: &str, request: Value, response: Value) -> Result<(Repo, Changes), PlanError> {
    let mut cs = change_set(source, name, request);
    cs.events[0].response = response;
    let mut repo = repo();
    let plan = plan(&Catalog::builtin(), &cs, &state(), &repo)?;
    let changes: Changes = plan.changes.into_iter().filter(|c| !c.ops.is_empty()).map(|c| (c.address, c.ops)).collect();
    for (address, ops) in &changes {
        for op in ops {
            driftback_terraform::patch::apply(&mut repo, address, op).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    Ok((repo, changes))
}

fn text(repo: &Repo) -> String {
    repo.text(Path::new("main.tf")).unwrap().to_string()
}

fn config(repo: &Repo, address: &str) -> Value {
    effective_config(repo, &Address::parse(address).unwrap()).unwrap()
}

const ELB: &str = "elasticloadbalancing.amazonaws.com";

#[test]
fn a_rules_conditions_change_and_its_actions_stay_when_the_call_leaves_them_out() {
    let (repo, changes) = applied(
        ELB,
        "ModifyRule",
        json!({"ruleArn": RULE, "conditions": [
            {"field": "path-pattern", "pathPatternConfig": {"values": ["/api/*", "/v2/*"]}},
            {"field": "host-header", "hostHeaderConfig": {"values": ["api.example.com"]}}]}),
        Value::Null,
    )
    .unwrap();
    assert_eq!(changes.len(), 1);
    let rule = config(&repo, "aws_lb_listener_rule.api");
    let conditions = rule["condition"].as_array().unwrap();
    assert_eq!(conditions.len(), 2, "{rule}");
    assert_eq!(conditions[0]["path_pattern"][0]["values"], json!(["/api/*", "/v2/*"]));
    assert_eq!(conditions[1]["host_header"][0]["values"], json!(["api.example.com"]));
    assert_eq!(rule["action"][0]["type"], "forward");

    // A redirect action is written whole, in its nested block.
    let (repo, _) = applied(
        ELB,
        "ModifyRule",
        json!({"ruleArn": RULE, "actions": [{"type": "redirect",
            "redirectConfig": {"protocol": "HTTPS", "port": "443", "statusCode": "HTTP_301"}}]}),
        Value::Null,
    )
    .unwrap();
    let rule = config(&repo, "aws_lb_listener_rule.api");
    assert_eq!(rule["action"][0]["redirect"][0]["status_code"], "HTTP_301");
    assert!(rule["action"][0].get("target_group_arn").is_none_or(Value::is_null), "{rule}");

    // A weighted forward has members no block attribute reads: refused, not written as a plain forward.
    let err = applied(
        ELB,
        "ModifyRule",
        json!({"ruleArn": RULE, "actions": [{"type": "forward", "forwardConfig": {"targetGroups": [
            {"targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/a/1", "weight": 90},
            {"targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/b/2", "weight": 10}]}}]}),
        Value::Null,
    )
    .unwrap_err();
    assert!(err.to_string().contains("forwardConfig"), "{err}");
}

#[test]
fn a_rule_created_in_the_console_is_adopted_with_its_nested_blocks() {
    let new_rule = format!("{LISTENER}/0123456789abcdef").replace("listener/", "listener-rule/");
    let (repo, changes) = applied(
        ELB,
        "CreateRule",
        json!({"listenerArn": LISTENER, "priority": 20,
               "conditions": [{"field": "path-pattern", "pathPatternConfig": {"values": ["/admin/*"]}}],
               "actions": [{"type": "fixed-response", "fixedResponseConfig": {"statusCode": "403", "contentType": "text/plain"}}]}),
        json!({"rules": [{"ruleArn": new_rule, "priority": "20"}]}),
    )
    .unwrap();
    assert_eq!(changes.len(), 1);
    let Op::CreateResource { import_id, .. } = &changes[0].1[0] else { panic!("{changes:?}") };
    assert_eq!(import_id, &new_rule);
    let created = config(&repo, &changes[0].0.to_string());
    assert_eq!(created["priority"], 20);
    assert_eq!(created["condition"][0]["path_pattern"][0]["values"], json!(["/admin/*"]));
    assert_eq!(created["action"][0]["fixed_response"][0]["status_code"], "403");
}

#[test]
fn a_confirmed_subscription_is_adopted_and_a_pending_one_is_not() {
    let sub = format!("{TOPIC}:6b0e71bd-7e97-4d97-80ce-4a0994e55286");
    let (repo, changes) = applied(
        "sns.amazonaws.com",
        "Subscribe",
        json!({"topicArn": TOPIC, "protocol": "sqs", "endpoint": "arn:aws:sqs:us-east-1:123456789012:alerts-audit",
               "attributes": {"RawMessageDelivery": "true"}, "returnSubscriptionArn": true}),
        json!({"subscriptionArn": sub}),
    )
    .unwrap();
    assert_eq!(changes.len(), 1);
    let Op::CreateResource { import_id, .. } = &changes[0].1[0] else { panic!("{changes:?}") };
    assert_eq!(import_id, &sub);
    let text = repo.text(Path::new("main.tf")).unwrap();
    // The topic is a resource in the code: referenced, not copied.
    assert!(text.contains("topic_arn            = aws_sns_topic.alerts."), "{text}");
    assert_eq!(config(&repo, &changes[0].0.to_string())["raw_message_delivery"], true);

    let err = applied(
        "sns.amazonaws.com",
        "Subscribe",
        json!({"topicArn": TOPIC, "protocol": "email", "endpoint": "oncall@example.com"}),
        json!({"subscriptionArn": "pending confirmation"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("pending confirmation"), "{err}");
}

#[test]
fn cors_rules_are_written_again_with_single_values_as_lists() {
    let (repo, _) = applied(
        "s3.amazonaws.com",
        "PutBucketCors",
        json!({"bucketName": "site", "Host": "site.s3.amazonaws.com", "cors": "",
               "CORSConfiguration": {"xmlns": "http://s3.amazonaws.com/doc/2006-03-01/", "CORSRule": [
                 {"AllowedMethod": "GET", "AllowedOrigin": "https://example.com"},
                 {"AllowedMethod": ["PUT", "POST"], "AllowedOrigin": "https://admin.example.com",
                  "AllowedHeader": "*", "MaxAgeSeconds": 3000}]}}),
        Value::Null,
    )
    .unwrap();
    let cors = config(&repo, "aws_s3_bucket_cors_configuration.site");
    let rules = cors["cors_rule"].as_array().unwrap();
    assert_eq!(rules.len(), 2, "{cors}");
    assert_eq!(rules[0]["allowed_methods"], json!(["GET"]));
    assert_eq!(rules[1]["allowed_methods"], json!(["PUT", "POST"]));
    assert_eq!(rules[1]["max_age_seconds"], 3000);
    // The bucket reference stays.
    assert!(repo.text(Path::new("main.tf")).unwrap().contains("bucket = aws_s3_bucket.site.id"));
}

#[test]
fn time_to_live_turned_on_sets_the_tables_ttl_block() {
    let (repo, _) = applied(
        "dynamodb.amazonaws.com",
        "UpdateTimeToLive",
        json!({"tableName": "sessions", "timeToLiveSpecification": {"enabled": true, "attributeName": "expires_at"}}),
        Value::Null,
    )
    .unwrap();
    let table = config(&repo, "aws_dynamodb_table.sessions");
    assert_eq!(table["ttl"][0]["enabled"], true, "{table}");
    assert_eq!(table["ttl"][0]["attribute_name"], "expires_at");
}

#[test]
fn a_new_task_definition_revision_changes_the_image_member_and_never_writes_a_secret() {
    let containers = |extra: Value| {
        let mut c = json!({"name": "api", "image": "registry.example.com/api:1.5.0", "essential": true,
            "portMappings": [{"containerPort": 8080, "hostPort": 8080, "protocol": "tcp"}],
            "mountPoints": [], "volumesFrom": []});
        if let (Some(c), Value::Object(extra)) = (c.as_object_mut(), extra) {
            c.extend(extra);
        }
        json!([c])
    };
    let request = |extra: Value| {
        json!({"family": "api", "requiresCompatibilities": ["FARGATE"], "networkMode": "awsvpc", "cpu": "256",
               "memory": "512", "containerDefinitions": containers(extra)})
    };
    let (repo, changes) =
        applied("ecs.amazonaws.com", "RegisterTaskDefinition", request(json!({})), Value::Null).unwrap();
    assert_eq!(changes.len(), 1);
    // One member of the document: the image; the console's empty lists are not written. (The
    // arguments the call re-sends as the code has them are planned, and change nothing.)
    let members: Vec<&Op> = changes[0]
        .1
        .iter()
        .filter(|op| matches!(op, Op::Set { path, .. } if path.0.first() == Some(&driftback_terraform::Seg::Name("container_definitions".into()))))
        .collect();
    assert_eq!(members.len(), 1, "{:?}", changes[0].1);
    let text = repo.text(Path::new("main.tf")).unwrap();
    assert!(text.contains("registry.example.com/api:1.5.0"), "{text}");
    assert!(text.contains("container_definitions = jsonencode(["), "{text}");
    assert!(!text.contains("mountPoints"), "{text}");
    let config = config(&repo, "aws_ecs_task_definition.api");
    let built: Value = serde_json::from_str(config["container_definitions"].as_str().unwrap()).unwrap();
    assert_eq!(built[0]["image"], "registry.example.com/api:1.5.0");
    assert_eq!(built[0]["portMappings"][0]["containerPort"], 8080);

    // A secret in the document: the container definitions are held, never written; what else the
    // call re-sends is planned as before (and changes nothing here).
    let secret = request(json!({"environment": [{"name": "DB_PASSWORD", "value": "hunter2"}]}));
    let cs = change_set("ecs.amazonaws.com", "RegisterTaskDefinition", secret.clone());
    let planned = plan(&Catalog::builtin(), &cs, &state(), &crate::repo()).unwrap();
    let held: Vec<String> = planned.secrets.iter().map(|s| s.path.to_string()).collect();
    assert_eq!(held, ["container_definitions"], "{planned:?}");
    assert!(planned.secrets[0].reason.contains("DB_PASSWORD"), "{}", planned.secrets[0].reason);
    assert!(!serde_json::to_string(&planned).unwrap().contains("hunter2"));
    let (patched, _) = applied("ecs.amazonaws.com", "RegisterTaskDefinition", secret, Value::Null).unwrap();
    let written = crate::text(&patched);
    assert!(!written.contains("hunter2") && !written.contains("DB_PASSWORD"), "{written}");
}
