//! Aurora clusters and their instances, ElastiCache replication and parameter groups, and HTTP APIs
//! (API Gateway v2): each call planned on a request as CloudTrail logs it, the plan applied to the
//! code, and the effective configuration judged. What a recipe does not map (a master password, an
//! AUTH token, per-route settings, a member with no argument) refuses the call by name, and a flag
//! that says when to apply (`applyImmediately`) is never written as configuration.

mod support;

use std::path::{Path, PathBuf};
use support::change_set;

use driftback_recipes::{Catalog, Plan, PlanError, plan};
use driftback_terraform::eval::effective_config;
use driftback_terraform::{Address, Op, Repo, State};
use serde_json::{Value, json};

const MAIN: &str = r#"resource "aws_rds_cluster" "orders" {
  cluster_identifier      = "shop-prod-orders"
  engine                  = "aurora-postgresql"
  engine_version          = "16.4"
  master_username         = "orders_admin"
  manage_master_user_password = true
  backup_retention_period = 14
  deletion_protection     = true

  tags = {
    Team = "data-platform"
  }
}

resource "aws_rds_cluster_instance" "writer" {
  identifier                   = "shop-prod-orders-01"
  cluster_identifier           = aws_rds_cluster.orders.id
  engine                       = aws_rds_cluster.orders.engine
  instance_class               = "db.r6g.xlarge"
  performance_insights_enabled = false
}

resource "aws_rds_cluster_instance" "reader" {
  count = 2

  identifier         = "shop-prod-orders-reader-${count.index + 1}"
  cluster_identifier = aws_rds_cluster.orders.id
  engine             = aws_rds_cluster.orders.engine
  instance_class     = "db.r6g.large"
}

resource "aws_db_instance" "legacy" {
  identifier        = "legacy-db"
  engine            = "postgres"
  instance_class    = "db.t4g.medium"
  allocated_storage = 100
}

resource "aws_elasticache_parameter_group" "cache" {
  name   = "shop-prod-cache"
  family = "redis7"

  parameter {
    name  = "maxmemory-policy"
    value = "volatile-lru"
  }
}

resource "aws_elasticache_replication_group" "cache" {
  replication_group_id     = "shop-prod-cache"
  description              = "Carts and sessions"
  engine                   = "redis"
  node_type                = "cache.r7g.large"
  num_cache_clusters       = 2
  parameter_group_name     = aws_elasticache_parameter_group.cache.name
  snapshot_retention_limit = 1
}

resource "aws_apigatewayv2_api" "http" {
  name          = "parcels-api"
  protocol_type = "HTTP"

  cors_configuration {
    allow_origins = ["https://track.example.com"]
    allow_methods = ["GET", "OPTIONS", "POST"]
    max_age       = 3600
  }
}

resource "aws_apigatewayv2_stage" "default" {
  api_id      = aws_apigatewayv2_api.http.id
  name        = "$default"
  auto_deploy = true

  default_route_settings {
    detailed_metrics_enabled = true
    throttling_burst_limit   = 200
    throttling_rate_limit    = 100
  }
}

resource "aws_apigatewayv2_route" "get_parcel" {
  api_id    = aws_apigatewayv2_api.http.id
  route_key = "GET /parcels/{id}"
  target    = "integrations/q3v8t1z"
}

resource "aws_apigatewayv2_route" "events" {
  api_id    = aws_apigatewayv2_api.http.id
  route_key = "GET /parcels/{id}/events"
  target    = "integrations/q3v8t1z"
}
"#;

const API: &str = "k7x2m9qp4d";
const CLUSTER_ARN: &str = "arn:aws:rds:us-east-1:123456789012:cluster:shop-prod-orders";

fn state() -> State {
    let resource = |rtype: &str, name: &str, instances: Vec<Value>| {
        json!({"mode": "managed", "type": rtype, "name": name,
               "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]", "instances": instances})
    };
    let one = |attributes: Value| vec![json!({"schema_version": 0, "attributes": attributes})];
    let reader = |i: usize| {
        json!({"index_key": i, "schema_version": 0, "attributes": {
            "id": format!("shop-prod-orders-reader-{}", i + 1), "identifier": format!("shop-prod-orders-reader-{}", i + 1),
            "arn": format!("arn:aws:rds:us-east-1:123456789012:db:shop-prod-orders-reader-{}", i + 1),
            "cluster_identifier": "shop-prod-orders", "engine": "aurora-postgresql", "instance_class": "db.r6g.large",
            "performance_insights_enabled": false, "performance_insights_retention_period": 0}})
    };
    let resources = vec![
        resource(
            "aws_rds_cluster",
            "orders",
            one(json!({"id": "shop-prod-orders", "cluster_identifier": "shop-prod-orders", "arn": CLUSTER_ARN,
                       "engine": "aurora-postgresql", "engine_version": "16.4", "master_username": "orders_admin",
                       "manage_master_user_password": true, "backup_retention_period": 14,
                       "deletion_protection": true, "iam_database_authentication_enabled": false,
                       "apply_immediately": null, "tags": {"Team": "data-platform"}})),
        ),
        resource(
            "aws_rds_cluster_instance",
            "writer",
            one(json!({"id": "shop-prod-orders-01", "identifier": "shop-prod-orders-01",
                       "arn": "arn:aws:rds:us-east-1:123456789012:db:shop-prod-orders-01",
                       "cluster_identifier": "shop-prod-orders", "engine": "aurora-postgresql",
                       "instance_class": "db.r6g.xlarge", "performance_insights_enabled": false,
                       "performance_insights_retention_period": 0})),
        ),
        resource("aws_rds_cluster_instance", "reader", vec![reader(0), reader(1)]),
        resource(
            "aws_db_instance",
            "legacy",
            one(json!({"id": "db-LEGACY", "identifier": "legacy-db", "engine": "postgres",
                       "arn": "arn:aws:rds:us-east-1:123456789012:db:legacy-db",
                       "instance_class": "db.t4g.medium", "allocated_storage": 100})),
        ),
        resource(
            "aws_elasticache_parameter_group",
            "cache",
            one(json!({"id": "shop-prod-cache", "name": "shop-prod-cache", "family": "redis7",
                       "parameter": [{"name": "maxmemory-policy", "value": "volatile-lru"}]})),
        ),
        resource(
            "aws_elasticache_replication_group",
            "cache",
            one(json!({"id": "shop-prod-cache", "replication_group_id": "shop-prod-cache",
                       "description": "Carts and sessions", "engine": "redis", "node_type": "cache.r7g.large",
                       "num_cache_clusters": 2, "parameter_group_name": "shop-prod-cache",
                       "snapshot_retention_limit": 1, "apply_immediately": null})),
        ),
        resource(
            "aws_apigatewayv2_api",
            "http",
            one(json!({"id": API, "name": "parcels-api", "protocol_type": "HTTP",
                       "arn": format!("arn:aws:apigateway:us-east-1::/apis/{API}"),
                       "cors_configuration": [{"allow_origins": ["https://track.example.com"],
                           "allow_methods": ["GET", "OPTIONS", "POST"], "allow_headers": [], "expose_headers": [],
                           "allow_credentials": false, "max_age": 3600}]})),
        ),
        resource(
            "aws_apigatewayv2_stage",
            "default",
            one(json!({"id": "$default", "name": "$default", "api_id": API, "auto_deploy": true,
                       "default_route_settings": [{"data_trace_enabled": false, "detailed_metrics_enabled": true,
                           "logging_level": "", "throttling_burst_limit": 200, "throttling_rate_limit": 100}]})),
        ),
        resource(
            "aws_apigatewayv2_route",
            "get_parcel",
            one(json!({"id": "r1a9k3m", "api_id": API, "route_key": "GET /parcels/{id}",
                       "target": "integrations/q3v8t1z", "authorization_type": "NONE", "api_key_required": false})),
        ),
        resource(
            "aws_apigatewayv2_route",
            "events",
            one(json!({"id": "p6d4s8x", "api_id": API, "route_key": "GET /parcels/{id}/events",
                       "target": "integrations/q3v8t1z", "authorization_type": "NONE", "api_key_required": false})),
        ),
    ];
    let text = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
                      "resources": resources});
    State::parse(&text.to_string(), "terraform.tfstate").unwrap()
}

/// The fixture code before any call (`repo` names the patched copy in the tests).
fn fixture_repo() -> Repo {
    repo()
}

fn repo() -> Repo {
    Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect())
}

/// The call planned with the built-in catalog.
fn planned(source: &str, name: &str, request: Value, response: Value) -> Result<Plan, PlanError> {
    let mut cs = change_set(source, name, request);
    cs.events[0].response = response;
    plan(&Catalog::builtin(), &cs, &state(), &repo())
}

/// The plan applied to the code: the patched code, or why the patcher refused.
fn patched(plan: &Plan) -> Result<Repo, String> {
    let mut repo = repo();
    for change in plan.changes.iter().filter(|c| !c.ops.is_empty()) {
        for op in &change.ops {
            driftback_terraform::patch::apply(&mut repo, &change.address, op).map_err(|e| e.to_string())?;
        }
    }
    Ok(repo)
}

/// Planned and applied; both must succeed.
fn applied(source: &str, name: &str, request: Value) -> (Repo, Plan) {
    applied_with(source, name, request, Value::Null)
}

fn applied_with(source: &str, name: &str, request: Value, response: Value) -> (Repo, Plan) {
    let plan = planned(source, name, request, response).unwrap_or_else(|e| panic!("{name}: {e}"));
    let repo = patched(&plan).unwrap_or_else(|e| panic!("{name}: {e}"));
    (repo, plan)
}

fn config(repo: &Repo, address: &str) -> Value {
    effective_config(repo, &Address::parse(address).unwrap()).unwrap_or_else(|| panic!("{address} is not configured"))
}

fn text(repo: &Repo) -> String {
    repo.text(Path::new("main.tf")).unwrap().to_string()
}

const RDS: &str = "rds.amazonaws.com";
const CACHE: &str = "elasticache.amazonaws.com";
const APIGW: &str = "apigateway.amazonaws.com";

#[test]
fn a_cluster_modified_with_apply_immediately_changes_its_arguments_not_when_they_apply() {
    let (repo, plan) = applied(
        RDS,
        "ModifyDBCluster",
        json!({"dBClusterIdentifier": "shop-prod-orders", "applyImmediately": true, "backupRetentionPeriod": 21,
               "enableIAMDatabaseAuthentication": true, "preferredMaintenanceWindow": "sat:07:00-sat:08:00"}),
    );
    assert_eq!(plan.changes.len(), 1, "{plan:?}");
    assert_eq!(plan.changes[0].recipes, ["rds-modify-db-cluster"]);
    let cluster = config(&repo, "aws_rds_cluster.orders");
    assert_eq!(cluster["backup_retention_period"], 21);
    assert_eq!(cluster["iam_database_authentication_enabled"], true);
    assert_eq!(cluster["preferred_maintenance_window"], "sat:07:00-sat:08:00");
    assert_eq!(cluster["deletion_protection"], true);
    assert!(!text(&repo).contains("apply_immediately"), "{}", text(&repo));

    // The master password is never written, and a delta of log exports has no argument: refused by name.
    let err = planned(
        RDS,
        "ModifyDBCluster",
        json!({"dBClusterIdentifier": "shop-prod-orders", "applyImmediately": true,
               "masterUserPassword": "HIDDEN_DUE_TO_SECURITY_REASONS", "backupRetentionPeriod": 21}),
        Value::Null,
    )
    .unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params == "masterUserPassword"), "{err}");
    let err = planned(
        RDS,
        "ModifyDBCluster",
        json!({"dBClusterIdentifier": "shop-prod-orders",
               "cloudwatchLogsExportConfiguration": {"disableLogTypes": ["postgresql"]}}),
        Value::Null,
    )
    .unwrap_err();
    assert!(err.to_string().contains("cloudwatchLogsExportConfiguration"), "{err}");
}

#[test]
fn an_aurora_instance_is_found_by_its_identifier_and_a_standalone_database_still_by_its_own_recipe() {
    let (repo, plan) = applied(
        RDS,
        "ModifyDBInstance",
        json!({"dBInstanceIdentifier": "shop-prod-orders-01", "dBInstanceClass": "db.r6g.2xlarge",
               "applyImmediately": true}),
    );
    assert_eq!(plan.changes[0].recipes, ["rds-modify-db-cluster-instance"]);
    assert_eq!(config(&repo, "aws_rds_cluster_instance.writer")["instance_class"], "db.r6g.2xlarge");
    assert_eq!(config(&repo, "aws_rds_cluster_instance.reader[0]")["instance_class"], "db.r6g.large");

    // Performance Insights turned on in the console, with its default retention: the code leaves the
    // retention to AWS, so only the switch is written.
    let (repo, plan) = applied(
        RDS,
        "ModifyDBInstance",
        json!({"dBInstanceIdentifier": "shop-prod-orders-01", "applyImmediately": true,
               "enablePerformanceInsights": true, "performanceInsightsRetentionPeriod": 7}),
    );
    let writer = config(&repo, "aws_rds_cluster_instance.writer");
    assert_eq!(writer["performance_insights_enabled"], true);
    assert!(!text(&repo).contains("performance_insights_retention_period"), "{}", text(&repo));
    assert!(plan.notes.iter().any(|n| n.contains("performance_insights_retention_period")), "{:?}", plan.notes);

    // Storage belongs to the cluster: a cluster member has no such argument, and the call is refused.
    let err = planned(
        RDS,
        "ModifyDBInstance",
        json!({"dBInstanceIdentifier": "shop-prod-orders-01", "allocatedStorage": 200}),
        Value::Null,
    )
    .unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params == "allocatedStorage"), "{err}");

    let (repo, plan) = applied(
        RDS,
        "ModifyDBInstance",
        json!({"dBInstanceIdentifier": "legacy-db", "allocatedStorage": 200, "applyImmediately": true}),
    );
    assert_eq!(plan.changes[0].recipes, ["rds-modify-db-instance"]);
    assert_eq!(config(&repo, "aws_db_instance.legacy")["allocated_storage"], 200);
}

#[test]
fn a_password_rotated_in_the_same_save_as_a_storage_resize_is_held_and_the_resize_planned() {
    let save = json!({"dBInstanceIdentifier": "legacy-db", "allocatedStorage": 200, "applyImmediately": true,
                      "masterUserPassword": "HIDDEN_DUE_TO_SECURITY_REASONS"});
    let (repo, plan) = applied(RDS, "ModifyDBInstance", save);
    assert_eq!(config(&repo, "aws_db_instance.legacy")["allocated_storage"], 200);
    assert!(config(&repo, "aws_db_instance.legacy").get("password").is_none());
    assert!(!text(&repo).contains("HIDDEN"), "{}", text(&repo));
    let held: Vec<(String, String)> =
        plan.secrets.iter().map(|s| (s.address.to_string(), s.path.to_string())).collect();
    assert_eq!(held, [("aws_db_instance.legacy".to_string(), "password".to_string())]);
    assert!(plan.secrets[0].reason.contains("hidden by CloudTrail"), "{}", plan.secrets[0].reason);
    let written: Vec<&Op> = plan.changes.iter().flat_map(|c| &c.ops).collect();
    assert_eq!(written.len(), 1, "{written:?}");

    // A value the calls give in clear under a secret's name is held the same way, never written.
    let plan = planned(
        RDS,
        "ModifyDBInstance",
        json!({"dBInstanceIdentifier": "legacy-db", "backupRetentionPeriod": 14, "masterUserPassword": "hunter2-hunter2"}),
        Value::Null,
    )
    .unwrap();
    assert_eq!(plan.secrets.len(), 1);
    assert!(!serde_json::to_string(&plan).unwrap().contains("hunter2"));

    // The password alone: nothing can be written, and the plan is refused as a secret.
    let err = planned(
        RDS,
        "ModifyDBInstance",
        json!({"dBInstanceIdentifier": "legacy-db", "masterUserPassword": "HIDDEN_DUE_TO_SECURITY_REASONS"}),
        Value::Null,
    )
    .unwrap_err();
    assert!(matches!(&err, PlanError::Secret { path } if path == "password"), "{err}");
}

#[test]
fn tags_of_an_aurora_cluster_are_added_and_removed_by_its_arn() {
    let (repo, _) = applied(
        RDS,
        "AddTagsToResource",
        json!({"resourceName": CLUSTER_ARN, "tags": [{"key": "DataClassification", "value": "pii"}]}),
    );
    let tags = &config(&repo, "aws_rds_cluster.orders")["tags"];
    assert_eq!(tags["DataClassification"], "pii", "{tags}");
    assert_eq!(tags["Team"], "data-platform");
    assert!(config(&repo, "aws_rds_cluster_instance.writer").get("tags").is_none_or(Value::is_null));

    let (repo, _) = applied(RDS, "RemoveTagsFromResource", json!({"resourceName": CLUSTER_ARN, "tagKeys": ["Team"]}));
    let cluster = config(&repo, "aws_rds_cluster.orders");
    assert!(cluster["tags"].get("Team").is_none(), "{cluster}");
}

#[test]
fn the_last_reader_of_a_count_is_deleted_by_lowering_the_count_and_another_is_refused() {
    let (repo, plan) = applied(RDS, "DeleteDBInstance", json!({"dBInstanceIdentifier": "shop-prod-orders-reader-2"}));
    assert_eq!(plan.changes[0].ops, [Op::RemoveResource]);
    assert!(text(&repo).contains("count = 1"), "{}", text(&repo));
    assert!(effective_config(&repo, &Address::parse("aws_rds_cluster_instance.reader[1]").unwrap()).is_none());
    assert_eq!(config(&repo, "aws_rds_cluster_instance.reader[0]")["identifier"], "shop-prod-orders-reader-1");

    // Removing the first would renumber the second: the patcher refuses, a person decides.
    let plan = planned(
        RDS,
        "DeleteDBInstance",
        json!({"dBInstanceIdentifier": "shop-prod-orders-reader-1", "skipFinalSnapshot": true}),
        Value::Null,
    )
    .unwrap();
    let err = patched(&plan).unwrap_err();
    assert!(err.contains("not the last"), "{err}");
}

#[test]
fn a_replication_group_is_resized_without_writing_apply_immediately_and_never_takes_an_auth_token() {
    let (repo, plan) = applied(
        CACHE,
        "ModifyReplicationGroup",
        json!({"replicationGroupId": "shop-prod-cache", "applyImmediately": true, "cacheNodeType": "cache.r7g.xlarge",
               "snapshotRetentionLimit": 5, "snapshotWindow": "02:00-03:00"}),
    );
    assert_eq!(plan.changes[0].recipes, ["elasticache-modify-replication-group"]);
    let group = config(&repo, "aws_elasticache_replication_group.cache");
    assert_eq!(group["node_type"], "cache.r7g.xlarge");
    assert_eq!(group["snapshot_retention_limit"], 5);
    assert_eq!(group["snapshot_window"], "02:00-03:00");
    assert!(!text(&repo).contains("apply_immediately"), "{}", text(&repo));

    let err = planned(
        CACHE,
        "ModifyReplicationGroup",
        json!({"replicationGroupId": "shop-prod-cache", "applyImmediately": true, "authToken": "s3cr3t-t0ken-value",
               "authTokenUpdateStrategy": "ROTATE"}),
        Value::Null,
    )
    .unwrap_err();
    assert!(err.to_string().contains("authToken"), "{err}");
    assert!(!err.to_string().contains("s3cr3t"), "{err}");
}

#[test]
fn cache_parameters_change_by_name_and_a_new_one_is_added() {
    let (repo, _) = applied(
        CACHE,
        "ModifyCacheParameterGroup",
        json!({"cacheParameterGroupName": "shop-prod-cache", "parameterNameValues": [
            {"parameterName": "maxmemory-policy", "parameterValue": "allkeys-lfu"},
            {"parameterName": "timeout", "parameterValue": "300"}]}),
    );
    let params = config(&repo, "aws_elasticache_parameter_group.cache")["parameter"].clone();
    let value = |name: &str| params.as_array().unwrap().iter().find(|p| p["name"] == name).map(|p| p["value"].clone());
    assert_eq!(value("maxmemory-policy"), Some(json!("allkeys-lfu")), "{params}");
    assert_eq!(value("timeout"), Some(json!("300")), "{params}");
}

#[test]
fn a_v2_stages_default_route_throttling_is_written_in_its_block_and_per_route_settings_are_refused() {
    let (repo, plan) = applied(
        APIGW,
        "UpdateStage",
        json!({"apiId": API, "stageName": "$default", "defaultRouteSettings": {
            "detailedMetricsEnabled": true, "throttlingBurstLimit": 500, "throttlingRateLimit": 250.0}}),
    );
    assert_eq!(plan.changes[0].recipes, ["apigatewayv2-update-stage"]);
    // The metrics flag the code already holds is not rewritten.
    assert_eq!(support::changing_ops(&plan, &fixture_repo()), 2, "{:?}", plan.changes[0].ops);
    let settings = &config(&repo, "aws_apigatewayv2_stage.default")["default_route_settings"];
    let settings = settings.get(0).unwrap_or(settings);
    assert_eq!(settings["throttling_burst_limit"], 500, "{settings}");
    assert_eq!(settings["throttling_rate_limit"], 250);
    assert_eq!(settings["detailed_metrics_enabled"], true);

    let err = planned(
        APIGW,
        "UpdateStage",
        json!({"apiId": API, "stageName": "$default",
               "routeSettings": {"POST /parcels": {"throttlingBurstLimit": 10, "throttlingRateLimit": 5.0}}}),
        Value::Null,
    )
    .unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params == "routeSettings"), "{err}");

    // A REST API's UpdateStage (v1: `restApiId` and patch operations) is not this recipe's.
    let v1 = planned(
        APIGW,
        "UpdateStage",
        json!({"restApiId": "a1b2c3d4e5", "stageName": "$default",
               "patchOperations": [{"op": "replace", "path": "/*/*/throttling/burstLimit", "value": "500"}]}),
        Value::Null,
    );
    assert!(v1.is_err(), "{v1:?}");
}

#[test]
fn a_v2_apis_cors_origins_change_and_what_the_call_resends_unchanged_stays() {
    let (repo, plan) = applied(
        APIGW,
        "UpdateApi",
        json!({"apiId": API, "corsConfiguration": {
            "allowOrigins": ["https://track.example.com", "https://www.example.com"],
            "allowMethods": ["GET", "OPTIONS", "POST"], "maxAge": 3600, "allowCredentials": false}}),
    );
    assert_eq!(plan.changes[0].recipes, ["apigatewayv2-update-api"]);
    assert_eq!(support::changing_ops(&plan, &fixture_repo()), 1, "{:?}", plan.changes[0].ops);
    let cors = &config(&repo, "aws_apigatewayv2_api.http")["cors_configuration"];
    let cors = cors.get(0).unwrap_or(cors);
    assert_eq!(cors["allow_origins"], json!(["https://track.example.com", "https://www.example.com"]));
    assert_eq!(cors["max_age"], 3600);

    // A WebSocket-only member has no argument: refused by name.
    let err =
        planned(APIGW, "UpdateApi", json!({"apiId": API, "disableSchemaValidation": true}), Value::Null).unwrap_err();
    assert!(err.to_string().contains("disableSchemaValidation"), "{err}");
}

#[test]
fn a_route_created_with_its_integration_is_adopted_and_one_without_is_not() {
    let (repo, plan) = applied_with(
        APIGW,
        "CreateRoute",
        json!({"apiId": API, "routeKey": "GET /parcels/{id}/eta", "authorizationType": "NONE",
               "apiKeyRequired": false, "target": "integrations/q3v8t1z"}),
        json!({"apiKeyRequired": false, "authorizationType": "NONE", "routeId": "w9e2c4v",
               "routeKey": "GET /parcels/{id}/eta", "target": "integrations/q3v8t1z"}),
    );
    assert_eq!(plan.changes.len(), 1, "{plan:?}");
    let Op::CreateResource { import_id, .. } = &plan.changes[0].ops[0] else { panic!("{plan:?}") };
    assert_eq!(import_id, &format!("{API}/w9e2c4v"));
    let route = config(&repo, &plan.changes[0].address.to_string());
    assert_eq!(route["route_key"], "GET /parcels/{id}/eta");
    assert_eq!(route["target"], "integrations/q3v8t1z");
    // The API is a resource of the code: referenced, not copied.
    assert!(text(&repo).contains("aws_apigatewayv2_api.http.id"), "{}", text(&repo));

    // The console creates the route first and attaches the integration later: written now, the
    // route would lose its integration at the next apply.
    let err = planned(
        APIGW,
        "CreateRoute",
        json!({"apiId": API, "routeKey": "GET /parcels/{id}/eta", "authorizationType": "NONE"}),
        json!({"routeId": "w9e2c4v", "routeKey": "GET /parcels/{id}/eta"}),
    );
    // No recipe's condition holds: as a call no recipe knows, it goes to the agent or a person.
    assert!(matches!(err, Err(PlanError::NoRecipe { .. })), "{err:?}");
}

#[test]
fn a_v2_route_is_changed_within_its_api_and_request_parameters_are_refused() {
    let (repo, plan) =
        applied(APIGW, "UpdateRoute", json!({"apiId": API, "routeId": "r1a9k3m", "target": "integrations/h5n2w7c"}));
    assert_eq!(plan.changes[0].recipes, ["apigatewayv2-update-route"]);
    assert_eq!(config(&repo, "aws_apigatewayv2_route.get_parcel")["target"], "integrations/h5n2w7c");
    assert_eq!(config(&repo, "aws_apigatewayv2_route.events")["target"], "integrations/q3v8t1z");

    // The same route id in another API is not this one.
    let err = planned(
        APIGW,
        "UpdateRoute",
        json!({"apiId": "zz99zz99zz", "routeId": "r1a9k3m", "target": "integrations/h5n2w7c"}),
        Value::Null,
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::NotManaged { .. }), "{err}");

    let err = planned(
        APIGW,
        "UpdateRoute",
        json!({"apiId": API, "routeId": "r1a9k3m",
               "requestParameters": {"route.request.querystring.verbose": {"required": false}}}),
        Value::Null,
    )
    .unwrap_err();
    assert!(err.to_string().contains("requestParameters"), "{err}");
}

#[test]
fn a_deleted_v2_route_leaves_the_code() {
    let (repo, plan) = applied(APIGW, "DeleteRoute", json!({"apiId": API, "routeId": "p6d4s8x"}));
    assert_eq!(plan.changes[0].recipes, ["apigatewayv2-delete-route"]);
    assert!(!text(&repo).contains("GET /parcels/{id}/events"), "{}", text(&repo));
    assert_eq!(config(&repo, "aws_apigatewayv2_route.get_parcel")["route_key"], "GET /parcels/{id}");
}
