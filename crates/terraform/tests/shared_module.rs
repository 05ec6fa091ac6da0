//! A local module shared by two root modules (`envs/stage` and `envs/prod` both call
//! `modules/web`): a rule created on stage's load balancer group is written in `envs/stage`, on
//! the module's output, with an import block; the module's code and prod stay as they were. When
//! the module gives no output for the group, the change is refused naming the other callers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use driftback_terraform::patch::{self, Op};
use driftback_terraform::{Address, AttrValue, BlockSpec, Repo};
use serde_json::json;

const MODULE: &str = r#"variable "name" {
  type = string
}

resource "aws_security_group" "alb" {
  name = "${var.name}-alb"
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
    format!("module \"web\" {{\n  source = \"../../modules/web\"\n\n  name = \"{env}\"\n}}\n")
}

fn repository(module: &str) -> Repo {
    Repo::from_files(BTreeMap::from([
        (PathBuf::from("modules/web/main.tf"), module.to_string()),
        (PathBuf::from("envs/stage/main.tf"), root("stage")),
        (PathBuf::from("envs/prod/main.tf"), root("prod")),
    ]))
}

/// The rule a recipe plans for a console ingress rule on stage's group, where it saw the group.
fn new_rule() -> (Address, Op) {
    let address = Address::parse("module.web.aws_vpc_security_group_ingress_rule.alb_ingress_tcp_8443").unwrap();
    let spec = BlockSpec {
        attrs: vec![
            ("security_group_id".into(), AttrValue::Reference("aws_security_group.alb.id".into())),
            ("cidr_ipv4".into(), AttrValue::Literal(json!("10.30.0.0/16"))),
            ("from_port".into(), AttrValue::Literal(json!(8443))),
            ("to_port".into(), AttrValue::Literal(json!(8443))),
            ("ip_protocol".into(), AttrValue::Literal(json!("tcp"))),
        ],
        blocks: vec![],
    };
    (address, Op::CreateResource { spec, import_id: "sgr-0c1d2e3f4a5b6c7d8".into() })
}

#[test]
fn a_rule_on_a_shared_modules_group_is_written_at_the_calling_root_on_its_output() {
    let whole = repository(MODULE);
    let mut stage = whole.root_module(Path::new("envs/stage"));
    assert_eq!(stage.other_callers(Path::new("modules/web")), ["envs/prod/main.tf:1 module.web".to_string()]);
    let (address, op) = new_rule();
    let applied = patch::apply(&mut stage, &address, &op).unwrap();
    assert_eq!(applied.files, [PathBuf::from("envs/stage/main.tf")], "{applied:?}");
    let text = stage.text(Path::new("envs/stage/main.tf")).unwrap();
    assert!(text.contains("resource \"aws_vpc_security_group_ingress_rule\" \"alb_ingress_tcp_8443\" {"), "{text}");
    assert!(text.contains("security_group_id = module.web.alb_security_group_id"), "{text}");
    assert!(text.contains("cidr_ipv4         = \"10.30.0.0/16\""), "{text}");
    assert!(
        text.contains("import {\n  to = aws_vpc_security_group_ingress_rule.alb_ingress_tcp_8443\n  id = \"sgr-0c1d2e3f4a5b6c7d8\"\n}"),
        "{text}"
    );
    assert!(applied.notes.iter().any(|n| n.contains("shared with envs/prod/main.tf:1 module.web")), "{applied:?}");
    assert_eq!(stage.text(Path::new("modules/web/main.tf")), Some(MODULE), "the module's code is untouched");
    // The new block passes the gate: the module keeps its rules as separate resources.
    let schema = driftback_terraform::Schema::version("5.100.0").unwrap();
    let before = whole.root_module(Path::new("envs/stage"));
    assert_eq!(driftback_terraform::gate::check(schema, &before, &stage, &applied.files), Vec::<String>::new());
}

#[test]
fn without_an_output_for_the_group_the_rule_is_refused_naming_the_other_callers() {
    let module = MODULE.replace("output \"alb_security_group_id\" {\n  value = aws_security_group.alb.id\n}\n", "");
    let whole = repository(&module);
    let mut stage = whole.root_module(Path::new("envs/stage"));
    let (address, op) = new_rule();
    let err = patch::apply(&mut stage, &address, &op).unwrap_err().to_string();
    assert!(err.contains("the module exposes no output giving aws_security_group.alb.id"), "{err}");
    assert!(err.contains("shared with envs/prod/main.tf:1 module.web"), "{err}");
    assert_eq!(stage.text(Path::new("modules/web/main.tf")), Some(module.as_str()));
    assert_eq!(stage.text(Path::new("envs/stage/main.tf")), Some(root("stage").as_str()));
}
