//! A resource created outside Terraform that is the next instance of a `count` fleet (a reader
//! added to a module's Aurora cluster): the count grows at its origin and an import block adopts
//! that index, only when the grown instance has every value the creating call set.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use driftback_recipes::{Catalog, plan};
use driftback_terraform::eval::effective_config;
use driftback_terraform::{Address, Op, Repo, State};
use serde_json::{Value, json};

const ROOT: &str = r#"module "orders" {
  source         = "./db"
  name           = "orders"
  instance_count = 2
}

module "inventory" {
  source = "./db"
  name   = "inventory"
}
"#;

const MODULE: &str = r#"variable "name" {}

variable "instance_count" {
  default = 1
}

variable "instance_class" {
  default = "db.r6g.large"
}

resource "aws_rds_cluster" "this" {
  cluster_identifier = var.name
  engine             = "aurora-postgresql"
}

resource "aws_rds_cluster_instance" "this" {
  count              = var.instance_count
  identifier         = format("%s-%02d", var.name, count.index + 1)
  cluster_identifier = aws_rds_cluster.this.id
  engine             = aws_rds_cluster.this.engine
  instance_class     = var.instance_class
}
"#;

fn repo() -> Repo {
    let files: BTreeMap<PathBuf, String> =
        [("main.tf", ROOT), ("db/main.tf", MODULE)].iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect();
    Repo::from_files(files)
}

fn state() -> State {
    let instance = |name: &str, i: u32| {
        json!({"index_key": i, "attributes": {"id": format!("{name}-{:02}", i + 1), "identifier": format!("{name}-{:02}", i + 1),
               "cluster_identifier": name, "engine": "aurora-postgresql", "instance_class": "db.r6g.large",
               "auto_minor_version_upgrade": true, "monitoring_interval": 0}})
    };
    let cluster = |name: &str| {
        json!({"module": format!("module.{name}"), "mode": "managed", "type": "aws_rds_cluster", "name": "this",
               "instances": [{"attributes": {"id": name, "cluster_identifier": name, "engine": "aurora-postgresql"}}]})
    };
    let resources = vec![
        cluster("orders"),
        cluster("inventory"),
        json!({"module": "module.orders", "mode": "managed", "type": "aws_rds_cluster_instance", "name": "this",
               "instances": [instance("orders", 0), instance("orders", 1)]}),
        json!({"module": "module.inventory", "mode": "managed", "type": "aws_rds_cluster_instance", "name": "this",
               "instances": [instance("inventory", 0)]}),
    ];
    support::state_of(resources)
}

/// The console's "Add reader": `CreateDBInstance` in cluster `orders`.
fn add_reader(identifier: &str, class: &str, monitoring: u32) -> Value {
    json!({"dBInstanceIdentifier": identifier, "dBInstanceClass": class, "engine": "aurora-postgresql",
           "dBClusterIdentifier": "orders", "availabilityZone": "us-east-1a", "autoMinorVersionUpgrade": true,
           "publiclyAccessible": false, "monitoringInterval": monitoring})
}

fn created(request: Value) -> (Address, Op) {
    let change_set = support::change_set("rds.amazonaws.com", "CreateDBInstance", request);
    let planned = plan(&Catalog::builtin(), &change_set, &state(), &repo()).unwrap();
    let change = planned.changes.into_iter().next().unwrap();
    (change.address, change.ops.into_iter().next().unwrap())
}

#[test]
fn a_reader_named_as_the_next_instance_grows_the_calls_count_and_is_imported_at_that_index() {
    let (address, op) = created(add_reader("orders-03", "db.r6g.large", 0));
    assert_eq!(address.to_string(), "module.orders.aws_rds_cluster_instance.this[2]");
    let mut r = repo();
    let inventory_before =
        effective_config(&r, &Address::parse("module.inventory.aws_rds_cluster_instance.this[0]").unwrap());
    driftback_terraform::patch::apply(&mut r, &address, &op).unwrap();
    let new = effective_config(&r, &address).unwrap();
    assert_eq!(new["identifier"], json!("orders-03"));
    let root = r.text(Path::new("main.tf")).unwrap();
    assert!(root.contains("  instance_count = 3\n}"), "{root}");
    assert!(
        root.ends_with("import {\n  to = module.orders.aws_rds_cluster_instance.this[2]\n  id = \"orders-03\"\n}\n"),
        "{root}"
    );
    assert_eq!(r.text(Path::new("db/main.tf")).unwrap(), MODULE, "the shared module is untouched");
    let inventory = Address::parse("module.inventory.aws_rds_cluster_instance.this[0]").unwrap();
    assert_eq!(effective_config(&r, &inventory), inventory_before);
    assert!(
        effective_config(&r, &Address::parse("module.inventory.aws_rds_cluster_instance.this[1]").unwrap()).is_none()
    );
}

#[test]
fn a_reader_the_fleet_would_make_otherwise_gets_a_block_of_its_own() {
    // Another class than every instance of the fleet has, or monitoring the fleet never had.
    for request in [add_reader("orders-03", "db.r6g.xlarge", 0), add_reader("orders-03", "db.r6g.large", 60)] {
        let (address, op) = created(request.clone());
        assert_eq!(address.module, Vec::new(), "{request}: {address}");
        assert_eq!(address.key, None, "{request}: {address}");
        assert!(matches!(op, Op::CreateResource { .. }));
    }
    // Named otherwise than the fleet names its instances.
    let (address, _) = created(add_reader("orders-reporting", "db.r6g.large", 0));
    assert!(address.module.is_empty(), "{address}");
}
