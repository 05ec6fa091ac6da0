//! Planning against a small repository and state: a call's parameters are either written into the
//! code or refused by name, never dropped without a word.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use support::change_set;

use driftback_events::{ChangeSet, GroupConfig, group, normalize};

use driftback_recipes::{Catalog, PlanError, plan};
use driftback_terraform::{Op, Repo, State};
use serde_json::{Value, json};

const MAIN: &str = r#"resource "aws_sqs_queue" "jobs" {
  name                       = "jobs"
  visibility_timeout_seconds = 30
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq.arn
    maxReceiveCount     = 5
  })
}

resource "aws_dynamodb_table" "sessions" {
  name           = "sessions"
  billing_mode   = "PROVISIONED"
  read_capacity  = 5
  write_capacity = 5
  hash_key       = "id"
}

resource "aws_security_group" "web" {
  name = "web"
  ingress {
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["10.0.0.0/16"]
    description = "https"
  }
}

resource "aws_vpc_security_group_ingress_rule" "from_app" {
  security_group_id            = "sg-db"
  referenced_security_group_id = aws_security_group.app.id
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
}

resource "aws_vpc_security_group_ingress_rule" "from_vpn" {
  security_group_id = "sg-db"
  cidr_ipv4         = "10.50.0.0/16"
  ip_protocol       = "tcp"
  from_port         = 5432
  to_port           = 5432
}
"#;

const URL: &str = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs";

fn state() -> State {
    let resource = |rtype: &str, attributes: Value| {
        let name = match rtype {
            "aws_sqs_queue" => "jobs".to_string(),
            "aws_dynamodb_table" => "sessions".to_string(),
            _ => attributes["name"].as_str().unwrap().to_string(),
        };
        json!({"mode": "managed", "type": rtype, "name": name,
               "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
               "instances": [{"schema_version": 0, "attributes": attributes}]})
    };
    let text = json!({
        "version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
        "resources": [
            resource("aws_sqs_queue", json!({"id": URL, "url": URL, "name": "jobs", "visibility_timeout_seconds": 30,
                "redrive_policy": "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:123456789012:dlq\",\"maxReceiveCount\":5}"})),
            resource("aws_dynamodb_table", json!({"id": "sessions", "name": "sessions", "billing_mode": "PROVISIONED",
                                                  "read_capacity": 5, "write_capacity": 5})),
            resource("aws_security_group", json!({"name": "web", "id": "sg-web"})),
            resource("aws_vpc_security_group_ingress_rule", json!({"name": "from_app", "id": "sgr-app", "security_group_rule_id": "sgr-app",
                "referenced_security_group_id": "sg-app", "ip_protocol": "tcp", "from_port": 5432, "to_port": 5432})),
            resource("aws_vpc_security_group_ingress_rule", json!({"name": "from_vpn", "id": "sgr-vpn", "security_group_rule_id": "sgr-vpn",
                "cidr_ipv4": "10.50.0.0/16", "ip_protocol": "tcp", "from_port": 5432, "to_port": 5432})),
        ]
    });
    State::parse(&text.to_string(), "terraform.tfstate").unwrap()
}

fn repo() -> Repo {
    Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), MAIN.to_string())]))
}

fn ops(result: Result<driftback_recipes::Plan, PlanError>) -> Vec<Op> {
    result.unwrap().changes.into_iter().flat_map(|c| c.ops).collect()
}

#[test]
fn an_attribute_no_recipe_rule_maps_is_refused_by_name() {
    let catalog = Catalog::builtin();
    let set = |attributes: Value| {
        change_set("sqs.amazonaws.com", "SetQueueAttributes", json!({"queueUrl": URL, "attributes": attributes}))
    };
    let known = plan(&catalog, &set(json!({"VisibilityTimeout": "60"})), &state(), &repo());
    assert_eq!(ops(known).len(), 1);
    let err =
        plan(&catalog, &set(json!({"VisibilityTimeout": "60", "FutureSetting": "on"})), &state(), &repo()).unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params == "FutureSetting"), "{err}");
    assert!(err.to_string().contains("also sets FutureSetting"), "{err}");
}

#[test]
fn on_demand_billing_removes_the_provisioned_capacity() {
    let catalog = Catalog::builtin();
    let cs = change_set(
        "dynamodb.amazonaws.com",
        "UpdateTable",
        json!({"tableName": "sessions", "billingMode": "PAY_PER_REQUEST"}),
    );
    let ops = ops(plan(&catalog, &cs, &state(), &repo()));
    let removed: Vec<String> =
        ops.iter().filter_map(|o| if let Op::Remove { path } = o { Some(path.to_string()) } else { None }).collect();
    assert_eq!(removed, ["read_capacity", "write_capacity"], "{ops:?}");
    // Provisioned billing keeps them.
    let cs = change_set(
        "dynamodb.amazonaws.com",
        "UpdateTable",
        json!({"tableName": "sessions", "billingMode": "PROVISIONED",
        "provisionedThroughput": {"readCapacityUnits": 10, "writeCapacityUnits": 10}}),
    );
    assert!(ops_of(&catalog, &cs).iter().all(|o| !matches!(o, Op::Remove { .. })));
}

fn ops_of(catalog: &Catalog, cs: &ChangeSet) -> Vec<Op> {
    ops(plan(catalog, cs, &state(), &repo()))
}

#[test]
fn a_json_document_built_from_other_resources_changes_member_by_member() {
    let catalog = Catalog::builtin();
    let policy = r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:dlq","maxReceiveCount":3}"#;
    let cs = change_set(
        "sqs.amazonaws.com",
        "SetQueueAttributes",
        json!({"queueUrl": URL, "attributes": {"RedrivePolicy": policy}}),
    );
    let ops = ops_of(&catalog, &cs);
    assert_eq!(ops.len(), 1, "{ops:?}");
    let Op::Set { path, value } = &ops[0] else { panic!("{ops:?}") };
    assert_eq!(path.to_string(), r#"redrive_policy["maxReceiveCount"]"#);
    assert_eq!(value, &driftback_terraform::AttrValue::Literal(json!(3)));
}

#[test]
fn several_rules_in_one_call_each_change_their_resource_and_a_resent_reference_stays() {
    let catalog = Catalog::builtin();
    let rule = |id: &str, source: Value| {
        let mut inner = json!({"IpProtocol": "tcp", "FromPort": 6432, "ToPort": 6432});
        inner.as_object_mut().unwrap().extend(source.as_object().unwrap().clone());
        json!({"tag": 1, "SecurityGroupRuleId": id, "SecurityGroupRule": inner})
    };
    let request = json!({"ModifySecurityGroupRulesRequest": {"GroupId": "sg-db", "SecurityGroupRule": [
        rule("sgr-app", json!({"ReferencedGroupId": "sg-app"})),
        rule("sgr-vpn", json!({"CidrIpv4": "10.50.0.0/16"})),
    ]}});
    let cs = change_set("ec2.amazonaws.com", "ModifySecurityGroupRules", request);
    let planned = plan(&catalog, &cs, &state(), &repo()).unwrap();
    let changed: Vec<(String, Vec<String>)> = planned
        .changes
        .iter()
        .map(|c| {
            let paths =
                c.ops.iter().filter_map(|o| if let Op::Set { path, .. } = o { Some(path.to_string()) } else { None });
            (c.address.to_string(), paths.collect())
        })
        .collect();
    // Each rule changes its own resource; the referenced group, re-sent as it is, is not set (the
    // code keeps its reference). Values equal to the code's literals are settled by the patcher.
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert_eq!(changed[0].0, "aws_vpc_security_group_ingress_rule.from_app");
    assert!(changed[0].1.contains(&"from_port".to_string()), "{changed:?}");
    assert!(!changed[0].1.contains(&"referenced_security_group_id".to_string()), "{changed:?}");
    assert_eq!(changed[1].0, "aws_vpc_security_group_ingress_rule.from_vpn");
    assert!(changed[1].1.contains(&"to_port".to_string()), "{changed:?}");
}

#[test]
fn a_top_level_parameter_of_an_attribute_setting_call_is_not_dropped_either() {
    let catalog = Catalog::builtin();
    let update = |extra: Value| {
        let mut request = json!({"tableName": "sessions", "billingMode": "PROVISIONED"});
        request.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        change_set("dynamodb.amazonaws.com", "UpdateTable", request)
    };
    assert!(plan(&catalog, &update(json!({"deletionProtectionEnabled": true})), &state(), &repo()).is_ok());
    let err = plan(&catalog, &update(json!({"streamSpecification": {"streamEnabled": true}})), &state(), &repo())
        .unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params == "streamSpecification"), "{err}");
}

#[test]
fn a_source_added_to_the_ports_of_an_existing_block_widens_it() {
    let catalog = Catalog::builtin();
    let authorize = |port: u16| {
        let permission = json!({"ipProtocol": "tcp", "fromPort": port, "toPort": port,
            "ipRanges": {"items": [{"cidrIp": "10.1.0.0/16", "description": "https"}]}});
        change_set(
            "ec2.amazonaws.com",
            "AuthorizeSecurityGroupIngress",
            json!({"groupId": "sg-web", "ipPermissions": {"items": [permission]}}),
        )
    };
    let widened = ops_of(&catalog, &authorize(443));
    let [Op::Set { path, value }] = widened.as_slice() else { panic!("{widened:?}") };
    assert_eq!(path.to_string(), "ingress[0].cidr_blocks");
    assert_eq!(value, &driftback_terraform::AttrValue::Literal(json!(["10.0.0.0/16", "10.1.0.0/16"])));
    // Other ports: a block of its own.
    let added = ops_of(&catalog, &authorize(8443));
    assert!(matches!(added.as_slice(), [Op::AddBlock { .. }]), "{added:?}");
}

/// A group whose rules are `aws_security_group_rule` resources (the provider's older standalone style).
fn legacy_rules() -> (State, Repo) {
    let main = r#"resource "aws_security_group" "alb" {
  name = "alb"
}

resource "aws_security_group_rule" "http" {
  type              = "ingress"
  security_group_id = aws_security_group.alb.id
  protocol          = "tcp"
  from_port         = 80
  to_port           = 80
  cidr_blocks       = ["0.0.0.0/0"]
}

resource "aws_security_group_rule" "office" {
  type              = "ingress"
  security_group_id = aws_security_group.alb.id
  protocol          = "tcp"
  from_port         = 22
  to_port           = 22
  cidr_blocks       = ["10.1.0.0/16", "10.2.0.0/16"]
}
"#;
    let rule = |name: &str, port: u16, cidrs: Value| {
        json!({"mode": "managed", "type": "aws_security_group_rule", "name": name,
               "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
               "instances": [{"schema_version": 2, "attributes": {"id": format!("sgrule-{port}"),
                   "security_group_id": "sg-alb", "type": "ingress", "protocol": "tcp",
                   "from_port": port, "to_port": port, "cidr_blocks": cidrs}}]})
    };
    let state = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
    "resources": [
        {"mode": "managed", "type": "aws_security_group", "name": "alb",
         "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
         "instances": [{"schema_version": 1, "attributes": {"id": "sg-alb", "name": "alb"}}]},
        rule("http", 80, json!(["0.0.0.0/0"])),
        rule("office", 22, json!(["10.1.0.0/16", "10.2.0.0/16"])),
    ]});
    (
        State::parse(&state.to_string(), "terraform.tfstate").unwrap(),
        Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), main.to_string())])),
    )
}

#[test]
fn a_group_with_standalone_rule_resources_gains_rule_resources_not_an_inline_block() {
    let (state, repo) = legacy_rules();
    let catalog = Catalog::builtin();
    let permission = json!({"ipProtocol": "tcp", "fromPort": 8443, "toPort": 8443,
        "ipRanges": {"items": [{"cidrIp": "10.40.0.0/16", "description": "admin UI"}]},
        "groups": {"items": [{"groupId": "sg-alb"}]}});
    let cs = change_set(
        "ec2.amazonaws.com",
        "AuthorizeSecurityGroupIngress",
        json!({"groupId": "sg-alb", "ipPermissions": {"items": [permission]}}),
    );
    let plan = plan(&catalog, &cs, &state, &repo).unwrap();
    let created: Vec<(String, String, BTreeMap<String, driftback_terraform::AttrValue>)> = plan
        .changes
        .iter()
        .flat_map(|c| c.ops.iter().map(move |op| (c, op)))
        .map(|(c, op)| match op {
            Op::CreateResource { spec, import_id } => {
                (c.address.to_string(), import_id.clone(), spec.attrs.iter().cloned().collect())
            }
            other => panic!("only new rule resources, got {other:?}"),
        })
        .collect();
    assert_eq!(created.len(), 2, "one resource per source: {created:?}");
    let (address, import_id, attrs) = &created[0];
    assert!(address.starts_with("aws_security_group_rule.alb_ingress_tcp_8443"), "{address}");
    assert_eq!(import_id, "sg-alb_ingress_tcp_8443_8443_10.40.0.0/16");
    assert_eq!(attrs["type"], driftback_terraform::AttrValue::Literal(json!("ingress")));
    assert_eq!(attrs["cidr_blocks"], driftback_terraform::AttrValue::Literal(json!(["10.40.0.0/16"])));
    assert_eq!(attrs["description"], driftback_terraform::AttrValue::Literal(json!("admin UI")));
    assert_eq!(
        attrs["security_group_id"],
        driftback_terraform::AttrValue::Reference("aws_security_group.alb.id".into())
    );
    // The group as a source: its own rule, the source a reference to the managed group.
    let (_, import_id, attrs) = &created[1];
    assert_eq!(import_id, "sg-alb_ingress_tcp_8443_8443_sg-alb");
    assert_eq!(
        attrs["source_security_group_id"],
        driftback_terraform::AttrValue::Reference("aws_security_group.alb.id".into())
    );
}

#[test]
fn a_revoked_permission_removes_its_rule_resource_and_never_a_wider_one() {
    let (state, repo) = legacy_rules();
    let catalog = Catalog::builtin();
    let revoke = |port: u16, cidr: &str| {
        let permission = json!({"ipProtocol": "tcp", "fromPort": port, "toPort": port,
            "ipRanges": {"items": [{"cidrIp": cidr}]}});
        change_set(
            "ec2.amazonaws.com",
            "RevokeSecurityGroupIngress",
            json!({"groupId": "sg-alb", "ipPermissions": {"items": [permission]}}),
        )
    };
    let plan = plan(&catalog, &revoke(80, "0.0.0.0/0"), &state, &repo).unwrap();
    let removed: Vec<String> = plan
        .changes
        .iter()
        .filter(|c| c.ops.iter().any(|o| matches!(o, Op::RemoveResource)))
        .map(|c| c.address.to_string())
        .collect();
    assert_eq!(removed, ["aws_security_group_rule.http"]);
    // The office rule allows two ranges; the call revoked one: removing the resource would revoke both.
    let err = driftback_recipes::plan(&catalog, &revoke(22, "10.1.0.0/16"), &state, &repo).unwrap_err();
    assert!(err.to_string().contains("aws_security_group_rule.office also allows other sources"), "{err}");
}

fn s3_call(name: &str, request: Value, id: &str) -> Value {
    json!({"eventID": id, "eventTime": "2024-03-01T10:00:00Z", "eventSource": "s3.amazonaws.com", "eventName": name,
           "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/ines", "userName": "ines"},
           "requestParameters": request})
}

#[test]
fn a_bucket_made_in_the_console_is_adopted_with_its_split_resources() {
    let bucket = "athena-results";
    let events: Vec<_> = [
        s3_call("CreateBucket", json!({"bucketName": bucket, "Host": "s3.amazonaws.com"}), "e1"),
        s3_call(
            "PutBucketVersioning",
            json!({"bucketName": bucket, "versioning": "", "VersioningConfiguration": {"Status": "Enabled"}}),
            "e2",
        ),
        s3_call(
            "PutBucketPublicAccessBlock",
            json!({"bucketName": bucket, "publicAccessBlock": "", "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true}}),
            "e3",
        ),
    ]
    .iter()
    .map(|e| normalize(e).unwrap())
    .collect();
    let cs = group(events, &GroupConfig::default()).remove(0);
    let plan = plan(&Catalog::builtin(), &cs, &state(), &repo()).unwrap();
    let created: BTreeMap<String, (String, driftback_terraform::BlockSpec)> = plan
        .changes
        .iter()
        .flat_map(|c| c.ops.iter().map(move |op| (c, op)))
        .filter_map(|(c, op)| match op {
            Op::CreateResource { spec, import_id } => Some((c.address.to_string(), (import_id.clone(), spec.clone()))),
            _ => None,
        })
        .collect();
    let names: Vec<&String> = created.keys().collect();
    assert_eq!(
        names,
        [
            "aws_s3_bucket.athena_results",
            "aws_s3_bucket_public_access_block.athena_results",
            "aws_s3_bucket_versioning.athena_results"
        ]
    );
    assert!(created.values().all(|(import_id, _)| import_id == bucket));
    // Versioning in its own resource, linked to the new bucket, never inside aws_s3_bucket.
    let (_, versioning) = &created["aws_s3_bucket_versioning.athena_results"];
    assert_eq!(
        versioning.attrs[0],
        ("bucket".into(), driftback_terraform::AttrValue::Reference("aws_s3_bucket.athena_results.id".into()))
    );
    assert_eq!(versioning.blocks[0].0, "versioning_configuration");
    assert_eq!(
        versioning.blocks[0].1.attrs,
        [("status".into(), driftback_terraform::AttrValue::Literal(json!("Enabled")))]
    );
    let (_, bucket_spec) = &created["aws_s3_bucket.athena_results"];
    assert!(bucket_spec.blocks.is_empty(), "{bucket_spec:?}");
    let (_, pab) = &created["aws_s3_bucket_public_access_block.athena_results"];
    assert_eq!(pab.attrs.len(), 5, "{pab:?}");
}

#[test]
fn load_balancer_attributes_map_by_key_and_an_unknown_key_or_action_member_is_refused() {
    let main = r#"resource "aws_lb" "web" {
  name = "web"
}

resource "aws_lb_listener" "http" {
  load_balancer_arn = aws_lb.web.arn
  port              = 80

  default_action {
    type = "fixed-response"
  }
}

resource "aws_lb_target_group" "app" {
  name = "app"
}
"#;
    let lb = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/web/1";
    let listener = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/1/2";
    let tg = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/app/3";
    let resource = |rtype: &str, name: &str, arn: &str| {
        json!({"mode": "managed", "type": rtype, "name": name,
               "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
               "instances": [{"schema_version": 0, "attributes": {"id": arn, "arn": arn}}]})
    };
    let state = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
        "resources": [resource("aws_lb", "web", lb), resource("aws_lb_listener", "http", listener),
                      resource("aws_lb_target_group", "app", tg)]});
    let state = State::parse(&state.to_string(), "terraform.tfstate").unwrap();
    let repo = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), main.to_string())]));
    let catalog = Catalog::builtin();
    let elb = |name: &str, request: Value| change_set("elasticloadbalancing.amazonaws.com", name, request);

    let attributes = |key: &str| {
        elb(
            "ModifyLoadBalancerAttributes",
            json!({"loadBalancerArn": lb, "attributes": [{"key": "idle_timeout.timeout_seconds", "value": "120"},
                                                          {"key": key, "value": "true"}]}),
        )
    };
    let set = ops(plan(&catalog, &attributes("deletion_protection.enabled"), &state, &repo));
    let shown: Vec<String> = set.iter().map(|o| format!("{o:?}")).collect();
    assert!(matches!(&set[..], [Op::Set { .. }, Op::Set { .. }]), "{shown:?}");
    assert!(
        shown[0].contains("idle_timeout") && shown[0].contains("120") && !shown[0].contains("\"120\""),
        "{shown:?}"
    );
    assert!(shown[1].contains("enable_deletion_protection") && shown[1].contains("Bool(true)"), "{shown:?}");
    let err = plan(&catalog, &attributes("some.future.attribute"), &state, &repo).unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params == "some.future.attribute"), "{err}");

    // The listener's default actions are replaced whole; the target group becomes a reference.
    let forward = |action: Value| elb("ModifyListener", json!({"listenerArn": listener, "defaultActions": [action]}));
    let replaced = ops(plan(&catalog, &forward(json!({"type": "forward", "targetGroupArn": tg})), &state, &repo));
    let [Op::RemoveBlocks { block_type, matching }, Op::AddBlock { spec, .. }] = replaced.as_slice() else {
        panic!("{replaced:?}")
    };
    assert_eq!((block_type.as_str(), matching.len()), ("default_action", 0));
    assert!(spec.attrs.contains(&(
        "target_group_arn".into(),
        driftback_terraform::AttrValue::Reference("aws_lb_target_group.app.id".into())
    )));
    // A weighted forward holds what the recipe does not write: refused by name, never cut down.
    let weighted =
        forward(json!({"type": "forward", "forwardConfig": {"targetGroups": [{"targetGroupArn": tg, "weight": 80}]}}));
    let err = plan(&catalog, &weighted, &state, &repo).unwrap_err();
    assert!(err.to_string().contains("defaultActions.forwardConfig"), "{err}");
}
