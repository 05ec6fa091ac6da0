//! Routes and network ACL entries, in both styles the provider allows: inline blocks of the table
//! or ACL, or one standalone resource per route or entry. Each call is planned, the plan applied to
//! the code, and the effective configuration judged: the right target or entry, the old one gone,
//! and never an inline block beside standalone resources.

mod support;

use std::path::{Path, PathBuf};
use support::{change_set, resource};

use driftback_recipes::{Catalog, plan};
use driftback_terraform::eval::effective_config;
use driftback_terraform::{Address, Op, Repo, State};
use serde_json::{Value, json};

const MAIN: &str = r#"resource "aws_route_table" "public" {
  vpc_id = "vpc-1"

  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = "igw-1"
  }

  route {
    cidr_block                = "10.20.0.0/16"
    vpc_peering_connection_id = "pcx-1"
  }
}

resource "aws_route" "private_default" {
  route_table_id         = "rtb-private"
  destination_cidr_block = "0.0.0.0/0"
  nat_gateway_id         = "nat-1"
}

resource "aws_network_acl" "public" {
  vpc_id = "vpc-1"

  ingress {
    rule_no    = 100
    protocol   = "6"
    action     = "allow"
    cidr_block = "0.0.0.0/0"
    from_port  = 443
    to_port    = 443
  }

  egress {
    rule_no    = 100
    protocol   = "-1"
    action     = "allow"
    cidr_block = "0.0.0.0/0"
    from_port  = 0
    to_port    = 0
  }
}

resource "aws_network_acl" "private" {
  vpc_id = "vpc-1"
}

resource "aws_network_acl_rule" "private_in_100" {
  network_acl_id = "acl-private"
  rule_number    = 100
  egress         = false
  protocol       = "6"
  rule_action    = "allow"
  cidr_block     = "10.0.0.0/16"
  from_port      = 5432
  to_port        = 5432
}

resource "aws_eip" "bastion" {
  domain   = "vpc"
  instance = "i-0aaa1111bbbb2222c"
}

resource "aws_launch_template" "web" {
  name_prefix            = "web-"
  image_id               = "ami-0c55b159cbfafe1f0"
  instance_type          = "t3.small"
  update_default_version = true

  monitoring {
    enabled = false
  }
}

resource "aws_network_interface" "nat" {
  subnet_id         = "subnet-1"
  security_groups   = ["sg-0aaa1111bbbb2222c"]
  source_dest_check = true
}

resource "aws_network_acl_rule" "private_out_100" {
  network_acl_id = "acl-private"
  rule_number    = 100
  egress         = true
  protocol       = "-1"
  rule_action    = "allow"
  cidr_block     = "0.0.0.0/0"
}
"#;

fn state() -> State {
    let resources = vec![
        resource(
            "aws_route_table",
            "public",
            json!({"id": "rtb-public", "vpc_id": "vpc-1", "route": [
                {"cidr_block": "0.0.0.0/0", "gateway_id": "igw-1"},
                {"cidr_block": "10.20.0.0/16", "vpc_peering_connection_id": "pcx-1"}]}),
        ),
        resource(
            "aws_route",
            "private_default",
            json!({"id": "r-rtb-private1080289494", "route_table_id": "rtb-private",
                   "destination_cidr_block": "0.0.0.0/0", "nat_gateway_id": "nat-1"}),
        ),
        resource(
            "aws_network_acl",
            "public",
            json!({"id": "acl-public", "vpc_id": "vpc-1",
                   "ingress": [{"rule_no": 100, "protocol": "6", "action": "allow", "cidr_block": "0.0.0.0/0",
                                "from_port": 443, "to_port": 443}],
                   "egress": [{"rule_no": 100, "protocol": "-1", "action": "allow", "cidr_block": "0.0.0.0/0",
                               "from_port": 0, "to_port": 0}]}),
        ),
        resource("aws_network_acl", "private", json!({"id": "acl-private", "vpc_id": "vpc-1"})),
        resource(
            "aws_network_acl_rule",
            "private_in_100",
            json!({"id": "nacl-1001", "network_acl_id": "acl-private", "rule_number": 100, "egress": false,
                   "protocol": "6", "rule_action": "allow", "cidr_block": "10.0.0.0/16",
                   "from_port": 5432, "to_port": 5432}),
        ),
        resource(
            "aws_network_acl_rule",
            "private_out_100",
            json!({"id": "nacl-1002", "network_acl_id": "acl-private", "rule_number": 100, "egress": true,
                   "protocol": "-1", "rule_action": "allow", "cidr_block": "0.0.0.0/0"}),
        ),
        resource(
            "aws_eip",
            "bastion",
            json!({"id": "eipalloc-0123456789abcdef0", "allocation_id": "eipalloc-0123456789abcdef0",
                   "domain": "vpc", "instance": "i-0aaa1111bbbb2222c", "public_ip": "198.51.100.7"}),
        ),
        resource(
            "aws_launch_template",
            "web",
            json!({"id": "lt-0abcd1234efgh5678", "name": "web-20240101", "name_prefix": "web-",
                   "image_id": "ami-0c55b159cbfafe1f0", "instance_type": "t3.small", "latest_version": 3,
                   "default_version": 3, "update_default_version": true, "monitoring": [{"enabled": false}]}),
        ),
        resource(
            "aws_network_interface",
            "nat",
            json!({"id": "eni-0f1e2d3c4b5a69788", "subnet_id": "subnet-1",
                   "security_groups": ["sg-0aaa1111bbbb2222c"], "source_dest_check": true}),
        ),
    ];
    support::state_of(resources)
}

/// The call planned and applied: the patched code and the addresses the plan changed.
fn applied(name: &str, request: Value) -> (Repo, Vec<(Address, Vec<Op>)>) {
    let mut repo = Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect());
    let plan = plan(&Catalog::builtin(), &change_set("ec2.amazonaws.com", name, request), &state(), &repo)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    // A resource the call names but whose own code does not change (the ACL a rule resource joins)
    // is listed without operations.
    let changes: Vec<(Address, Vec<Op>)> =
        plan.changes.into_iter().filter(|c| !c.ops.is_empty()).map(|c| (c.address, c.ops)).collect();
    for (address, ops) in &changes {
        for op in ops {
            driftback_terraform::patch::apply(&mut repo, address, op).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    (repo, changes)
}

fn config(repo: &Repo, address: &str) -> Value {
    effective_config(repo, &Address::parse(address).unwrap()).unwrap()
}

#[test]
fn a_replaced_route_target_moves_the_route_and_drops_the_old_target() {
    let (repo, changes) = applied(
        "ReplaceRoute",
        json!({"routeTableId": "rtb-private", "destinationCidrBlock": "0.0.0.0/0", "gatewayId": "igw-1"}),
    );
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].0.to_string(), "aws_route.private_default");
    let route = config(&repo, "aws_route.private_default");
    assert_eq!(route["gateway_id"], "igw-1");
    assert!(route.get("nat_gateway_id").is_none_or(Value::is_null), "{route}");
    assert_eq!(route["destination_cidr_block"], "0.0.0.0/0");

    // Inline: the block for that destination only, with its new target.
    let (repo, _) = applied(
        "ReplaceRoute",
        json!({"routeTableId": "rtb-public", "destinationCidrBlock": "10.20.0.0/16", "transitGatewayId": "tgw-1"}),
    );
    let routes = config(&repo, "aws_route_table.public")["route"].as_array().cloned().unwrap();
    assert_eq!(routes.len(), 2, "{routes:?}");
    let peer = routes.iter().find(|r| r["cidr_block"] == "10.20.0.0/16").unwrap();
    assert_eq!(peer["transit_gateway_id"], "tgw-1");
    assert!(peer.get("vpc_peering_connection_id").is_none_or(Value::is_null), "{peer}");
    let default = routes.iter().find(|r| r["cidr_block"] == "0.0.0.0/0").unwrap();
    assert_eq!(default["gateway_id"], "igw-1");
}

#[test]
fn an_acl_entry_is_added_in_the_style_of_its_acl() {
    let entry = |acl: &str, egress: bool| {
        json!({"networkAclId": acl, "ruleNumber": 110, "aclProtocol": "6", "ruleAction": "allow", "egress": egress,
               "cidrBlock": "10.1.0.0/16", "portRange": {"from": 8443, "to": 8443}})
    };
    // Standalone rules: one more rule resource with the provider's import id, the ACL untouched.
    let (repo, changes) = applied("CreateNetworkAclEntry", entry("acl-private", false));
    assert_eq!(changes.len(), 1, "{changes:?}");
    let address = changes[0].0.clone();
    assert_eq!(address.rtype, "aws_network_acl_rule");
    let Op::CreateResource { import_id, .. } = &changes[0].1[0] else { panic!("{changes:?}") };
    assert_eq!(import_id, "acl-private:110:6:false");
    let rule = config(&repo, &address.to_string());
    assert_eq!(rule["rule_number"], 110);
    assert_eq!(rule["egress"], false);
    assert_eq!(rule["from_port"], 8443);
    assert_eq!(rule["cidr_block"], "10.1.0.0/16");
    assert!(config(&repo, "aws_network_acl.private").get("ingress").is_none_or(Value::is_null));
    assert!(!repo.text(Path::new("main.tf")).unwrap().contains("rule_no    = 110"));

    // Inline entries: a block of the call's direction.
    let (repo, _) = applied("CreateNetworkAclEntry", entry("acl-public", true));
    let acl = config(&repo, "aws_network_acl.public");
    assert_eq!(acl["ingress"].as_array().unwrap().len(), 1);
    let egress = acl["egress"].as_array().unwrap();
    assert_eq!(egress.len(), 2);
    assert!(egress.iter().any(|e| e["rule_no"] == 110 && e["from_port"] == 8443 && e["action"] == "allow"));
}

#[test]
fn an_acl_entry_replaced_or_deleted_changes_that_entry_only() {
    let (repo, changes) = applied(
        "ReplaceNetworkAclEntry",
        json!({"networkAclId": "acl-private", "ruleNumber": 100, "aclProtocol": "6", "ruleAction": "deny",
               "egress": false, "cidrBlock": "10.0.0.0/16", "portRange": {"from": 5432, "to": 5432}}),
    );
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].0.to_string(), "aws_network_acl_rule.private_in_100");
    assert_eq!(config(&repo, "aws_network_acl_rule.private_in_100")["rule_action"], "deny");
    assert_eq!(config(&repo, "aws_network_acl_rule.private_out_100")["rule_action"], "allow");

    let (_, changes) =
        applied("DeleteNetworkAclEntry", json!({"networkAclId": "acl-private", "ruleNumber": 100, "egress": true}));
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].0.to_string(), "aws_network_acl_rule.private_out_100");
    assert_eq!(changes[0].1, vec![Op::RemoveResource]);

    let (repo, _) = applied(
        "ReplaceNetworkAclEntry",
        json!({"networkAclId": "acl-public", "ruleNumber": 100, "aclProtocol": "6", "ruleAction": "allow",
               "egress": false, "cidrBlock": "10.0.0.0/8", "portRange": {"from": 443, "to": 443}}),
    );
    let acl = config(&repo, "aws_network_acl.public");
    let ingress = acl["ingress"].as_array().unwrap();
    assert_eq!(ingress.len(), 1, "{ingress:?}");
    assert_eq!(ingress[0]["cidr_block"], "10.0.0.0/8");
    assert_eq!(acl["egress"].as_array().unwrap()[0]["cidr_block"], "0.0.0.0/0");

    let (repo, _) =
        applied("DeleteNetworkAclEntry", json!({"networkAclId": "acl-public", "ruleNumber": 100, "egress": false}));
    let acl = config(&repo, "aws_network_acl.public");
    assert!(acl.get("ingress").and_then(Value::as_array).is_none_or(Vec::is_empty), "{acl}");
    assert_eq!(acl["egress"].as_array().unwrap().len(), 1);
}

#[test]
fn an_address_moved_to_another_instance_names_it_on_the_eip() {
    let (repo, changes) = applied(
        "AssociateAddress",
        json!({"allocationId": "eipalloc-0123456789abcdef0", "instanceId": "i-0ccc3333dddd4444e", "allowReassociation": true}),
    );
    assert_eq!(changes.len(), 1);
    assert_eq!(config(&repo, "aws_eip.bastion")["instance"], "i-0ccc3333dddd4444e");
    // Moved to a network interface: the instance goes, the interface is named.
    let (repo, _) = applied(
        "AssociateAddress",
        json!({"allocationId": "eipalloc-0123456789abcdef0", "networkInterfaceId": "eni-0f1e2d3c4b5a69788"}),
    );
    let eip = config(&repo, "aws_eip.bastion");
    assert_eq!(eip["network_interface"], "eni-0f1e2d3c4b5a69788");
    assert!(eip.get("instance").is_none_or(Value::is_null), "{eip}");
}

#[test]
fn a_launch_template_version_from_the_latest_changes_the_template_and_from_an_older_one_is_refused() {
    let request = |source: &str| {
        json!({"CreateLaunchTemplateVersionRequest": {"LaunchTemplateId": "lt-0abcd1234efgh5678",
            "SourceVersion": source, "VersionDescription": "bigger",
            "LaunchTemplateData": {"InstanceType": "t3.large", "Monitoring": {"Enabled": true}}}})
    };
    let (repo, _) = applied("CreateLaunchTemplateVersion", request("3"));
    let template = config(&repo, "aws_launch_template.web");
    assert_eq!(template["instance_type"], "t3.large");
    assert_eq!(template["monitoring"][0]["enabled"], true);
    assert_eq!(template["image_id"], "ami-0c55b159cbfafe1f0");
    // Built from version 1, the new version holds what version 1 held, which the code does not say.
    let err = plan(
        &Catalog::builtin(),
        &change_set("ec2.amazonaws.com", "CreateLaunchTemplateVersion", request("1")),
        &state(),
        &Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("lt-0abcd1234efgh5678"), "{err}");
    // Data the recipe does not map refuses it whole.
    let mut unmapped = request("3");
    unmapped["CreateLaunchTemplateVersionRequest"]["LaunchTemplateData"]["NetworkInterface"] = json!({"tag": 1});
    let err = plan(
        &Catalog::builtin(),
        &change_set("ec2.amazonaws.com", "CreateLaunchTemplateVersion", unmapped),
        &state(),
        &Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("NetworkInterface"), "{err}");
}

#[test]
fn a_default_version_chosen_by_hand_replaces_update_default_version() {
    let (repo, _) = applied(
        "ModifyLaunchTemplate",
        json!({"ModifyLaunchTemplateRequest": {"LaunchTemplateId": "lt-0abcd1234efgh5678", "SetDefaultVersion": "2"}}),
    );
    let template = config(&repo, "aws_launch_template.web");
    assert_eq!(template["default_version"], 2);
    assert!(template.get("update_default_version").is_none_or(Value::is_null), "{template}");
}

#[test]
fn a_network_interface_gets_its_check_groups_and_description_and_an_attachment_change_is_refused() {
    let eni = "eni-0f1e2d3c4b5a69788";
    let (repo, changes) = applied(
        "ModifyNetworkInterfaceAttribute",
        json!({"networkInterfaceId": eni, "sourceDestCheck": {"value": false}}),
    );
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].0.to_string(), "aws_network_interface.nat");
    assert_eq!(config(&repo, "aws_network_interface.nat")["source_dest_check"], false);

    let (repo, _) = applied(
        "ModifyNetworkInterfaceAttribute",
        json!({"networkInterfaceId": eni,
               "groupSet": {"items": [{"groupId": "sg-0aaa1111bbbb2222c"}, {"groupId": "sg-0ddd3333eeee4444f"}]}}),
    );
    let nat = config(&repo, "aws_network_interface.nat");
    assert_eq!(nat["security_groups"], json!(["sg-0aaa1111bbbb2222c", "sg-0ddd3333eeee4444f"]));
    assert_eq!(nat["source_dest_check"], true, "one call changes one setting: {nat}");

    let (repo, _) = applied(
        "ModifyNetworkInterfaceAttribute",
        json!({"networkInterfaceId": eni, "description": {"value": "NAT instance, zone a"}}),
    );
    assert_eq!(config(&repo, "aws_network_interface.nat")["description"], "NAT instance, zone a");

    // Delete-on-termination of the attachment has no argument on the interface: refused by name.
    let request = json!({"networkInterfaceId": eni,
                         "attachment": {"attachmentId": "eni-attach-1", "deleteOnTermination": false}});
    let err = plan(
        &Catalog::builtin(),
        &change_set("ec2.amazonaws.com", "ModifyNetworkInterfaceAttribute", request),
        &state(),
        &Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("attachment"), "{err}");
}
