//! Calls on resources that registry modules manage (the modules corpus, issues 29 and 30): which
//! resource a call targets (never a namesake of another type), EKS node group labels and cluster
//! logging given as deltas, cluster version upgrades, Lambda tracing, and a value the module's own
//! `lifecycle { ignore_changes }` leaves to an autoscaler.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use support::{change_set, resource, state_of};

use driftback_recipes::{Catalog, PlanError, plan, targets};
use driftback_terraform::{Address, AttrPath, AttrValue, Op, Repo, State};
use serde_json::{Value, json};

const ROOT: &str = r#"resource "aws_eks_cluster" "main" {
  name                      = "k8s"
  role_arn                  = "arn:aws:iam::123456789012:role/k8s"
  version                   = "1.29"
  enabled_cluster_log_types = ["api", "audit"]

  vpc_config {
    subnet_ids = ["subnet-1", "subnet-2"]
  }
}

module "ng" {
  source   = "./modules/ng"
  for_each = var.node_groups

  cluster_name = aws_eks_cluster.main.name
  name         = each.key
  desired_size = each.value.desired_size
  labels       = try(each.value.labels, null)
}

variable "node_groups" {
  default = {
    general = { desired_size = 3 }
    spot    = { desired_size = 2, labels = { workload = "batch" } }
  }
}

resource "aws_lambda_function" "worker" {
  function_name = "worker"
  role          = "arn:aws:iam::123456789012:role/worker"
  handler       = "index.handler"
  runtime       = "nodejs20.x"
  filename      = "worker.zip"

  tracing_config {
    mode = "Active"
  }
}
"#;

const NODE_GROUP: &str = r#"variable "cluster_name" {}
variable "name" {}
variable "desired_size" {}
variable "labels" {
  default = null
}

resource "aws_eks_node_group" "this" {
  count = 1

  cluster_name    = var.cluster_name
  node_group_name = var.name
  node_role_arn   = "arn:aws:iam::123456789012:role/nodes"
  subnet_ids      = ["subnet-1", "subnet-2"]
  labels          = var.labels

  scaling_config {
    min_size     = 0
    max_size     = 10
    desired_size = var.desired_size
  }

  lifecycle {
    # The cluster autoscaler owns the desired size.
    ignore_changes = [scaling_config[0].desired_size]
  }
}
"#;

fn repo() -> Repo {
    let files: BTreeMap<PathBuf, String> = [("main.tf", ROOT), ("modules/ng/main.tf", NODE_GROUP)]
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    Repo::from_files(files)
}

fn node_group(key: &str, labels: Value) -> Value {
    let mut r = resource(
        "aws_eks_node_group",
        "this",
        json!({ "id": format!("k8s:{key}"), "cluster_name": "k8s", "node_group_name": key, "labels": labels,
            "scaling_config": [{ "min_size": 0, "max_size": 10, "desired_size": 2 }] }),
    );
    r["module"] = json!(format!("module.ng[\"{key}\"]"));
    r["instances"][0]["index_key"] = json!(0);
    r
}

fn state() -> State {
    state_of(vec![
        resource(
            "aws_eks_cluster",
            "main",
            json!({ "id": "k8s", "name": "k8s", "version": "1.29", "enabled_cluster_log_types": ["api", "audit"] }),
        ),
        node_group("general", Value::Null),
        node_group("spot", json!({ "workload": "batch" })),
        resource(
            "aws_lambda_function",
            "worker",
            json!({ "id": "worker", "function_name": "worker", "tracing_config": [{ "mode": "Active" }] }),
        ),
    ])
}

fn ops_of(source: &str, name: &str, request: Value) -> (Address, Vec<Op>, Vec<String>) {
    let planned = plan(&Catalog::builtin(), &change_set(source, name, request), &state(), &repo()).unwrap();
    assert_eq!(planned.changes.len(), 1, "{planned:#?}");
    let change = planned.changes.into_iter().next().unwrap();
    (change.address, change.ops, planned.notes)
}

fn set(path: &str, value: Value) -> Op {
    Op::Set { path: AttrPath::parse(path).unwrap(), value: AttrValue::Literal(value) }
}

#[test]
fn a_call_targets_its_own_type_never_a_namesake_of_another() {
    // An RDS module names the instance's parameter group as the instance; the instance's `id` is
    // its resource id, the group's its name.
    let mut group = resource("aws_db_parameter_group", "this", json!({ "id": "orders", "name": "orders" }));
    group["module"] = json!("module.db.module.db_parameter_group");
    let mut instance =
        resource("aws_db_instance", "this", json!({ "id": "db-ABCDEFGHIJKLMNOP", "identifier": "orders" }));
    instance["module"] = json!("module.db.module.db_instance");
    let state = state_of(vec![group, instance]);
    let catalog = Catalog::builtin();

    let modify = change_set(
        "rds.amazonaws.com",
        "ModifyDBInstance",
        json!({ "dBInstanceIdentifier": "orders", "cACertificateIdentifier": "rds-ca-ecc384-g1", "applyImmediately": true }),
    );
    // Untyped, the identifier finds only the namesake (the instance's id is not its name).
    let by_id: Vec<String> = state.find("orders", &[], &[]).iter().map(|i| i.address.to_string()).collect();
    assert_eq!(by_id, vec!["module.db.module.db_parameter_group.aws_db_parameter_group.this"]);
    assert_eq!(
        targets(&catalog, &modify, &state).unwrap(),
        vec![Address::parse("module.db.module.db_instance.aws_db_instance.this").unwrap()]
    );
    // The group's own call targets the group.
    let group_call = change_set(
        "rds.amazonaws.com",
        "ModifyDBParameterGroup",
        json!({ "dBParameterGroupName": "orders", "parameters": [] }),
    );
    assert_eq!(
        targets(&catalog, &group_call, &state).unwrap(),
        vec![Address::parse("module.db.module.db_parameter_group.aws_db_parameter_group.this").unwrap()]
    );
    // A call no recipe of a definite type knows says nothing.
    let unknown = change_set("rds.amazonaws.com", "NoSuchCall", json!({ "dBInstanceIdentifier": "orders" }));
    assert_eq!(targets(&catalog, &unknown, &state), None);
}

#[test]
fn a_node_group_call_targets_the_node_group_its_cluster_and_name_give() {
    let cs = change_set(
        "eks.amazonaws.com",
        "UpdateNodegroupConfig",
        json!({ "clusterName": "k8s", "nodegroupName": "spot", "taints": { "addOrUpdateTaints": [] } }),
    );
    assert_eq!(
        targets(&Catalog::builtin(), &cs, &state()).unwrap(),
        vec![Address::parse("module.ng[\"spot\"].aws_eks_node_group.this[0]").unwrap()]
    );
}

#[test]
fn node_group_labels_are_added_changed_and_removed_by_key() {
    let (address, ops, _) = ops_of(
        "eks.amazonaws.com",
        "UpdateNodegroupConfig",
        json!({ "clusterName": "k8s", "nodegroupName": "spot", "clientRequestToken": "t-1",
            "labels": { "addOrUpdateLabels": { "team": "data" }, "removeLabels": ["workload"] } }),
    );
    assert_eq!(address, Address::parse("module.ng[\"spot\"].aws_eks_node_group.this[0]").unwrap());
    assert_eq!(
        ops,
        vec![
            set("labels[\"team\"]", json!("data")),
            Op::Remove { path: AttrPath::parse("labels[\"workload\"]").unwrap() }
        ]
    );
}

#[test]
fn node_group_taints_are_refused_by_name_beside_labels() {
    let cs = change_set(
        "eks.amazonaws.com",
        "UpdateNodegroupConfig",
        json!({ "clusterName": "k8s", "nodegroupName": "spot",
            "labels": { "addOrUpdateLabels": { "team": "data" } },
            "taints": { "addOrUpdateTaints": [{ "key": "spot", "value": "true", "effect": "NO_SCHEDULE" }] } }),
    );
    let err = plan(&Catalog::builtin(), &cs, &state(), &repo()).unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params == "taints"), "{err}");
}

#[test]
fn a_desired_size_the_modules_lifecycle_ignores_is_not_planned() {
    let (address, ops, notes) = ops_of(
        "eks.amazonaws.com",
        "UpdateNodegroupConfig",
        json!({ "clusterName": "k8s", "nodegroupName": "general", "scalingConfig": { "desiredSize": 5 } }),
    );
    assert_eq!(address, Address::parse("module.ng[\"general\"].aws_eks_node_group.this[0]").unwrap());
    assert!(ops.is_empty(), "{ops:?}");
    assert!(
        notes.iter().any(|n| n.contains("scaling_config.desired_size is in its lifecycle ignore_changes")),
        "{notes:?}"
    );
    // The maximum is the code's, in the same block.
    let (_, ops, _) = ops_of(
        "eks.amazonaws.com",
        "UpdateNodegroupConfig",
        json!({ "clusterName": "k8s", "nodegroupName": "general", "scalingConfig": { "desiredSize": 5, "maxSize": 12 } }),
    );
    assert_eq!(ops, vec![set("scaling_config.max_size", json!(12))]);
}

#[test]
fn cluster_log_types_turned_on_join_the_list_and_turned_off_leave_it() {
    let address = Address::parse("aws_eks_cluster.main").unwrap();
    let logging = |items: Value| {
        ops_of(
            "eks.amazonaws.com",
            "UpdateClusterConfig",
            json!({ "name": "k8s", "logging": { "clusterLogging": items } }),
        )
    };
    let (at, ops, _) = logging(json!([{ "types": ["authenticator"], "enabled": true }]));
    assert_eq!(at, address);
    assert_eq!(ops, vec![set("enabled_cluster_log_types", json!(["api", "audit", "authenticator"]))]);
    // The console sends both halves: what is on and what is off.
    let (_, ops, _) = logging(json!([
      { "types": ["api", "scheduler"], "enabled": true },
      { "types": ["audit", "authenticator", "controllerManager"], "enabled": false }
    ]));
    assert_eq!(ops, vec![set("enabled_cluster_log_types", json!(["api", "scheduler"]))]);
    // What the state already holds, in any order, is no change.
    let (_, ops, _) = logging(json!([{ "types": ["audit", "api"], "enabled": true }]));
    assert!(ops.is_empty(), "{ops:?}");
    // An item that does not say on or off is refused, never guessed.
    let cs = change_set(
        "eks.amazonaws.com",
        "UpdateClusterConfig",
        json!({ "name": "k8s", "logging": { "clusterLogging": [{ "types": ["api"] }] } }),
    );
    let err = plan(&Catalog::builtin(), &cs, &state(), &repo()).unwrap_err();
    assert!(err.to_string().contains("no true or false `enabled`"), "{err}");
}

#[test]
fn a_cluster_version_upgrade_sets_the_version() {
    let (address, ops, _) = ops_of(
        "eks.amazonaws.com",
        "UpdateClusterVersion",
        json!({ "name": "k8s", "version": "1.30", "clientRequestToken": "t-2", "force": false }),
    );
    assert_eq!(address, Address::parse("aws_eks_cluster.main").unwrap());
    assert_eq!(ops, vec![set("version", json!("1.30"))]);
}

#[test]
fn lambda_tracing_mode_is_written() {
    let (address, ops, _) = ops_of(
        "lambda.amazonaws.com",
        "UpdateFunctionConfiguration20150331v2",
        json!({ "functionName": "worker", "tracingConfig": { "mode": "PassThrough" } }),
    );
    assert_eq!(address, Address::parse("aws_lambda_function.worker").unwrap());
    assert_eq!(ops, vec![set("tracing_config.mode", json!("PassThrough"))]);
}
